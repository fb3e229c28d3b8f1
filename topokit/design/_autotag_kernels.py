"""Private Numba kernels for AutoTag: incremental fundamental matrix and one budget's run.

They never validate: :func:`topokit.autotag.autotag` builds the arrays.

Fundamental matrix
------------------
For the Lazy-Metropolis matrix A of a connected graph (symmetric, doubly
stochastic, so pi = 1/n), Z = (I - A + J/n)^{-1} and the hitting times are
m_ij = n (z_jj - z_ij) (Kemeny & Snell).  Adding the link (i, j) raises deg_i
and deg_j by one, so the weight a_ab = 1 / (2 max(deg_a, deg_b)) changes on the
new link and on the links (i, k), (j, k) whose max-degree grows.  A change
delta of the weight of link (a, b) changes A by -delta (e_a - e_b)(e_a - e_b)^T,
hence K = I - A + J/n by + delta b b^T: with r changed links,

.. math:: K' = K + B D B^T, \\qquad
          Z' = Z - Z B (D^{-1} + B^T Z B)^{-1} B^T Z

(Sherman-Morrison-Woodbury), O(n^2 r) instead of O(n^3).  When r is large (a
dense graph) or after ``refresh_every`` updates (to bound round-off drift), a
fresh inverse is taken instead.

One budget
----------
:func:`run_budget` runs AutoTag's CGP, LCP and NEP for one DP budget and
records every snapshot (a :class:`BudgetRun`).  Its state is a few NamedTuples
of arrays (the pairs, the growing graph, the fundamental matrix, the
candidate list, the snapshots) and its steps are small kernels: candidate
scores, add a link with its Woodbury update, record a snapshot.  Between two
added links the CGP keys and the SLS/CLS scores do not change, so the pairs
the paper's loop would pick and discard one at a time (non-social, budget
exceeded) are found in one pass (a sort of the scores when the best pair is
inadmissible), reproducing the loop exactly, including its tie rule.

Stopping a trajectory early
---------------------------
Along one budget's trajectory L (the largest t_ij of the links) and phi (the
share of DP devices) never decrease, so every later snapshot costs at least
(c_H H_lo + c_phi phi + b) L, where H_lo bounds from below the largest hitting
time of every graph the run can still reach (:func:`hitting_time_lower_bound`).
Once that is no smaller than the budget's best pseudo time so far, no later
snapshot can change the budget's minimum or which snapshot attains it first
(SSP's tie rule), so :func:`run_budget` stops (``prune_every`` > 0).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..kernels import NJIT_FLAGS
from ..kernels.unchecked import hitting_times_one, lazy_metropolis_one

RTOL = 1e-9  # relative tie tolerance for scores and pseudo times (see topokit.autotag)

PHASE_CGP = 0
PHASE_LCP = 1
PHASE_NEP = 2


# ---------------------------------------------------------------------------------------------
# Fundamental matrix
# ---------------------------------------------------------------------------------------------

@njit(**NJIT_FLAGS)
def fresh_fundamental(weights):
    """Z = (I - A + J/n)^{-1} for the symmetric off-diagonal weights of A (diagonal implied)."""
    n = weights.shape[0]
    K = np.empty((n, n))
    for a in range(n):
        row = 0.0
        for b in range(n):
            if a != b:
                row += weights[a, b]
                K[a, b] = -weights[a, b] + 1.0 / n
        K[a, a] = row + 1.0 / n  # 1 - a_aa + 1/n with a_aa = 1 - row
    return np.linalg.inv(K)


@njit(**NJIT_FLAGS)
def link_weight_changes(adjacency, degree, weights, i, j, ends_a, ends_b, deltas):
    """Weight changes caused by adding link (i, j) (not yet in ``adjacency``).

    Writes the changed links and their weight deltas into ``ends_a``, ``ends_b``,
    ``deltas`` and returns their number r (the new link first).
    """
    n = adjacency.shape[0]
    di = degree[i] + 1
    dj = degree[j] + 1
    r = 0
    ends_a[r] = i
    ends_b[r] = j
    deltas[r] = 1.0 / (2.0 * max(di, dj))
    r += 1
    for end in range(2):
        a = i if end == 0 else j
        da = di if end == 0 else dj
        for k in range(n):
            if adjacency[a, k]:
                new = 1.0 / (2.0 * max(da, degree[k]))
                delta = new - weights[a, k]
                if delta != 0.0:
                    ends_a[r] = a
                    ends_b[r] = k
                    deltas[r] = delta
                    r += 1
    return r


@njit(**NJIT_FLAGS)
def woodbury_update(Z, ends_a, ends_b, deltas, r):
    """Z <- (Z^{-1} + B D B^T)^{-1} in place, B[:, e] = e_a - e_b, D = diag(deltas[:r])."""
    n = Z.shape[0]
    ZB = np.empty((n, r))
    for e in range(r):
        a = ends_a[e]
        b = ends_b[e]
        for x in range(n):
            ZB[x, e] = Z[x, a] - Z[x, b]
    C = np.empty((r, r))
    for e in range(r):
        a = ends_a[e]
        b = ends_b[e]
        for f in range(r):
            C[e, f] = ZB[a, f] - ZB[b, f]
        C[e, e] += 1.0 / deltas[e]
    # Z is symmetric, so B^T Z = (Z B)^T.
    X = np.linalg.solve(C, np.ascontiguousarray(ZB.T))
    Z -= ZB @ X


@njit(**NJIT_FLAGS)
def apply_link(adjacency, degree, weights, i, j):
    """Add link (i, j) to the graph arrays and update the Lazy-Metropolis weights."""
    n = adjacency.shape[0]
    adjacency[i, j] = True
    adjacency[j, i] = True
    degree[i] += 1
    degree[j] += 1
    for end in range(2):
        a = i if end == 0 else j
        for k in range(n):
            if adjacency[a, k]:
                w = 1.0 / (2.0 * max(degree[a], degree[k]))
                weights[a, k] = w
                weights[k, a] = w


@njit(**NJIT_FLAGS)
def add_link_fundamental(Z, adjacency, degree, weights, i, j, rank_limit, scratch_a, scratch_b,
                         scratch_d):
    """Add link (i, j) and update Z by Woodbury; returns r, or -1 if Z was left stale.

    Z is updated only when r <= ``rank_limit``; otherwise the caller must take a
    fresh inverse (``fresh_fundamental(weights)``).
    """
    r = link_weight_changes(adjacency, degree, weights, i, j, scratch_a, scratch_b, scratch_d)
    apply_link(adjacency, degree, weights, i, j)
    if r > rank_limit:
        return -1
    woodbury_update(Z, scratch_a, scratch_b, scratch_d, r)
    return r


# ---------------------------------------------------------------------------------------------
# One budget of AutoTag
# ---------------------------------------------------------------------------------------------

@njit(**NJIT_FLAGS)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(**NJIT_FLAGS)
def _hitting_matrix(Z, out):
    """out[i, j] = m_ij = n (z_jj - z_ij); returns H = max m_ij."""
    n = Z.shape[0]
    H = 0.0
    for i in range(n):
        for j in range(n):
            if i == j:
                out[i, j] = 0.0
            else:
                m = n * (Z[j, j] - Z[i, j])
                out[i, j] = m
                if m > H:
                    H = m
    return H


@njit(**NJIT_FLAGS)
def _admissible(k, pi, pj, social, in_dp, n_dp, n_budget, bounds):
    """The DP rule |N u {i, j}| <= n for pair k; records the budget bounds it implies."""
    if social[k]:
        return True
    c = n_dp + (0 if in_dp[pi[k]] else 1) + (0 if in_dp[pj[k]] else 1)
    if c <= n_budget:
        bounds[0] = max(bounds[0], c)
        return True
    bounds[1] = min(bounds[1], c)
    return False


@njit(**NJIT_FLAGS)
def _cgp_before(k, q, pi, pj, social, t, degree):
    """CGP order: lower degree sum, then social first, then smaller t, then node order."""
    sk = degree[pi[k]] + degree[pj[k]]
    sq = degree[pi[q]] + degree[pj[q]]
    if sk != sq:
        return sk < sq
    if social[k] != social[q]:
        return social[k]
    if t[k] != t[q]:
        return t[k] < t[q]
    return k < q


@njit(**NJIT_FLAGS)
def _cgp_pick(active, pi, pj, social, t, degree, parent, stage_b, in_dp, n_dp, n_budget,
              bounds, ineligible):
    """CGP's next admissible pair, discarding (as the paper's loop would, one by one) every
    inadmissible candidate that comes before it; -1 if none is left.  In stage B only the
    pairs joining two components are candidates.  bounds[2] <- pairs still active."""
    P = pi.shape[0]
    chosen = -1
    n_bad = 0
    for k in range(P):
        if not active[k]:
            continue
        if stage_b and _find(parent, pi[k]) == _find(parent, pj[k]):
            continue
        if social[k] or n_dp + (0 if in_dp[pi[k]] else 1) + (0 if in_dp[pj[k]] else 1) <= n_budget:
            if chosen < 0 or _cgp_before(k, chosen, pi, pj, social, t, degree):
                chosen = k
        else:
            ineligible[n_bad] = k
            n_bad += 1
    for x in range(n_bad):
        k = ineligible[x]
        if chosen < 0 or _cgp_before(k, chosen, pi, pj, social, t, degree):
            _admissible(k, pi, pj, social, in_dp, n_dp, n_budget, bounds)  # records hi
            active[k] = False
    if chosen >= 0:
        _admissible(chosen, pi, pj, social, in_dp, n_dp, n_budget, bounds)  # records lo
    count = 0
    for k in range(P):
        if active[k]:
            count += 1
    bounds[2] = count
    return chosen


@njit(**NJIT_FLAGS)
def _score_pick(scores, active, pi, pj, social, in_dp, n_dp, n_budget, bounds):
    """LCP/NEP's next admissible pair: the paper's loop (argmax; discard if inadmissible;
    repeat) with the tie rule "scores within RTOL of the maximum tie, smallest pair index
    wins", reproduced exactly.  bounds[2] <- pairs still active; -1 if none is left."""
    P = scores.shape[0]
    top = -np.inf
    for k in range(P):
        if active[k] and scores[k] > top:
            top = scores[k]
    limit = top if np.isinf(top) else top - RTOL * abs(top)
    first = -1
    count = 0
    for k in range(P):
        if active[k]:
            count += 1
            if first < 0 and scores[k] >= limit:
                first = k
    bounds[2] = count
    if first < 0:
        return -1
    if _admissible(first, pi, pj, social, in_dp, n_dp, n_budget, bounds):
        return first
    # Discards: simulate the loop on the pairs sorted by decreasing score.
    active[first] = False
    count -= 1
    members = np.empty(count, dtype=np.int64)
    m = 0
    for k in range(P):
        if active[k]:
            members[m] = k
            m += 1
    order = members[np.argsort(-scores[members], kind="mergesort")]
    removed = np.zeros(m, dtype=np.bool_)
    head = 0
    while True:
        while head < m and removed[head]:
            head += 1
        if head == m:
            bounds[2] = 0
            return -1
        top = scores[order[head]]
        limit = top if np.isinf(top) else top - RTOL * abs(top)
        best_pos = -1
        q = head
        while q < m and scores[order[q]] >= limit:
            if not removed[q] and (best_pos < 0 or order[q] < order[best_pos]):
                best_pos = q
            q += 1
        k = order[best_pos]
        if _admissible(k, pi, pj, social, in_dp, n_dp, n_budget, bounds):
            bounds[2] = count
            return k
        removed[best_pos] = True
        active[k] = False
        count -= 1


