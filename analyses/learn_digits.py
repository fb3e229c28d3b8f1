"""Real-data example: scikit-learn's digits as a federated graph-learning task (Table V style).

    python -m analyses.learn_digits [--quick]

Nodes: 10 images of each of the digits 0, 1, 6 (30 nodes, fixed seed); signals:
pixel intensities; clients: the four 4x4-pixel quadrants of the 8x8 images
(16 signals each).  Graphs from IGL (per view), FedAvg, PPGL-C (with and
without DP: epsilon 0.5 and 1 per round as the paper's Table V, and 10, 100
to show where communities return), then networkx Louvain communities scored
against the digit labels by NMI, Rand index and Fowlkes-Mallows.  The PNG shows
the class partition beside the learned graphs.  Writes
analyses/out/learn_digits.{json,png}.
"""

from __future__ import annotations

import json

import numpy as np

from analyses._common import out_path, run_quick
from topokit._io import atomic_path, atomic_write_text
from topokit.learn import community_scores, digits_views, fedavg, igl, learn_federated
from topokit.plotting.learn import plot_adjacencies

BETA, RHO, LAM, ROUNDS, ETA = 0.05, 0.3, 0.01, 2000, 0.05
DP_ROUNDS, DP_EPSILONS = 100, (0.5, 1.0, 10.0, 100.0)


def main(quick: bool) -> None:
    views, labels = digits_views((0, 1, 6), per_class=10, seed=0)
    rounds = 300 if quick else ROUNDS
    results, graphs = {}, {}
    igl_graphs = igl(views, 1.0, BETA)
    igl_scores = [community_scores(g.graph, labels) for g in igl_graphs]
    results["IGL (mean over views)"] = {k: float(np.mean([s[k] for s in igl_scores]))
                                        for k in ("nmi", "ri", "fmi")}
    graphs["IGL, view 1"] = igl_graphs[0].weights
    shared = fedavg(views, 1.0, BETA, rounds=rounds, eta=ETA)
    results["FedAvg"] = community_scores(shared.graph, labels)
    graphs["FedAvg"] = shared.weights
    ppgl = learn_federated(views, 1.0, BETA, RHO, LAM, rounds=rounds, eta=ETA, coupling="implicit")
    results["PPGL-C"] = community_scores(ppgl.consensus.graph, labels)
    graphs["PPGL-C"] = ppgl.consensus.weights
    for eps in DP_EPSILONS:
        dp = learn_federated(views, 1.0, BETA, RHO, LAM, rounds=DP_ROUNDS, eta=ETA,
                             coupling="implicit", epsilon=eps, clip=20.0, seed=0)
        name = f"PPGL-C (eps={eps:g}/round, T={DP_ROUNDS})"
        results[name] = {**community_scores(dp.consensus.graph, labels),
                         "eps_total_pld": dp.privacy.epsilon_pld,
                         "delta_total": dp.privacy.total_delta}
        graphs[name] = dp.consensus.weights
    for name, s in results.items():
        print(f"{name:36s} " + "  ".join(f"{k}={v:.3f}" for k, v in s.items()))
    atomic_write_text(out_path("learn_digits.json"), json.dumps(results, indent=1) + "\n")
    # the truth is the class partition: nodes are sorted by label, so it shows as blocks
    i, j = np.triu_indices(len(labels), 1)
    same_class = (labels[i] == labels[j]).astype(float)
    fig = plot_adjacencies([same_class, *graphs.values()], len(labels),
                           ["same digit (truth)", *graphs])
    with atomic_path(out_path("learn_digits.png"), suffix=".png") as tmp:
        fig.savefig(tmp, dpi=110, format="png")


if __name__ == "__main__":
    run_quick(main)
