"""The privacy audit's Kalman filter compiled on dense blocks against the sparse Python one,
in the same run: where each wins (``topokit.audit._kernels.DENSE_DEVICES``), and what the
compiled one saves a design report.

- **Per observer**: SIoT networks of 16 to 256 devices (seed 1, a random topology with
  half the devices DP, z = 1, 50 rounds), the filter's information for every hidden owner
  of the first 8 observers, by ``filter_information(..., compiled=True)`` and
  ``compiled=False``; milliseconds per observer, the fastest of ``--repeats``; BLAS on one
  thread, as audits run it.  Both results are compared (the largest relative difference).
- **A design report**: the five stranger audits of the toy design report
  (``metric_columns``: optimize's design, NDLF, DLFDP, ERG and AutoTag, 50 rounds), the
  whole audit with the compiled filter and dense blocks (the default) and with them turned
  off (``DENSE_DEVICES`` below every size, the code of large networks), milliseconds, the
  fastest of ``--repeats`` runs of the five after one warm-up.

Run (from the repository root): python -m analyses.audit_filter [--quick]
About a minute on 2 cores (--quick: up to 64 devices).  Writes
analyses/out/audit_filter.{json,png} (--quick: audit_filter_quick.*).
"""

from __future__ import annotations

import time
from datetime import date
from functools import partial

import numpy as np

from analyses._common import machine, out_path, repeats_and_quick, write_json
from topokit import __version__

SIZES = (16, 32, 64, 128, 192, 256)
QUICK_SIZES = (16, 32, 64)
OBSERVERS = 8
ROUNDS = 50


def fastest_ms(call, repeats: int) -> float:
    """The smallest wall milliseconds of ``repeats`` calls (after one warm-up call)."""
    call()
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return 1000 * best


def filter_runs(problem, owners: dict[int, np.ndarray], compiled: bool) -> list:
    """The filter's information (or None) for each observer k and its owners."""
    from topokit.audit import _kernels as kernels

    return [kernels.filter_information(problem, k, found, compiled=compiled)
            for k, found in owners.items()]


def hidden_owners(problem, n: int) -> dict[int, np.ndarray]:
    """Each of the first OBSERVERS observers' hidden owners that are not exposed (the audit
    asks the filter for those only)."""
    from topokit.audit import _kernels as kernels

    owners = {}
    for k in range(min(n, OBSERVERS)):
        found = np.setdiff1d(np.arange(n), [k, *problem.neighbours[k]])
        leverage = kernels.revealed_leverage(problem, k)[found]
        owners[k] = found[leverage <= kernels.LEVERAGE_TOL]
    return owners


def per_observer(sizes: tuple[int, ...], repeats: int) -> list[dict]:
    """Compiled and sparse filter, ms per observer, and their largest relative difference."""
    from topokit.audit.core import _problem, device_noise
    from topokit.design.baselines import random_topology
    from topokit.network.siot import siot

    rows = []
    for n in sizes:
        net = siot(n, seed=1, colocation_range_m=100.0)
        topology = random_topology(net, seed=1, n_dp=n // 2)
        problem = _problem(net, topology, device_noise(net, topology, 1.0), ROUNDS, True)
        owners = hidden_owners(problem, n)
        compiled_ms, sparse_ms = (
            fastest_ms(partial(filter_runs, problem, owners, compiled), repeats) / len(owners)
            for compiled in (True, False))
        pairs = zip(filter_runs(problem, owners, True), filter_runs(problem, owners, False),
                    strict=True)
        differences = [np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300), initial=0.0)
                       for a, b in pairs if a is not None and b is not None]
        rows.append({"devices": n, "compiled_ms": compiled_ms, "sparse_ms": sparse_ms,
                     "sparse_over_compiled": sparse_ms / compiled_ms,
                     "largest_relative_difference": float(max(differences, default=0.0))})
    return rows


