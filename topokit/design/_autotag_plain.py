"""AutoTag's budgets as the pseudocode reads, for networks too small to pay for a compile.

:func:`plain_budget` runs Algorithm 2 (CGP, LCP, NEP) for one DP budget with plain
Python sets and a fresh hitting-time matrix after every added link: O(|V| P^2)
Python steps for P candidate pairs.  The compiled trajectory of
:mod:`topokit.design._autotag_kernels` (Woodbury updates, shared trajectories, the
stopping bound) is hundreds of times faster on large networks, but compiling it
costs about 25 s of CPU the first time it runs; on a network of a dozen devices
this loop takes 1-25 ms.  :func:`topokit.autotag` therefore runs this one up to
``PLAIN_MAX_DEVICES`` devices (``python -m analyses.startup`` measures the first
design).  Both take the same decisions (the tests run them side by side, and this
is also the reference ``topokit.testing.naive_autotag`` checks the kernel against).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..kernels import unchecked
from ._autotag_kernels import PHASE_CGP, PHASE_LCP, PHASE_NEP, RTOL, BudgetRun

__all__ = ["plain_budget", "budget_snapshots", "hitting_matrix", "RTOL"]

_PHASE_CODES = {"CGP": PHASE_CGP, "LCP": PHASE_LCP, "NEP": PHASE_NEP}

Pair = tuple[int, int]
#: One snapshot: (phase, added pair, H, phi, L, pseudo time).
Snapshot = tuple[str, Pair, float, float, float, float]


def hitting_matrix(adjacency: NDArray[np.float64]) -> NDArray[np.float64]:
    """All hitting times of the Lazy-Metropolis walk on ``adjacency``: a fresh n x n inverse.

    The serial kernels behind ``topokit.hitting_times(topokit.lazy_metropolis(G))``
    (same arithmetic; ``inf`` between components).

    >>> hitting_matrix(np.array([[0.0, 1.0], [1.0, 0.0]])).tolist()
    [[0.0, 2.0], [2.0, 0.0]]
    """
    n = adjacency.shape[0]
    transition = np.empty((n, n))
    unchecked.lazy_metropolis_one(np.ascontiguousarray(adjacency, dtype=np.float64), transition)
    times = np.empty((n, n))
    unchecked.hitting_times_one(transition, times)
    return times


def _argmax_first(scores: list[tuple[float, Pair]]) -> Pair:
    """The pair of the best score; ties (within RTOL) go to the smallest pair."""
    best = max(s for s, _ in scores)
    limit = best if np.isinf(best) else best - RTOL * abs(best)
    return min(p for s, p in scores if s >= limit)


class _Walk:
    """The growing topology of one budget: links, DP devices, degrees and snapshots."""

    def __init__(self, V: int, n: int, t: NDArray[np.float64], social: set[Pair],
                 coefficients: tuple[float, float, float]) -> None:
        self.V, self.n, self.t, self.social = V, n, t, social
        self.coefficients = coefficients
        self.adjacency = np.zeros((V, V))
        self.E: list[Pair] = []
        self.N: set[int] = set()
        self.deg = np.zeros(V, dtype=int)
        self.snaps: list[Snapshot] = []
        self.M: NDArray[np.float64] | None = None
        self.best, self.stale = np.inf, 0

    def hitting_times(self) -> NDArray[np.float64]:
        if self.M is None:
            self.M = hitting_matrix(self.adjacency)
        return self.M

    def try_add(self, pair: Pair, phase: str) -> None:
        """Add ``pair`` if DeepPrivacy allows it: social, or within the DP budget n."""
        if pair in self.social or len(self.N | set(pair)) <= self.n:
            self._add(pair, phase)

    def _add(self, pair: Pair, phase: str) -> None:
        i, j = pair
        self.E.append(pair)
        self.adjacency[i, j] = self.adjacency[j, i] = 1.0
        self.deg[i] += 1
        self.deg[j] += 1
        if pair not in self.social:
            self.N.update(pair)
        self.M = hitting_matrix(self.adjacency)
        c_h, c_phi, intercept = self.coefficients
        H = float(self.M.max())
        phi = len(self.N) / self.V
        L = max(self.t[a, b] for a, b in self.E)
        pseudo = (c_h * H + c_phi * phi + intercept) * L if np.isfinite(H) else np.inf
        self.snaps.append((phase, pair, H, phi, L, pseudo))
        if pseudo < self.best * (1 - RTOL):
            self.best, self.stale = pseudo, 0
        else:
            self.stale += 1

    def components(self) -> list[int]:
        """A component label per device (union-find over the links)."""
        label = list(range(self.V))

        def find(x: int) -> int:
            while label[x] != x:
                label[x] = label[label[x]]
                x = label[x]
            return x

        for i, j in self.E:
            label[find(i)] = find(j)
        return [find(x) for x in range(self.V)]


def _cgp(walk: _Walk, pairs: list[Pair]) -> None:
    """CGP: the lowest-degree pairs until |V| links, then bridges until connected."""
    left = set(pairs)

    def key(p: Pair) -> tuple:
        return (walk.deg[p[0]] + walk.deg[p[1]], p not in walk.social, walk.t[p], p)

    while len(walk.E) < walk.V and left:
        pair = min(left, key=key)
        left.discard(pair)
        walk.try_add(pair, "CGP")
    while True:
        label = walk.components()
        if len(set(label)) == 1:
            return
        bridging = [p for p in left if label[p[0]] != label[p[1]]]
        if not bridging:
            return
        pair = min(bridging, key=key)
        left.discard(pair)
        walk.try_add(pair, "CGP")


def _scored(walk: _Walk, pairs: list[Pair], phase: str, score: Callable[[Pair], float],
            keep_going: Callable[[], bool]) -> None:
    """LCP or NEP: the pair of the largest score while ``keep_going()``."""
    left = set(pairs) - set(walk.E)
    while left and keep_going():
        M = walk.hitting_times()
        pair = _argmax_first([(max(M[i, j], M[j, i]) / score((i, j)), (i, j))
                              for i, j in left])
        left.discard(pair)
        walk.try_add(pair, phase)


def budget_snapshots(n: int, V: int, t: NDArray[np.float64], social: set[Pair],
                     pairs: list[Pair], deg_s: NDArray[np.float64],
                     coefficients: tuple[float, float, float],
                     nep_patience: int | None) -> tuple[list[Snapshot], list[Pair]]:
    """Algorithm 2 (CGP, LCP, NEP) for one budget ``n``: its snapshots and added pairs.

    ``t`` is the (V, V) matrix of link times, ``social`` and ``pairs`` hold pairs
    (i, j), i < j, in node-index order; ``coefficients`` are eq. (15)'s (H, phi,
    intercept).

    >>> V, t = 3, np.ones((3, 3))
    >>> snaps, added = budget_snapshots(0, V, t, {(0, 1), (1, 2)}, [(0, 1), (0, 2), (1, 2)],
    ...                                 np.array([1.0, 2.0, 1.0]), (1.0, 0.0, 0.0), None)
    >>> added  # no DP budget: the stranger pair (0, 2) is never allowed
    [(0, 1), (1, 2)]
    """
    walk = _Walk(V, n, t, social, coefficients)
    _cgp(walk, pairs)
    _scored(walk, pairs, "LCP", lambda p: t[p] * deg_s[p[0]] * deg_s[p[1]],
            lambda: len(walk.N) < n)
    walk.stale = 0

    def patient() -> bool:
        return nep_patience is None or walk.stale < nep_patience

    _scored(walk, pairs, "NEP", lambda p: t[p] * max(walk.deg[p[0]], 1) * max(walk.deg[p[1]], 1),
            patient)
    return walk.snaps, walk.E


def plain_budget(n: int, V: int, pi: NDArray[np.int64], pj: NDArray[np.int64],
                 social: NDArray[np.bool_], t: NDArray[np.float64], deg_s: NDArray[np.float64],
                 coef_h: float, coef_phi: float, intercept: float, patience: int) -> BudgetRun:
    """:func:`budget_snapshots` as the compiled ``run_budget`` returns a budget's run.

    Pairs are indices into ``pi``/``pj`` (their ``social`` flags and link
    times ``t``); ``patience < 0`` runs NEP to its end.  One budget per run
    (``lo = n``, ``hi = n + 1``), a fresh inverse per snapshot.
    """
    pairs = list(zip(pi.tolist(), pj.tolist(), strict=True))
    times = np.full((V, V), np.inf)
    times[pi, pj] = times[pj, pi] = t
    social_pairs = {pair for pair, is_social in zip(pairs, social.tolist(), strict=True)
                    if is_social}
    snaps, _ = budget_snapshots(n, V, times, social_pairs, pairs, deg_s,
                                (coef_h, coef_phi, intercept), None if patience < 0 else patience)
    index = {pair: k for k, pair in enumerate(pairs)}
    column = list(zip(*snaps, strict=True)) if snaps else [()] * 6
    return BudgetRun(
        accepted=np.array([index[pair] for pair in column[1]], dtype=np.int64),
        phase=np.array([_PHASE_CODES[phase] for phase in column[0]], dtype=np.int64),
        hitting_time=np.array(column[2], dtype=np.float64),
        phi=np.array(column[3], dtype=np.float64),
        local_iterate=np.array(column[4], dtype=np.float64),
        pseudo_time=np.array(column[5], dtype=np.float64),
        lo=n, hi=n + 1, n_fresh=len(snaps), n_woodbury=0, pruned=False,
    )
