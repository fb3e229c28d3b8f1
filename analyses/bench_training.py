"""Benchmark: the vectorised D-PSGD core against a per-device loop reference.

For 16, 32 and 128 devices (logistic regression on scikit-learn's digits, a
random connected small-world social graph used as the topology, every fourth
device DP with the default DPConfig), it times in one run, interleaved and
best of ``--repeat``:

- ``topokit.training.train`` (the vectorised core), end to end;
- ``topokit.testing.naive_training.naive_train``, a per-device loop of the same
  algorithm (same data preparation, same random streams, same accuracy
  evaluation of every device on the test set at the same checkpoints).

Both do fixed work before the first round (train also validates the topology
and runs the dp-accounting accountant); the per-round rate of each is
therefore measured as (long run - short run) / (rounds in between), with the
same checkpoint interval H in both: H = 1 (every device evaluated every round),
H = 10, and "ends" (evaluated at round 0 and at the end only: the round
alone).  It also reports the end-to-end time of 1,000 rounds of ``train`` and
checks that both give the same numbers for the same seed.

Run from the repository root::

    python -m analyses.bench_training            # writes analyses/out/bench_training.{json,png}
    python -m analyses.bench_training --quick    # fewer rounds and repeats, for a smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import networkx as nx
import numpy as np
from threadpoolctl import threadpool_limits

from topokit._io import atomic_path, atomic_write_text
from topokit.network.core import Network, Topology
from topokit.testing.naive_training import naive_train
from topokit.training import DPConfig, load_digits, train

ROOT = Path(__file__).resolve().parents[1]
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


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"load average {os.getloadavg()}"


def _seconds(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def run(sizes, fast_rounds, naive_rounds, short_rounds, repeat, check_rounds=5, seed=0):
    """Per size and checkpoint interval: rates, speed-up and the 1,000-round time."""
    X, y = load_digits()
    results = []
    for n in sizes:
        net, topology = bench_network(n, seed)
        kwargs = dict(model="logreg", lr=0.2, lr_decay=0.99, batch_size=64, dp=DPConfig(),
                      seed=seed)
        # Same numbers for the same seed (a short run of both, accuracy every round).
        fast = train(net, topology, X, y, rounds=check_rounds, **kwargs)
        _, accuracy, params = naive_train(net, topology, X, y, rounds=check_rounds, **kwargs)
        gap = float(np.abs(fast.final_params - params).max())
        same_accuracy = bool(np.array_equal(fast.accuracy, accuracy))
        for every in (1, 10, None):  # None: evaluated at round 0 and after the last round only

            def ours(rounds, every=every, net=net, topology=topology, kwargs=kwargs):
                return train(net, topology, X, y, rounds=rounds,
                             checkpoint_every=every or rounds, **kwargs)

            def reference(rounds, every=every, net=net, topology=topology, kwargs=kwargs):
                with threadpool_limits(limits=1, user_api="blas"):  # the core's own setting
                    naive_train(net, topology, X, y, rounds=rounds,
                                checkpoint_every=every or rounds, **kwargs)

            times = {key: [] for key in ("fast_short", "fast_long", "naive_short", "naive_long")}
            for _ in range(repeat):  # interleaved: both see the same load
                times["fast_short"].append(_seconds(lambda: ours(short_rounds)))
                times["naive_short"].append(_seconds(lambda: reference(short_rounds)))
                times["fast_long"].append(_seconds(lambda: ours(fast_rounds)))
                times["naive_long"].append(_seconds(lambda: reference(naive_rounds)))
            best = {key: min(values) for key, values in times.items()}
            fast_rate = (fast_rounds - short_rounds) / (best["fast_long"] - best["fast_short"])
            naive_rate = (naive_rounds - short_rounds) / (best["naive_long"] - best["naive_short"])
            row = {
                "devices": n,
                "checkpoint_every": every or "ends",
                "vectorised_rounds_per_second": fast_rate,
                "naive_rounds_per_second": naive_rate,
                "speedup": fast_rate / naive_rate,
                "rounds": fast_rounds,
                "vectorised_seconds": best["fast_long"],
                "naive_rounds": naive_rounds,
                "naive_seconds": best["naive_long"],
                "short_rounds": short_rounds,
                "times": times,
                "max_abs_param_gap_vs_naive": gap,
                "same_accuracy_as_naive": same_accuracy,
                "check_rounds": check_rounds,
            }
            results.append(row)
            print(
                f"{n:4d} devices, H={str(row['checkpoint_every']):>4}: "
                f"vectorised {fast_rate:8.1f} rounds/s, naive {naive_rate:7.1f} rounds/s, "
                f"speed-up {fast_rate / naive_rate:5.1f}x; {fast_rounds} rounds of train end to "
                f"end {best['fast_long']:.2f} s; max |gap| {gap:.1e}, "
                f"same accuracy {same_accuracy}",
                flush=True,
            )
    return results


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        (f"H = {every}: " + note, [r for r in results if r["checkpoint_every"] == every])
        for every, note in ((1, "every device evaluated every round"), (10, "every 10 rounds"),
                            ("ends", "evaluated at the ends only (the round alone)"))
    ]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    for ax, (title, rows) in zip(axes, panels, strict=True):
        positions = np.arange(len(rows))
        ax.bar(positions - 0.2, [r["vectorised_rounds_per_second"] for r in rows], 0.4,
               label="vectorised core")
        ax.bar(positions + 0.2, [r["naive_rounds_per_second"] for r in rows], 0.4,
               label="per-device loop")
        for x, r in zip(positions, rows, strict=True):
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
    parser.add_argument("--quick", action="store_true", help="fewer rounds and one repeat")
    parser.add_argument("--sizes", default="16,32,128")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    fast_rounds, naive_rounds, short_rounds = (100, 30, 10) if args.quick else (1000, 60, 10)
    repeat = 1 if args.quick else args.repeat
    sizes = [int(s) for s in args.sizes.split(",")]
    uptime_before = _uptime()
    print(uptime_before, flush=True)
    results = run(sizes, fast_rounds, naive_rounds, short_rounds, repeat, seed=args.seed)
    uptime_after = _uptime()
    print(uptime_after, flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    report = {
        "command": "python -m analyses.bench_training" + (" --quick" if args.quick else ""),
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
            "uptime_before": uptime_before,
            "uptime_after": uptime_after,
            "platform": platform.platform(),
        },
        "results": results,
    }
    atomic_write_text(OUT / "bench_training.json", json.dumps(report, indent=1) + "\n")
    plot(results, OUT / "bench_training.png")
    print(f"wrote {OUT / 'bench_training.json'} and {OUT / 'bench_training.png'}")


if __name__ == "__main__":
    main()
