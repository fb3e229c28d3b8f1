"""Reproduce DeepPrivacy's Fig. 3: 10^4 random connected topologies with |V| = 16, |E| = 32.

Degree deviation (mean absolute deviation of the degrees from 4) against the
hitting time H and against 1 / spectral gap, with their Spearman correlations.
The paper shows both growing with the deviation; it gives no correlation value.

Run: python -m analyses.fig3_random_topologies [--count 10000] [--seed 0]
Writes analyses/out/fig3_random_topologies.{json,png,parquet}.
"""

from __future__ import annotations

import argparse
import time

from scipy.stats import spearmanr

from analyses._common import machine, out_path, write_json
from topokit.design.batch import RandomEnsemble, batch_analyze
from topokit.plotting.design import degree_deviation_figure, save_figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    start = time.perf_counter()
    table = batch_analyze(
        RandomEnsemble(n=16, m=32, count=args.count, seed=args.seed),
        out_path("fig3_random_topologies.parquet"),
        chunk_size=2_000,
    )
    seconds = time.perf_counter() - start
    rho_h = spearmanr(table["degree_deviation"], table["hitting_time"]).statistic
    rho_gap = spearmanr(table["degree_deviation"], 1.0 / table["spectral_gap"]).statistic
    rho_h_gap = spearmanr(table["hitting_time"], 1.0 / table["spectral_gap"]).statistic
    report = {
        "machine": machine(),
        "count": args.count,
        "seed": args.seed,
        "seconds": seconds,
        "spearman_deviation_vs_hitting_time": rho_h,
        "spearman_deviation_vs_inverse_gap": rho_gap,
        "spearman_hitting_time_vs_inverse_gap": rho_h_gap,
        "hitting_time_range": [float(table["hitting_time"].min()),
                               float(table["hitting_time"].max())],
        "inverse_gap_range": [float(1 / table["spectral_gap"].max()),
                              float(1 / table["spectral_gap"].min())],
    }
    write_json("fig3_random_topologies.json", report)
    save_figure(degree_deviation_figure(table), out_path("fig3_random_topologies.png"))
    print(f"{args.count} random connected topologies (|V|=16, |E|=32) in {seconds:.1f} s")
    print(f"Spearman(degree deviation, H)         = {rho_h:.3f}")
    print(f"Spearman(degree deviation, 1/gap)     = {rho_gap:.3f}")
    print(f"Spearman(H, 1/gap)                    = {rho_h_gap:.3f}")
    print(f"wrote {out_path('fig3_random_topologies.png')}")


if __name__ == "__main__":
    main()
