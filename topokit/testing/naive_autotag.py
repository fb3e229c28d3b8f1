"""A straightforward reference implementation of AutoTag (DeepPrivacy Algorithm 2).

It follows the pseudocode with the corrections of the paper notes and the rules
documented in :func:`topokit.autotag.autotag`, and recomputes every hitting time
from scratch (``hitting_matrix(adjacency)``, one n x n inverse)
after every added link.  Plain Python sets and numpy; no incremental update, no
trajectory sharing, no threads.  Used by the tests (agreement with the fast
implementation) and by ``analyses/bench_autotag.py`` (the speed reference).

The pseudo time uses the predictor's linear coefficients directly (no sklearn
call per snapshot), so the benchmark's ratio measures the algorithm, not
Python overhead of ``predict``.
"""

from __future__ import annotations

import numpy as np

from topokit.design.predictor import GlobalIteratePredictor
from topokit.kernels import unchecked

RTOL = 1e-9  # scores / pseudo times within this relative distance are ties

PHASES = ("CGP", "LCP", "NEP")


def _coefficients(predictor):
    data = (predictor or GlobalIteratePredictor()).to_dict()
    return float(data["coef"][0]), float(data["coef"][1]), float(data["intercept"])


def hitting_matrix(adjacency):
    """All hitting times of the Lazy-Metropolis walk on ``adjacency``: a fresh n x n inverse.

    Uses the serial kernels behind ``topokit.hitting_times(topokit.lazy_metropolis(G))``
    (same arithmetic, without the thread start-up of the stacked public kernels).
    """
    n = adjacency.shape[0]
    transition = np.empty((n, n))
    unchecked.lazy_metropolis_one(np.ascontiguousarray(adjacency, dtype=np.float64), transition)
    times = np.empty((n, n))
    unchecked.hitting_times_one(transition, times)
    return times


def _argmax_first(scores):
    """Index (into ``scores``, a list of (score, pair)) of the best score; ties -> smallest pair."""
    best = max(s for s, _ in scores)
    limit = best if np.isinf(best) else best - RTOL * abs(best)
    return min(p for s, p in scores if s >= limit)


def _budget_run(n, V, t, social, pairs, deg_s, coefficients, nep_patience):
    """Algorithm 2 (CGP, LCP, NEP) for one budget ``n``.

    Returns ``(snaps, E)``: the snapshots, one per added link, and the added pairs in order.
    """
    c_h, c_phi, intercept = coefficients
    adjacency = np.zeros((V, V))
    E, N = [], set()
    deg = np.zeros(V, dtype=int)
    snaps = []
    state = {"M": None, "best": np.inf, "stale": 0}

    def components():
        label = list(range(V))

        def find(x):
            while label[x] != x:
                label[x] = label[label[x]]
                x = label[x]
            return x

        for i, j in E:
            label[find(i)] = find(j)
        return [find(x) for x in range(V)]

    def add(pair, phase):
        i, j = pair
        E.append(pair)
        adjacency[i, j] = adjacency[j, i] = 1.0
        deg[i] += 1
        deg[j] += 1
        if pair not in social:
            N.update(pair)
        M = hitting_matrix(adjacency)
        state["M"] = M
        H = float(M.max())
        phi = len(N) / V
        L = max(t[a, b] for a, b in E)
        pseudo = (c_h * H + c_phi * phi + intercept) * L if np.isfinite(H) else np.inf
        snaps.append((phase, pair, H, phi, L, pseudo))
        if pseudo < state["best"] * (1 - RTOL):
            state["best"], state["stale"] = pseudo, 0
        else:
            state["stale"] += 1

    def try_add(pair, phase):
        if pair in social or len(N | set(pair)) <= n:
            add(pair, phase)

    # --- CGP -------------------------------------------------------------------------------
    L = set(pairs)

    def cgp_key(p):
        return (deg[p[0]] + deg[p[1]], p not in social, t[p], p)

    while len(E) < V and L:
        pair = min(L, key=cgp_key)
        L.discard(pair)
        try_add(pair, "CGP")
    while True:
        label = components()
        if len(set(label)) == 1:
            break
        bridging = [p for p in L if label[p[0]] != label[p[1]]]
        if not bridging:
            break
        pair = min(bridging, key=cgp_key)
        L.discard(pair)
        try_add(pair, "CGP")

    def current_M():
        if state["M"] is None:
            state["M"] = hitting_matrix(adjacency)
        return state["M"]

    # --- LCP -------------------------------------------------------------------------------
    L = set(pairs) - set(E)
    while L and len(N) < n:
        M = current_M()
        scored = [(max(M[i, j], M[j, i]) / (t[i, j] * deg_s[i] * deg_s[j]), (i, j))
                  for i, j in L]
        pair = _argmax_first(scored)
        L.discard(pair)
        try_add(pair, "LCP")

    # --- NEP -------------------------------------------------------------------------------
    L = set(pairs) - set(E)
    state["stale"] = 0
    while L:
        if nep_patience is not None and state["stale"] >= nep_patience:
            break
        M = current_M()
        scored = [(max(M[i, j], M[j, i])
                   / (t[i, j] * max(deg[i], 1) * max(deg[j], 1)), (i, j)) for i, j in L]
        pair = _argmax_first(scored)
        L.discard(pair)
        try_add(pair, "NEP")

    return snaps, E