def design_report(repeats: int) -> dict:
    """The toy design report's five stranger audits, compiled (default) and not, ms."""
    from topokit import load_example
    from topokit.audit import _kernels as kernels
    from topokit.design import optimize_with_references
    from topokit.design.metrics import DEFAULT_AUDIT_ROUNDS
    from topokit.design.report import StrangerAudit, metric_columns
    from topokit.design.time_predictor import load_predictor

    net = load_example("toy")
    chosen, references = optimize_with_references(net, seed=0)
    topologies = {"optimize": chosen.topology, **references}
    model = load_predictor("default")
    audit = StrangerAudit(DEFAULT_AUDIT_ROUNDS, 1.0, "gossip")

    def report() -> dict:
        return metric_columns(net, topologies, model, audit=audit, chosen=chosen)

    default_limit = kernels.DENSE_DEVICES
    compiled_ms = fastest_ms(report, repeats)
    compiled_columns = report()
    try:
        kernels.DENSE_DEVICES = -1  # the code of large networks, at every size
        sparse_ms = fastest_ms(report, repeats)
        sparse_columns = report()
    finally:
        kernels.DENSE_DEVICES = default_limit
    same = all(compiled_columns[name]["exposed_stranger_pairs"]
               == sparse_columns[name]["exposed_stranger_pairs"] for name in topologies)
    return {"topologies": list(topologies), "compiled_ms": compiled_ms,
            "sparse_ms": sparse_ms, "sparse_over_compiled": sparse_ms / compiled_ms,
            "same_exposed_pairs": same}


def figure(rows: list[dict]):
    """Milliseconds per observer of both filters against the network's size."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.6), layout="constrained")
    axes = fig.subplots()
    sizes = [row["devices"] for row in rows]
    axes.plot(sizes, [row["compiled_ms"] for row in rows], "o-", label="compiled, dense")
    axes.plot(sizes, [row["sparse_ms"] for row in rows], "s-", label="sparse, Python")
    axes.set_xlabel("devices (SIoT, random topology, half DP)")
    axes.set_ylabel(f"ms per observer ({ROUNDS} rounds)")
    axes.set_yscale("log")
    axes.legend(frameon=False)
    return fig


def main() -> None:
    repeats, quick = repeats_and_quick(__doc__.splitlines()[0],
                                       repeats_help="timed runs per figure",
                                       quick_help="up to 64 devices, 2 repeats")
    from topokit._blas import one_blas_thread

    started = time.perf_counter()
    with one_blas_thread():
        rows = per_observer(QUICK_SIZES if quick else SIZES, repeats)
        report = design_report(repeats)
    print(f"{'devices':>8}{'compiled ms':>13}{'sparse ms':>11}{'sparse/compiled':>17}"
          f"{'max rel diff':>14}")
    for row in rows:
        print(f"{row['devices']:>8}{row['compiled_ms']:>13.2f}{row['sparse_ms']:>11.2f}"
              f"{row['sparse_over_compiled']:>16.2f}x{row['largest_relative_difference']:>14.1e}")
    print(f"toy design report, five stranger audits: compiled {report['compiled_ms']:.1f} ms, "
          f"sparse {report['sparse_ms']:.1f} ms ({report['sparse_over_compiled']:.1f}x); "
          f"same exposed pairs: {report['same_exposed_pairs']}")
    name = "audit_filter_quick" if quick else "audit_filter"
    write_json(f"{name}.json", {
        "command": "python -m analyses.audit_filter" + (" --quick" if quick else ""),
        "topokit_version": __version__, "date": date.today().isoformat(),
        "machine": machine(), "repeats": repeats, "rounds": ROUNDS,
        "observers_per_size": OBSERVERS, "per_observer": rows, "design_report": report,
        "seconds": round(time.perf_counter() - started)})
    figure(rows).savefig(out_path(f"{name}.png"), dpi=120)
    print(f"wrote {out_path(name + '.json')} and .png")


if __name__ == "__main__":
    main()