# ---------------------------------------------------------------------------------------------
# A lower bound on the hitting times a trajectory can still reach
# ---------------------------------------------------------------------------------------------

#: Relative margin between the bound and the hitting times the kernels compute, so that
#: round-off in H (Woodbury drift: below 1e-9 in the tests, with a fresh inverse at least
#: every REFRESH_EVERY updates) can never make a stopped trajectory's snapshot beat the bound.
BOUND_MARGIN = 1e-6


@njit(**NJIT_FLAGS)
def _max_weight_sum(d_j, current, potential):
    """The largest sum_k a_jk node j can have in any later snapshot (0: j never gets a link).

    ``current[x]``: how many of j's neighbours have degree x now; ``potential[x]``: how
    many of the nodes j may still link to have degree x - 1 now (so at least x once
    linked).  With f = deg_j in that snapshot, a_jk = 1 / (2 max(f, deg_k)) and degrees
    never fall, so the sum is at most that over j's links now plus the f - d_j largest
    potential terms (the smallest degrees).  The maximum over f is one sweep over the two
    histograms: O(|V|) per node, no sorting.
    """
    top = current.shape[0]  # degrees are < top
    n_pot = 0
    for x in range(top):
        n_pot += potential[x]
    first = max(d_j, 1)
    n_cur = 0  # j's neighbours of degree <= f (each weighs 1/(2f))
    tail = 0.0  # the others' weights 1/(2 deg_k)
    below = 0  # potential degrees <= f
    below_sum = 0.0  # and their sum of 1/(2x)
    for x in range(1, top):
        if x <= first:
            n_cur += current[x]
            below += potential[x]
            below_sum += potential[x] * (0.5 / x)
        else:
            tail += current[x] * (0.5 / x)
    q = 0  # new links of j: the q smallest potential degrees
    smallest_sum = 0.0  # their sum of 1/(2x)
    value = 0  # the walk through the potential degrees in increasing order
    used = 0
    best = 0.0
    for f in range(first, d_j + n_pot + 1):
        if f > first and f < top:
            n_cur += current[f]
            tail -= current[f] * (0.5 / f)
            below += potential[f]
            below_sum += potential[f] * (0.5 / f)
        while q < f - d_j:
            while used == potential[value]:
                value += 1
                used = 0
            used += 1
            q += 1
            smallest_sum += 0.5 / value
        if q <= below:  # all q new neighbours have degree <= f
            total = (n_cur + q) * (0.5 / f) + tail
        else:
            total = (n_cur + below) * (0.5 / f) + tail + (smallest_sum - below_sum)
        if total > best:
            best = total
    return best


