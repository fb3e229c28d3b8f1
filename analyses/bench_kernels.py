"""Benchmark of the graph kernels against a plain reference, in one run.

Ours: ``lazy_metropolis`` + ``max_hitting_time`` + ``spectral_gap`` on a
(10^4, 16, 16) stack (Numba, parallel over the stack), and on single graphs
of n = 100, 500, 2000.  Reference (tests/naive.py): per graph, a networkx
graph, eq. (4) entry by entry, eq. (11) solved per target node with numpy,
``numpy.linalg.eigvals``.  Prints graphs per second and the speed-up ratio;
writes analyses/out/bench_kernels.json.

Run: python analyses/bench_kernels.py [--count 10000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import naive  # noqa: E402
from _common import machine, write_json  # noqa: E402

from topokit import lazy_metropolis, max_hitting_time, spectral_gap  # noqa: E402
from topokit.batch import random_connected_adjacency  # noqa: E402


def ours(adjacency: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    transitions = lazy_metropolis(adjacency)
    return max_hitting_time(transitions), spectral_gap(transitions)


def reference(adjacency: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    results = [naive.reference_metrics(nx.from_numpy_array(a)) for a in adjacency]
    return np.array([h for h, _ in results]), np.array([g for _, g in results])


def timed(function, *args, repeat: int = 1) -> tuple[float, object]:
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    args = parser.parse_args()

    stack = np.stack(
        [random_connected_adjacency(16, 32, np.random.default_rng([0, i])) for i in range(args.count)]
    )
    ours(stack[:2])  # compile / load the Numba cache outside the timing
    ours_seconds, (h_ours, gap_ours) = timed(ours, stack, repeat=3)
    ref_seconds, (h_ref, gap_ref) = timed(reference, stack)
    assert np.allclose(h_ours, h_ref, rtol=1e-8) and np.allclose(gap_ours, gap_ref, atol=1e-9)
    report = {
        "machine": machine(),
        "stack": {
            "graphs": args.count,
            "n": 16,
            "m": 32,
            "ours_seconds": ours_seconds,
            "reference_seconds": ref_seconds,
            "ours_graphs_per_second": args.count / ours_seconds,
            "reference_graphs_per_second": args.count / ref_seconds,
            "speedup": ref_seconds / ours_seconds,
        },
        "single": [],
    }
    print(f"stack of {args.count} graphs (n=16, m=32): ours {ours_seconds:.3f} s "
          f"({args.count / ours_seconds:,.0f} graphs/s), reference {ref_seconds:.2f} s "
          f"({args.count / ref_seconds:,.0f} graphs/s): {ref_seconds / ours_seconds:.0f}x")

    for n in (100, 500, 2000):
        graph = nx.connected_watts_strogatz_graph(n, 6, 0.3, seed=n)
        adjacency = nx.to_numpy_array(graph)
        ours_seconds, (h, gap) = timed(lambda a: ours(a), adjacency, repeat=2)
        row = {"n": n, "ours_seconds": ours_seconds, "hitting_time": float(h), "gap": float(gap)}
        if n <= 500:  # the reference solves n systems of size n - 1: O(n^4)
            ref_seconds, (h_ref, gap_ref) = timed(reference, adjacency[None])
            assert np.isclose(h, h_ref[0], rtol=1e-7) and np.isclose(gap, gap_ref[0], atol=1e-9)
            row.update(reference_seconds=ref_seconds, speedup=ref_seconds / ours_seconds)
        report["single"].append(row)
        extra = f", reference {row['reference_seconds']:.2f} s: {row['speedup']:.0f}x" if "speedup" in row else ""
        print(f"single graph n={n}: ours {ours_seconds:.3f} s{extra}")
    path = write_json("bench_kernels.json", report)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
