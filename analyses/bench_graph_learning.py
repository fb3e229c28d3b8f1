"""Speed of topokit.learn's default solver against a well-tuned numpy FBF and cvxpy.

    python -m analyses.bench_graph_learning             # full run: idle machine, a few minutes
    python -m analyses.bench_graph_learning --quick     # small sizes: a correctness smoke test
    python -m analyses.bench_graph_learning --repeats 5

Signals: 200 smooth signals on d random points of the unit square (three smooth
fields plus 0.1 white noise), z normalised to mean 1, alpha = 1, beta = 0.5.

Methods, each timed on the same z in the same run, interleaved, best of ``--repeats``:

- ``default``: the solver ``learn_graph`` picks for beta > 0 (the dual semismooth
  Newton method, ``solvers._newton_numba``) at its default tol (certified relative
  duality gap 1e-16); ``learn_graph_s`` is the whole public call, which also builds
  the networkx graph.
- ``pdhg``: the previous default (Numba PDHG, same stopping rule and tol).
- ``fbf_numba``: the package's Numba FBF (relative residual < 1e-8).
- ``numpy_fbf``: the baseline, :func:`tuned_numpy_fbf` -- the FBF a user would write
  from Kalofolias' Algorithm 1 in plain numpy: vectorised over the edge vector
  (``S w`` by a scipy.sparse product, ``S^T v`` by ``v[i] + v[j]``), the largest
  step the Lipschitz constant allows, and the package FBF's stopping rule, tol,
  iteration cap and start (zeros).
- ``clarabel`` / ``scs``: cvxpy (build and solve), at small d only.

Every method runs on one thread: the Numba kernels are serial, and BLAS (used by
the numpy FBF's norms and by cvxpy) is limited to one thread with threadpoolctl, so
that a busy core does not stall BLAS's thread team (on a loaded 2-core machine a
threaded ``np.linalg.norm`` of 20,000 entries took 1 ms).

Every method's objective must agree with the default solver's to ``OBJ_RTOL`` = 1e-8
(relative; cvxpy is reported, not asserted: SCS is a first-order method); the script
fails loudly otherwise.  The machine's ``uptime`` is recorded before and after: the
timings mean something only on an idle machine.  Writes
analyses/out/bench_graph_learning.{csv,md,png} (``bench_graph_learning_quick.*`` with
``--quick``).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import queue as queue_module
import subprocess
import time
import tracemalloc
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from analyses._common import machine, out_path
from topokit._io import atomic_write_text
from topokit.learn.problems import log_degree_problem_fixed, solve_problem
from topokit.learn.solvers import (
    DEFAULT_TOL,
    _fbf_numba,
    _newton_numba,
    _pdhg_numba,
    learn_graph_from_distances,
    log_degree_objective,
    pairwise_sq_distances,
)

ALPHA, BETA = 1.0, 0.5
#: learn_graph's defaults: iteration cap and the FBF tolerance (relative iterate change).
MAX_ITER = 100_000
FBF_TOL = DEFAULT_TOL["fbf"]
#: Objectives of every method must agree with the default solver's to this (relative).
OBJ_RTOL = 1e-8
CVXPY_LIMIT_S = 900.0

SIZES_FULL = {"cvxpy": [50, 100, 300], "fbf": [200, 300, 600, 1000], "alone": [2000, 5000]}
SIZES_QUICK = {"cvxpy": [40], "fbf": [60, 100], "alone": [150]}


def make_z(d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pts = rng.random((d, 2))
    fields = np.c_[np.sin(3 * pts[:, 0]), np.cos(4 * pts[:, 1]), pts[:, 0] * pts[:, 1]].T
    X = rng.standard_normal((200, 3)) @ fields + 0.1 * rng.standard_normal((200, d))
    z = pairwise_sq_distances(X)
    return z / z.mean()


# --------------------------------------------------------------------------- the baseline


def tuned_numpy_fbf(z, alpha, beta, tol=FBF_TOL, max_iter=MAX_ITER):
    """Kalofolias' FBF (Alg. 1) in plain, vectorised numpy; returns (w, n_iter, residual).

    Iterates, start (w = 0, v = 0) and stopping rule (relative primal and dual
    residuals ||Q - Y|| / ||w||, ||q - y|| / ||v|| both < tol) are the package
    FBF's; the step is the largest the theory allows, 0.99 / L with L the exact
    Lipschitz constant of the monotone part (w, v) -> (4 beta w + S^T v, -S w):
    for each singular value s of S, the 2 x 2 block [[4 beta, s], [-s, 0]] has
    norm 2 beta + sqrt(4 beta^2 + s^2), and ||S|| = sqrt(2 (d - 1)).  (The package
    takes 0.9 / (4 beta + ||S||): a little smaller.)
    """
    p = z.size
    d = int(round((1 + math.sqrt(1 + 8 * p)) / 2))
    i, j = np.triu_indices(d, 1)
    edges = np.arange(p)
    S = sp.csr_matrix((np.ones(2 * p), (np.r_[i, j], np.r_[edges, edges])), shape=(d, p))
    step = 0.99 / (2 * beta + math.sqrt(4 * beta * beta + 2.0 * (d - 1)))
    shrink = 1.0 - 4.0 * beta * step
    w, v = np.zeros(p), np.zeros(d)
    residual, n_iter = math.inf, 0
    while n_iter < max_iter:
        n_iter += 1
        Y = shrink * w - step * (v[i] + v[j])
        P = np.maximum(Y - step * z, 0.0)
        y = v + step * (S @ w)
        p_bar = 0.5 * (y - np.sqrt(y * y + 4.0 * alpha * step))
        Q = shrink * P - step * (p_bar[i] + p_bar[j])
        q = p_bar + step * (S @ P)
        Q -= Y
        q -= y
        w += Q
        v += q
        r_primal = np.linalg.norm(Q) / max(np.linalg.norm(w), 1e-300)
        r_dual = np.linalg.norm(q) / max(np.linalg.norm(v), 1e-300)
        residual = max(r_primal, r_dual)
        if r_primal < tol and r_dual < tol:
            break
    return np.maximum(w, 0.0), n_iter, residual


# --------------------------------------------------------------------------- methods


def default_solver(z):
    return _newton_numba(z, ALPHA, BETA, 0.0, DEFAULT_TOL["dual-newton"], MAX_ITER)


def pdhg(z):
    return _pdhg_numba(z, ALPHA, BETA, 0.0, DEFAULT_TOL["pdhg"], MAX_ITER)


def fbf_numba(z):
    return _fbf_numba(z, ALPHA, BETA, 0.0, FBF_TOL, MAX_ITER)


def public_call(z):
    learned = learn_graph_from_distances(z, ALPHA, BETA)
    return learned.weights, learned.n_iter, learned.residual


def run_cvxpy(z, solver):
    """Build (constants: the DPP build needs O(p^2) memory) and solve."""
    problem, w = log_degree_problem_fixed(z, ALPHA, BETA)
    solve_problem(problem, solver=solver)
    return np.maximum(w.value, 0), 0, math.nan


def _child(z, solver, queue):
    t = time.perf_counter()
    out = run_cvxpy(z, solver)
    queue.put((out, time.perf_counter() - t))


def run_cvxpy_guarded(z, solver, limit=CVXPY_LIMIT_S):
    """run_cvxpy in a child process (timed there); a crash or a run past ``limit`` s raises."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(z, solver, queue))
    child.start()
    # Read before joining: a child whose result fills the pipe cannot exit until it is read.
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        try:
            answer = queue.get(timeout=1.0)
        except queue_module.Empty:
            if not child.is_alive():
                raise RuntimeError(f"solver process ended with exit code {child.exitcode}") \
                    from None
            continue
        child.join()
        return answer
    child.terminate()
    child.join()
    raise TimeoutError(f"no answer within {limit:.0f} s")