@njit(**NJIT_FLAGS)
def hitting_time_lower_bound(adjacency, degree, linkable, social_links, in_dp, n_dp, n_max):
    """A lower bound on H = max m_ij of every connected graph a trajectory can still reach.

    A later snapshot holds today's links plus pairs not yet linked that pass the DP rule
    of a budget <= ``n_max`` now (``linkable``: finite delay; a pair that fails the rule
    fails for good, as N only grows and an end that joins N adds to |N| the one it no
    longer adds to the pair's count), and no degree falls.  For every node j,
    E_pi T_j >= (1 - pi_j)^2 / (pi_j (1 - a_jj)) (Aldous & Fill, *Reversible Markov
    Chains*, ch. 3: the extremal characterisation of E_pi T_j with the test function
    1 - 1_j), and H >= max_i m_ij >= E_pi T_j; here pi_j = 1/V and
    1 - a_jj = sum_k a_jk <= :func:`_max_weight_sum`.  Also H >= 2 (V - 1) for every lazy
    Metropolis walk (Kemeny's constant sum_k 1 / (1 - lambda_k) >= 2 (V-1)^2 / V, as the
    eigenvalues lie in [0, 1) and trace A >= V / 2), attained by the complete graph.
    inf if a node can never be linked (every later snapshot is then disconnected).
    """
    V = degree.shape[0]
    current = np.empty(V + 1, dtype=np.int64)
    potential = np.empty(V + 1, dtype=np.int64)
    bound = 2.0 * (V - 1)
    for j in range(V):
        current[:] = 0
        potential[:] = 0
        links = 0
        for k in range(V):
            if adjacency[j, k]:
                current[degree[k]] += 1
                links += 1
            elif linkable[j, k] and (social_links[j, k] or n_dp + (0 if in_dp[j] else 1)
                                     + (0 if in_dp[k] else 1) <= n_max):
                potential[degree[k] + 1] += 1
                links += 1
        if links == 0:
            return np.inf
        weight = _max_weight_sum(degree[j], current, potential)
        bound = max(bound, (V - 1.0) * (V - 1.0) / (V * weight))
    return bound