def naive_autotag(net, predictor=None, *, nep_patience=None):
    """Run Algorithm 2 for every budget n = 0..|V|.

    Returns
    -------
    dict with
        ``budgets``: list over n of lists of snapshots ``(phase, (i, j), H, phi, L, pseudo)``
            (node indices in ``net.nodes`` order, one snapshot per added link);
        ``accepted``: list over n of the added pairs in order;
        ``best``: (n, step) of the chosen snapshot; ``pseudo_time``: its pseudo time.
    """
    c_h, c_phi, intercept = _coefficients(predictor)
    V = net.n_devices
    t = net.link_times
    social = {(min(u, v), max(u, v)) for u, v in
              ((net.index[a], net.index[b]) for a, b in net.social.edges)}
    pairs = [(i, j) for i in range(V) for j in range(i + 1, V) if np.isfinite(net.delay[i, j])]
    deg_s = np.array([net.social.degree(node) for node in net.nodes], dtype=float)

    budgets, accepted_all = [], []
    for n in range(V + 1):
        snaps, E = _budget_run(n, V, t, social, pairs, deg_s, (c_h, c_phi, intercept),
                               nep_patience)
        budgets.append(snaps)
        accepted_all.append(list(E))

    # --- SSP -------------------------------------------------------------------------------
    best_per_n = []
    for snaps in budgets:
        values = [s[5] for s in snaps]
        low = min(values, default=np.inf)
        step = next((k for k, v in enumerate(values) if v <= low + RTOL * abs(low)), None) \
            if np.isfinite(low) else None
        best_per_n.append((low, step))
    overall = min(low for low, _ in best_per_n)
    chosen = next(n for n, (low, _) in enumerate(best_per_n)
                  if low <= overall + RTOL * abs(overall))
    return {
        "budgets": budgets,
        "accepted": accepted_all,
        "best_per_n": best_per_n,
        "best": (chosen, best_per_n[chosen][1]),
        "pseudo_time": overall,
    }


def random_network(n_devices, seed, *, p=0.3, inf_fraction=0.2, tree=False):
    """A small random connected network: G(n, p) (or a random tree) social graph,
    delays U(1, 50) s with a fraction of non-social pairs unreachable (inf),
    compute times U(1, 20) s.  Social links always have a finite delay."""
    import networkx as nx

    from topokit import Network

    rng = np.random.default_rng(seed)
    if tree:
        make_tree = getattr(nx, "random_labeled_tree", None) or nx.random_tree
        social = make_tree(n_devices, seed=int(rng.integers(2**31)))
    else:
        while True:
            social = nx.gnp_random_graph(n_devices, p, seed=int(rng.integers(2**31)))
            if nx.is_connected(social):
                break
    delay = np.triu(rng.uniform(1, 50, (n_devices, n_devices)), 1)
    delay = delay + delay.T
    unreachable = np.triu(rng.random((n_devices, n_devices)) < inf_fraction, 1)
    unreachable = unreachable | unreachable.T
    for u, v in social.edges:
        unreachable[u, v] = unreachable[v, u] = False
    delay[unreachable] = np.inf
    np.fill_diagonal(delay, 0.0)
    return Network(social, rng.uniform(1, 20, n_devices), delay)
