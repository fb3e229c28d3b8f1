"""What a new user waits for: the start-up of ``import topokit`` and ``topokit --help``, and
the first design and the README's tour with Numba's cache empty and filled.

Every figure is the CPU time (user + system) of a fresh Python process, measured with
``resource.getrusage`` over the child processes, against the best simple alternative in
the same run:

- ``import topokit`` against ``import numpy, scipy.sparse, networkx`` (what the network
  model needs anyway); goal: at most 2x.
- ``topokit --help`` against ``python -c "import typer, rich, numpy"`` (the CLI's own
  toolkit); goal: at most 1.5x.  That baseline renders no help; as a reference outside
  the goal, the ``--help`` of a typer app of two one-option commands (what showing any
  typer CLI's help costs: typer's rich panels load ``rich.console`` and more).
- ``topokit design --example toy`` with an empty Numba cache (``NUMBA_CACHE_DIR`` set to a
  fresh folder: every kernel the path calls compiles) and again with that cache filled;
  goals: cold at most 40 s, warm at most 3 s.
- The README's tour (its first Python block, run as written) cold and warm, as above.

Start-up figures are the fastest of ``--repeats`` runs (the machine's noise only adds;
the first run also writes the bytecode, as a user's first run does); the cold runs
happen once each, in a fresh cache folder.

Run (from the repository root): python -m analyses.startup [--repeats 5] [--quick]
About two minutes on 2 cores (most of it the two cold runs); ``--quick`` skips the cold
runs.  Writes analyses/out/startup.{json,png} (with --quick startup_quick.*).
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from analyses._common import machine, out_path, repeats_and_quick, write_json
from topokit import __version__

README = Path(__file__).resolve().parents[1] / "README.md"


def cli(*args: str) -> list[str]:
    """The python arguments that run ``topokit ARGS`` as its console script does."""
    return ["-c", f"import sys; sys.argv = ['topokit', *{list(args)!r}]; "
                  "from topokit.cli import main; main()"]


#: (topokit's arguments, the baseline's, goal ratio) of each start-up comparison.
STARTUP = {
    "import": (["-c", "import topokit"], ["-c", "import numpy, scipy.sparse, networkx"], 2.0),
    "help": (cli("--help"), ["-c", "import typer, rich, numpy"], 1.5),
}
#: The reference beside the help goal: the --help of a typer app of two commands.
TYPER_APP_HELP = ["-c", "import typer\napp = typer.Typer()\n\n"
                        "@app.command()\ndef first(x: int = 1):\n    pass\n\n"
                        "@app.command()\ndef second(y: int = 1):\n    pass\n\n"
                        "app(['--help'])"]
#: Goals of the first design, CPU seconds: (cold, warm).
DESIGN_GOALS = (40.0, 3.0)


#: The environment of the measured processes: this one's, but writing bytecode as a user's
#: Python does (a development shell may set PYTHONDONTWRITEBYTECODE, and every import then
#: compiles its source again).
_USERS_ENVIRONMENT = {key: value for key, value in os.environ.items()
                      if key != "PYTHONDONTWRITEBYTECODE"}


def cpu_seconds(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``python args`` in a fresh process; fails on exit != 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env={**_USERS_ENVIRONMENT, **(env or {})}, timeout=1800)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"python {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def fastest(args: list[str], repeats: int) -> float:
    """The smallest CPU seconds of ``repeats`` runs."""
    return min(cpu_seconds(args)[0] for _ in range(repeats))


def readme_tour() -> str:
    """The README's tour: the first ```python block after its "A short tour" heading."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"## A short tour\s+```python\n(.*?)```", text, re.S)
    if found is None:
        raise SystemExit("README.md has no Python block under 'A short tour'")
    return found.group(1)


def startup(repeats: int) -> dict[str, dict[str, float]]:
    """Each start-up comparison: topokit's CPU, the baseline's, their ratio and the goal."""
    rows = {}
    for name, (ours, baseline, goal) in STARTUP.items():
        mine, theirs = fastest(ours, repeats), fastest(baseline, repeats)
        rows[name] = {"topokit_cpu_s": mine, "baseline_cpu_s": theirs,
                      "ratio": mine / theirs, "goal_ratio": goal}
    rows["help"]["typer_app_help_cpu_s"] = fastest(TYPER_APP_HELP, repeats)
    return rows