# ---------------------------------------------------------------------------------------------
# The state of one budget's run
# ---------------------------------------------------------------------------------------------
# Numba passes scalars by value, so the few counters the steps below change live in small
# int64/float64 arrays of their NamedTuple, indexed by the constants next to it.

class BudgetRun(NamedTuple):
    """One budget's trajectory, as :func:`run_budget` returns it.

    Arrays of shape (S,), one entry per snapshot (S links added): ``accepted``
    (pair index of the added link), ``phase`` (PHASE_* code), ``hitting_time``,
    ``phi``, ``local_iterate`` and ``pseudo_time``.  The budgets n with
    ``lo <= n < hi`` take exactly the same decisions; ``n_fresh`` and
    ``n_woodbury`` count fresh inverses and Woodbury updates; ``pruned``: the bound
    stopped the run (no later snapshot could beat its best).
    """

    accepted: NDArray[np.int64]
    phase: NDArray[np.int64]
    hitting_time: NDArray[np.float64]
    phi: NDArray[np.float64]
    local_iterate: NDArray[np.float64]
    pseudo_time: NDArray[np.float64]
    lo: int
    hi: int
    n_fresh: int
    n_woodbury: int
    pruned: bool = False


class _Pairs(NamedTuple):
    """The candidate pairs (read-only): ends, social flag, t_ij, and the social degrees;
    for the stopping bound, the pairs and their social flags as (V, V) masks."""

    pi: NDArray[np.int64]
    pj: NDArray[np.int64]
    social: NDArray[np.bool_]
    t: NDArray[np.float64]
    deg_s: NDArray[np.float64]
    linkable: NDArray[np.bool_]
    social_links: NDArray[np.bool_]


