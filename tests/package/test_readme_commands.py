"""Every command and Python block of README.md runs as written and prints what the text says.

The shell commands are the lines of README.md's un-languaged, ``bash`` and ``console``
fenced blocks and its inline code spans that start with ``topokit `` and have an option (a
span may run over two lines; the rules are in ``doc_commands.py``, shared with the
tutorials' test).  The Quickstart's ``pip install`` and ``python -m pytest`` are left to CI
(``.ci/run`` runs them); its ``topokit design --example toy`` runs here.  The commands run
in README order in one fresh folder (later ones read the files earlier ones write), at
``COLUMNS=80``: each must exit 0 and print no line wider than 80 columns.  The numbers the
text states are checked explicitly below, on the commands and expressions they annotate.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_commands import (
    check_ran,
    fenced_blocks,
    metrics_table,
    python_blocks,
    run_command,
    shell_commands,
)

README = Path(__file__).resolve().parents[2] / "README.md"
TEXT = README.read_text(encoding="utf-8")
COMMANDS = shell_commands(TEXT, "README.md")


def test_the_readme_commands_are_found():
    quickstart = [block for block in fenced_blocks(TEXT, "README.md") if block.quickstart]
    assert len(quickstart) == 1 and len(quickstart[0].lines) == 2, (
        "the Quickstart must hold exactly two commands (.ci/run)")
    assert COMMANDS[0] == "topokit design --example toy"
    assert "topokit calibrate runs.parquet --refit default --prior-strength 10 -o mine.json" \
        in COMMANDS
    assert COMMANDS.index("topokit validate --example siot16 -o runs.parquet") \
        < COMMANDS.index("topokit calibrate runs.parquet --refit default --prior-strength 10 "
                         "-o mine.json")
    assert len(python_blocks(TEXT, "README.md")) == 2


# --- running them ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("readme")


@pytest.fixture(scope="module")
def ran(folder) -> dict:
    """Every shell command of README.md, run in order in one fresh folder."""
    return {command: run_command(command, folder) for command in COMMANDS}


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs_and_fits_80_columns(command, ran):
    result = ran[command]
    if result.skipped:
        pytest.skip(result.skipped)
    print(f"{result.seconds:.1f} s: {command}")  # shown with -rP
    check_ran(command, result)


def test_design_toy_prints_what_the_quickstart_says(ran):
    # "`optimize`'s design keeps the seven social links and no DP device, with
    # fastest-mixing weights, predicted time 331.3 s; DLFDP and ERG are predicted never to
    # reach the target."
    assert "predicted time 331.3 s" in " ".join(TEXT.split())
    result = ran["topokit design --example toy"]
    assert result.returncode == 0, result.stderr
    links = re.search(r"^links \(\* non-social\): (.*)$", result.stdout, re.M).group(1)
    assert len(links.split(", ")) == 7 and "*" not in links
    assert re.search(r"^DP devices: none$", result.stdout, re.M)
    assert re.search(r"^mixing weights: fastest", result.stdout, re.M)
    table = metrics_table(result.stdout)
    assert round(float(table["pseudo_time"]["optimize"]), 1) == 331.3
    assert table["pseudo_time"]["DLFDP"] == "inf" and table["pseudo_time"]["ERG"] == "inf"


def test_the_commands_write_what_the_text_says(ran, folder):
    validate = ran["topokit validate --example siot16 -o runs.parquet"]
    assert "predicted against measured" in validate.stdout  # "prints predicted against..."
    assert (folder / "runs.parquet").is_file()  # "... and keeps the runs"
    assert (folder / "design.json").is_file() and (folder / "graph.edges").is_file()
    # "eight topologies worth training"
    assert len(list((folder / "probes").glob("*.json"))) == 8 + 1  # and network.json
    assert len((folder / "probes" / "index.csv").read_text().splitlines()) == 1 + 8
    assert (folder / "mine.json").is_file()


# --- the Python blocks ------------------------------------------------------------------

# The values the tour's comments state, on the expressions they annotate.
TOUR_VALUES = [
    ("design.metrics.pseudo_time", "# predicted training time: 331.3 s", 331.3),
    ("topokit.autotag(net).metrics.pseudo_time", "# the paper's AutoTag: 1128.3 s", 1128.3),
]


def test_python_blocks_run_and_print_the_stated_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tour, workload = python_blocks(TEXT, "README.md")
    namespace: dict = {"__name__": "readme"}
    exec(compile(tour, "README.md (a short tour)", "exec"), namespace)
    for expression, comment, value in TOUR_VALUES:
        assert re.search(rf"^{re.escape(expression)}\s+{re.escape(comment)}$", tour, re.M), (
            f"the tour no longer annotates {expression} with {comment!r}")
        assert round(eval(expression, namespace), 1) == value, expression
    design = namespace["design"]  # "keeps the seven social links and no DP device"
    assert len(design.topology.edges) == 7 and not design.topology.dp_devices

    exec(compile(workload, "README.md (your workload)", "exec"), namespace)
    assert (tmp_path / "graph.edges").is_file() and (tmp_path / "plan.json").is_file()
