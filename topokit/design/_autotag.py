"""AutoTag: DeepPrivacy's topology design (Ching et al., Sec. V-B and Algorithm 2).

:func:`autotag` builds one candidate topology per DP budget n = 0..|V| in
three construction phases (CGP, LCP, NEP) and picks, in the fourth (SSP), the
snapshot with the smallest pseudo training time G' x L over every snapshot of
every phase and every budget.  :class:`Design` holds the result, the best
snapshot per budget and, on request, the whole trace.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._jobs import worker_count
from ..errors import InvalidInputError
from ..kernels import available_memory as _available_memory  # tests patch it
from ..network.core import Network, Topology
from . import _autotag_kernels as _incremental
from ._autotag_plain import plain_budget
from .metrics import evaluate
from .noise import dp_in_node_order, untold_noise
from .predictor import GlobalIteratePredictor
from .result import PHASES, Candidate, Design, Trace

# Design and its parts live in .result; re-exported here, where they were first.
__all__ = ["autotag", "autotag_memory", "Design", "Candidate", "Trace", "PHASES"]

#: Relative tolerance under which two scores (SLS, CLS) or two pseudo times tie.
RTOL = _incremental.RTOL


@dataclass(frozen=True)
class _Problem:
    n_dev: int
    pi: NDArray[np.int64]
    pj: NDArray[np.int64]
    social: NDArray[np.bool_]
    t: NDArray[np.float64]
    deg_s: NDArray[np.float64]


def _problem(net: Network) -> _Problem:
    """Candidate pairs i < j (node order) with a finite delay, and what the scores need."""
    V = net.n_devices
    iu, ju = np.triu_indices(V, k=1)
    finite = np.isfinite(net.delay[iu, ju])
    pi = np.ascontiguousarray(iu[finite], dtype=np.int64)
    pj = np.ascontiguousarray(ju[finite], dtype=np.int64)
    adjacency = net.social_adjacency > 0
    return _Problem(
        n_dev=V,
        pi=pi,
        pj=pj,
        social=np.ascontiguousarray(adjacency[pi, pj]),
        t=np.ascontiguousarray(net.link_times[pi, pj], dtype=np.float64),
        deg_s=np.ascontiguousarray(adjacency.sum(axis=1), dtype=np.float64),
    )


class _Coefficients(NamedTuple):
    """The predictor's G' = coef_h H + coef_phi phi + intercept."""

    coef_h: float
    coef_phi: float
    intercept: float


def _linear_coefficients(predictor: GlobalIteratePredictor | None) -> _Coefficients:
    """The coefficients of the predictor's G' = c_H H + c_phi phi + b."""
    if predictor is None:
        predictor = GlobalIteratePredictor()
    if not isinstance(predictor, GlobalIteratePredictor):
        raise InvalidInputError(
            "AutoTag's incremental search needs a linear model of H and phi (eq. 15 or a "
            f"calibrated GlobalIteratePredictor); got {type(predictor).__name__}. Use "
            "predictor 'paper' or a file from topokit calibrate here; the default "
            "TrainingTimePredictor ranks topologies in evaluate, analyze and validate"
        )
    data = predictor.to_dict()  # raises NotFittedError for an unfitted U-predictor
    # A U-predictor is evaluated at U = 0, as evaluate() does without noise_variance.
    return _Coefficients(float(data["coef"][0]), float(data["coef"][1]), float(data["intercept"]))


def autotag_memory(n_devices: int, n_pairs: int, *, workers: int = 1, trace: bool = False,
                   exact: bool = True) -> int:
    """Bytes AutoTag allocates at most for ``n_pairs`` candidate pairs among ``n_devices``.

    Each running budget holds about ten |V| x |V| float arrays (Z, hitting times, weights,
    the Woodbury and inverse temporaries), three boolean ones and ten arrays over the
    pairs; the result of every budget keeps up to one snapshot per pair in six arrays,
    which dominates in exact mode (|V| + 1 budgets x |V|^2 / 2 pairs x 48 bytes: 0.4 GB
    at 256 devices, 24 GB at 1,000).  A trace concatenates them once more (ten columns).
    :func:`autotag` refuses, before allocating, a network that needs more than the
    memory available; the CLI checks the same estimate before it loads the file.

    >>> round(autotag_memory(1000, 499_500) / 1e9)  # every pair of 1,000 devices
    24
    """
    V, P = int(n_devices), int(n_pairs)
    per_budget_state = 10 * 8 * V * V + 3 * V * V + 75 * P
    problem = 25 * P + 16 * V * V  # the pair arrays and _problem's temporaries
    results = (V + 1) * P * 48 if exact else 0
    traced = (V + 1) * P * 80 if exact and trace else 0
    return workers * per_budget_state + problem + results + traced


def _check_memory(net: Network, workers: int, trace: bool, exact: bool) -> None:
    """Refuse, before allocating, a network too large for AutoTag in the memory available."""
    V = net.n_devices
    P = (int(np.count_nonzero(np.isfinite(net.delay))) - V) // 2
    needed = autotag_memory(V, P, workers=workers, trace=trace, exact=exact)
    available = _available_memory()
    if needed > available:
        mode = "exact AutoTag" if exact else "AutoTag"
        raise InvalidInputError(
            f"{mode} on {V} devices needs about {needed / 1e9:.1f} GB of memory but "
            f"{available / 1e9:.1f} GB is available: use topokit.optimize(net) instead, or "
            "autotag(net, nep_patience=...) (NEP early stopping), trace=False or fewer n_jobs"
        )


# ---------------------------------------------------------------------------------------------
# AutoTag
# ---------------------------------------------------------------------------------------------

def autotag(
    net: Network,
    predictor: GlobalIteratePredictor | None = None,
    *,
    n_jobs: int = 1,
    progress: Callable[[int, int], Any] | None = None,
    trace: bool = False,
    nep_patience: int | None = None,
    prune: bool = True,
) -> Design:
    """Design a communication topology with AutoTag (DeepPrivacy Algorithm 2).

    For every DP budget n = 0..|V| (at most n devices may add DP noise), AutoTag
    grows a topology G_c^n link by link in three phases and keeps every
    intermediate topology (a *snapshot*) as a candidate; SSP returns the
    connected snapshot with the smallest pseudo training time G'(H, phi) x L.

    Parameters
    ----------
    net : Network
        Its social graph must be connected.
    predictor : GlobalIteratePredictor, optional
        Predicts the global iterate G'; defaults to the paper's eq. (15).
    n_jobs : int, default=1
        Threads running budgets in parallel (-1: all cores).  The result does
        not depend on it.
    progress : callable, optional
        Called as ``progress(done, total)`` after each budget (total = |V| + 1),
        from the calling thread.  Nothing below the CLI prints.
    trace : bool, default=False
        Keep every snapshot in ``design.trace`` (see :class:`Trace`).
    nep_patience : int, optional
        Early stopping for large networks: end NEP after ``nep_patience``
        consecutive NEP snapshots that do not improve the budget's best pseudo
        time.  ``None`` (default) runs NEP until no pair is left, as the paper does.
    prune : bool, default=True
        Stop a budget's trajectory once a bound proves that no later snapshot
        can beat that budget's best so far (see *Speed*).  The design, the
        candidates and their pseudo times are the same as without; only the
        work counted in ``stats`` shrinks.  Ignored with ``trace=True``, which
        records every snapshot.

    Returns
    -------
    Design

    Raises
    ------
    DisconnectedGraphError
        If the social graph is not connected.
    InvalidInputError
        If the run would need more memory than is available (checked before
        allocating; the message names the alternatives).

    Notes
    -----
    Candidate pairs are the unordered pairs i < j (no self-pairs) with a finite
    delay.  A pair outside G_s is added only if the DP set N stays within n,
    ``|N u {i, j}| <= n``; both ends then join N.  Otherwise it is discarded for
    the rest of the phase.  t_ij = d_ij + max(r_i, r_j).  Per budget:

    - **CGP** picks the pair with the lowest degree sum in G_c^n, then a social
      pair before a non-social one, then the smaller t_ij.  *Connectivity rule
      (ours):* CGP runs the paper's loop while |E_c^n| < |V| and candidates
      remain; if G_c^n is then disconnected it goes on, with the same order,
      over the candidates that join two different components only, until G_c^n
      is connected or none is left.  Since G_s is connected and social links are
      never discarded, CGP ends connected whenever every social link has a
      finite delay (a G_s that is a tree and n <= 1 make CGP exhaust its list,
      which the paper's ``while |E_c| < |V|`` never would).
    - **LCP** starts from every pair not in E_c^n (pairs discarded by CGP come
      back) and, while |N| < n and pairs remain, adds the pair with the largest
      SLS (eq. 16).  The stop rule |N| < n is kept literally: at n = 1 it is
      never met (a non-social link adds two DP devices), so LCP adds every
      remaining social link, in SLS order, and discards every non-social pair.
    - **NEP** starts again from every pair not in E_c^n and adds the pair with
      the largest CLS (eq. 17) until none is left (or ``nep_patience``).  A
      device with deg_c = 0 (possible only while G_c^n is disconnected; its
      pairs then have m = inf) counts as degree 1.
    - Hitting times are those of the current G_c^n, refreshed after every added
      link; N and E_c^n carry over from phase to phase.
    - **SSP** considers every snapshot of every phase and budget; disconnected
      snapshots (H = inf) are never chosen.  phi = |N| / |V|, N the ends of the
      non-social links in the snapshot.

    *Ties:* scores (and pseudo times) within a relative 1e-9 of the best are
    ties; the pair earliest in node order (``net.nodes``; smallest i, then j)
    wins, and SSP takes the earliest snapshot of the smallest budget.

    *Speed:* the fundamental matrix Z = (I - A + J/n)^{-1} is updated by a
    Sherman-Morrison-Woodbury step when a link is added (adding a link changes
    the weights of the links at its two ends only); the run of discarded
    pairs between two added links (scores do not change in between) is found
    in one pass instead of one rescan per discard; a budget whose decisions
    all agree with a budget already run (every DP check and LCP stop is
    decided the same way) is not run again but copied.  The result is the same
    as recomputing everything (tests compare with a straightforward
    implementation step by step).  Each budget is O(|V|^2) steps of O(|V|^2 r)
    work (r links whose weight changes); |V| = 128 takes about a minute.
    While it runs, BLAS is limited to one thread (threadpoolctl).

    *Stopping early* (``prune``): along a budget's trajectory L and phi never
    decrease, and H of every graph the trajectory can still reach is at least
    max_j (|V|-1)^2 / (|V| C_j), C_j the largest total Lazy-Metropolis weight
    node j can still get (Aldous & Fill's bound on the hitting time of j from
    stationarity), and at least 2(|V|-1).  Every |V|/16 snapshots, once
    (c_H H_lo + c_phi phi + b) L reaches the budget's best pseudo time so far,
    no later snapshot can change the budget's minimum or the snapshot SSP
    takes, and the trajectory stops: candidates, design and ties are those of
    the full run.  Memory is checked first: a network whose exact run would
    not fit in the memory available is refused with the alternatives.

    Examples
    --------
    >>> from topokit import load_example
    >>> design = autotag(load_example("toy"))
    >>> design.metrics.connected, len(design.candidates)
    (True, 7)
    """
    progress = _check_arguments(net, nep_patience, progress)
    workers = worker_count(n_jobs)
    if not isinstance(prune, (bool, np.bool_)):
        raise InvalidInputError(f"prune must be True or False; got {prune!r}")
    coefficients = _linear_coefficients(predictor)
    _check_memory(net, workers, trace, exact=nep_patience is None)
    problem = _problem(net)
    started = time.perf_counter()
    if problem.n_dev == 1:  # nothing to link
        return _single_device_design(net, predictor, progress, started)

    patience = -1 if nep_patience is None else int(nep_patience)
    prune_every = _prune_every(problem.n_dev) if prune and not trace else 0
    results = _run_all_budgets(problem, coefficients, patience, workers, progress, prune_every)
    selection = _select(results)
    candidates = _candidates(net, problem, predictor, results, selection.steps)
    stats = _stats(problem, results, started)
    chosen = candidates[selection.n].topology
    return Design(
        topology=chosen,
        metrics=candidates[selection.n].metrics,
        candidates=candidates,
        n=selection.n,
        trace=_trace(net, problem, results) if trace else None,
        stats=stats,
        noise=untold_noise(dp_in_node_order(chosen, net)),
    )


def _check_arguments(net: Any, nep_patience: Any, progress: Any) -> Callable | None:
    """Check autotag's net, nep_patience and progress; returns ``progress`` (False -> None)."""
    if not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit.Network; got {type(net).__name__}")
    net.require_connected()
    if nep_patience is not None and (
        not isinstance(nep_patience, (int, np.integer)) or isinstance(nep_patience, bool)
        or nep_patience < 1
    ):
        raise InvalidInputError(
            f"nep_patience must be a positive integer or None; got {nep_patience!r}"
        )
    if progress is False:  # the CLI's "no progress bar"
        progress = None
    if progress is not None and not callable(progress):
        raise InvalidInputError("progress must be a callable progress(done, total) or None")
    return progress


def _single_device_design(net: Network, predictor: GlobalIteratePredictor | None,
                          progress: Callable | None, started: float) -> Design:
    """One device: the empty topology for both budgets n = 0, 1."""
    empty = Topology((), ())
    metrics = evaluate(net, empty, predictor)
    candidates = tuple(Candidate(n=n, topology=empty, metrics=metrics, phase="CGP", step=-1)
                       for n in range(2))
    if progress is not None:
        progress(2, 2)
    return Design(topology=empty, metrics=metrics, candidates=candidates, n=0,
                  stats={"n_devices": 1, "seconds": time.perf_counter() - started},
                  noise=untold_noise([]))


# ---------------------------------------------------------------------------------------------
# SSP and the Design
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _BudgetResult:
    """One budget's trajectory; ``repeated`` if it was copied from a budget that decides alike."""

    run: _incremental.BudgetRun
    repeated: bool


class _Selection(NamedTuple):
    """SSP's choice: the budget n, and per budget its best snapshot (None: none connected)."""

    n: int
    steps: tuple[int | None, ...]


def _first_within(values: NDArray[np.float64], low: float) -> int:
    """The tie rule: the first entry within a relative RTOL of the minimum ``low``."""
    return int(np.flatnonzero(values <= low + RTOL * abs(low))[0])


def _select(results: list[_BudgetResult]) -> _Selection:
    """SSP: the best snapshot of every budget, then the budget with the smallest pseudo time."""
    steps: list[int | None] = []
    best_values = np.full(len(results), np.inf)
    for n, result in enumerate(results):
        pseudo = result.run.pseudo_time
        finite = pseudo[np.isfinite(pseudo)]
        if finite.size:
            low = float(finite.min())
            best_values[n] = low
            steps.append(_first_within(pseudo, low))
        else:
            steps.append(None)
    overall = float(best_values.min())
    if not np.isfinite(overall):  # only possible with infinite delays on social links
        raise InvalidInputError(
            "no connected topology uses only finite-delay links allowed by DeepPrivacy: "
            "some social links have infinite delay and no DP budget can replace them"
        )
    return _Selection(n=_first_within(best_values, overall), steps=tuple(steps))


def _candidates(net: Network, problem: _Problem, predictor: GlobalIteratePredictor | None,
                results: list[_BudgetResult], steps: tuple[int | None, ...]
                ) -> tuple[Candidate, ...]:
    """Every budget's best snapshot as a Candidate (its last snapshot if none is connected)."""
    candidates = []
    for n, (result, step) in enumerate(zip(results, steps, strict=True)):
        accepted, phases = result.run.accepted, result.run.phase
        if step is None:
            step = len(accepted) - 1
        topology = _snapshot_topology(net, problem, accepted[: step + 1])
        candidates.append(Candidate(
            n=n,
            topology=topology,
            metrics=evaluate(net, topology, predictor),
            phase=PHASES[int(phases[step])] if len(phases) else "CGP",
            step=int(step),
        ))
    return tuple(candidates)


def _stats(problem: _Problem, results: list[_BudgetResult], started: float) -> dict[str, Any]:
    """The work done (:attr:`Design.stats`); repeated budgets cost nothing."""
    runs = [result.run for result in results if not result.repeated]
    return {
        "n_devices": problem.n_dev,
        "n_pairs": int(problem.pi.shape[0]),
        "trajectories": len(runs),
        "repeated_budgets": len(results) - len(runs),
        "snapshots": int(sum(len(result.run.accepted) for result in results)),
        "woodbury_updates": int(sum(run.n_woodbury for run in runs)),
        "fresh_inverses": int(sum(run.n_fresh for run in runs)),
        "stopped_trajectories": int(sum(bool(run.pruned) for run in runs)),
        "seconds": time.perf_counter() - started,
    }


def _snapshot_topology(net: Network, problem: _Problem, accepted: NDArray[np.int64]) -> Topology:
    nodes = net.nodes
    edges = [(nodes[problem.pi[k]], nodes[problem.pj[k]]) for k in accepted]
    dp = {nodes[x] for k in accepted if not problem.social[k]
          for x in (problem.pi[k], problem.pj[k])}
    return Topology(edges, dp)


def _trace(net: Network, problem: _Problem, results: list[_BudgetResult]) -> Trace:
    columns: dict[str, list] = {key: [] for key in
                                ("n", "phase", "step", "pseudo", "H", "phi", "L", "u", "v")}
    for n, result in enumerate(results):
        run = result.run
        size = len(run.accepted)
        columns["n"].append(np.full(size, n, dtype=np.int64))
        columns["phase"].append(run.phase)
        columns["step"].append(np.arange(size, dtype=np.int64))
        columns["pseudo"].append(run.pseudo_time)
        columns["H"].append(run.hitting_time)
        columns["phi"].append(run.phi)
        columns["L"].append(run.local_iterate)
        columns["u"].append(problem.pi[run.accepted])
        columns["v"].append(problem.pj[run.accepted])
    cat = {key: np.concatenate(value) if value else np.empty(0) for key, value in columns.items()}
    return Trace(
        nodes=tuple(net.nodes), n=cat["n"].astype(np.int64), phase=cat["phase"].astype(np.int64),
        step=cat["step"].astype(np.int64), pseudo_time=cat["pseudo"], hitting_time=cat["H"],
        phi=cat["phi"], local_iterate=cat["L"], u=cat["u"].astype(np.int64),
        v=cat["v"].astype(np.int64),
    )


# ---------------------------------------------------------------------------------------------
# Running the budgets
# ---------------------------------------------------------------------------------------------

def _rank_limit(V: int) -> int:
    # Woodbury costs ~2 V^2 r flops, a fresh inverse ~2 V^3 plus LU overhead: measured
    # break-even near r = V at V = 64..128.
    return max(8, V)


#: Fresh inverse after this many Woodbury updates (bounds round-off drift; see tests).
REFRESH_EVERY = 100


def _prune_every(V: int) -> int:
    # The bound costs O(|V|^2 log |V|), a snapshot O(|V|^2 r) with r ~ 0.4 |V| on SIoT
    # networks: checking every |V| / 16 snapshots costs a few percent.
    return max(1, V // 16)


#: Up to this many devices AutoTag runs its budgets as plain Python loops
#: (``topokit.design._autotag_plain``, 1-25 ms a network) instead of the compiled kernel,
#: whose first compile costs about 25 s of CPU; beyond, the kernel's speed pays for it
#: (at 16 devices the loops take 0.1 s against the kernel's 0.01 s).
PLAIN_MAX_DEVICES = 12


def _run_one(problem: _Problem, n: int, coefficients: _Coefficients,
             patience: int, prune_every: int = 0) -> _incremental.BudgetRun:
    V = problem.n_dev
    if 1 < V <= PLAIN_MAX_DEVICES:
        return plain_budget(n, V, problem.pi, problem.pj, problem.social, problem.t,
                            problem.deg_s, coefficients.coef_h, coefficients.coef_phi,
                            coefficients.intercept, patience)
    if V == 1:
        empty_i = np.empty(0, dtype=np.int64)
        empty_f = np.empty(0)
        return _incremental.BudgetRun(empty_i, empty_i, empty_f, empty_f, empty_f, empty_f,
                                      lo=0, hi=2, n_fresh=0, n_woodbury=0)
    return _incremental.run_budget(
        n, V, problem.pi, problem.pj, problem.social, problem.t, problem.deg_s,
        coefficients.coef_h, coefficients.coef_phi, coefficients.intercept, patience,
        _rank_limit(V), REFRESH_EVERY, prune_every,
    )


class _BudgetTable:
    """The results of budgets 0..|V| as runs arrive, and the progress reports.

    A run of budget n also fills every budget in its interval [lo, hi): those
    take the same decisions at every step, so their trajectory is the same.
    Only the calling thread adds runs (and so calls ``progress``).
    """

    def __init__(self, total: int, progress: Callable[[int, int], Any] | None) -> None:
        self.results: list[_BudgetResult | None] = [None] * total
        self._progress = progress
        self._reported = 0

    def has(self, n: int) -> bool:
        return self.results[n] is not None

    def add(self, n: int, run: _incremental.BudgetRun) -> None:
        filled = 0
        if self.results[n] is None:
            self.results[n] = _BudgetResult(run, repeated=False)
            filled += 1
        for other in range(max(int(run.lo), 0), min(int(run.hi), len(self.results))):
            if self.results[other] is None:
                self.results[other] = _BudgetResult(run, repeated=True)
                filled += 1
        self._reported += filled
        if self._progress is not None and filled:
            self._progress(self._reported, len(self.results))


def _budget_order(V: int) -> list[int]:
    """0, |V|, 1, |V|-1, ...: the extremes tend to cover wide intervals."""
    order = []
    a, b = 0, V
    while a <= b:
        order.append(a)
        if b != a:
            order.append(b)
        a, b = a + 1, b - 1
    return order


def _run_all_budgets(problem: _Problem, coefficients: _Coefficients, patience: int,
                     workers: int, progress: Callable[[int, int], Any] | None,
                     prune_every: int = 0) -> list[_BudgetResult]:
    """The result of every budget 0..|V|, each run once or copied from a run that covers it."""
    from .._blas import one_blas_thread

    V = problem.n_dev
    table = _BudgetTable(V + 1, progress)

    def run(n: int) -> _incremental.BudgetRun:
        return _run_one(problem, n, coefficients, patience, prune_every)

    # One BLAS thread per worker: the kernels' small GEMMs and inverses gain nothing from
    # more, and on a loaded machine multi-threaded BLAS on small matrices can be 10x slower.
    with one_blas_thread():
        if workers == 1 or V < 8:
            for n in _budget_order(V):
                if not table.has(n):
                    table.add(n, run(n))
        else:
            _run_in_threads(table, _budget_order(V), run, workers)
    return table.results


def _run_in_threads(table: _BudgetTable, order: list[int],
                    run: Callable[[int], _incremental.BudgetRun], workers: int) -> None:
    """Run the budgets of ``order`` not yet covered on ``workers`` threads.

    A budget started in parallel may duplicate one covered meanwhile: results stay identical.
    """
    pending = deque(order)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        running: dict[Future, int] = {}

        def submit_next() -> bool:
            while pending:
                n = pending.popleft()
                if not table.has(n) and n not in running.values():
                    running[pool.submit(run, n)] = n
                    return True
            return False

        for _ in range(workers):
            if not submit_next():
                break
        while running:
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                n = running.pop(future)
                table.add(n, future.result())
                submit_next()
