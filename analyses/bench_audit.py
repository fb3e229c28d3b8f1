"""Benchmark: the network-privacy audit (``topokit.audit.privacy_audit``) against its
direct dense twin (``topokit.testing.naive_audit``) and against the work its methods must do.

Run from the repository root, on an otherwise idle machine:

    python -m analyses.bench_audit            # n = 50, 100, 200, 500 devices, T = 50
    python -m analyses.bench_audit --sizes 500x50 2000x100 -j 2               # the issue's goals
    python -m analyses.bench_audit --sizes 2000x100 --links-per-device 3 -j 2 # sparse links
    python -m analyses.bench_audit --large    # the default sizes and 2,000 devices x 100 rounds
    python -m analyses.bench_audit --quick    # n = 12, 24, T = 10: checks the script runs
    python -m analyses.bench_audit --model dsgd   # the D-SGD mode (T delayed shifts per owner)

Networks: ``siot_like(n, seed)`` of ``bench_autotag.py`` (owners with 2-4 devices, a sparse
social tree), topologies ``random_topology(net, n_dp=n // 5, seed)``, z = 1.  By default the
topology's link count is ``random_topology``'s (uniform between a spanning tree and every
allowed link; since non-social links join DP devices, the DP devices become hubs: about 80
neighbours each at 500 devices, 160 at 2,000 with seed 0); ``--links-per-device L`` asks for
L n links instead.  For every size:

- the audit itself, all observers (``-j`` threads), wall-clock seconds; above
  ``--estimate-above`` devices (default 1,000) the audit is *estimated* instead: a sample of
  ``--sample`` observers, drawn evenly among those the audit sends to each of its methods,
  is timed on one thread, and each method's seconds per unit of modelled work
  (``_audit_kernels._flops``) scale that method's work over all observers (divided by the
  threads); ``--estimate-above 0`` runs every size in full;
- the work floor: the dense products the cheaper of the audit's two exact methods cannot
  avoid for each observer (``_dense_work``: sparse products, factorisations and copies not
  counted), over this machine's single-thread GEMM rate measured in the same run times the
  threads: a lower bound on what those methods take (the gossip model's work: the D-SGD
  model does more);
- the dense twin where its estimated work (one SVD of the (T d) x (T n) noise matrix per
  observer) fits the budget; where both run, they must agree (same exposed pairs, finite mu
  within 1e-6: long horizons make the views ill-conditioned, see the audit's documentation).

Writes analyses/out/bench_audit.json and analyses/out/bench_audit.png (``_dsgd`` added for
D-SGD; ``_sparse`` for ``--links-per-device``).  Goals of the issue: 500 devices x 50 rounds
under 30 s, 2,000 x 100 under 10 minutes, on 2 cores (``-j 2``).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from analyses._common import machine, out_path, write_json
from analyses.bench_autotag import siot_like
from topokit.audit import _kernels as kernels
from topokit.audit.core import _problem, device_noise, privacy_audit
from topokit.design.baselines import random_topology
from topokit.testing.naive_audit import naive_privacy_audit

#: Multiply-adds the twin may spend on one size (about a few minutes of LAPACK SVDs).
NAIVE_BUDGET = 1e11
#: Finite mu of the fast audit and the twin must agree to this (relative) where both run.
AGREEMENT = 1e-6


#: GEMM shape of the rate measurement: a hub observer's gain product at 2,000 devices.
GEMM_SHAPE = (1800, 160, 1800)


def _case(n: int, seed: int, links_per_device: float | None = None):
    net = siot_like(n, seed)
    n_links = None if links_per_device is None else int(round(links_per_device * n))
    return net, random_topology(net, n_dp=n // 5, n_links=n_links, seed=seed)


def _gemm_rate() -> float:
    """Multiply-adds per second of one BLAS thread on a GEMM of GEMM_SHAPE (best of 5)."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    rows, inner, cols = GEMM_SHAPE
    left, right = rng.random((rows, inner)), rng.random((inner, cols))
    with threadpool_limits(limits=1, user_api="blas"):
        left @ right
        best = min(_timed(np.matmul, left, right)[0] for _ in range(5))
    return rows * inner * cols / best


def _dense_work(problem, k: int, owners: int) -> float:
    """The dense multiply-adds observer k's cheaper method cannot avoid, at face value.

    The filter, per round: the motion's gain product (u x d x owners) and the covariance
    downdate (a symmetric rank-d update, u x u x d / 2), u = n - d the devices k does not
    hear.  The batch method: the
    Schur steps on the (T d) x (noisy) generator, about (T d)^2 noisy, and the triangular
    solve, (T d)^2 owners / 2.  Sparse products, factorisations and copies not counted.
    """
    d = problem.neighbours[k].size
    n, rounds = problem.variance.size, problem.rounds
    noisy = int(np.count_nonzero(problem.variance))
    hidden = n - d
    filter_work = (rounds - 1) * hidden * d * (owners + hidden / 2)
    batch_work = (rounds * d) ** 2 * (noisy + owners / 2)
    return float(min(filter_work, batch_work))