@njit(**NJIT_FLAGS)
def _new_pairs(n_dev, pi, pj, social, t, deg_s):
    linkable = np.zeros((n_dev, n_dev), dtype=np.bool_)
    social_links = np.zeros((n_dev, n_dev), dtype=np.bool_)
    for k in range(pi.shape[0]):
        linkable[pi[k], pj[k]] = linkable[pj[k], pi[k]] = True
        social_links[pi[k], pj[k]] = social_links[pj[k], pi[k]] = social[k]
    return _Pairs(pi, pj, social, t, deg_s, linkable, social_links)


class _Rules(NamedTuple):
    """The budget, NEP's patience, the Woodbury limits, G' = c_H H + c_phi phi + b, and how
    often the stopping bound is checked (every ``prune_every`` snapshots; 0 = never)."""

    n_budget: int
    patience: int
    rank_limit: int
    refresh_every: int
    coef_h: float
    coef_phi: float
    intercept: float
    prune_every: int = 0


_N_DP = 0  # _Graph.sizes: |N|
_N_COMPONENTS = 1  # _Graph.sizes: components of G_c^n


class _Graph(NamedTuple):
    """G_c^n as it grows: links, degrees, Lazy-Metropolis weights, components, DP set N."""

    adjacency: NDArray[np.bool_]  # (V, V)
    degree: NDArray[np.int64]  # (V,)
    weights: NDArray[np.float64]  # (V, V), off-diagonal
    parent: NDArray[np.int64]  # (V,), union-find forest of the components
    in_dp: NDArray[np.bool_]  # (V,)
    in_graph: NDArray[np.bool_]  # (P,), pairs in E_c^n
    sizes: NDArray[np.int64]  # [_N_DP, _N_COMPONENTS]


_HAVE_Z = 0  # _Fundamental.state: Z is the fundamental matrix of G_c^n (connected)
_M_VALID = 1  # _Fundamental.state: M holds the hitting times of G_c^n
_SINCE_FRESH = 2  # _Fundamental.state: Woodbury updates since the last fresh inverse
_N_FRESH = 3  # _Fundamental.state: fresh inverses taken
_N_WOODBURY = 4  # _Fundamental.state: Woodbury updates made


class _Fundamental(NamedTuple):
    """Z, the hitting times M of G_c^n, their scratch, and the counters above."""

    Z: NDArray[np.float64]  # (V, V)
    M: NDArray[np.float64]  # (V, V)
    transition: NDArray[np.float64]  # (V, V), for hitting times while disconnected
    ends_a: NDArray[np.int64]  # (2V + 1,), Woodbury scratch
    ends_b: NDArray[np.int64]
    deltas: NDArray[np.float64]
    state: NDArray[np.int64]  # (5,)


class _Search(NamedTuple):
    """The phase's candidate list and what the picks need and report."""

    active: NDArray[np.bool_]  # (P,)
    scores: NDArray[np.float64]  # (P,), SLS or CLS
    ineligible: NDArray[np.int64]  # (P,), scratch of _cgp_pick
    bounds: NDArray[np.int64]  # [lo, hi, pairs still active after the last pick]


_COUNT = 0  # _Snapshots.tally: snapshots recorded
_STALE = 1  # _Snapshots.tally: snapshots of the phase without a better pseudo time
_PRUNED = 2  # _Snapshots.tally: 1 once the bound has stopped the trajectory
_L_NOW = 0  # _Snapshots.running: L of G_c^n, max t_ij over its links
_BEST = 1  # _Snapshots.running: best pseudo time so far (all phases), RTOL-improvements only
_LOWEST = 2  # _Snapshots.running: the exact minimum pseudo time so far


class _Snapshots(NamedTuple):
    """Every snapshot recorded so far (the first ``tally[_COUNT]`` entries)."""

    accepted: NDArray[np.int64]
    phase: NDArray[np.int64]
    H: NDArray[np.float64]
    phi: NDArray[np.float64]
    L: NDArray[np.float64]
    pseudo: NDArray[np.float64]
    tally: NDArray[np.int64]  # [_COUNT, _STALE, _PRUNED]
    running: NDArray[np.float64]  # [_L_NOW, _BEST, _LOWEST]


@njit(**NJIT_FLAGS)
def _new_graph(V, P):
    sizes = np.zeros(2, dtype=np.int64)
    sizes[_N_COMPONENTS] = V
    return _Graph(np.zeros((V, V), dtype=np.bool_), np.zeros(V, dtype=np.int64),
                  np.zeros((V, V)), np.arange(V), np.zeros(V, dtype=np.bool_),
                  np.zeros(P, dtype=np.bool_), sizes)


