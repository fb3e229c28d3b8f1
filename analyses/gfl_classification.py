"""Privatized GFL, classification (001 Sec. 5.3) with breast-cancer data instead of Avazu.

Avazu is not reachable offline, so scikit-learn's bundled Wisconsin
breast-cancer data (569 samples, 30 features + bias) stands in: 30 % held out
as a clean test set, the rest split unequally (Dirichlet(2) sizes, >= 2 each)
over P = 5 servers x K = 10 clients, with per-client Gaussian feature noise
(own mean shift and std in [0.1, 1]).  Regularised logistic risk, rho = 0.03,
mu = 0.5, sigma_g^2 = 0.6, L = 5, 300 iterations, 20 repetitions.  Reports the
test error of the centroid model per scheme (and the MSD to w^o).
Writes analyses/out/gfl_classification*.png/.csv/.md/.json.

Run: python -m analyses.gfl_classification   (well under a minute)
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from analyses._common import machine, out_path, write_json
from topokit import gfl
from topokit._io import atomic_path, atomic_write_text
from topokit.plotting.gfl import plot_msd, plot_test_error

ITERATIONS, REPS, SEED = 300, 20, 11


def save(fig, name: str) -> None:
    with atomic_path(out_path(name)) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def main() -> None:
    start = time.perf_counter()
    config = gfl.preset("classification").replace(iterations=ITERATIONS, repetitions=REPS,
                                                  seed=SEED)
    problem = gfl.build_problem(config)
    results = gfl.run_many(config, [{"scheme": s, "name": s}
                                    for s in ("none", "random", "homomorphic")], problem=problem)
    title = f"breast cancer, P=5, K=10, sigma_g^2=0.6, A: {config.weights}"
    save(plot_test_error(results, title=title), "gfl_classification_error.png")
    save(plot_msd(results, title=title), "gfl_classification_msd.png")
    w_opt_error = float((np.sign(problem.test_U @ problem.w_opt) != problem.test_y).mean())
    rows = [{"scheme": r.label,
             "test_error_last50": float(r.test_error[-50:].mean()),
             "test_error_final": float(r.test_error[-1]),
             "centroid_msd_db": r.steady_state_db(),
             "individual_msd_db": r.steady_state_db("individual"),
             "diverged_at": r.diverged_at} for r in results]
    table = pd.DataFrame(rows)
    with atomic_path(out_path("gfl_classification.csv")) as tmp:
        pd.concat([r.to_frame() for r in results], ignore_index=True).to_csv(tmp, index=False)
    runtime = time.perf_counter() - start
    sizes = problem.n.ravel()
    text = table.to_string(index=False, float_format=lambda x: f"{x:.3f}")
    facts = (f"client sizes {sizes.min()}..{sizes.max()} (total {sizes.sum()}), "
             f"test set {problem.test_y.size}, test error of w^o {w_opt_error:.3f}")
    atomic_write_text(out_path("gfl_classification_summary.md"),
                      f"# GFL classification (breast cancer)\n\n{facts}\n\n```\n{text}\n```\n\n"
                      f"runtime {runtime:.1f} s\n")
    write_json("gfl_classification_summary.json", {
        "rows": rows, "w_opt_test_error": w_opt_error, "client_sizes": sizes.tolist(),
        "runtime_s": runtime, "seed": SEED, "repetitions": REPS, "machine": machine()})
    print(facts)
    print(text)
    print(f"runtime {runtime:.1f} s; outputs in {out_path('')}")


if __name__ == "__main__":
    main()
