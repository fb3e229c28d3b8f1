"""Benchmark: the vectorised D-PSGD core against a per-device loop reference.

For 16, 32 and 128 devices (logistic regression on scikit-learn's digits, a
random connected social graph used as the topology, every fourth device DP
with the default DPConfig, accuracy evaluated every round), it times

- ``topokit.training.train`` end to end over 1,000 rounds (validation,
  partition, the rounds, evaluation, and the dp-accounting epsilon included);
- ``tests/naive_training.naive_train``, a per-device loop of the same
  algorithm, over fewer rounds (it is slow), checks that both give the same
  numbers for the same seed, and reports rounds per second and the speed-up.

Run from the repository root::

    python analyses/bench_training.py            # writes analyses/out/bench_training.{json,png}
    python analyses/bench_training.py --quick    # fewer rounds, for a smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from naive_training import naive_train  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from topokit._io import atomic_path, atomic_write_text  # noqa: E402
from topokit.network import Network, Topology  # noqa: E402
from topokit.training import DPConfig, load_digits, train  # noqa: E402

OUT = ROOT / "analyses" / "out"


def bench_network(n_devices: int, seed: int = 0) -> tuple[Network, Topology]:
    """A connected small-world social graph; the topology uses its links, every 4th device DP."""
    rng = np.random.default_rng(seed)
    social = nx.connected_watts_strogatz_graph(n_devices, 4, 0.3, seed=seed)
    delay = rng.uniform(5.0, 40.0, (n_devices, n_devices))
    delay = np.triu(delay, 1) + np.triu(delay, 1).T
    net = Network(social, rng.uniform(3.0, 8.0, n_devices), delay, name=f"bench-{n_devices}")
    topology = Topology(social.edges, dp_devices=list(range(0, n_devices, 4)))
    return net, topology.validate(net)


def run(sizes, rounds, naive_rounds, check_rounds, seed=0, checkpoint_every=1):
    X, y = load_digits()
    dp = DPConfig()
    results = []
    for n in sizes:
        net, topology = bench_network(n, seed)
        kwargs = dict(model="logreg", lr=0.2, lr_decay=0.99, batch_size=64, dp=dp, seed=seed,
                      checkpoint_every=checkpoint_every)
        # Same numbers for the same seed (a short run of both).
        fast = train(net, topology, X, y, rounds=check_rounds, **kwargs)
        _, accuracy, params = naive_train(net, topology, X, y, rounds=check_rounds, **kwargs)
        gap = float(np.abs(fast.final_params - params).max())
        same_accuracy = bool(np.array_equal(fast.accuracy, accuracy))

        vectorised = train(net, topology, X, y, rounds=rounds, **kwargs)
        with threadpool_limits(limits=1, user_api="blas"):  # the core's own setting, for fairness
            started = time.perf_counter()
            naive_train(net, topology, X, y, rounds=naive_rounds, **kwargs)
            naive_seconds = time.perf_counter() - started
        fast_rate = rounds / vectorised.wall_clock
        naive_rate = naive_rounds / naive_seconds
        results.append(
            {
                "devices": n,
                "checkpoint_every": checkpoint_every,
                "rounds": rounds,
                "vectorised_seconds": vectorised.wall_clock,
                "vectorised_rounds_per_second": fast_rate,
                "naive_rounds": naive_rounds,
                "naive_seconds": naive_seconds,
                "naive_rounds_per_second": naive_rate,
                "speedup": fast_rate / naive_rate,
                "final_accuracy": vectorised.final_accuracy,
                "max_abs_param_gap_vs_naive": gap,
                "same_accuracy_as_naive": same_accuracy,
                "check_rounds": check_rounds,
            }
        )
        print(
            f"{n:4d} devices, H={checkpoint_every:2d}: vectorised {fast_rate:8.1f} rounds/s "
            f"({vectorised.wall_clock:.2f} s for {rounds} rounds), naive {naive_rate:7.1f} "
            f"rounds/s, speed-up {fast_rate / naive_rate:5.1f}x, "
            f"max |gap| {gap:.1e}, final accuracy {vectorised.final_accuracy:.3f}",
            flush=True,
        )
    return results


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("accuracy of every device every round (H = 1)",
         [r for r in results if r["checkpoint_every"] == 1]),
        ("the round alone (one evaluation at the end)",
         [r for r in results if r["checkpoint_every"] == r["rounds"]]),
    ]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, (title, rows) in zip(axes, panels):
        positions = np.arange(len(rows))
        ax.bar(positions - 0.2, [r["vectorised_rounds_per_second"] for r in rows], 0.4,
               label="vectorised core")
        ax.bar(positions + 0.2, [r["naive_rounds_per_second"] for r in rows], 0.4,
               label="per-device loop")
        for x, r in zip(positions, rows):
            ax.annotate(f"{r['speedup']:.1f}x", (x - 0.2, r["vectorised_rounds_per_second"]),
                        ha="center", va="bottom", fontsize=9)
        ax.set_xticks(positions, [f"{r['devices']} devices" for r in rows])
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("rounds per second")
    axes[0].legend(fontsize=8)
    fig.suptitle("D-PSGD, logistic regression on digits, DP (default DPConfig) on every 4th device",
                 fontsize=10)
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 rounds instead of 1000")
    parser.add_argument("--sizes", default="16,32,128")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rounds, naive_rounds = (100, 20) if args.quick else (1000, 100)
    sizes = [int(s) for s in args.sizes.split(",")]
    # H = 1 evaluates all devices on the test set every round (the paper's checkpoint round);
    # that evaluation costs the same arithmetic in both implementations and bounds the ratio,
    # so H = 10 and H = rounds (one evaluation at the end: the round alone) are timed too.
    results = []
    for every in (1, 10, rounds):  # rounds: evaluated once, at the end (the round alone)
        results += run(sizes, rounds, naive_rounds, check_rounds=5, seed=args.seed,
                       checkpoint_every=every)
    OUT.mkdir(parents=True, exist_ok=True)
    report = {
        "command": "python analyses/bench_training.py" + (" --quick" if args.quick else ""),
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "platform": platform.platform(),
        },
        "results": results,
    }
    atomic_write_text(OUT / "bench_training.json", json.dumps(report, indent=1) + "\n")
    plot(results, OUT / "bench_training.png")
    print(f"wrote {OUT / 'bench_training.json'} and {OUT / 'bench_training.png'}")


if __name__ == "__main__":
    main()
