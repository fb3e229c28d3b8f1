"""Sharing models versus sharing updates under client Laplace noise (001 Sec. 5.2).

P = 1 server, K = 1000 clients with data sets of 20..200 samples, L = 30,
E in [1, 10], mu = 0.2, rho = 0.007, client Laplace noise sigma_g^2 = 0.02.
The main comparison is averaged over 100 repetitions, the sweeps
(sigma_g^2 in the paper's {0.01, 0.05, 0.1, 0.5}, extended to 2..200 to find
where each mode fails, at mu = 0.2; mu in {0.05, 0.1, 0.2, 0.5, 1}
at sigma_g^2 = 0.02) over 30.  A run "fails" when its steady-state MSD is
above the starting MSD ||w^o||^2 (learning made things worse) or it diverges.
Writes analyses/out/gfl_mvu_*.png, gfl_mvu.csv, gfl_mvu_summary.md/.json.

Run: python -m analyses.gfl_models_vs_updates   (about a minute on 2 cores)
"""

from __future__ import annotations

import time

import pandas as pd

from analyses._common import machine, out_path, write_json
from topokit import gfl
from topokit._io import atomic_path, atomic_write_text
from topokit.plotting.gfl import plot_msd, plot_sweep

ITERATIONS, SEED = 300, 7
SIGMAS = (0.01, 0.05, 0.1, 0.5, 2.0, 10.0, 50.0, 200.0)  # the paper's four, then beyond
MUS = (0.05, 0.1, 0.2, 0.5, 1.0)


def save(fig, name: str) -> None:
    with atomic_path(out_path(name)) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def row(result: gfl.GFLResult, experiment: str) -> dict:
    ss = float("nan") if result.diverged else result.steady_state_db()
    start = float(result.msd_centroid_db[0])
    return {"experiment": experiment, "share": result.config.share,
            "client_noise": result.config.client_noise,
            "sigma_g2": result.config.client_sigma2, "mu": result.config.mu,
            "steady_db": ss, "start_db": start,
            "fails": bool(result.diverged or ss > start), "diverged_at": result.diverged_at}


def main() -> None:
    start = time.perf_counter()
    base = gfl.preset("models-vs-updates").replace(iterations=ITERATIONS, seed=SEED)
    rows, frames = [], []

    main_results = gfl.run_many(base.replace(repetitions=100), [
        {"client_noise": "none", "name": "no noise"},
        {"share": "models", "name": "share models"},
        {"share": "updates", "name": "share updates"},
    ])
    save(plot_msd(main_results, which=("centroid",),
                  title="P = 1: models vs updates, sigma_g^2 = 0.02, 100 repetitions"),
         "gfl_mvu_curves.png")
    for r in main_results:
        rows.append(row(r, "main (100 reps)"))
        frames.append(r.to_frame().assign(experiment="main"))

    sweeps = {
        "sigma": (SIGMAS, [{"share": s, "client_sigma2": g, "name": f"{s}, sigma_g^2={g}"}
                           for g in SIGMAS for s in ("models", "updates")], "sigma_g^2"),
        "mu": (MUS, [{"share": s, "mu": m, "name": f"{s}, mu={m}"}
                     for m in MUS for s in ("models", "updates")], "step size mu"),
    }
    for name, (values, variants, label) in sweeps.items():
        results = gfl.run_many(base.replace(repetitions=30), variants)
        for r in results:
            rows.append(row(r, f"{name}-sweep (30 reps)"))
            frames.append(r.to_frame().assign(experiment=f"{name}-sweep"))
        series = {s: [float("nan") if r.diverged else r.steady_state_db()
                      for r in results if r.config.share == s] for s in ("models", "updates")}
        save(plot_sweep(values, series, xlabel=label, title=f"P = 1: steady state vs {label}"),
             f"gfl_mvu_{name}.png")
        save(plot_msd(results, which=("centroid",), title=f"P = 1: {label} sweep"),
             f"gfl_mvu_{name}_curves.png")

    table = pd.DataFrame(rows)
    with atomic_path(out_path("gfl_mvu.csv")) as tmp:
        pd.concat(frames, ignore_index=True).to_csv(tmp, index=False)
    runtime = time.perf_counter() - start
    text = table.to_string(index=False, float_format=lambda x: f"{x:.2f}")
    atomic_write_text(out_path("gfl_mvu_summary.md"),
                      "# Models vs updates, P = 1 (steady state: last 25 % of iterations, dB)\n\n"
                      f"```\n{text}\n```\n\nruntime {runtime:.1f} s\n")
    write_json("gfl_mvu_summary.json", {"rows": rows, "runtime_s": runtime, "seed": SEED,
                                        "iterations": ITERATIONS, "machine": machine()})
    print(text)
    print(f"runtime {runtime:.1f} s; outputs in {out_path('')}")


if __name__ == "__main__":
    main()
