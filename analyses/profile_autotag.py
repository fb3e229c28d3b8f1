"""Profile exact AutoTag: where the time goes, and the work the stopping bound saves.

Run from the repository root:

    python -m analyses.profile_autotag               # |V| = 64, SIoT-like (bench_autotag's)
    python -m analyses.profile_autotag --sizes 64 128 --kind siot --full

For each size it runs ``autotag`` with the stopping bound (``prune=True``, the default)
and, with ``--full``, without it, checks that both give the same design and candidates,
and prints the work counted in ``design.stats`` (snapshots, Woodbury updates, fresh
inverses: operation counts, which do not depend on the machine's load) and the top of a
cProfile of the pruned run (the Numba kernels show as one entry, ``run_budget``).
Fixed seeds; wall-clock seconds are printed for reference only (on a shared machine
they vary by 2x or more).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

from analyses.bench_autotag import siot_like
from topokit.design import autotag
from topokit.network.siot import siot

WORK = ("trajectories", "snapshots", "woodbury_updates", "fresh_inverses",
        "stopped_trajectories")


def network(kind: str, V: int, seed: int):
    if kind == "siot":
        return siot(V, seed=seed)
    return siot_like(V, seed + V)


def same_answer(one, two) -> bool:
    return (one.topology == two.topology and one.n == two.n and all(
        (a.step, a.topology, a.metrics) == (b.step, b.topology, b.metrics)
        for a, b in zip(one.candidates, two.candidates, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64])
    parser.add_argument("--kind", choices=["siot-like", "siot"], default="siot-like")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--full", action="store_true", help="also run without the bound")
    parser.add_argument("--top", type=int, default=12, help="cProfile rows to print")
    args = parser.parse_args()

    autotag(siot_like(12, 0))  # compile / load the kernels outside the measurements
    for V in args.sizes:
        net = network(args.kind, V, args.seed)
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        pruned = autotag(net)
        profile.disable()
        seconds = time.perf_counter() - started
        print(f"|V| = {V} ({args.kind}), prune=True: {seconds:.1f} s (measured under load)")
        print("  " + ", ".join(f"{key} {pruned.stats[key]}" for key in WORK))
        if args.full:
            started = time.perf_counter()
            full = autotag(net, prune=False)
            print(f"  prune=False: {time.perf_counter() - started:.1f} s; "
                  + ", ".join(f"{key} {full.stats[key]}" for key in WORK))
            if not same_answer(pruned, full):
                raise SystemExit(f"|V| = {V}: the bound changed the answer")
            print("  same design and candidates: yes")
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(args.top)
        lines = text.getvalue().splitlines()
        header = next(i for i, line in enumerate(lines) if "ncalls" in line)
        print("\n".join("    " + line for line in lines[header:] if line.strip()))


if __name__ == "__main__":
    main()