def _observer_work(problem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each observer's method (index into kernels.METHODS), its modelled cost (the audit's
    cost model, in GEMM-equivalents) and its unavoidable dense work (:func:`_dense_work`)."""
    n = problem.variance.size
    chosen, cost, dense = np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n)
    for k in range(n):
        owners = n - 1 - problem.neighbours[k].size
        method = kernels.choose_method(problem, k, owners)
        chosen[k] = kernels.METHODS.index(method)
        cost[k] = kernels._flops(problem, k, owners)[method]
        dense[k] = _dense_work(problem, k, owners)
    return chosen, cost, dense


def _estimated_seconds(problem, chosen: np.ndarray, work: np.ndarray, *, sample: int,
                       n_jobs: int, seed: int) -> dict:
    """The whole audit's seconds from a sample of observers timed one at a time (one thread).

    The sample is drawn evenly among each method's observers; a method's seconds per unit
    of modelled work on its sample scale its work over all observers.
    """
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(chosen == m) for m in range(len(kernels.METHODS))]
    groups = [group for group in groups if group.size]
    seconds, per_method = 0.0, {}
    with threadpool_limits(limits=1, user_api="blas"):
        for group in groups:
            picked = rng.choice(group, size=min(group.size, max(1, sample // len(groups))),
                                replace=False)
            spent = sum(_timed(kernels.observer_column, problem, int(k))[0] for k in picked)
            rate = spent / work[picked].sum()
            seconds += rate * work[group].sum()
            per_method[kernels.METHODS[chosen[group[0]]]] = {
                "observers": int(group.size), "sampled": int(picked.size),
                "sample_seconds": spent, "work": float(work[group].sum())}
    return {"estimated_seconds": seconds / n_jobs, "estimate_by_method": per_method}


def _naive_work(net, topology, rounds: int) -> float:
    """Multiply-adds of the twin's SVDs: about 4 (T d_k)^2 (T n) per observer."""
    degrees = np.array([d for _, d in topology.graph(net.nodes).degree()], dtype=float)
    return float(np.sum(4.0 * (rounds * degrees) ** 2 * rounds * net.n_devices))


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def _agreement(fast: np.ndarray, naive: np.ndarray) -> dict:
    same_exposure = bool(np.array_equal(np.isinf(fast), np.isinf(naive)))
    finite = np.isfinite(fast) & np.isfinite(naive) & (naive > 0)
    worst = float(np.max(np.abs(fast[finite] - naive[finite]) / naive[finite], initial=0.0))
    return {"same_exposed_pairs": same_exposure, "max_relative_difference": worst}


def _one_size(n: int, rounds: int, *, seed: int, n_jobs: int, model: str,
              links_per_device: float | None = None, estimate: bool = False,
              sample: int = 40, gemm_rate: float = float("nan")) -> dict:
    net, topology = _case(n, seed, links_per_device)
    problem = _problem(net, topology, device_noise(net, topology, 1.0), rounds, True, model)
    chosen, cost, dense = _observer_work(problem)
    degrees = np.array([heard.size for heard in problem.neighbours])
    row = {"n_devices": n, "rounds": rounds, "model": model, "n_links": topology.n_links,
           "n_dp": len(topology.dp_devices), "max_degree": int(degrees.max()),
           "median_dp_degree": float(np.median(degrees[problem.variance > 0])),
           "dense_multiply_adds": float(dense.sum()), "gemm_rate": gemm_rate,
           "floor_seconds": float(dense.sum()) / (n_jobs * gemm_rate)}
    if estimate:  # too long to run in full here: a timed sample, scaled (module notes)
        row.update(_estimated_seconds(problem, chosen, cost, sample=sample, n_jobs=n_jobs,
                                      seed=seed))
        return row
    fast_seconds, audit = _timed(privacy_audit, net, topology, rounds=rounds, n_jobs=n_jobs,
                                 model=model)
    row.update(fast_seconds=fast_seconds, **audit.summary())
    work = _naive_work(net, topology, rounds) * (rounds if model == "dsgd" else 1)
    if work > NAIVE_BUDGET:
        print(f"n = {n}: twin skipped (estimated {work:.1e} multiply-adds > {NAIVE_BUDGET:.0e})")
        return row
    naive_seconds, naive = _timed(naive_privacy_audit, net, topology, rounds, model=model)
    row.update(naive_seconds=naive_seconds, ratio=naive_seconds / fast_seconds,
               **_agreement(audit.mu, naive))
    if not row["same_exposed_pairs"] or row["max_relative_difference"] > AGREEMENT:
        raise SystemExit(f"n = {n}: the fast audit and the twin disagree: {row}")
    return row


