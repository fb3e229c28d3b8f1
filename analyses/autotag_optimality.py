"""How far AutoTag's design is from the exact CoTOPO optimum under the predictor.

For random connected networks of 4-7 devices (``topokit.testing.naive_autotag.random_network``:
G(n, 0.3) social graphs, delays U(1, 50) s with 20 % of the non-social pairs
unreachable, compute times U(1, 20) s), compares AutoTag's pseudo training time with
``topokit.baselines.optimum`` (exhaustive search over every link set).  Writes
analyses/out/autotag_optimality.json and .png.

Run: python -m analyses.autotag_optimality [--networks 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from analyses._common import machine, out_path, write_json
from topokit import autotag
from topokit.design.baselines import optimum
from topokit.plotting.design import save_figure
from topokit.testing.naive_autotag import random_network


def relative_gaps(n_devices: int, networks: int, seed: int) -> np.ndarray:
    """(AutoTag - optimum) / optimum pseudo time over ``networks`` random networks."""
    gaps = []
    for k in range(networks):
        net = random_network(n_devices, seed=seed + 1000 * n_devices + k)
        best = optimum(net).metrics.pseudo_time
        gaps.append(autotag(net).metrics.pseudo_time / best - 1.0)
    return np.array(gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = {}
    print("|V| | networks | mean gap | median gap | worst gap | AutoTag optimal")
    for n_devices in (4, 5, 6, 7):
        gaps = relative_gaps(n_devices, args.networks, args.seed)
        rows[n_devices] = gaps
        print(f"{n_devices} | {gaps.size} | {100 * gaps.mean():.1f} % | "
              f"{100 * np.median(gaps):.1f} % | {100 * gaps.max():.1f} % | "
              f"{np.mean(gaps <= 1e-9) * 100:.0f} %", flush=True)
    write_json("autotag_optimality.json", {
        "networks_per_size": args.networks, "seed": args.seed, "machine": machine(),
        "seconds": time.perf_counter() - start,
        "relative_gaps": {str(n): gaps.tolist() for n, gaps in rows.items()},
    })

    from matplotlib.figure import Figure

    figure = Figure(figsize=(5, 4), layout="constrained")
    axis = figure.subplots()
    axis.boxplot([100 * rows[n] for n in rows], tick_labels=[str(n) for n in rows])
    axis.set_xlabel("devices |V|")
    axis.set_ylabel("AutoTag above the optimum (%)")
    axis.set_title("pseudo training time, eq. (15)")
    save_figure(figure, out_path("autotag_optimality.png"))
    print(f"runtime {time.perf_counter() - start:.1f} s; outputs in {out_path('')}")


if __name__ == "__main__":
    main()
