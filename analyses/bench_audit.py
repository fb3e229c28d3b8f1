"""Benchmark: the network-privacy audit (``topokit.design.audit.privacy_audit``) against its
direct dense twin (``topokit.testing.naive_audit``).

Run from the repository root, on an otherwise idle machine:

    python analyses/bench_audit.py            # n = 50, 100, 200, 500 devices, T = 50
    python analyses/bench_audit.py --large    # also 2,000 devices, T = 100 (fast one only)
    python analyses/bench_audit.py --quick    # n = 12, 24, T = 10: checks the script runs
    python analyses/bench_audit.py --model dsgd   # the D-SGD mode (T delayed shifts per owner)

Networks: ``siot_like(n, seed)`` of ``bench_autotag.py`` (owners with 2-4 devices, a sparse
social tree), topologies ``random_topology(net, n_dp=n // 5, seed)``, z = 1.  The twin runs
only where its estimated work (one SVD of the (T d) x (T n) noise matrix per observer) fits
the budget; where both run, they must agree (same exposed pairs, finite mu within 1e-6:
long horizons make the views ill-conditioned, see the audit's documentation).  Writes
analyses/out/bench_audit.json and analyses/out/bench_audit.png (``_dsgd`` added for D-SGD).
Goals of the issue: 500 devices x 50 rounds under 30 s, 2,000 x 100 under 10 minutes, on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "analyses"))

from bench_autotag import siot_like  # noqa: E402

from topokit.design.audit import privacy_audit  # noqa: E402
from topokit.design.baselines import random_topology  # noqa: E402
from topokit.testing.naive_audit import naive_privacy_audit  # noqa: E402

from _common import machine, out_path, write_json  # noqa: E402

#: Multiply-adds the twin may spend on one size (about a few minutes of LAPACK SVDs).
NAIVE_BUDGET = 1e11
#: Finite mu of the fast audit and the twin must agree to this (relative) where both run.
AGREEMENT = 1e-6


def _case(n: int, seed: int):
    net = siot_like(n, seed)
    return net, random_topology(net, n_dp=n // 5, seed=seed)


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


def _one_size(n: int, rounds: int, *, seed: int, n_jobs: int, model: str) -> dict:
    net, topology = _case(n, seed)
    fast_seconds, audit = _timed(privacy_audit, net, topology, rounds=rounds, n_jobs=n_jobs,
                                 model=model)
    row = {"n_devices": n, "rounds": rounds, "model": model, "n_links": topology.n_links,
           "n_dp": len(topology.dp_devices), "fast_seconds": fast_seconds,
           **audit.summary()}
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
    sizes = [row["n_devices"] for row in rows]
    axis.plot(sizes, [row["fast_seconds"] for row in rows], "o-", label="privacy_audit")
    twin = [row for row in rows if "naive_seconds" in row]
    if twin:
        axis.plot([row["n_devices"] for row in twin], [row["naive_seconds"] for row in twin],
                  "s--", label="dense twin")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("devices n")
    axis.set_ylabel("seconds (all ordered pairs)")
    axis.set_title("network-privacy audit, " + ", ".join(
        sorted({f"T = {row['rounds']}" for row in rows})))
    axis.legend()
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the script")
    parser.add_argument("--large", action="store_true", help="add 2,000 devices x 100 rounds")
    parser.add_argument("-j", "--n-jobs", type=int, default=1, help="threads of the audit")
    parser.add_argument("--model", choices=("gossip", "dsgd"), default="gossip",
                        help="what a private value is (privacy_audit's model)")
    args = parser.parse_args()
    plan = [(12, 10), (24, 10)] if args.quick else [(n, 50) for n in (50, 100, 200, 500)]
    if args.large:
        plan.append((2000, 100))
    rows = []
    for n, rounds in plan:
        row = _one_size(n, rounds, seed=0, n_jobs=args.n_jobs, model=args.model)
        rows.append(row)
        twin = (f"; twin {row['naive_seconds']:.2f} s (x{row['ratio']:.1f}), max rel. diff "
                f"{row['max_relative_difference']:.1e}" if "naive_seconds" in row else "")
        print(f"n = {n}, T = {rounds}: {row['n_links']} links, audit {row['fast_seconds']:.2f} s"
              f"{twin}; {row['exposed_stranger_pairs']} of {row['stranger_pairs']} stranger "
              "pairs exposed")
    payload = {"machine": machine(), "load_average": list(os.getloadavg()),
               "n_jobs": args.n_jobs, "model": args.model, "quick": args.quick, "rows": rows}
    stem = "bench_audit" if args.model == "gossip" else f"bench_audit_{args.model}"
    write_json(f"{stem}.json", payload)
    from topokit.plotting._style import save_figure

    save_figure(_figure(rows), out_path(f"{stem}.png"))
    print(f"wrote {out_path(stem + '.json')} and {out_path(stem + '.png')}")


if __name__ == "__main__":
    main()