@njit(**NJIT_FLAGS)
def _new_fundamental(V):
    return _Fundamental(np.zeros((V, V)), np.empty((V, V)), np.empty((V, V)),
                        np.empty(2 * V + 1, dtype=np.int64), np.empty(2 * V + 1, dtype=np.int64),
                        np.empty(2 * V + 1), np.zeros(5, dtype=np.int64))


@njit(**NJIT_FLAGS)
def _new_search(P, V):
    bounds = np.zeros(3, dtype=np.int64)
    bounds[1] = V + 1
    return _Search(np.zeros(P, dtype=np.bool_), np.empty(P), np.empty(P, dtype=np.int64), bounds)


@njit(**NJIT_FLAGS)
def _new_snapshots(P):
    running = np.zeros(3)
    running[_BEST] = np.inf
    running[_LOWEST] = np.inf
    return _Snapshots(np.empty(P, dtype=np.int64), np.empty(P, dtype=np.int64), np.empty(P),
                      np.empty(P), np.empty(P), np.empty(P), np.zeros(3, dtype=np.int64),
                      running)


# ---------------------------------------------------------------------------------------------
# The steps of one budget's run
# ---------------------------------------------------------------------------------------------
# Most run once per added link; all are inlined into their callers (Numba IR inlining), so
# splitting run_budget into them costs nothing: same instruction count as the single loop.
_STEP_FLAGS = {**NJIT_FLAGS, "inline": "always"}


@njit(**_STEP_FLAGS)
def _fresh_inverse(graph, fund):
    fund.Z[:, :] = fresh_fundamental(graph.weights)
    fund.state[_HAVE_Z] = 1
    fund.state[_SINCE_FRESH] = 0
    fund.state[_N_FRESH] += 1


@njit(**_STEP_FLAGS)
def _ensure_hitting_times(graph, fund):
    """M <- the hitting times of the current G_c^n, unless they are already there."""
    if fund.state[_M_VALID]:
        return
    if graph.sizes[_N_COMPONENTS] == 1:
        if not fund.state[_HAVE_Z]:
            _fresh_inverse(graph, fund)
        _hitting_matrix(fund.Z, fund.M)
    else:
        lazy_metropolis_one(graph.adjacency.astype(np.float64), fund.transition)
        hitting_times_one(fund.transition, fund.M)
    fund.state[_M_VALID] = 1


@njit(**_STEP_FLAGS)
def _candidate_scores(phase, pairs, degree, M, active, scores):
    """SLS (eq. 16, LCP) or CLS (eq. 17, NEP) of every active pair."""
    for k in range(pairs.pi.shape[0]):
        if active[k]:
            a = pairs.pi[k]
            b = pairs.pj[k]
            m = max(M[a, b], M[b, a])
            if phase == PHASE_LCP:
                scores[k] = m / (pairs.t[k] * pairs.deg_s[a] * pairs.deg_s[b])
            else:
                scores[k] = m / (pairs.t[k] * max(degree[a], 1) * max(degree[b], 1))


@njit(**_STEP_FLAGS)
def _join_dp(graph, pairs, k):
    """Both ends of a non-social pair k join the DP set N."""
    if pairs.social[k]:
        return
    for x in (pairs.pi[k], pairs.pj[k]):
        if not graph.in_dp[x]:
            graph.in_dp[x] = True
            graph.sizes[_N_DP] += 1


@njit(**_STEP_FLAGS)
def _add_link(graph, fund, rules, a, b):
    """Add link (a, b) to G_c^n, update Z (Woodbury, or a fresh inverse) and M; returns H."""
    ra = _find(graph.parent, a)
    rb = _find(graph.parent, b)
    if ra != rb:
        graph.parent[ra] = rb
        graph.sizes[_N_COMPONENTS] -= 1
    if fund.state[_HAVE_Z]:
        if fund.state[_SINCE_FRESH] >= rules.refresh_every:
            apply_link(graph.adjacency, graph.degree, graph.weights, a, b)
            r = -1
        else:
            r = add_link_fundamental(fund.Z, graph.adjacency, graph.degree, graph.weights, a, b,
                                     rules.rank_limit, fund.ends_a, fund.ends_b, fund.deltas)
        if r < 0:
            _fresh_inverse(graph, fund)
        else:
            fund.state[_SINCE_FRESH] += 1
            fund.state[_N_WOODBURY] += 1
    else:
        apply_link(graph.adjacency, graph.degree, graph.weights, a, b)
        if graph.sizes[_N_COMPONENTS] == 1:
            _fresh_inverse(graph, fund)
    if fund.state[_HAVE_Z]:
        fund.state[_M_VALID] = 1
        return _hitting_matrix(fund.Z, fund.M)
    fund.state[_M_VALID] = 0
    return np.inf


