"""Real-data example: scikit-learn's bundled digits as a federated graph-learning task (Table V style).

    python analyses/learn_digits.py [--quick]

Nodes: 10 images of each of the digits 0, 1, 6 (30 nodes, fixed seed); signals:
pixel intensities; clients: the four 4x4-pixel quadrants of the 8x8 images
(16 signals each).  Graphs from IGL (per view), FedAvg, PPGL-C (with and
without DP), then networkx Louvain communities scored against the digit
labels by NMI, Rand index and Fowlkes-Mallows.  Writes
analyses/out/learn_digits.{json,png}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topokit._io import atomic_path, atomic_write_text  # noqa: E402
from topokit.learn import community_scores, digits_views, fedavg, igl, learn_federated  # noqa: E402
from topokit.learn.plotting import plot_adjacencies  # noqa: E402

from _common import out_path, run_quick  # noqa: E402

BETA, RHO, LAM, ROUNDS, ETA = 0.05, 0.3, 0.01, 2000, 0.05


def main(quick: bool) -> None:
    views, labels = digits_views((0, 1, 6), per_class=10, seed=0)
    rounds = 300 if quick else ROUNDS
    results = {}
    igl_scores = [community_scores(g.graph, labels) for g in igl(views, 1.0, BETA)]
    results["IGL (mean over views)"] = {k: float(np.mean([s[k] for s in igl_scores]))
                                        for k in ("nmi", "ri", "fmi")}
    results["FedAvg"] = community_scores(fedavg(views, 1.0, BETA, rounds=rounds, eta=ETA).graph,
                                         labels)
    ppgl = learn_federated(views, 1.0, BETA, RHO, LAM, rounds=rounds, eta=ETA, coupling="implicit")
    results["PPGL-C"] = community_scores(ppgl.consensus.graph, labels)
    for eps in (0.5, 1.0):
        dp = learn_federated(views, 1.0, BETA, RHO, LAM, rounds=100, eta=ETA, coupling="implicit",
                             epsilon=eps, clip=20.0, seed=0)
        results[f"PPGL-C (eps={eps}/round, T=100)"] = {
            **community_scores(dp.consensus.graph, labels),
            "eps_total_pld": dp.privacy.epsilon_pld, "delta_total": dp.privacy.total_delta}
    for name, s in results.items():
        print(f"{name:32s} " + "  ".join(f"{k}={v:.3f}" for k, v in s.items()))
    atomic_write_text(out_path("learn_digits.json"), json.dumps(results, indent=1) + "\n")
    order = np.argsort(labels, kind="stable")
    fig = plot_adjacencies([ppgl.consensus.weights], len(labels), ["PPGL-C, digits 0/1/6"])
    _ = order
    with atomic_path(out_path("learn_digits.png"), suffix=".png") as tmp:
        fig.savefig(tmp, dpi=110, format="png")


if __name__ == "__main__":
    run_quick(main)
