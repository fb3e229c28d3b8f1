"""What the commands cost on real-sized networks: generate, analyze, audit and design at
500-5,000 devices, with their defaults, as a user runs them.

For each size n, ``topokit generate siot -n n`` writes a network (seed 0); then, on that
file, ``topokit analyze`` (its defaults: the 50-round stranger audit included),
``topokit analyze --audit-rounds 0``, ``topokit audit --rounds 50`` and ``topokit design``
(its defaults: the local searches, the mixing weights, the reference designs' audits).
After every command has run once on a 100-device network (not measured: Numba compiles a
source tree's kernels the first time), each command runs in a fresh process with stderr
a pipe (the plain log lines a batch job writes) and is measured by the operating system:
CPU seconds (user + system of that child, ``os.wait4``), wall seconds, peak memory (its
maximum resident set) and the longest silence on stderr (the longest wait between two
lines, from the start to the end: a phase that says nothing).  Also the network file's
size, as ``.json`` and as ``.json.gz`` (the same network written compressed).  A command
that runs past ``--timeout`` seconds is stopped and recorded as over it.

The growth exponent of each command is the slope of log CPU seconds against log n over
the sizes it completed.  Goals (defaults, CPU seconds on the development machine): at
1,000 devices ``design`` <= 240 s, ``analyze`` <= 90 s, ``audit --rounds 50`` <= 120 s,
no silence over 15 s; at 5,000 devices the file <= 40 MB (either form) and
``analyze --audit-rounds 0`` <= 300 s and <= 2 GB; at 20,000 devices ``generate`` within
10 minutes and 4 GB (``--generate-sizes``: sizes at which only ``generate`` runs).

Run (from the repository root): ``python -m analyses.scale_benchmark`` (sizes 500, 1000,
2000, 5000; ``design`` up to ``--design-max 1000``; hours at 5,000), ``--sizes 500,1000``
for a subset, ``--quick`` for sizes 100 and 200.  Writes analyses/out/scale_benchmark.json
and scale_benchmark.png (``_quick`` with ``--quick``).  Time it alone on the machine.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

from analyses._common import machine, out_path, parse_ints, write_json

SIZES = (500, 1000, 2000, 5000)
#: Sizes at which only ``generate`` runs (the other commands are not meant for them here).
GENERATE_ONLY_SIZES = (20000,)
QUICK_SIZES = (100, 200)
#: The commands on each network file ({net}: its path), by name.
COMMANDS = {
    "analyze": ["analyze", "{net}"],
    "analyze --audit-rounds 0": ["analyze", "{net}", "--audit-rounds", "0"],
    "audit --rounds 50": ["audit", "{net}", "--rounds", "50"],
    "design": ["design", "{net}", "-o", "{folder}/design.json"],
}
GOALS = (  # (n, command, what, limit)
    (1000, "design", "cpu_s", 240.0),
    (1000, "analyze", "cpu_s", 90.0),
    (1000, "audit --rounds 50", "cpu_s", 120.0),
    (5000, "analyze --audit-rounds 0", "cpu_s", 300.0),
    (5000, "analyze --audit-rounds 0", "peak_mb", 2048.0),
    (20000, "generate", "peak_mb", 4096.0),
    (20000, "generate", "wall_s", 600.0),
)
SILENCE_GOAL_S = 15.0
#: The row of the same network written gzip-compressed (``-o siotN.json.gz``).
GZIP = "generate (.json.gz)"
FILE_GOAL = (5000, 40e6)


class Measured(NamedTuple):
    """One command's cost."""

    cpu_s: float | None        # user + system seconds of the child (None: stopped)
    wall_s: float
    peak_mb: float | None      # its maximum resident set
    silence_s: float           # the longest wait between two stderr lines (or start / end)
    status: str                # "ok", "failed (exit N)" or "over the timeout"


def _silences(stream, marks: list[float]) -> None:
    """Record when each line arrives (read in a thread: the child must never block on it)."""
    for _ in iter(stream.readline, b""):
        marks.append(time.monotonic())