def _figure(rows: list[dict]):
    from topokit.plotting._style import new_panels

    figure, axes = new_panels("curve")
    axis = axes[0, 0]
    ran = [row for row in rows if "fast_seconds" in row]
    axis.plot([row["n_devices"] for row in ran], [row["fast_seconds"] for row in ran], "o-",
              label="privacy_audit")
    guessed = [row for row in rows if "estimated_seconds" in row]
    if guessed:
        axis.plot([row["n_devices"] for row in guessed],
                  [row["estimated_seconds"] for row in guessed], "o", mfc="none",
                  label="privacy_audit, estimated from a sample")
    axis.plot([row["n_devices"] for row in rows], [row["floor_seconds"] for row in rows], "k:",
              label="work floor (every product at peak GEMM)")
    twin = [row for row in rows if "naive_seconds" in row]
    if twin:
        axis.plot([row["n_devices"] for row in twin], [row["naive_seconds"] for row in twin],
                  "s--", label="dense twin")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("devices n")
    axis.set_ylabel("seconds (all ordered pairs)")
    axis.set_title(f"network-privacy audit ({rows[0]['model']}), " + ", ".join(
        sorted({f"T = {row['rounds']}" for row in rows})))
    axis.legend()
    return figure


def _size(text: str) -> tuple[int, int]:
    devices, _, rounds = text.partition("x")
    try:
        return int(devices), int(rounds)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected DEVICESxROUNDS such as 500x50; got {text!r}") from None


def _report(row: dict) -> str:
    if "estimated_seconds" in row:
        timing = (f"audit estimated {row['estimated_seconds']:.3g} s from "
                  f"{sum(m['sampled'] for m in row['estimate_by_method'].values())} observers")
    else:
        timing = f"audit {row['fast_seconds']:.2f} s"
    twin = (f"; twin {row['naive_seconds']:.2f} s (x{row['ratio']:.1f}), max rel. diff "
            f"{row['max_relative_difference']:.1e}" if "naive_seconds" in row else "")
    exposed = (f"; {row['exposed_stranger_pairs']} of {row['stranger_pairs']} stranger pairs "
               "exposed" if "stranger_pairs" in row else "")
    return (f"n = {row['n_devices']}, T = {row['rounds']} ({row['model']}): {row['n_links']} "
            f"links, DP median degree {row['median_dp_degree']:.0f}; {timing} (work floor "
            f"{row['floor_seconds']:.3g} s){twin}{exposed}")


def _plan(args: argparse.Namespace) -> list[tuple[int, int]]:
    if args.sizes:
        plan = list(args.sizes)
    elif args.quick:
        plan = [(12, 10), (24, 10)]
    else:
        plan = [(n, 50) for n in (50, 100, 200, 500)]
    if args.large:
        plan.append((2000, 100))
    return plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the script")
    parser.add_argument("--large", action="store_true", help="add 2,000 devices x 100 rounds")
    parser.add_argument("--sizes", type=_size, nargs="+", metavar="NxT",
                        help="devices x rounds to run, e.g. 500x50 2000x100 (replaces the "
                             "default)")
    parser.add_argument("--links-per-device", type=float, default=None,
                        help="ask random_topology for this many links per device (default: "
                             "its own uniform draw)")
    parser.add_argument("--estimate-above", type=int, default=1000,
                        help="estimate sizes above this many devices from a sample (0: none)")
    parser.add_argument("--sample", type=int, default=40,
                        help="observers timed for an estimate")
    parser.add_argument("-j", "--n-jobs", type=int, default=1, help="threads of the audit")
    parser.add_argument("--model", choices=("gossip", "dsgd"), default="gossip",
                        help="what a private value is (privacy_audit's model)")
    args = parser.parse_args()
    rate = _gemm_rate()
    print(f"one BLAS thread: {rate / 1e9:.1f} G multiply-adds/s on a {GEMM_SHAPE} GEMM")
    rows = []
    for n, rounds in _plan(args):
        rows.append(_one_size(
            n, rounds, seed=0, n_jobs=args.n_jobs, model=args.model,
            links_per_device=args.links_per_device, sample=args.sample, gemm_rate=rate,
            estimate=bool(args.estimate_above) and n > args.estimate_above))
        print(_report(rows[-1]), flush=True)
    payload = {"machine": machine(), "load_average": list(os.getloadavg()),
               "n_jobs": args.n_jobs, "model": args.model, "quick": args.quick,
               "links_per_device": args.links_per_device, "rows": rows}
    stem = "bench_audit" + ("" if args.model == "gossip" else f"_{args.model}") + (
        "" if args.links_per_device is None else "_sparse")
    write_json(f"{stem}.json", payload)
    from topokit.plotting._style import save_figure

    save_figure(_figure(rows), out_path(f"{stem}.png"))
    print(f"wrote {out_path(stem + '.json')} and {out_path(stem + '.png')}")


if __name__ == "__main__":
    main()
