"""Privatized GFL, regression setting of the journals (000 Sec. V, 001 Sec. 5.1).

P = 10 servers (Erdos-Renyi, p = 0.4), K = 100 clients, N = 100 samples,
M = 2, L = 11, E in [1, 10], B in [5, 10], mu = 0.7, rho = 0.1,
sigma_g^2 = 0.1, no client-to-server noise.  Writes to analyses/out/:

- gfl_regression_curves_lazy.png / _metropolis.png: centroid and average
  individual MSD for none / random / homomorphic under each A;
- gfl_regression_sigma.png: steady state vs sigma_g^2 in {0.001, ..., 10};
- gfl_regression_mu.png: steady state vs mu in {0.1, 0.5, 1, 5} (divergence recorded);
- gfl_regression.csv (all curves), gfl_regression_summary.md / .json.

Run: python -m analyses.gfl_regression   (about a minute on 2 cores)
"""

from __future__ import annotations

import time

import pandas as pd

from analyses._common import machine, out_path, write_json
from topokit import gfl
from topokit._io import atomic_path, atomic_write_text
from topokit.plotting.gfl import plot_msd, plot_sweep

ITERATIONS, REPS, SEED = 600, 10, 2024
SIGMAS = (0.001, 0.01, 0.1, 1.0, 2.0, 10.0)
MUS = (0.1, 0.5, 1.0, 5.0)
SCHEMES = ("none", "random", "homomorphic")


def save(fig, name: str) -> None:
    with atomic_path(out_path(name)) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def steady(result: gfl.GFLResult, which: str = "centroid") -> float:
    return float("nan") if result.diverged else result.steady_state_db(which)


def main() -> None:
    start = time.perf_counter()
    base = gfl.preset("regression").replace(iterations=ITERATIONS, repetitions=REPS, seed=SEED)
    rows, frames = [], []

    curves = {}
    for weights in ("lazy-metropolis", "metropolis"):
        config = base.replace(weights=weights)
        results = gfl.run_many(config, [{"scheme": s, "name": s} for s in SCHEMES])
        curves[weights] = results
        save(plot_msd(results, title=f"A: {weights}; sigma_g^2 = 0.1, mu = 0.7"),
             f"gfl_regression_curves_{weights.split('-')[0]}.png")
        for r in results:
            frames.append(r.to_frame().assign(experiment=f"curves/{weights}"))
            rows.append({"experiment": "curves", "A": weights, "scheme": r.label,
                         "sigma_g2": 0.1, "mu": 0.7, "centroid_db": steady(r),
                         "individual_db": steady(r, "individual"), "diverged_at": r.diverged_at})

    sigma_variants = [{"scheme": s, "sigma_g2": g, "name": f"{s}, sigma_g^2={g}"}
                      for g in SIGMAS for s in ("random", "homomorphic")]
    sigma_results = gfl.run_many(base, sigma_variants)
    mu_variants = [{"scheme": s, "mu": m, "name": f"{s}, mu={m}"}
                   for m in MUS for s in ("random", "homomorphic")]
    mu_results = gfl.run_many(base.replace(iterations=2 * ITERATIONS), mu_variants)

    for name, results in (("sigma", sigma_results), ("mu", mu_results)):
        for r in results:
            frames.append(r.to_frame().assign(experiment=f"{name}-sweep"))
            rows.append({"experiment": f"{name}-sweep", "A": "lazy-metropolis",
                         "scheme": r.config.scheme, "sigma_g2": r.config.sigma_g2,
                         "mu": r.config.mu, "centroid_db": steady(r),
                         "individual_db": steady(r, "individual"), "diverged_at": r.diverged_at})
        series = {}
        for scheme in ("random", "homomorphic"):
            picked = [r for r in results if r.config.scheme == scheme]
            series[f"{scheme} centroid"] = [steady(r) for r in picked]
            series[f"{scheme} individual"] = [steady(r, "individual") for r in picked]
        values = SIGMAS if name == "sigma" else MUS
        label = "sigma_g^2" if name == "sigma" else "step size mu"
        save(plot_sweep(values, series, xlabel=label,
                        title=f"A: lazy-metropolis; steady state vs {label}"),
             f"gfl_regression_{name}.png")
        save(plot_msd(results, title=f"A: lazy-metropolis; {label} sweep"),
             f"gfl_regression_{name}_curves.png")

    table = pd.DataFrame(rows)
    with atomic_path(out_path("gfl_regression.csv")) as tmp:
        pd.concat(frames, ignore_index=True).to_csv(tmp, index=False)
    runtime = time.perf_counter() - start
    markdown = table.to_markdown(index=False, floatfmt=".2f") if _has_tabulate() else \
        table.to_string(index=False)
    atomic_write_text(out_path("gfl_regression_summary.md"),
                      "# GFL regression (steady state = mean of last 25 % of iterations, dB)\n\n"
                      + markdown + f"\n\nruntime {runtime:.1f} s\n")
    write_json("gfl_regression_summary.json", {"rows": rows, "runtime_s": runtime,
                                               "iterations": ITERATIONS, "repetitions": REPS,
                                               "seed": SEED, "machine": machine()})
    pd.set_option("display.width", 140)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    print(f"runtime {runtime:.1f} s; outputs in {out_path('')}")


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