def run_measured(arguments: list[str], timeout: float) -> Measured:
    """Run ``topokit ARGUMENTS`` in a fresh process and measure it (stdout discarded)."""
    # The console script installed next to this interpreter, as a user runs it.
    command = [str(Path(sys.executable).with_name("topokit")), *arguments]
    env = {**os.environ, "COLUMNS": "100"}
    begun = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=env)
    marks = [begun]
    reader = threading.Thread(target=_silences, args=(child.stderr, marks), daemon=True)
    reader.start()
    timer = threading.Timer(timeout, child.kill)
    timer.start()
    _, status, usage = os.wait4(child.pid, 0)
    timer.cancel()
    ended = time.monotonic()
    reader.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    marks.append(ended)
    silence = max(b - a for a, b in zip(marks[:-1], marks[1:], strict=True))
    if child.returncode < 0 and ended - begun >= timeout:
        return Measured(None, ended - begun, None, silence, "over the timeout")
    outcome = "ok" if child.returncode == 0 else f"failed (exit {child.returncode})"
    # ru_maxrss is in kilobytes on Linux.
    return Measured(usage.ru_utime + usage.ru_stime, ended - begun, usage.ru_maxrss / 1024,
                    silence, outcome)


def growth_exponent(sizes: list[int], seconds: list[float]) -> float | None:
    """The least-squares slope of log seconds against log n (None below two sizes).

    >>> round(growth_exponent([100, 200, 400], [1.0, 4.0, 16.0]), 6)
    2.0
    """
    points = [(math.log(n), math.log(s)) for n, s in zip(sizes, seconds, strict=True)
              if s is not None and s > 0]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def warm_up(folder: Path, *, timeout: float) -> None:
    """Every command once on a small network, not measured: Numba compiles the kernels of a
    source tree the first time they run (then reads its cache), which is not what the
    commands cost a user who has run them before."""
    net = folder / "warm-up.json"
    for arguments in (["generate", "siot", "-n", "100", "-o", str(net), "--seed", "0"],
                      *([part.format(net=net, folder=folder) for part in template]
                        for template in COMMANDS.values())):
        run_measured(arguments, timeout)
    net.unlink(missing_ok=True)


def generated(n: int, path: Path, timeout: float, name: str = "generate") -> dict[str, Any]:
    """``topokit generate siot -n n -o PATH --seed 0`` measured, with the file's size."""
    row = run_measured(["generate", "siot", "-n", str(n), "-o", str(path), "--seed", "0"],
                       timeout)._asdict()
    row["file_mb"] = path.stat().st_size / 1e6 if path.exists() else None
    print(_line(n, name, row), flush=True)
    return row


def measure_generate_only(n: int, folder: Path, *, timeout: float) -> dict[str, Any]:
    """Only ``generate`` at ``n`` devices (a size no later command is run at here)."""
    net = folder / f"siot{n}.json"
    rows = {"generate": generated(n, net, timeout)}
    net.unlink(missing_ok=True)
    return rows


def measure_size(n: int, folder: Path, *, timeout: float, with_design: bool
                 ) -> dict[str, Any]:
    """Generate a network of ``n`` devices in ``folder`` and run every command on it."""
    net = folder / f"siot{n}.json"
    rows = {"generate": generated(n, net, timeout)}
    packed = folder / f"siot{n}.json.gz"
    rows[GZIP] = generated(n, packed, timeout, name=GZIP)
    packed.unlink(missing_ok=True)
    if rows["generate"]["status"] != "ok":
        return rows
    for name, template in COMMANDS.items():
        if name == "design" and not with_design:
            continue
        arguments = [part.format(net=net, folder=folder) for part in template]
        rows[name] = run_measured(arguments, timeout)._asdict()
        print(_line(n, name, rows[name]), flush=True)
    net.unlink()
    return rows


def _line(n: int, name: str, row: dict) -> str:
    cpu = "-" if row["cpu_s"] is None else f"{row['cpu_s']:.1f}"
    peak = "-" if row["peak_mb"] is None else f"{row['peak_mb']:.0f}"
    extra = f", file {row['file_mb']:.1f} MB" if row.get("file_mb") is not None else ""
    return (f"{n:>6} {name:<26} cpu {cpu:>8} s  wall {row['wall_s']:8.1f} s  "
            f"peak {peak:>6} MB  silent <= {row['silence_s']:5.1f} s  {row['status']}{extra}")


