"""A straightforward reference implementation of AutoTag (DeepPrivacy Algorithm 2).

It follows the pseudocode with the corrections of the paper notes and the rules
documented in :func:`topokit.autotag.autotag`, and recomputes every hitting time
from scratch (``hitting_matrix(adjacency)``, one n x n inverse)
after every added link.  Plain Python sets and numpy; no incremental update, no
trajectory sharing, no threads.  Each budget is the plain loop
(:func:`topokit.design._autotag_plain.budget_snapshots`) that ``autotag`` itself
runs on networks too small to pay for compiling its kernel; here it runs on every
network.  Used by the tests (agreement with the compiled kernel) and by
``analyses/bench_autotag.py`` (the speed reference).

The pseudo time uses the predictor's linear coefficients directly (no sklearn
call per snapshot), so the benchmark's ratio measures the algorithm, not
Python overhead of ``predict``.
"""

from __future__ import annotations

import numpy as np

from topokit.design._autotag_plain import RTOL, budget_snapshots
from topokit.design.predictor import GlobalIteratePredictor

PHASES = ("CGP", "LCP", "NEP")


def _coefficients(predictor):
    data = (predictor or GlobalIteratePredictor()).to_dict()
    return float(data["coef"][0]), float(data["coef"][1]), float(data["intercept"])


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
        snaps, E = budget_snapshots(n, V, t, social, pairs, deg_s, (c_h, c_phi, intercept),
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