# --------------------------------------------------------------------------- timing


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def best_of(methods: dict, repeats: int) -> dict:
    """{name: (output, fastest seconds)}: every method ``repeats`` times, interleaved.

    A cvxpy method times itself in its child process (its output is (out, seconds)).
    """
    best: dict = {}
    for _ in range(repeats):
        for name, fn in methods.items():
            out, seconds = timed(fn)
            if name in ("clarabel", "scs"):
                out, seconds = out
            if name not in best or seconds < best[name][1]:
                best[name] = (out, seconds)
    return best


def check_objectives(d: int, objectives: dict, reference: str = "default") -> dict:
    """Relative objective difference of every method to the default; raise above OBJ_RTOL."""
    f_ref = objectives[reference]
    diffs = {name: abs(f - f_ref) / abs(f_ref) for name, f in objectives.items()}
    wrong = {name: diff for name, diff in diffs.items()
             if diff > OBJ_RTOL and name not in ("clarabel", "scs")}
    if wrong:
        raise AssertionError(
            f"d={d}: objectives differ from the default solver's by more than {OBJ_RTOL:g} "
            f"(relative): {wrong}")
    return diffs


def bench_size(d: int, methods: list[str], repeats: int) -> dict:
    """One row: seconds, iterations and relative objective difference of each method at d."""
    z = make_z(d)
    table = {"default": partial(default_solver, z), "learn_graph": partial(public_call, z),
             "pdhg": partial(pdhg, z), "fbf_numba": partial(fbf_numba, z),
             "numpy_fbf": partial(tuned_numpy_fbf, z, ALPHA, BETA),
             "clarabel": partial(run_cvxpy_guarded, z, "clarabel"),
             "scs": partial(run_cvxpy_guarded, z, "scs")}
    chosen = {name: table[name] for name in methods}
    try:
        best = best_of(chosen, repeats)
    except (TimeoutError, RuntimeError) as exc:
        print(f"d={d}: {exc}; timing without cvxpy", flush=True)
        chosen = {k: f for k, f in chosen.items() if k not in ("clarabel", "scs")}
        best = best_of(chosen, repeats)
    objectives = {name: log_degree_objective(out[0], z, ALPHA, BETA)
                  for name, (out, _) in best.items()}
    diffs = check_objectives(d, objectives)
    row: dict = {"d": d, "objective": objectives["default"]}
    for name, ((_, n_iter, _), seconds) in best.items():
        row[f"{name}_s"] = seconds
        row[f"{name}_iter"] = n_iter
        row[f"{name}_rel_obj_diff"] = diffs[name]
    for name in best:
        if name not in ("default", "learn_graph"):
            row[f"{name}_over_default"] = row[f"{name}_s"] / row["default_s"]
    return row


