"""A straightforward reference implementation of AutoTag (DeepPrivacy Algorithm 2).

It follows the pseudocode with the corrections of the paper notes and the rules
documented in :func:`topokit.autotag.autotag`, and recomputes every hitting time
from scratch (``hitting_times(lazy_metropolis(adjacency))``, one n x n inverse)
after every added link.  Plain Python sets and numpy; no incremental update, no
trajectory sharing, no threads.  Used by the tests (agreement with the fast
implementation) and by ``analyses/bench_autotag.py`` (the speed reference).

The pseudo time uses the predictor's linear coefficients directly (no sklearn
call per snapshot), so the benchmark's ratio measures the algorithm, not
Python overhead of ``predict``.
"""

from __future__ import annotations

import numpy as np

from topokit.kernels import hitting_times, lazy_metropolis
from topokit.predictor import GlobalIteratePredictor

RTOL = 1e-9  # scores / pseudo times within this relative distance are ties

PHASES = ("CGP", "LCP", "NEP")


def _coefficients(predictor):
    data = (predictor or GlobalIteratePredictor()).to_dict()
    return float(data["coef"][0]), float(data["coef"][1]), float(data["intercept"])


def _argmax_first(scores):
    """Index (into ``scores``, a list of (score, pair)) of the best score; ties -> smallest pair."""
    best = max(s for s, _ in scores)
    limit = best if np.isinf(best) else best - RTOL * abs(best)
    return min(p for s, p in scores if s >= limit)


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
            M = hitting_times(lazy_metropolis(adjacency))
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

        # --- CGP -------------------------------------------------------------------------
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
                state["M"] = hitting_times(lazy_metropolis(adjacency))
            return state["M"]

        # --- LCP -------------------------------------------------------------------------
        L = set(pairs) - set(E)
        while L and len(N) < n:
            M = current_M()
            scored = [(max(M[i, j], M[j, i]) / (t[i, j] * deg_s[i] * deg_s[j]), (i, j))
                      for i, j in L]
            pair = _argmax_first(scored)
            L.discard(pair)
            try_add(pair, "LCP")

        # --- NEP -------------------------------------------------------------------------
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

        budgets.append(snaps)
        accepted_all.append(list(E))

    # --- SSP -------------------------------------------------------------------------------
    best_per_n = []
    for snaps in budgets:
        values = [s[5] for s in snaps]
        low = min(values, default=np.inf)
        step = next((k for k, v in enumerate(values) if v <= low * (1 + RTOL)), None) \
            if np.isfinite(low) else None
        best_per_n.append((low, step))
    overall = min(low for low, _ in best_per_n)
    chosen = next(n for n, (low, _) in enumerate(best_per_n) if low <= overall * (1 + RTOL))
    return {
        "budgets": budgets,
        "accepted": accepted_all,
        "best_per_n": best_per_n,
        "best": (chosen, best_per_n[chosen][1]),
        "pseudo_time": overall,
    }
