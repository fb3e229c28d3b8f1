"""The noise a design's DP devices add, decided once: :class:`DesignNoise`.

A DP device of a DeepPrivacy topology trains with DP-SGD: every round it clips
its update and adds Gaussian noise of multiplier z = sigma / Delta (Ching et
al., Algorithm 1; topokit's ``DPConfig(per="round")``).  A design decides each
DP device's z once, when it is made: from the user's epsilon and delta (the
workload's, else training's default of epsilon = 1 per round), raised where a
stranger bound needs more (:func:`topokit.optimize`'s ``max_stranger_mu``),
never lowered below what the epsilon calls for.  The design stores that
decision (``Design.noise``, the ``"noise"`` object of a design file) and every
other surface reads it from there: the printed design,
:func:`~topokit.network.formats.load_noise_multipliers`, the exports (the
``dp-plan`` records each device's z with the epsilon, delta, accounting unit
and sampling rate that give it), ``topokit audit`` of a design file and
``topokit validate -t NAME=FILE``.

What a level guarantees is the per-round guarantee of the Gaussian mechanism
with that z at the design's delta (Balle & Wang 2018, Thm. 8:
:func:`topokit.dp.per_release_epsilon`), one release per round, with no
amplification by subsampling claimed (sampling rate 1).  Over T rounds a
device's guarantee composes; ``topokit validate`` accounts the whole run with
``dp-accounting``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_real
from ..errors import InputFileError, InvalidInputError
from .workload import Workload

__all__ = ["DesignNoise", "decided_noise", "untold_noise", "untold_source",
           "dp_in_node_order", "ACCOUNTING_UNIT", "MECHANISM", "DEFAULT_DELTA"]

#: The delta of training's default DP (``DPConfig()``, ``Workload()``): 1e-5 per round.
DEFAULT_DELTA = Workload.delta

#: What one epsilon of a design's noise accounts: one round of one DP device.
ACCOUNTING_UNIT = "round"
#: The mechanism and analysis behind a level's epsilon, in words (written with the record).
MECHANISM = ("Gaussian mechanism: one release per round of each DP device's clipped update, "
             "(epsilon, delta)-DP on its own (analytic calibration, Balle & Wang 2018); no "
             "amplification by subsampling claimed (sampling rate 1)")
#: The sampling rate a level's epsilon assumes: none, so that it holds for any batch size.
ACCOUNTING_SAMPLING_RATE = 1.0


@dataclass(frozen=True)
class DesignNoise:
    """Each DP device's noise multiplier, and the privacy it was decided for.

    Attributes
    ----------
    noise_multipliers : mapping
        DP device -> z = sigma / Delta, in node order.
    delta : float
        The delta of every level's epsilon.
    workload_epsilon : float or None
        The epsilon per round the user asked for (the workload's), which no
        level may spend more than; None where none was asked for.
    source : str
        Where the levels came from, in words.

    Examples
    --------
    >>> noise = decided_noise(["C", "D"], base=7.0318266755825, delta=1e-5,
    ...                       epsilon=0.5, source="the workload's epsilon")
    >>> {device: round(eps, 6) for device, eps in noise.epsilons.items()}
    {'C': 0.5, 'D': 0.5}
    >>> DesignNoise.from_dict(noise.to_dict(), ["C", "D"]) == noise
    True
    """

    noise_multipliers: Mapping[Hashable, float] = field(default_factory=dict)
    delta: float = 1e-5
    workload_epsilon: float | None = None
    source: str = ""

    @property
    def epsilons(self) -> dict[Hashable, float]:
        """DP device -> the epsilon per round its level guarantees at :attr:`delta`
        (inf for a device that adds no noise)."""
        from ..dp import per_release_epsilon

        return {device: per_release_epsilon(z, self.delta) if z > 0 else math.inf
                for device, z in self.noise_multipliers.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the levels and epsilons keyed by ``str(device)`` (JSON's keys), with
        the accounting that gives them."""
        epsilons = self.epsilons
        return {
            "unit": ACCOUNTING_UNIT,
            "delta": self.delta,
            "sampling_rate": ACCOUNTING_SAMPLING_RATE,
            "mechanism": MECHANISM,
            "workload_epsilon": self.workload_epsilon,
            "source": self.source,
            "noise_multipliers": {str(d): float(z) for d, z in self.noise_multipliers.items()},
            "epsilons": {str(d): (None if math.isinf(e) else e) for d, e in epsilons.items()},
        }

    @classmethod
    def from_dict(cls, data: Any, dp_devices: Sequence[Hashable]) -> DesignNoise:
        """The record of :meth:`to_dict`, its keys mapped back to ``dp_devices``.

        Raises
        ------
        InputFileError
            Not such a record, a level that is not a finite number >= 0, a
            level for a device that is not among ``dp_devices``, or a DP
            device without one.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("noise_multipliers"),
                                                           Mapping):
            raise InputFileError("the design's \"noise\" must be an object with "
                                 "\"noise_multipliers\" (device -> z), as topokit writes it")
        by_text = {str(device): device for device in dp_devices}
        levels = {}  # in the record's order: node order, as written
        for key, value in data["noise_multipliers"].items():
            if key not in by_text:
                raise InputFileError(f"the design's noise names device {key!r}, which is not "
                                     "one of its DP devices")
            levels[by_text[key]] = _level(value, key)
        missing = sorted(text for text in by_text if by_text[text] not in levels)
        if missing:
            raise InputFileError(f"the design's noise has no level for its DP device "
                                 f"{missing[0]!r}")
        delta = _level(data.get("delta"), "delta", high=1)
        epsilon = data.get("workload_epsilon")
        return cls(levels, delta,
                   None if epsilon is None else _level(epsilon, "workload_epsilon"),
                   str(data.get("source", "")))


def _level(value: Any, name: str, high: float | None = None) -> float:
    """A recorded number: finite, >= 0 (in (0, ``high``) where given), else one line."""
    try:
        return check_real(value, name, low=0, high=high,
                          closed="both" if high is None else "neither")
    except InvalidInputError:
        what = ">= 0" if high is None else f"in (0, {high:g})"
        raise InputFileError(f"the design's noise: {name!r} must be a finite number {what}; "
                             f"got {value!r}") from None


def decided_noise(dp_devices: Sequence[Hashable], *, base: float, delta: float,
                  epsilon: float | None, source: str,
                  levels: Mapping[Hashable, float] | None = None) -> DesignNoise:
    """The noise record of a design: ``levels`` where given, else ``base``, never below it.

    Parameters
    ----------
    dp_devices : sequence
        The design's DP devices, in node order.
    base : float >= 0
        The z the user's epsilon and delta call for (the workload's, else the
        predictor's or training's default).
    delta : float
    epsilon : float or None
        The epsilon per round the user asked for (None: not asked).
    source : str
        Where the levels come from, in words.
    levels : mapping, optional
        Device -> z chosen above ``base`` (a stranger bound's); a level below
        ``base`` is raised to it, so that no device adds less noise than the
        user's epsilon calls for.

    Examples
    --------
    >>> decided_noise(["A"], base=3.73, delta=1e-5, epsilon=1.0, source="x",
    ...               levels={"A": 2.0}).noise_multipliers
    {'A': 3.73}
    """
    levels = {} if levels is None else levels
    return DesignNoise({device: max(float(levels.get(device, base)), float(base))
                        for device in dp_devices}, float(delta), epsilon, source)


def untold_source(base: float) -> str:
    """Where the noise of a design made without a workload comes from, in words: training's
    default epsilon, or the predictor's own noise multiplier ``base``.

    >>> untold_source(1.0)
    "the predictor's noise multiplier"
    """
    from .features import DEFAULT_NOISE_MULTIPLIER

    return ("training's default epsilon" if base == DEFAULT_NOISE_MULTIPLIER else
            "the predictor's noise multiplier")


def untold_noise(dp_devices: Sequence[Hashable], base: float | None = None) -> DesignNoise:
    """The noise record of a design made without a workload: every DP device at ``base``
    (a predictor's z; None: training's default, epsilon 1 per round at delta 1e-5).

    >>> noise = untold_noise(["A"])
    >>> round(noise.noise_multipliers["A"], 4), noise.source
    (3.7306, "training's default epsilon")
    """
    from .features import DEFAULT_NOISE_MULTIPLIER

    base = DEFAULT_NOISE_MULTIPLIER if base is None else float(base)
    return decided_noise(dp_devices, base=base, delta=DEFAULT_DELTA, epsilon=None,
                         source=untold_source(base))


def dp_in_node_order(topology: Any, net: Any) -> list[Hashable]:
    """The DP devices of ``topology`` in ``net``'s node order: the order of a noise record.

    >>> from topokit import load_example
    >>> toy = load_example("toy")
    >>> dp_in_node_order(toy.topology, toy)
    ['C', 'D', 'E']
    """
    return sorted(topology.dp_devices, key=net.index.__getitem__)
