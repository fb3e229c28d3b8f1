"""What a topology design returns: :class:`Design`, with the best snapshot of every
DP budget (:class:`Candidate`) and, on request, AutoTag's whole :class:`Trace`.

Every design method returns a :class:`Design`: :func:`topokit.autotag`,
:func:`topokit.optimize` and the baselines' exhaustive
:func:`~topokit.design.baselines.optimum`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._io import jsonable
from ..network.core import Topology
from .metrics import Metrics

__all__ = ["Design", "Candidate", "Trace", "PHASES"]

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
        (its name or path and its full JSON record); None for eq. (15) as
        :func:`autotag` uses it by default.
    """

    topology: Topology
    metrics: Metrics
    candidates: tuple[Candidate, ...]
    n: int
    trace: Trace | None = None
    stats: dict = field(default_factory=dict, compare=False, hash=False)
    predictor: dict | None = field(default=None, compare=False, hash=False)

    @property
    def dp_budget(self) -> int:
        """The chosen DP budget (the same as :attr:`n`)."""
        return self.n

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
        if include_timings:
            data["timings"] = {"seconds": self.stats.get("seconds")}
        return data

    def to_frame(self):
        """A pandas DataFrame with one row per budget n: the candidate's metrics."""
        import pandas as pd

        rows = []
        for c in self.candidates:
            row = {"n": c.n, "phase": c.phase, "step": c.step, "chosen": c.n == self.n}
            row.update(c.metrics.to_dict())
            rows.append(row)
        return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# The problem as arrays
# ---------------------------------------------------------------------------------------------