def summarise(results: dict[int, dict[str, dict]]) -> dict[str, Any]:
    """Growth exponents per command and the goals met or not."""
    sizes = sorted(results)
    names = sorted({name for rows in results.values() for name in rows})
    exponents = {}
    for name in names:
        done = [(n, results[n][name]["cpu_s"]) for n in sizes
                if name in results[n] and results[n][name]["status"] == "ok"]
        exponents[name] = growth_exponent([n for n, _ in done], [s for _, s in done])
    goals = []
    for n, name, what, limit in GOALS:
        row = results.get(n, {}).get(name)
        value = None if row is None else row[what]
        goals.append({"devices": n, "command": name, "measure": what, "limit": limit,
                      "value": value, "met": value is not None and value <= limit})
    n, limit = FILE_GOAL
    for name in ("generate", GZIP):
        generated = results.get(n, {}).get(name)
        size = None if generated is None else generated.get("file_mb")
        goals.append({"devices": n, "command": name, "measure": "file_mb",
                      "limit": limit / 1e6, "value": size,
                      "met": size is not None and size * 1e6 <= limit})
    silent = max((row["silence_s"] for rows in results.values() for row in rows.values()),
                 default=None)
    goals.append({"devices": None, "command": "every", "measure": "silence_s",
                  "limit": SILENCE_GOAL_S, "value": silent,
                  "met": silent is not None and silent <= SILENCE_GOAL_S})
    return {"growth_exponents": exponents, "goals": goals}


def figure(results: dict[int, dict[str, dict]], path: Path) -> None:
    """CPU seconds against devices, log-log, one line per command; the file sizes beside."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(results)
    fig, (cpu_axis, file_axis) = plt.subplots(1, 2, figsize=(10, 4))
    names = sorted({name for rows in results.values() for name in rows})
    for name in names:
        points = [(n, results[n][name]["cpu_s"]) for n in sizes
                  if name in results[n] and results[n][name]["cpu_s"] is not None]
        if points:
            cpu_axis.plot(*zip(*points, strict=True), marker="o", label=name)
    cpu_axis.set(xscale="log", yscale="log", xlabel="devices", ylabel="CPU seconds")
    cpu_axis.legend(fontsize=7)
    for name, label in (("generate", ".json"), (GZIP, ".json.gz")):
        files = [(n, results[n][name]["file_mb"]) for n in sizes
                 if name in results[n] and results[n][name].get("file_mb") is not None]
        if files:
            file_axis.plot(*zip(*files, strict=True), marker="o", label=label)
    file_axis.legend(fontsize=7)
    file_axis.set(xscale="log", yscale="log", xlabel="devices", ylabel="network file (MB)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="comma-separated device counts (default 500,1000,2000,5000)")
    parser.add_argument("--design-max", type=int, default=1000,
                        help="run design up to this many devices (default 1000)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds before a command is stopped (default 3600)")
    parser.add_argument("--generate-sizes", default=",".join(map(str, GENERATE_ONLY_SIZES)),
                        help="comma-separated device counts to run only generate at "
                             "(default 20000; empty: none)")
    parser.add_argument("--quick", action="store_true", help="sizes 100 and 200")
    options = parser.parse_args()
    sizes = QUICK_SIZES if options.quick else parse_ints(options.sizes, "--sizes", at_least=10)
    generate_only = () if options.quick or not options.generate_sizes.strip() else [
        n for n in parse_ints(options.generate_sizes, "--generate-sizes", at_least=10)
        if n not in sizes]
    results: dict[int, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="topokit-scale-") as folder:
        warm_up(Path(folder), timeout=options.timeout)
        for n in sizes:
            results[n] = measure_size(n, Path(folder), timeout=options.timeout,
                                      with_design=n <= options.design_max)
        for n in generate_only:
            results[n] = measure_generate_only(n, Path(folder), timeout=options.timeout)
    summary = summarise(results)
    for name, exponent in summary["growth_exponents"].items():
        shown = "-" if exponent is None else f"{exponent:.2f}"
        print(f"growth exponent of {name}: {shown}")
    for goal in summary["goals"]:
        verdict = "met" if goal["met"] else "NOT met"
        print(f"goal {goal['command']} {goal['measure']} <= {goal['limit']:g} at "
              f"{goal['devices'] or 'every size'}: {goal['value']} ({verdict})")
    stem = "scale_benchmark_quick" if options.quick else "scale_benchmark"
    from topokit import __version__

    write_json(f"{stem}.json", {"command": " ".join(["python -m analyses.scale_benchmark",
                                                     *sys.argv[1:]]),
                                "topokit": __version__, "date": date.today().isoformat(),
                                "machine": machine(),
                                "results": {str(n): rows for n, rows in results.items()},
                                **summary})
    figure(results, out_path(f"{stem}.png"))


if __name__ == "__main__":
    main()
