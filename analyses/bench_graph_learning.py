"""Speed of topokit.learn's fast solver against cvxpy (Clarabel, SCS) and a plain numpy FBF.

    python analyses/bench_graph_learning.py [--quick]

Signals: 200 smooth signals on d random points of the unit square (three smooth
fields plus 0.1 white noise), z normalised to mean 1, alpha = 1, beta = 0.5.
Writes analyses/out/bench_graph_learning.{csv,md}.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topokit._io import atomic_write_text  # noqa: E402
from topokit.learn.problems import log_degree_problem_fixed, solve_problem  # noqa: E402
from topokit.learn.solvers import (  # noqa: E402
    _fbf_numba,
    _fbf_numpy,
    log_degree_objective,
    pairwise_sq_distances,
)

OUT = Path(__file__).resolve().parent / "out"
ALPHA, BETA, TOL = 1.0, 0.5, 1e-8
CVXPY_LIMIT_S = 900.0


def make_z(d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pts = rng.random((d, 2))
    fields = np.c_[np.sin(3 * pts[:, 0]), np.cos(4 * pts[:, 1]), pts[:, 0] * pts[:, 1]].T
    X = rng.standard_normal((200, 3)) @ fields + 0.1 * rng.standard_normal((200, d))
    z = pairwise_sq_distances(X)
    return z / z.mean()


def to_markdown(frame: pd.DataFrame) -> str:
    """Markdown table without the optional tabulate dependency."""
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def run_cvxpy(z, d, solver):
    """Build (constants: the DPP build needs O(p^2) memory) and solve; time both."""
    def build_and_solve():
        problem, w = log_degree_problem_fixed(z, ALPHA, BETA)
        solve_problem(problem, solver=solver)
        return w

    w, seconds = timed(build_and_solve)
    w = np.maximum(w.value, 0)
    return log_degree_objective(w, z, ALPHA, BETA), seconds


def _child(z, d, solver, queue):
    queue.put(run_cvxpy(z, d, solver))


def run_cvxpy_guarded(z, d, solver, limit=CVXPY_LIMIT_S):
    """run_cvxpy in a child process: a solver crash or a run past ``limit`` s is reported, not fatal."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(z, d, solver, queue))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.terminate()
        child.join()
        raise TimeoutError(f"no answer within {limit:.0f} s")
    if queue.empty():
        raise RuntimeError(f"solver process ended with exit code {child.exitcode}")
    return queue.get()


def main(quick: bool) -> None:
    _fbf_numba(make_z(5), ALPHA, BETA, 0.0, TOL, 10)  # compile
    rows = []
    for d in [50, 100] if quick else [50, 100, 300]:
        z = make_z(d)
        (w, n_iter, _), t_fast = timed(lambda: _fbf_numba(z, ALPHA, BETA, 0.0, TOL, 200_000))
        f_fast = log_degree_objective(w, z, ALPHA, BETA)
        for solver in ["clarabel", "scs"]:
            try:
                f_ref, t_ref = run_cvxpy_guarded(z, d, solver)
            except Exception as exc:  # noqa: BLE001 - report solver failures in the table
                print(f"d={d} {solver}: {exc}", flush=True)
                rows.append({"d": d, "reference": solver, "fast_s": t_fast, "ref_s": np.nan,
                             "speedup": np.nan, "fast_iter": n_iter, "rel_gap": np.nan,
                             "note": str(exc)})
                continue
            rows.append({"d": d, "reference": solver, "fast_s": t_fast, "ref_s": t_ref,
                         "speedup": t_ref / t_fast, "fast_iter": n_iter,
                         "rel_gap": (f_fast - f_ref) / abs(f_ref)})
            print(rows[-1], flush=True)
    for d in [300] if quick else [300, 1000]:
        z = make_z(d)
        (w, n_iter, _), t_fast = timed(lambda: _fbf_numba(z, ALPHA, BETA, 0.0, TOL, 200_000))
        (w2, n2, _), t_np = timed(lambda: _fbf_numpy(z, ALPHA, BETA, 0.0, TOL, 200_000))
        f1, f2 = log_degree_objective(w, z, ALPHA, BETA), log_degree_objective(w2, z, ALPHA, BETA)
        rows.append({"d": d, "reference": "numpy-fbf", "fast_s": t_fast, "ref_s": t_np,
                     "speedup": t_np / t_fast, "fast_iter": n_iter,
                     "rel_gap": (f1 - f2) / abs(f2)})
        print(rows[-1], flush=True)
    for d in [1000] if quick else [2000, 5000]:
        z = make_z(d)
        tracemalloc.start()
        (w, n_iter, res), t_fast = timed(lambda: _fbf_numba(z, ALPHA, BETA, 0.0, TOL, 200_000))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append({"d": d, "reference": "alone", "fast_s": t_fast, "ref_s": np.nan,
                     "speedup": np.nan, "fast_iter": n_iter, "rel_gap": np.nan,
                     "peak_MB_python": peak / 1e6, "z_MB": z.nbytes / 1e6})
        print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    atomic_write_text(OUT / "bench_graph_learning.csv", frame.to_csv(index=False))
    atomic_write_text(OUT / "bench_graph_learning.md", to_markdown(frame))
    print(to_markdown(frame))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
