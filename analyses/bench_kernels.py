"""Benchmark of the graph kernels against batched numpy and a per-graph reference, in one run.

Ours:

- ``fused``: ``hitting_time_and_gap`` (Lazy-Metropolis weights, H and spectral gap
  in one Numba kernel per graph; parallel over a stack, serial or LAPACK for one
  graph);
- ``unfused``: the separate public steps a user reads in the API reference,
  ``lazy_metropolis`` -> ``max_hitting_time`` + ``spectral_gap``;
- ``sparse``: ``sparse_spectral_gap`` and ``hitting_time_bounds`` on large sparse graphs.

Baselines, timed in the same run and checked to agree with ours (H to 1e-9
relative, the gap to 1e-9 relative or 1e-12 absolute):

- ``numpy``: what a numpy user would write (``topokit/testing/naive_kernels.py``):
  eq. (4) vectorised over the stack, one batched ``np.linalg.inv`` of
  I - A + J/n for H and one batched ``np.linalg.eigvalsh`` for the gap
  (LAPACK, multithreaded by OpenBLAS where it helps);
- ``reference``: per graph, a networkx graph, eq. (4) entry by entry, eq. (11)
  solved per target node and ``numpy.linalg.eigvals`` (timed on the first
  ``REFERENCE_GRAPHS`` graphs of a stack, reported per graph; single graphs up
  to n = 256 only: it is O(n^4)).

Workloads: stacks of random connected G(n, 2n) graphs (n = 16, 32, 64, 128);
single small-world graphs of n = 16 ... 5,000 nodes; preferential-attachment
graphs (m = 3, social-network-like) of 2,000 nodes (checked against the dense
kernels) and 100,000 nodes (sparse only).

Timings are the best of ``--repeat`` runs, ours and the baselines interleaved so
that all see the same machine load (the load average is reported too).  Prints
tables and ratios, writes analyses/out/bench_kernels.json and bench_kernels.png.

Run from the repository root::

    python -m analyses.bench_kernels            # about 2-3 minutes on 2 idle cores
    python -m analyses.bench_kernels --quick    # smaller workloads, a smoke test
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np

from analyses._common import machine, out_path, write_json
from topokit import lazy_metropolis, max_hitting_time, spectral_gap
from topokit.design.batch import random_connected_adjacency
from topokit.kernels import (
    hitting_time_and_gap,
    hitting_time_bounds,
    sparse_spectral_gap,
)
from topokit.plotting._style import save_figure
from topokit.testing import naive_kernels as naive

#: The per-graph reference is timed on at most this many graphs of a stack.
REFERENCE_GRAPHS = 200


def unfused(adjacency: np.ndarray) -> tuple:
    transitions = lazy_metropolis(adjacency)
    return max_hitting_time(transitions), spectral_gap(transitions)


def numpy_baseline(adjacency: np.ndarray) -> tuple:
    transitions = naive.batched_lazy_metropolis(adjacency)
    return naive.batched_max_hitting_time(transitions), naive.batched_spectral_gap(transitions)


def reference(adjacency: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    results = [naive.reference_metrics(nx.from_numpy_array(a)) for a in adjacency]
    return np.array([h for h, _ in results]), np.array([g for _, g in results])


def interleaved(functions: dict[str, Callable[[], object]], repeat: int,
                calls: dict[str, int] | None = None) -> tuple[dict[str, float], dict[str, object]]:
    """Best seconds per call of each function, the functions taking turns ``repeat`` times."""
    calls = calls or {}
    best = dict.fromkeys(functions, np.inf)
    results: dict[str, object] = {}
    for _ in range(repeat):
        for name, function in functions.items():
            count = calls.get(name, 1)
            start = time.perf_counter()
            for _ in range(count):
                results[name] = function()
            best[name] = min(best[name], (time.perf_counter() - start) / count)
    return best, results


def check(h, gap, h_ref, gap_ref, what: str) -> None:
    """Ours must agree with a baseline to 1e-9 relative (the gap also to 1e-12 absolute)."""
    assert np.allclose(h, h_ref, rtol=1e-9, atol=0), f"hitting times disagree: {what}"
    assert np.allclose(gap, gap_ref, rtol=1e-9, atol=1e-12), f"gaps disagree: {what}"


def show(value: float) -> str:
    if not np.isfinite(value):
        return "(not run)"
    if value < 1e-3:
        return f"{value * 1e6:.1f} us"
    return f"{value * 1e3:.2f} ms" if value < 1 else f"{value:.2f} s"


def bench_stack(count: int, n: int, repeat: int) -> dict:
    """One stack of random connected G(n, 2n) graphs: fused, unfused, numpy and reference."""
    stack = np.stack([random_connected_adjacency(n, 2 * n, np.random.default_rng([0, n, i]))
                      for i in range(count)])
    subset = stack[:REFERENCE_GRAPHS]
    for function in (hitting_time_and_gap, unfused):  # compile / load the caches outside
        function(stack[:2])
    seconds, results = interleaved({
        "fused": lambda: hitting_time_and_gap(stack),
        "unfused": lambda: unfused(stack),
        "numpy": lambda: numpy_baseline(stack),
    }, repeat)
    reference_seconds, reference_results = interleaved({"reference": lambda: reference(subset)},
                                                       1)
    for name in ("fused", "unfused"):
        check(*results[name], *results["numpy"], f"{name} vs numpy, stack n = {n}")
        check(*(r[:len(subset)] for r in results[name]), *reference_results["reference"],
              f"{name} vs reference, stack n = {n}")
    per_graph_reference = reference_seconds["reference"] / len(subset)
    row = {"graphs": count, "n": n, "m": 2 * n, "reference_graphs": len(subset),
           "reference_seconds_per_graph": per_graph_reference}
    for name in ("fused", "unfused", "numpy"):
        row[f"{name}_seconds"] = seconds[name]
    for name in ("fused", "unfused"):
        row[f"{name}_vs_numpy"] = seconds["numpy"] / seconds[name]
        row[f"{name}_vs_reference"] = per_graph_reference * count / seconds[name]
    return row


def single_graph(n: int) -> np.ndarray:
    if n <= 32:
        return random_connected_adjacency(n, 2 * n, np.random.default_rng([1, n]))
    return nx.to_numpy_array(nx.connected_watts_strogatz_graph(n, 6, 0.3, seed=n))


def bench_single(n: int, repeat: int) -> dict:
    """One graph: fused, unfused, numpy/LAPACK and (n <= 256) the reference."""
    adjacency = single_graph(n)
    functions = {
        "fused": lambda: hitting_time_and_gap(adjacency),
        "unfused": lambda: unfused(adjacency),
        "numpy": lambda: numpy_baseline(adjacency),
    }
    if n <= 256:
        functions["reference"] = lambda: reference(adjacency[None])
    calls = dict.fromkeys(functions, max(1, int(2e6 / n**3)))
    if n >= 1000:
        functions["numpy"]()  # first touch of LAPACK's workspaces outside the timing
    hitting_time_and_gap(adjacency)
    unfused(adjacency)
    seconds, results = interleaved(functions, repeat if n < 2000 else max(1, repeat // 3), calls)
    h, gap = results["fused"]
    check(h, gap, *results["unfused"], f"fused vs unfused, n = {n}")
    check(h, gap, *results["numpy"], f"fused vs numpy, n = {n}")
    row = {"n": n, "hitting_time": float(h), "gap": float(gap)}
    for name, value in seconds.items():
        row[f"{name}_seconds"] = value
    for name in ("fused", "unfused"):
        row[f"{name}_vs_numpy"] = seconds["numpy"] / seconds[name]
    if "reference" in results:
        h_ref, gap_ref = results["reference"]
        check(h, gap, h_ref[0], gap_ref[0], f"fused vs reference, n = {n}")
        for name in ("fused", "unfused"):
            row[f"{name}_vs_reference"] = seconds["reference"] / seconds[name]
    return row


def bench_sparse(n: int, repeat: int) -> dict:
    """A preferential-attachment graph: sparse gap and H bounds; dense baselines where n allows."""
    start = time.perf_counter()
    graph = nx.barabasi_albert_graph(n, 3, seed=n)
    row = {"n": n, "links": graph.number_of_edges(),
           "generate_seconds": time.perf_counter() - start}
    functions: dict[str, Callable[[], object]] = {
        "sparse_gap": lambda: sparse_spectral_gap(graph),
        "bounds": lambda: hitting_time_bounds(graph, method="bound"),
    }
    dense = n <= 3000
    if dense:
        adjacency = nx.to_numpy_array(graph)
        functions["fused"] = lambda: hitting_time_and_gap(adjacency)
        functions["numpy"] = lambda: numpy_baseline(adjacency)
    seconds, results = interleaved(functions, repeat if dense else 1)
    bounds = results["bounds"]
    row.update(gap=results["sparse_gap"], lower=bounds.lower, upper=bounds.upper,
               factor=bounds.factor)
    row.update({f"{name}_seconds": value for name, value in seconds.items()})
    if dense:
        h, gap = results["numpy"]
        check(results["fused"][0], results["sparse_gap"], h, gap, f"sparse gap, n = {n}")
        assert bounds.lower <= h <= bounds.upper, f"H = {h} outside {bounds}"
        row.update(hitting_time=float(h), sparse_gap_vs_numpy=seconds["numpy"] /
                   seconds["sparse_gap"])
    return row


def print_tables(report: dict) -> None:
    print(f"\nstacks: best of {report['repeat']}, interleaved")
    print(f"{'graphs x n':>12s} {'fused':>10s} {'unfused':>10s} {'numpy':>10s} "
          f"{'ref/graph':>10s} | vs numpy: fused unfused | vs reference: fused unfused")
    for r in report["stacks"]:
        print(f"{r['graphs']:>6d} x {r['n']:<3d} {show(r['fused_seconds']):>10s} "
              f"{show(r['unfused_seconds']):>10s} {show(r['numpy_seconds']):>10s} "
              f"{show(r['reference_seconds_per_graph']):>10s} | {r['fused_vs_numpy']:10.1f}x "
              f"{r['unfused_vs_numpy']:6.1f}x | {r['fused_vs_reference']:16.0f}x "
              f"{r['unfused_vs_reference']:6.0f}x")
    print("\nsingle graphs")
    print(f"{'n':>6s} {'fused':>10s} {'unfused':>10s} {'numpy':>10s} {'reference':>10s} "
          f"| vs numpy: fused unfused")
    for r in report["single"]:
        print(f"{r['n']:>6d} {show(r['fused_seconds']):>10s} {show(r['unfused_seconds']):>10s} "
              f"{show(r['numpy_seconds']):>10s} {show(r.get('reference_seconds', np.nan)):>10s} "
              f"| {r['fused_vs_numpy']:10.1f}x {r['unfused_vs_numpy']:6.1f}x")
    print("\nlarge sparse graphs (preferential attachment, m = 3)")
    for r in report["sparse"]:
        dense = (f"; dense numpy {show(r['numpy_seconds'])}, fused {show(r['fused_seconds'])}"
                 if "numpy_seconds" in r else "")
        print(f"n = {r['n']:,}: sparse_spectral_gap {show(r['sparse_gap_seconds'])} "
              f"(gap {r['gap']:.6g}), hitting_time_bounds {show(r['bounds_seconds'])} "
              f"(H in [{r['lower']:.6g}, {r['upper']:.6g}], factor {r['factor']:.2f}){dense}")


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    stacks = report["stacks"]
    positions = np.arange(len(stacks))
    for offset, (key, label) in zip((-0.3, -0.1, 0.1, 0.3), (
            ("fused_vs_numpy", "fused / numpy"), ("unfused_vs_numpy", "unfused / numpy"),
            ("fused_vs_reference", "fused / reference"),
            ("unfused_vs_reference", "unfused / reference")), strict=True):
        values = [r[key] for r in stacks]
        axes[0].bar(positions + offset, values, 0.2, label=label)
        for x, value in zip(positions + offset, values, strict=True):
            axes[0].annotate(f"{value:.0f}x" if value >= 10 else f"{value:.1f}x", (x, value),
                             ha="center", va="bottom", fontsize=7)
    axes[0].set_xticks(positions, [f"{r['graphs']} x {r['n']}" for r in stacks])
    axes[0].set_title("stacks of graphs: speed-up of ours", fontsize=9)
    singles = report["single"]
    sizes = [r["n"] for r in singles]
    for key, label in (("fused_seconds", "fused"), ("unfused_seconds", "unfused"),
                       ("numpy_seconds", "numpy / LAPACK"), ("reference_seconds", "reference")):
        axes[1].plot(sizes, [r.get(key, np.nan) for r in singles], "o-", label=label)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("nodes")
    axes[1].set_ylabel("seconds (H and gap of one graph)")
    axes[1].set_title("one graph", fontsize=9)
    sparse = report["sparse"]
    names = [f"n = {r['n']:,}" for r in sparse]
    x = np.arange(len(sparse))
    for offset, (key, label) in zip((-0.3, -0.1, 0.1, 0.3), (
            ("sparse_gap_seconds", "sparse_spectral_gap"),
            ("bounds_seconds", "hitting_time_bounds"),
            ("fused_seconds", "dense fused"), ("numpy_seconds", "dense numpy")), strict=True):
        axes[2].bar(x + offset, [r.get(key, np.nan) for r in sparse], 0.2, label=label)
    axes[2].set_xticks(x, names)
    axes[2].set_title("large sparse graphs (preferential attachment)", fontsize=9)
    axes[2].set_ylabel("seconds")
    for ax in axes:
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    load = report["load_average_before"][0]
    fig.suptitle(f"topokit kernels vs batched numpy and a per-graph reference "
                 f"({report['machine']['cpu_count']} cores, load average {load:.1f})", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads, one repeat")
    parser.add_argument("--repeat", type=int, default=5, help="best of this many (default 5)")
    args = parser.parse_args()
    repeat = 2 if args.quick else args.repeat
    stacks = [(1000, 16), (100, 64)] if args.quick else [(4000, 16), (1000, 32), (250, 64),
                                                          (60, 128)]
    singles = [16, 256, 1000] if args.quick else [16, 64, 256, 1000, 2000, 5000]
    sparse = [2000, 20_000] if args.quick else [2000, 100_000]
    report = {"machine": machine(), "load_average_before": os.getloadavg(), "repeat": repeat,
              "quick": args.quick}
    started = time.perf_counter()
    report["stacks"] = [bench_stack(count, n, repeat) for count, n in stacks]
    report["single"] = [bench_single(n, repeat) for n in singles]
    report["sparse"] = [bench_sparse(n, repeat) for n in sparse]
    report["load_average_after"] = os.getloadavg()
    report["seconds"] = time.perf_counter() - started
    print(f"load average before {report['load_average_before'][0]:.2f}, after "
          f"{report['load_average_after'][0]:.2f} ({os.cpu_count()} cores); "
          f"{report['seconds']:.0f} s in all")
    print_tables(report)
    path = write_json("bench_kernels.json", report)
    plot(report, out_path("bench_kernels.png"))
    print(f"wrote {path} and {out_path('bench_kernels.png')}")


if __name__ == "__main__":
    main()