def first_runs(repeats: int, cold: bool) -> dict[str, dict[str, float | None]]:
    """CPU and wall seconds of the toy design and the tour, cold (empty cache) and warm."""
    jobs = {"design toy": cli("design", "--example", "toy"),
            "readme tour": ["-c", readme_tour()]}
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, args in jobs.items():
            env = {"NUMBA_CACHE_DIR": str(Path(folder) / name.replace(" ", "_"))}
            cold_cpu, cold_wall = cpu_seconds(args, env) if cold else (None, None)
            if not cold:  # fill this job's cache first: warm means compiled and cached
                cpu_seconds(args, env)
            warm = [cpu_seconds(args, env) for _ in range(repeats)]
            rows[name] = {"cold_cpu_s": cold_cpu, "cold_wall_s": cold_wall,
                          "warm_cpu_s": min(cpu for cpu, _ in warm),
                          "warm_wall_s": min(wall for _, wall in warm)}
    return rows


def report(rows: dict, runs: dict) -> None:
    """Print the figures and whether each goal is met."""
    print(f"{'start-up':<10}{'topokit':>10}{'baseline':>10}{'ratio':>8}{'goal':>7}")
    for name, row in rows.items():
        met = "met" if row["ratio"] <= row["goal_ratio"] else "NOT met"
        print(f"{name:<10}{row['topokit_cpu_s']:>9.2f}s{row['baseline_cpu_s']:>9.2f}s"
              f"{row['ratio']:>7.2f}x{row['goal_ratio']:>6.1f}x  {met}")
    typer_app = rows["help"]["typer_app_help_cpu_s"]
    print(f"reference: a two-command typer app's --help {typer_app:.2f}s "
          f"(topokit's help / that: {rows['help']['topokit_cpu_s'] / typer_app:.2f}x)")
    cold_goal, warm_goal = DESIGN_GOALS
    print(f"\n{'first run (CPU s)':<18}{'cold':>8}{'warm':>8}   goals: cold <= {cold_goal:g} s, "
          f"warm <= {warm_goal:g} s")
    for name, row in runs.items():
        cold = "-" if row["cold_cpu_s"] is None else f"{row['cold_cpu_s']:.1f}"
        print(f"{name:<18}{cold:>8}{row['warm_cpu_s']:>8.2f}")


def figure(rows: dict, runs: dict):
    """Start-up ratios against their goals, and the first runs' CPU cold and warm."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    names = list(rows)
    left.bar(names, [rows[n]["ratio"] for n in names], color="#4477aa")
    left.scatter(names, [rows[n]["goal_ratio"] for n in names], marker="_", s=900,
                 color="#cc3311", label="goal", zorder=3)
    left.set_ylabel("CPU, topokit / baseline")
    left.set_title("start-up", fontsize=10)
    left.legend(frameon=False)
    jobs = list(runs)
    x = range(len(jobs))
    cold = [runs[j]["cold_cpu_s"] or 0.0 for j in jobs]
    right.bar([k - 0.2 for k in x], cold, width=0.4, label="empty Numba cache", color="#ee7733")
    right.bar([k + 0.2 for k in x], [runs[j]["warm_cpu_s"] for j in jobs], width=0.4,
              label="cached", color="#009988")
    right.axhline(DESIGN_GOALS[0], color="#cc3311", lw=0.8, ls="--")
    right.set_xticks(list(x), jobs)
    right.set_ylabel("CPU seconds")
    right.set_title("first design and tour", fontsize=10)
    right.legend(frameon=False, fontsize=8)
    return fig


def main() -> None:
    repeats, quick = repeats_and_quick(__doc__.splitlines()[0],
                                       repeats_help="runs per warm figure",
                                       quick_help="no cold runs, 2 repeats")
    started = time.perf_counter()
    rows, runs = startup(repeats), first_runs(repeats, cold=not quick)
    report(rows, runs)
    name = "startup_quick" if quick else "startup"
    write_json(f"{name}.json", {
        "command": "python -m analyses.startup" + (" --quick" if quick else ""),
        "topokit_version": __version__, "date": date.today().isoformat(),
        "machine": machine(), "repeats": repeats, "startup": rows, "first_runs": runs,
        "seconds": round(time.perf_counter() - started)})
    figure(rows, runs).savefig(out_path(f"{name}.png"), dpi=120)
    print(f"wrote {out_path(name + '.json')} and .png")


if __name__ == "__main__":
    main()