# --------------------------------------------------------------------------- output


def to_markdown(frame: pd.DataFrame) -> str:
    """Markdown table without the optional tabulate dependency."""
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """The headline table: default solver against the tuned numpy FBF."""
    rows = frame.dropna(subset=["numpy_fbf_s"]) if "numpy_fbf_s" in frame else frame.iloc[:0]
    return pd.DataFrame({
        "d": rows["d"], "default_s": rows["default_s"], "default_iter": rows["default_iter"],
        "numpy_fbf_s": rows["numpy_fbf_s"], "numpy_fbf_iter": rows["numpy_fbf_iter"],
        "ratio": rows["numpy_fbf_over_default"],
        "rel_obj_diff": rows["numpy_fbf_rel_obj_diff"],
    })


def plot(frame: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    labels = {"default": "default (dual Newton)", "pdhg": "PDHG (previous default)",
              "fbf_numba": "FBF (Numba)", "numpy_fbf": "tuned numpy FBF",
              "clarabel": "cvxpy + Clarabel", "scs": "cvxpy + SCS"}
    for name, label in labels.items():
        if f"{name}_s" in frame:
            rows = frame.dropna(subset=[f"{name}_s"])
            axes[0].plot(rows["d"], rows[f"{name}_s"], "o-", label=label)
    axes[0].set(xscale="log", yscale="log", xlabel="nodes d", ylabel="seconds (best of runs)",
                title="time to the optimum (objectives equal to 1e-8)")
    axes[0].legend(fontsize=8)
    head = summary(frame)
    axes[1].plot(head["d"], head["ratio"], "o-", color="C3")
    for d, ratio in zip(head["d"], head["ratio"], strict=True):
        axes[1].annotate(f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.1f}x", (d, ratio),
                         ha="center", va="bottom", fontsize=8)
    axes[1].axhline(10, color="grey", lw=0.8, ls="--")
    axes[1].set(xscale="log", yscale="log", xlabel="nodes d",
                ylabel="tuned numpy FBF / default",
                title="speed-up over the tuned numpy FBF")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(quick: bool, repeats: int) -> None:
    sizes = SIZES_QUICK if quick else SIZES_FULL
    for solve in (default_solver, pdhg, fbf_numba):
        solve(make_z(5))  # compile (or load the cache) before timing
    assert learn_graph_from_distances(make_z(5), ALPHA, BETA).solver == "dual-newton", \
        "the default solver is no longer dual-newton: update default_solver"
    up = [uptime()]
    print(up[0], flush=True)
    rows = []
    plan = [(d, ["default", "clarabel", "scs"]) for d in sizes["cvxpy"]]
    plan += [(d, ["default", "learn_graph", "pdhg", "fbf_numba", "numpy_fbf"])
             for d in sizes["fbf"]]
    # large d: the solvers alone (a networkx graph of 1.7 million edges would need GBs)
    plan += [(d, ["default", "pdhg"]) for d in sizes["alone"]]
    for d, methods in plan:
        alone = d in sizes["alone"]
        if alone:  # peak memory of the solvers (tracemalloc slows allocations: not elsewhere)
            tracemalloc.start()
        with threadpool_limits(limits=1):
            rows.append(bench_size(d, methods, max(1, repeats - 1) if alone else repeats))
        if alone:
            rows[-1]["peak_MB_python"] = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
        print({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in rows[-1].items()},
              flush=True)
    up.append(uptime())
    frame = pd.DataFrame(rows)
    name = "bench_graph_learning_quick" if quick else "bench_graph_learning"
    atomic_write_text(out_path(f"{name}.csv"), frame.to_csv(index=False))
    head = summary(frame)
    note = (f"\nDefault = dual Newton, certified relative gap {DEFAULT_TOL['dual-newton']:g}; "
            f"numpy FBF = tuned_numpy_fbf, residual < {FBF_TOL:g}; best of {repeats}, "
            f"interleaved; one thread each (BLAS limited by threadpoolctl); every objective "
            f"within {OBJ_RTOL:g} of the default's.\n"
            f"machine: {machine()}\nuptime before: {up[0]}\nuptime after: {up[1]}\n")
    text = ("## Default solver against the tuned numpy FBF\n\n" + to_markdown(head)
            + "\n## All methods\n\n" + to_markdown(frame) + note)
    atomic_write_text(out_path(f"{name}.md"), text)
    plot(frame, out_path(f"{name}.png"))
    print(text)
    for row in head.itertuples(index=False):
        print(f"d = {row.d}: default {row.default_s:.4g} s, tuned numpy FBF "
              f"{row.numpy_fbf_s:.4g} s, ratio {row.ratio:.1f}x, "
              f"objective difference {row.rel_obj_diff:.1e} (relative)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    main(args.quick, args.repeats)