@njit(**_STEP_FLAGS)
def _record(snaps, rules, k, phase, H, phi, t_k):
    """Record the snapshot that added pair k, and whether it improved the best pseudo time."""
    if t_k > snaps.running[_L_NOW]:
        snaps.running[_L_NOW] = t_k
    L = snaps.running[_L_NOW]
    S = snaps.tally[_COUNT]
    snaps.accepted[S] = k
    snaps.phase[S] = phase
    snaps.H[S] = H
    snaps.phi[S] = phi
    snaps.L[S] = L
    if np.isfinite(H):
        pseudo = (rules.coef_h * H + rules.coef_phi * phi + rules.intercept) * L
    else:
        pseudo = np.inf
    snaps.pseudo[S] = pseudo
    snaps.tally[_COUNT] = S + 1
    if pseudo < snaps.running[_LOWEST]:
        snaps.running[_LOWEST] = pseudo
    if pseudo < snaps.running[_BEST] * (1.0 - RTOL):
        snaps.running[_BEST] = pseudo
        snaps.tally[_STALE] = 0
    else:
        snaps.tally[_STALE] += 1


@njit(**_STEP_FLAGS)
def _accept(k, phase, pairs, rules, graph, fund, search, snaps):
    """Pair k was chosen: take it off the list, grow N and G_c^n, record the snapshot."""
    search.active[k] = False
    _join_dp(graph, pairs, k)
    graph.in_graph[k] = True
    H = _add_link(graph, fund, rules, pairs.pi[k], pairs.pj[k])
    phi = graph.sizes[_N_DP] / graph.degree.shape[0]
    _record(snaps, rules, k, phase, H, phi, pairs.t[k])


@njit(**NJIT_FLAGS)
def _no_better_snapshot_left(pairs, rules, graph, search, snaps):
    """Whether every later snapshot costs at least the budget's best so far (then the run
    stops; see "Stopping a trajectory early" above).  Checked every ``prune_every``
    snapshots.

    The bound holds for every budget the run stands for (``search.bounds``: they took the
    same decisions so far), as the DP rule is checked with the largest of them.  Floating
    point: the pseudo time (c_H H + c_phi phi + b) L is evaluated with the same operations
    as :func:`_record`, each monotone in H, phi and L, so with H >= the bound's H (margin
    BOUND_MARGIN for round-off), phi and L no smaller than now, every later computed pseudo
    time is >= the computed bound.  A budget with no connected snapshot yet is not stopped
    (SSP would then report its last snapshot).
    """
    S = snaps.tally[_COUNT]
    if rules.prune_every <= 0 or S % rules.prune_every != 0 or rules.coef_h < 0.0:
        return False
    lowest = snaps.running[_LOWEST]
    if not np.isfinite(lowest):
        return False
    V = graph.degree.shape[0]
    n_max = min(search.bounds[1] - 1, V)
    H = hitting_time_lower_bound(graph.adjacency, graph.degree, pairs.linkable,
                                 pairs.social_links, graph.in_dp, graph.sizes[_N_DP], n_max)
    H *= 1.0 - BOUND_MARGIN
    # phi only grows: with c_phi < 0 its term is bounded below at phi = 1 instead.
    phi = graph.sizes[_N_DP] / V if rules.coef_phi >= 0.0 else 1.0
    G = rules.coef_h * H + rules.coef_phi * phi + rules.intercept
    if not G > 0.0:  # G' L is then not bounded below by G' L_now
        return False
    if G * snaps.running[_L_NOW] >= lowest:
        snaps.tally[_PRUNED] = 1
        return True
    return False


@njit(**_STEP_FLAGS)
def _open_phase(graph, search, snaps):
    """The phase's candidate list: every pair not yet in E_c^n; returns its length."""
    n_active = 0
    for k in range(search.active.shape[0]):
        search.active[k] = not graph.in_graph[k]
        if search.active[k]:
            n_active += 1
    snaps.tally[_STALE] = 0
    return n_active


# ---------------------------------------------------------------------------------------------
# The phases and one budget's run
# ---------------------------------------------------------------------------------------------
# Between two added links the CGP keys and the SLS/CLS scores do not change, so the pairs the
# paper's loop would pick and discard one by one (non-social, DP budget exceeded) are found in
# one pass by _cgp_pick / _score_pick; the chosen pair is always admissible.

