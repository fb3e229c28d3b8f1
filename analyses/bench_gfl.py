"""Benchmark of the GFL hot path against a per-client loop reference, in one run.

1. The regression setting (P = 10, K = 100, L = 11, E in [1, 10], B in [5, 10],
   homomorphic, 1000 iterations) three ways on the *same* random draws:
   the Numba local-SGD kernel used by ``gfl.run``, its numpy-vectorised twin,
   and the plain per-server, per-client Python loop (``core._run_loop``).  The
   three must agree (checked); the ratio loop / ours is the speed-up.
2. Several configurations (none + {random, homomorphic} x 6 values of
   sigma_g^2 = 13 variants, 300 iterations) batched in one array pass by
   ``gfl.run_many``, against 13 separate ``gfl.run`` calls.

Writes analyses/out/bench_gfl.json and bench_gfl.md.
Run: python -m analyses.bench_gfl   (about 30 s on 2 cores)
"""

from __future__ import annotations

import functools
import time

import numpy as np

from analyses._common import machine, out_path, write_json
from topokit import gfl
from topokit._io import atomic_write_text
from topokit.gfl import core

SEED = 5


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    total_start = time.perf_counter()
    config = gfl.preset("regression").replace(iterations=1000, seed=SEED)
    problem = gfl.build_problem(config)
    gfl.run(config.replace(iterations=2), problem=problem)  # load / compile the kernel
    numpy_step = functools.partial(core._step, local_updates=core._local_updates_numpy)

    ours, t_ours = timed(lambda: gfl.run(config, problem=problem))
    twin, t_numpy = timed(lambda: core._simulate(config, [{}], numpy_step, None, problem)[0])
    loop, t_loop = timed(lambda: core._run_loop(config, [{}], problem)[0])
    for other in (twin, loop):
        np.testing.assert_allclose(ours.msd_centroid_db, other.msd_centroid_db, atol=1e-6)

    sigmas = (0.001, 0.01, 0.1, 1.0, 2.0, 10.0)
    variants = [{"scheme": "none"}] + [{"scheme": s, "sigma_g2": g}
                                       for g in sigmas for s in ("random", "homomorphic")]
    sweep = config.replace(iterations=300)
    batched, t_batched = timed(lambda: gfl.run_many(sweep, variants, problem=problem))
    _, t_separate = timed(lambda: [gfl.run(sweep.replace(**v), problem=problem)
                                   for v in variants])
    assert [r.config.scheme for r in batched] == [v["scheme"] for v in variants]

    numbers = {
        "iterations": 1000,
        "ours_numba_s": t_ours,
        "numpy_vectorised_s": t_numpy,
        "per_client_loop_s": t_loop,
        "speedup_loop_over_ours": t_loop / t_ours,
        "speedup_loop_over_numpy": t_loop / t_numpy,
        "batched_variants": len(variants),
        "batched_iterations": 300,
        "batched_one_pass_s": t_batched,
        "separate_runs_s": t_separate,
        "speedup_batched": t_separate / t_batched,
        "total_s": time.perf_counter() - total_start,
        "machine": machine(),
    }
    write_json("bench_gfl.json", numbers)
    lines = [
        "| what | time (s) | ratio |",
        "|---|---:|---:|",
        f"| per-client loop, 1000 it | {t_loop:.2f} | 1 |",
        f"| numpy-vectorised, 1000 it | {t_numpy:.2f} | {t_loop / t_numpy:.1f}x |",
        f"| gfl.run (Numba kernel), 1000 it | {t_ours:.2f} | {t_loop / t_ours:.1f}x |",
        f"| 13 separate runs, 300 it | {t_separate:.2f} | 1 |",
        f"| 13 variants batched, 300 it | {t_batched:.2f} | {t_separate / t_batched:.1f}x |",
    ]
    atomic_write_text(out_path("bench_gfl.md"), "\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"total {numbers['total_s']:.1f} s")


if __name__ == "__main__":
    main()
