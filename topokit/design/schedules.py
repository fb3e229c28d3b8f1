"""A schedule is a design too: the field's time-varying topologies judged beside a design.

:func:`consider_schedules` builds, over a network, the time-varying peers of the
decentralized-SGD literature at a static design's mean degree k -- Ying et al.'s
one-peer exponential graph, Takezawa et al.'s Base-(k+1) graph and de Vos et al.'s
epidemic learning with k peers a round (:mod:`topokit.design.peers`) -- and
predicts each one's time with the predictor that judged the design, at the
settings it judged at (:meth:`Design.judge <topokit.design.Design.judge>`),
through :func:`topokit.evaluate`: the same numbers every surface gives.

The shipped predictors were fitted on static topologies.  A schedule is
predicted from its features over its rounds
(:func:`~topokit.design.features.features_of_schedule`), an extrapolation, and
the comparison says so (:data:`EXTRAPOLATION_NOTE`).  On the field benchmark's
networks, which no fit saw, those predictions called a schedule faster than the
design where it trained slower as often as where it trained faster, a
correction fitted on a corpus of schedule runs made it worse
(``python -m analyses.schedule_corpus``), and a predictor refitted with 2,160
schedule runs beside the static corpus called exactly what the static fit calls
(``python -m analyses.schedule_predictor``; docs/tutorial/benchmarks.md,
"Against the field").  So no schedule is chosen unless a margin is given: how
many times faster than the design a schedule must be predicted, a risk the
caller takes knowingly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._random import SeedLike, int_seed
from ..errors import InvalidInputError
from ..network.core import Network, Topology
from ..network.schedule import TopologySchedule
from ._optimize import _with_settings, check_ndlf_margin
from .metrics import evaluate
from .peers import base_graph, epidemic, one_peer_exponential
from .result import Design

__all__ = ["consider_schedules", "ScheduleComparison", "matched_degree", "field_schedules",
           "EXTRAPOLATION_NOTE", "DEFAULT_MARGIN"]

#: The margin :func:`consider_schedules` chooses with: None, none is chosen (module notes).
DEFAULT_MARGIN: float | None = None

#: What a comparison says of its schedules' predictions.
EXTRAPOLATION_NOTE = (
    "the predictor was fitted on static topologies: a schedule's time is predicted from its "
    "features over its rounds, an extrapolation"
)


def matched_degree(net: Network, topology: Topology) -> int:
    """The mean degree 2 |E| / |V| of ``topology``, rounded, at least 1 and at most the fewest
    usable peers (finite delay) a device of ``net`` has: the k of Base-(k+1) and the s of
    epidemic learning that talk to about as many peers a round as the topology does.

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> matched_degree(net, net.topology)   # 8 links on 6 devices
    3
    """
    usable = np.isfinite(net.delay)
    np.fill_diagonal(usable, False)
    fewest = int(usable.sum(axis=1).min())
    return int(min(max(1, round(2 * topology.n_links / net.n_devices)), fewest))


#: The builders of :func:`field_schedules`: name -> (network, degree, seed) -> schedule.
_BUILDERS: dict[str, Callable[[Network, int, int], TopologySchedule]] = {
    "one-peer-exponential": lambda net, k, seed: one_peer_exponential(net),
    "base": lambda net, k, seed: base_graph(net, k),
    "epidemic": lambda net, k, seed: epidemic(net, k, seed=seed),
}


def field_schedules(net: Network, degree: int, *, seed: SeedLike = 0
                    ) -> tuple[dict[str, TopologySchedule], dict[str, str]]:
    """The field's time-varying peers over ``net`` at ``degree``, and those it cannot carry.

    Returns
    -------
    (dict, dict)
        Name (``"one-peer-exponential"``, ``"base:k"``, ``"epidemic:k"``) -> schedule,
        and name -> why the network cannot carry it (the builder's one line).
    """
    seed = int_seed(seed)
    built: dict[str, TopologySchedule] = {}
    refused: dict[str, str] = {}
    for kind, build in _BUILDERS.items():
        name = kind if kind == "one-peer-exponential" else f"{kind}:{degree}"
        try:
            built[name] = build(net, degree, seed)
        except InvalidInputError as error:
            refused[name] = str(error)
    return built, refused


@dataclass(frozen=True)
class ScheduleComparison:
    """A design beside the field's schedules, as its own predictor judges them.

    Attributes
    ----------
    design_time : float
        The design's predicted time (``design.metrics.pseudo_time``), seconds.
    times, rounds : dict
        Schedule name -> its predicted time (seconds: rounds x the mean time of
        its rounds) and rounds (``inf``: never reaches the target).
    refused : dict
        Schedule name -> why the network cannot carry it.
    margin : float or None
        How many times faster than the design a schedule must be predicted
        (None: none is chosen).
    best : str or None
        The schedule predicted fastest (None when none was built).
    chosen : str or None
        ``best`` when it clears the margin, else None: the design stays.
    why : str
        What decided, in one sentence.
    note : str
        :data:`EXTRAPOLATION_NOTE`.
    schedules : dict
        Schedule name -> the :class:`~topokit.network.TopologySchedule` judged.
    """

    design_time: float
    times: dict[str, float]
    rounds: dict[str, float]
    refused: dict[str, str]
    margin: float | None
    best: str | None
    chosen: str | None
    why: str
    note: str = EXTRAPOLATION_NOTE
    schedules: dict[str, TopologySchedule] = field(default_factory=dict, compare=False,
                                                   repr=False)

    @property
    def schedule(self) -> TopologySchedule | None:
        """The chosen schedule, or None when the design stays."""
        return None if self.chosen is None else self.schedules[self.chosen]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, the schedules left out (save one with :meth:`TopologySchedule.save`);
        ``inf`` stays a float."""
        return {"design_time": self.design_time, "times": dict(self.times),
                "rounds": dict(self.rounds), "refused": dict(self.refused),
                "margin": self.margin, "best": self.best, "chosen": self.chosen,
                "why": self.why, "note": self.note}


def consider_schedules(net: Network, design: Design, *, seed: SeedLike = 0,
                       margin: float | None = DEFAULT_MARGIN) -> ScheduleComparison:
    """Judge the field's time-varying topologies beside ``design`` and choose between them.

    Parameters
    ----------
    net : Network
        The network the design was made for; its ``class_counts`` (when it
        carries them) are the data the predictions assume, as for the design.
    design : Design
        A design of :func:`topokit.optimize` (or :func:`topokit.load_design`'s).
    seed : int, Generator or None, default 0
        Seeds epidemic learning's draws.
    margin : float >= 1 or None, default None
        How many times faster than the design a schedule must be predicted to
        be chosen.  None: none is chosen, the predictions are reported (see the
        module notes for why).

    Returns
    -------
    ScheduleComparison

    Raises
    ------
    InvalidInputError
        ``net`` or ``design`` of the wrong kind, a margin below 1, or a design
        made under a stranger bound (``max_stranger_mu``), which the schedules'
        rounds are not audited against.

    Notes
    -----
    Every DP device of a schedule (every end of a non-social link it may use)
    adds noise at the predictor's common noise multiplier, the workload's z; a
    design's per-device levels name its own DP devices only.

    Examples
    --------
    >>> from topokit import load_example, optimize
    >>> net = load_example("toy")
    >>> comparison = consider_schedules(net, optimize(net, seed=0))
    >>> sorted(comparison.times), sorted(comparison.refused)  # the toy lacks some links
    (['epidemic:2'], ['base:2', 'one-peer-exponential'])
    >>> comparison.chosen is None, comparison.why
    (True, 'epidemic:2 is predicted never to reach the target: the design stays')

    With a margin, a schedule predicted faster than the design by it is chosen
    (``comparison.schedule``); here none is:

    >>> consider_schedules(net, optimize(net, seed=0), margin=1.1).schedule is None
    True
    """
    _check(net, design)
    margin = None if margin is None else check_ndlf_margin(margin, "margin")
    built, refused = field_schedules(net, matched_degree(net, design.topology), seed=seed)
    judge = _common_noise(design.judge())
    metrics = {name: evaluate(net, schedule, judge) for name, schedule in built.items()}
    times = {name: float(m.pseudo_time) for name, m in metrics.items()}
    design_time = float(design.metrics.pseudo_time)
    best = min(times, key=lambda name: (times[name], name)) if times else None
    chosen = (best if best is not None and margin is not None
              and times[best] * margin < design_time else None)
    return ScheduleComparison(
        design_time=design_time, times=times,
        rounds={name: float(m.predicted_global_iterate) for name, m in metrics.items()},
        refused=refused, margin=margin, best=best, chosen=chosen,
        why=_why(best, chosen, times, design_time, margin), schedules=built)


def _check(net: Any, design: Any) -> None:
    if not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit Network; got {type(net).__name__}")
    if not isinstance(design, Design):
        raise InvalidInputError(
            f"design must be a topokit Design (topokit.optimize's); got {type(design).__name__}")
    if "stranger_bound" in design.stats:
        raise InvalidInputError(
            "the design was made under a stranger bound (max_stranger_mu), and the schedules' "
            "rounds are not audited against it; consider schedules for a design without one")


def _common_noise(judge: Any) -> Any:
    """The design's predictor with every DP device at its common noise multiplier."""
    settings = getattr(judge, "feature_settings", None)
    if settings is None or settings.device_noise_multipliers is None:
        return judge
    return _with_settings(judge, device_noise_multipliers=None)


def _why(best: str | None, chosen: str | None, times: dict[str, float], design_time: float,
         margin: float | None) -> str:
    if best is None:
        return "the network carries none of the field's schedules: the design stays"
    if not np.isfinite(times[best]):
        return f"{best} is predicted never to reach the target: the design stays"
    ratio = design_time / times[best]
    if chosen is not None:
        return (f"{best} is predicted {ratio:.3g}x faster than the design (margin "
                f"{margin:g}): the schedule is chosen")
    if ratio <= 1.0:
        return (f"the fastest schedule, {best}, is predicted {1 / ratio:.3g}x slower than the "
                "design: the design stays")
    if margin is None:
        return (f"the fastest schedule, {best}, is predicted {ratio:.3g}x faster than the "
                "design; no margin was given, so the design stays (a schedule's prediction "
                "extrapolates)")
    return (f"the fastest schedule, {best}, is predicted {ratio:.3g}x faster than the design, "
            f"which does not clear the margin {margin:g}: the design stays")
