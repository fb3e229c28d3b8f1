"""What a topology design returns: :class:`Design`, with the best snapshot of every
DP budget (:class:`Candidate`) and, on request, AutoTag's whole :class:`Trace`.

Every design method returns a :class:`Design`: :func:`topokit.autotag`,
:func:`topokit.optimize` and the baselines' exhaustive
:func:`~topokit.design.baselines.optimum`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_output_path
from .._io import jsonable, read_json_file, write_json
from ..errors import InputFileError, TopokitError
from ..network.core import Topology
from .metrics import Metrics
from .noise import DesignNoise

__all__ = ["Design", "Candidate", "Trace", "PHASES", "load_design", "DESIGN_FORMAT"]

#: The ``"format"`` of a design file written by :meth:`Design.save` (and ``topokit design -o``).
DESIGN_FORMAT = "topokit.design"

#: Names of the construction phases, indexed by the phase codes of the trace.
PHASES = ("CGP", "LCP", "NEP")


@dataclass(frozen=True)
class Candidate:
    """The best snapshot of one DP budget n (SSP's G_c^n).

    Attributes
    ----------
    n : int
        The DP budget (at most n devices may be ends of non-social links).
    topology : Topology
    metrics : Metrics
        From :func:`topokit.evaluate`; ``pseudo_time`` is ``inf`` if no
        snapshot of this budget was connected.
    phase : str
        "CGP", "LCP" or "NEP": the phase that added the snapshot's last link.
    step : int
        Index of the snapshot in the budget's trajectory (0 = first link).
    """

    n: int
    topology: Topology
    metrics: Metrics
    phase: str
    step: int

    @property
    def dp_budget(self) -> int:
        """The DP budget n (``n`` is its name in the paper's Algorithm 2)."""
        return self.n

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "phase": self.phase, "step": self.step,
                "topology": self.topology.to_dict(), "metrics": self.metrics.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Candidate:
        """The candidate of :meth:`to_dict`."""
        return cls(n=int(data["n"]), topology=Topology.from_dict(data["topology"]),
                   metrics=_metrics(data["metrics"]), phase=str(data["phase"]),
                   step=int(data["step"]))


@dataclass(frozen=True, eq=False)
class Trace:
    """Every snapshot of every budget: one row per (budget n, added link).

    Arrays of shape (n_snapshots,): ``n`` (budget), ``phase`` (index into
    :data:`PHASES`), ``step`` (index within the budget), ``pseudo_time``,
    ``hitting_time``, ``phi``, ``local_iterate``, ``n_links`` and the added
    link's ends ``u``, ``v`` (node ids in ``nodes``).
    """

    nodes: tuple
    n: NDArray[np.int64]
    phase: NDArray[np.int64]
    step: NDArray[np.int64]
    pseudo_time: NDArray[np.float64]
    hitting_time: NDArray[np.float64]
    phi: NDArray[np.float64]
    local_iterate: NDArray[np.float64]
    u: NDArray[np.int64]
    v: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.n.shape[0])

    def to_frame(self):
        """A pandas DataFrame with one row per snapshot."""
        import pandas as pd

        nodes = np.empty(len(self.nodes), dtype=object)
        nodes[:] = list(self.nodes)
        return pd.DataFrame({
            "n": self.n,
            "phase": np.asarray(PHASES, dtype=object)[self.phase],
            "step": self.step,
            "n_links": self.step + 1,
            "u": nodes[self.u],
            "v": nodes[self.v],
            "hitting_time": self.hitting_time,
            "phi": self.phi,
            "local_iterate": self.local_iterate,
            "pseudo_time": self.pseudo_time,
        })

    def to_dict(self) -> dict[str, list]:
        frame = self.to_frame()
        return {column: jsonable(frame[column].to_numpy()) for column in frame.columns}


@dataclass(frozen=True)
class Design:
    """What :func:`autotag`, :func:`topokit.optimize` or :func:`topokit.baselines.optimum` chose.

    Attributes
    ----------
    topology : Topology
        The chosen communication topology G_c with its DP devices (the ends of
        its non-social links).
    metrics : Metrics
        ``evaluate(net, topology, predictor)``.
    candidates : tuple of Candidate
        The best snapshot of every budget n = 0..|V| (index = n).
    n : int
        The DP budget whose candidate was chosen (also :attr:`dp_budget`:
        ``n`` is a node count elsewhere in topokit, a budget only here, after
        the paper's Algorithm 2).
    trace : Trace or None
        Every snapshot, when requested with ``trace=True``.
    stats : dict
        Work done: trajectories run, budgets skipped as repeats, Woodbury
        updates, fresh inverses, and the wall-clock ``seconds``.
    predictor : dict or None
        The predictor that judged the design: ``{"name": ..., "record": ...}``
        (its name or path and its full JSON record, and under ``"settings"``
        the training settings it judged at, where they differ from the
        record's); None for eq. (15) as :func:`autotag` uses it by default.
        :meth:`judge` rebuilds it, so that every surface predicts the design's
        own time.
    noise : DesignNoise or None
        Each DP device's noise multiplier, decided once from the user's
        epsilon and delta (:mod:`topokit.design.noise`): what training, the
        exports and the audit of this design use.
    """

    topology: Topology
    metrics: Metrics
    candidates: tuple[Candidate, ...]
    n: int
    trace: Trace | None = None
    stats: dict = field(default_factory=dict, compare=False, hash=False)
    predictor: dict | None = field(default=None, compare=False, hash=False)
    noise: DesignNoise | None = field(default=None, compare=False, hash=False)

    @property
    def dp_budget(self) -> int:
        """The chosen DP budget (the same as :attr:`n`)."""
        return self.n

    @property
    def noise_multipliers(self) -> dict:
        """DP device -> the noise multiplier it trains with (:attr:`noise`; empty without).

        >>> from topokit import load_example, optimize
        >>> optimize(load_example("toy"), seed=0).noise_multipliers
        {}
        """
        return {} if self.noise is None else dict(self.noise.noise_multipliers)

    def judge(self) -> Any:
        """The predictor that judged this design, at the settings it judged at.

        ``evaluate(net, design.topology, design.judge())`` gives
        :attr:`metrics` again: the one predicted time of this design,
        whichever surface shows it.

        >>> from topokit import evaluate, load_example, optimize
        >>> net = load_example("toy")
        >>> design = optimize(net, seed=0)
        >>> evaluate(net, design.topology, design.judge()).pseudo_time == design.metrics.pseudo_time
        True
        """
        return recorded_judge(self.predictor)

    def __repr__(self) -> str:
        """One line: what was chosen and by what; the full record is :meth:`to_dict`.

        >>> from topokit import load_example, optimize
        >>> optimize(load_example("toy"), seed=0)
        Design(7 links, 0 DP devices, pseudo_time=331.3 s, predictor='default', 7 candidates)
        """
        judged = "eq. (15)" if self.predictor is None else self.predictor.get("name")
        return (f"Design({self.metrics.n_links} links, {self.metrics.n_dp_devices} DP devices, "
                f"pseudo_time={self.metrics.pseudo_time:.4g} s, predictor={judged!r}, "
                f"{len(self.candidates)} candidates)")

    def to_dict(self, *, include_timings: bool = False) -> dict[str, Any]:
        """JSON-ready: topology, metrics, candidates (and trace columns if recorded).

        Results only, so that the same input gives the same bytes: the
        wall-clock ``seconds`` is left out of ``stats`` unless
        ``include_timings``, which adds it under ``"timings"``.  Non-finite
        numbers become None (see :mod:`topokit._io`).
        """
        data = {
            "topology": self.topology.to_dict(),
            "metrics": self.metrics.to_dict(),
            "n": self.n,
            "candidates": [c.to_dict() for c in self.candidates],
            "stats": jsonable({k: v for k, v in self.stats.items() if k != "seconds"}),
        }
        if self.trace is not None:
            data["trace"] = self.trace.to_dict()
        if self.predictor is not None:
            data["predictor"] = jsonable(self.predictor)
        if self.noise is not None:
            data["noise"] = jsonable(self.noise.to_dict())
        if include_timings:
            data["timings"] = {"seconds": self.stats.get("seconds")}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Design:
        """The design of :meth:`to_dict` (or of a ``topokit design -o`` file).

        The trace of every snapshot is not read back (``trace`` is None);
        keys that ``topokit design`` adds (the network's name, the baselines'
        columns) are ignored.

        Raises
        ------
        InputFileError
            A key missing or of the wrong kind, named.
        """
        if not isinstance(data, Mapping):
            raise InputFileError(f"a design must be a JSON object; got {type(data).__name__}")
        missing = [key for key in ("topology", "metrics", "n") if key not in data]
        if missing:
            raise InputFileError(f"not a design: no {missing[0]!r} key (write one with "
                                 "Design.save or topokit design -o)")
        try:
            topology = Topology.from_dict(data["topology"])
            noise = data.get("noise")
            return cls(
                topology=topology, metrics=_metrics(data["metrics"]),
                candidates=tuple(Candidate.from_dict(c) for c in data.get("candidates", [])),
                n=int(data["n"]), stats=dict(data.get("stats") or {}),
                predictor=data.get("predictor"),
                noise=None if noise is None else DesignNoise.from_dict(
                    noise, list(topology.dp_devices)))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputFileError(f"a design's record is malformed ({type(exc).__name__}: "
                                 f"{exc}); write it with Design.save or topokit design -o"
                                 ) from None

    def save(self, path: str | os.PathLike) -> Path:
        """Write the design as JSON to ``path`` (atomically); :func:`load_design` reads it.

        The same design gives the same bytes (wall-clock times are left out).

        >>> import tempfile, pathlib
        >>> from topokit import load_example, optimize
        >>> design = optimize(load_example("toy"), seed=0)
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "design.json"
        >>> load_design(design.save(path)).topology == design.topology
        True
        """
        target = check_output_path(path, "path")
        return write_json(target, {"format": DESIGN_FORMAT, **self.to_dict()})

    def to_frame(self):
        """A pandas DataFrame with one row per budget n: the candidate's metrics."""
        import pandas as pd

        rows = []
        for c in self.candidates:
            row = {"n": c.n, "phase": c.phase, "step": c.step, "chosen": c.n == self.n}
            row.update(c.metrics.to_dict())
            rows.append(row)
        return pd.DataFrame(rows)


def _metrics(data: Any) -> Metrics:
    """Metrics from their JSON record (None, JSON's non-finite number, back to inf)."""
    if not isinstance(data, Mapping):
        raise InputFileError(f"a design's 'metrics' must be an object; got {type(data).__name__}")
    known = [f.name for f in fields(Metrics)]
    missing = [name for name in known[:11] if name not in data]  # the fields without default
    if missing:
        raise InputFileError(f"a design's 'metrics' has no {missing[0]!r}; write the design "
                             "with Design.save or topokit design -o")
    values = {key: (float("inf") if value is None else value)
              for key, value in data.items() if key in known}
    return Metrics(**values)


def recorded_judge(description: Mapping[str, Any] | None) -> Any:
    """The predictor a design records (``Design.predictor``), at the settings it judged at.

    None (eq. 15 as :func:`autotag` uses it) gives the paper's predictor.
    """
    from .predictor import GlobalIteratePredictor
    from .time_predictor import KIND, TrainingTimePredictor

    if description is None:
        return GlobalIteratePredictor()
    record = description.get("record") if isinstance(description, Mapping) else None
    kind = record.get("kind") if isinstance(record, Mapping) else None
    if kind == KIND:
        predictor = TrainingTimePredictor.from_dict(record)
        settings = description.get("settings")
        if settings is not None:
            from .features import FeatureSettings

            predictor = predictor.set_params(settings=FeatureSettings.from_dict(dict(settings)))
        return predictor
    if kind == "topokit.GlobalIteratePredictor":
        return GlobalIteratePredictor.from_dict(dict(record))
    raise InputFileError("the design's 'predictor' must be {'name': ..., 'record': a "
                         "predictor's JSON} as topokit design writes it; got another object")


def load_design(path: str | os.PathLike) -> Design:
    """Read a design written by :meth:`Design.save` or ``topokit design -o``.

    Parameters
    ----------
    path : path

    Returns
    -------
    Design
        Its topology, metrics, candidates, stats, predictor and noise (the
        trace of every snapshot is not stored).

    Raises
    ------
    InputFileNotFoundError
        No file there.
    InputFileError
        Not JSON, or not a design (a plain topology or network file is named
        as such); the message names the file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from topokit import load_example, optimize
    >>> design = optimize(load_example("toy"), seed=0)
    >>> path = design.save(pathlib.Path(tempfile.mkdtemp()) / "design.json")
    >>> load_design(path).metrics.pseudo_time == design.metrics.pseudo_time
    True
    """
    path = Path(path)
    data = read_json_file(path, "design")
    if isinstance(data, dict) and "topology" not in data:
        what = ("a network file" if "nodes" in data else
                "a topology file" if "edges" in data else "not a design")
        raise InputFileError(f"{path}: {what}, not a design (no \"topology\" key); write one "
                             "with Design.save or topokit design -o")
    try:
        return Design.from_dict(data)
    except TopokitError as exc:
        raise InputFileError(f"{path}: {exc}") from None

