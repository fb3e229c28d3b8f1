"""Fastest-mixing weights: SLEM and seconds of both solvers against the heuristic weights.

For small-world graphs (Watts-Strogatz, degree 4, rewiring 0.3, like the sparse
social graphs of SIoT networks) of n = 16, 64, 256 and 1,000 nodes, one run of

- ``sdp``: :func:`topokit.kernels.fastest_mixing_weights` with ``method="sdp"``
  (Clarabel; only up to ``SDP_BENCH_MAX`` nodes: its cost grows like n^6);
- ``subgradient``: the first-order method (default ``tol`` = 1e-4 on the
  certified gap), dense eigendecompositions up to ``DENSE_EIGEN_MAX`` nodes,
  tracked extreme eigenpairs beyond;

and, computed in the same run as the reference, the SLEM of the
Metropolis-Hastings weights (:func:`topokit.kernels.metropolis`) and of the
Lazy-Metropolis weights DeepPrivacy trains with
(:func:`topokit.kernels.lazy_metropolis`).  Each solver's SLEM is recomputed
here from its weights by ``numpy.linalg.eigvalsh``, and its certified lower
bound is reported with it, so the table says how far from optimal each answer
can be.  "steps x" is how many times fewer gossip steps the optimal weights
need than Metropolis-Hastings to shrink a disagreement by a given factor,
log(slem) / log(slem_MH).

The load average is printed: the seconds are single runs on a shared machine,
not a timing benchmark.  Writes analyses/out/bench_fmmc.json and
analyses/out/bench_fmmc.png.

Run from the repository root::

    python -m analyses.bench_fmmc --quick   # n = 16 and 64 only, about a minute
    python -m analyses.bench_fmmc           # all four sizes; n = 1,000 takes 15-60 s
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import networkx as nx
import numpy as np

from analyses._common import machine, out_path, run_quick, write_json
from topokit.kernels import fastest_mixing_weights, lazy_metropolis, metropolis
from topokit.plotting._style import save_figure

SIZES = (16, 64, 256, 1000)
QUICK_SIZES = (16, 64)
#: The SDP runs up to this many nodes (about 15 s at 64 on 2 cores; minutes beyond).
SDP_BENCH_MAX = 64
SEED = 2024


def slem(weights: np.ndarray) -> float:
    values = np.linalg.eigvalsh(weights)
    return float(max(abs(values[0]), abs(values[-2])))


def solve(graph: nx.Graph, method: str) -> dict:
    started = time.perf_counter()
    result = fastest_mixing_weights(graph, method=method, seed=SEED)
    seconds = time.perf_counter() - started
    return {"slem": slem(result.weights), "lower_bound": result.lower_bound,
            "seconds": seconds, "n_iter": result.n_iter, "converged": result.converged}


def bench(n: int) -> dict:
    graph = nx.connected_watts_strogatz_graph(n, 4, 0.3, seed=SEED)
    row = {"n": n, "links": graph.number_of_edges(),
           "metropolis": slem(metropolis(graph)), "lazy_metropolis": slem(lazy_metropolis(graph))}
    row["subgradient"] = solve(graph, "subgradient")
    row["sdp"] = solve(graph, "sdp") if n <= SDP_BENCH_MAX else None
    return row


def print_table(rows: list[dict]) -> None:
    print(f"{'n':>5} {'links':>6} {'Lazy-MH':>9} {'MH':>9} | {'SDP':>9} {'bound':>9} {'s':>6} | "
          f"{'1st-order':>9} {'bound':>9} {'steps':>6} {'s':>6} | {'steps x':>7}")
    for row in rows:
        first, sdp = row["subgradient"], row["sdp"]
        best = sdp["slem"] if sdp else first["slem"]
        exact = (f"{sdp['slem']:9.6f} {sdp['lower_bound']:9.6f} {sdp['seconds']:6.2f}" if sdp
                 else f"{'-':>9} {'-':>9} {'-':>6}")
        print(f"{row['n']:5d} {row['links']:6d} {row['lazy_metropolis']:9.6f} "
              f"{row['metropolis']:9.6f} | {exact} | {first['slem']:9.6f} "
              f"{first['lower_bound']:9.6f} {first['n_iter']:6d} {first['seconds']:6.2f} | "
              f"{np.log(best) / np.log(row['metropolis']):7.2f}")


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rows"]
    sizes = [row["n"] for row in rows]
    fig, (gaps, seconds) = plt.subplots(1, 2, figsize=(10, 4))
    for key, label, style, color in (("lazy_metropolis", "Lazy-Metropolis", "s--", "C0"),
                                     ("metropolis", "Metropolis-Hastings", "^--", "C1")):
        gaps.plot(sizes, [1.0 - row[key] for row in rows], style, color=color, label=label)
    for key, label, style, color in (("subgradient", "fastest (first-order)", "o-", "C2"),
                                     ("sdp", "fastest (SDP)", "x", "C3")):
        solved = [(row["n"], row[key]) for row in rows if row[key]]
        for ax, value in ((gaps, lambda r: 1.0 - r["slem"]), (seconds, lambda r: r["seconds"])):
            ax.plot([n for n, _ in solved], [value(r) for _, r in solved], style, color=color,
                    label=label)
    gaps.set_ylabel("spectral gap 1 - SLEM (higher mixes faster)")
    seconds.set_ylabel("seconds (one run)")
    for ax in (gaps, seconds):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
        ax.set_xlabel("nodes (Watts-Strogatz, degree 4)")
        ax.legend(fontsize=8)
    load = report["load_average_before"][0]
    fig.suptitle(f"fastest-mixing weights ({report['machine']['cpu_count']} cores, "
                 f"load average {load:.1f})", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def main(quick: bool) -> None:
    report = {"machine": machine(), "load_average_before": os.getloadavg(), "quick": quick,
              "seed": SEED}
    fastest_mixing_weights(nx.cycle_graph(8), method="subgradient")  # load the compiled kernel
    report["rows"] = [bench(n) for n in (QUICK_SIZES if quick else SIZES)]
    report["load_average_after"] = os.getloadavg()
    print_table(report["rows"])
    print(f"load average before {report['load_average_before'][0]:.2f}, after "
          f"{report['load_average_after'][0]:.2f} ({os.cpu_count()} cores)")
    path = write_json("bench_fmmc.json", report)
    plot(report, out_path("bench_fmmc.png"))
    print(f"wrote {path} and {out_path('bench_fmmc.png')}")


if __name__ == "__main__":
    run_quick(main)