@njit(**NJIT_FLAGS)
def _cgp(pairs, rules, graph, fund, search, snaps):
    """CGP: lowest degree sum first; then, if G_c^n is disconnected, links joining components."""
    V = graph.degree.shape[0]
    n_active = _open_phase(graph, search, snaps)
    stage_b = False
    while True:
        if not stage_b and (snaps.tally[_COUNT] >= V or n_active == 0):
            stage_b = True
        if stage_b and graph.sizes[_N_COMPONENTS] == 1:
            return
        chosen = _cgp_pick(search.active, pairs.pi, pairs.pj, pairs.social, pairs.t,
                           graph.degree, graph.parent, stage_b, graph.in_dp,
                           graph.sizes[_N_DP], rules.n_budget, search.bounds, search.ineligible)
        n_active = search.bounds[2]
        if chosen < 0:
            if stage_b:
                return
            continue  # every pair discarded: stage B next
        _accept(chosen, np.int64(PHASE_CGP), pairs, rules, graph, fund, search, snaps)
        n_active -= 1
        if _no_better_snapshot_left(pairs, rules, graph, search, snaps):
            return


@njit(**NJIT_FLAGS)
def _scored_phase(phase, pairs, rules, graph, fund, search, snaps):
    """LCP (largest SLS while |N| < n) or NEP (largest CLS until none is left or patience)."""
    n_active = _open_phase(graph, search, snaps)
    while n_active > 0:
        n_dp = graph.sizes[_N_DP]
        if phase == PHASE_LCP:
            if n_dp >= rules.n_budget:  # the stop rule |N| < n decides the budget interval
                search.bounds[1] = min(search.bounds[1], n_dp + 1)
                return
            search.bounds[0] = max(search.bounds[0], n_dp + 1)
        elif rules.patience >= 0 and snaps.tally[_STALE] >= rules.patience:
            return
        _ensure_hitting_times(graph, fund)
        _candidate_scores(phase, pairs, graph.degree, fund.M, search.active, search.scores)
        chosen = _score_pick(search.scores, search.active, pairs.pi, pairs.pj, pairs.social,
                             graph.in_dp, n_dp, rules.n_budget, search.bounds)
        n_active = search.bounds[2]
        if chosen < 0:
            return
        _accept(chosen, phase, pairs, rules, graph, fund, search, snaps)
        n_active -= 1
        if _no_better_snapshot_left(pairs, rules, graph, search, snaps):
            return


@njit(**NJIT_FLAGS)
def run_budget(n_budget, n_dev, pi, pj, social, t, deg_s, coef_h, coef_phi, intercept,
               patience, rank_limit, refresh_every, prune_every=0):
    """AutoTag's CGP, LCP and NEP for one DP budget (see :func:`topokit.autotag.autotag`).

    Parameters
    ----------
    pi, pj : int64 arrays of shape (P,)
        The candidate pairs (i < j, finite delay) in node order; ties between
        equal keys go to the smallest pair index.
    social : bool array (P,); t : float array (P,) of d_ij + max(r_i, r_j)
    deg_s : float array (n_dev,), social degrees
    patience : int, NEP early stopping (< 0: off)
    prune_every : int, check the stopping bound every this many snapshots (0: never)

    Returns
    -------
    BudgetRun
    """
    P = pi.shape[0]
    pairs = _new_pairs(n_dev, pi, pj, social, t, deg_s)
    rules = _Rules(n_budget, patience, rank_limit, refresh_every, coef_h, coef_phi, intercept,
                   prune_every)
    graph = _new_graph(n_dev, P)
    fund = _new_fundamental(n_dev)
    search = _new_search(P, n_dev)
    snaps = _new_snapshots(P)
    # N and E_c^n carry over from phase to phase; each phase starts from the pairs not in E_c^n.
    # The phases go in as int64 values, not constants: a constant argument is typed as a
    # literal, and each literal compiles the phase (and all it calls) once more (~7 s).
    _cgp(pairs, rules, graph, fund, search, snaps)
    if not snaps.tally[_PRUNED]:
        _scored_phase(np.int64(PHASE_LCP), pairs, rules, graph, fund, search, snaps)
    if not snaps.tally[_PRUNED]:
        _scored_phase(np.int64(PHASE_NEP), pairs, rules, graph, fund, search, snaps)
    S = snaps.tally[_COUNT]
    return BudgetRun(snaps.accepted[:S].copy(), snaps.phase[:S].copy(), snaps.H[:S].copy(),
                     snaps.phi[:S].copy(), snaps.L[:S].copy(), snaps.pseudo[:S].copy(),
                     search.bounds[0], search.bounds[1], fund.state[_N_FRESH],
                     fund.state[_N_WOODBURY], snaps.tally[_PRUNED] == 1)
