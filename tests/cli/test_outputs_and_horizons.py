"""Issue #43, the third corpus of bad inputs, on the command line.

Every case: exit status 2, one ``error:`` line, no traceback, and every input file
byte-identical afterwards.

1. No output is one of the command's inputs: every command with an output option
   (design, export, batch, audit, validate, calibrate, probe, learn,
   learn-federated, gfl run) refuses an output that resolves to an input file
   (or a file written beside it does, or two outputs are one file), before any
   work.  ``generate siot`` reads no file.
2. ``validate`` refuses a horizon whose training would take more than a day of CPU
   (measured on a short run of the training core) or more memory than is
   available, with the estimate and the most rounds that fit, in seconds.
3. ``calibrate`` refuses a non-integer measured_rounds or horizon naming the row, an
   empty table as empty, and shows plain numbers (-5.0, not np.float64(-5.0)).
4. ``export --format dp-plan`` of a design whose recorded workload is bad names the
   design file.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import numpy as np
import pytest

from topokit import load_example, save_network
from topokit.cli import app
from topokit.design.workload import Workload

from cli_errors import check_one_line, runner

NOT_INPUT = ("an input of this command", "would replace the input")


def digests(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its SHA-256."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def design_json(tmp_path_factory) -> str:
    """A design of the toy network under a workload, as ``topokit design -o`` writes it
    (with DP devices: a stranger bound asks for them, and a DP plan needs them)."""
    path = tmp_path_factory.mktemp("design") / "d.json"
    result = runner.invoke(app, ["design", "--example", "toy", "--epsilon", "2", "--target",
                                 "0.8", "--max-stranger-mu", "0.5", "-o", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return path.read_text()


@pytest.fixture
def here(tmp_path, monkeypatch, design_json) -> Path:
    """A working folder holding the inputs every command below reads."""
    monkeypatch.chdir(tmp_path)
    save_network(load_example("toy"), tmp_path / "net.json")
    (tmp_path / "d.json").write_text(design_json)
    Workload(model="logreg", epsilon=1.0, target=0.8, rounds=40).save(tmp_path / "w.json")
    (tmp_path / "p.json").write_text("{}")  # a predictor file: never read, refused first
    (tmp_path / "runs.csv").write_text("network,topology,target,measured_rounds,horizon\n"
                                       "net.json,d.json,0.8,9,40\n")
    np.save(tmp_path / "signals.npy", np.random.default_rng(0).random((30, 6)))
    (tmp_path / "probes").mkdir()
    save_network(load_example("toy"), tmp_path / "probes" / "network.json")
    (tmp_path / "nets").mkdir()
    save_network(load_example("toy"), tmp_path / "nets" / "a.json")
    (tmp_path / "clients").mkdir()
    np.save(tmp_path / "clients" / "summary.json", np.zeros((4, 3)))  # a client's signals
    (tmp_path / "clients" / "summary.json.npy").rename(tmp_path / "clients" / "summary.json")
    (tmp_path / "config.csv").write_text("iterations = 10\n")  # TOML under another name
    (tmp_path / "fmnist").mkdir()
    (tmp_path / "fmnist" / "train-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x03")
    return tmp_path


# ---------------------------------------------------------------------------------------------
# 1. No output is an input
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "keywords"), [
    (["design", "net.json", "-o", "net.json"], ["--output net.json is the NETWORK file"]),
    (["design", "net.json", "-o", "./link.json"], ["is the NETWORK file (net.json)"]),
    (["design", "--example", "toy", "--workload", "w.json", "-o", "w.json"],
     ["is the --workload file"]),
    (["design", "--example", "toy", "--predictor", "p.json", "-o", "p.json"],
     ["is the --predictor file"]),
    (["export", "d.json", "-f", "mixing-csv", "-o", "net.json", "--network", "net.json"],
     ["--output net.json is the --network file"]),
    (["export", "d.json", "-f", "dp-plan", "-o", "./d.json"], ["is the DESIGN file"]),
    (["export", "d.json", "-f", "decentralizepy", "-o", "net.edges", "--network",
      "net.nodes.json"],
     ["--output net.edges: net.nodes.json, which decentralizepy writes beside it, is the "
      "--network file"]),
    (["batch", "nets", "-o", "nets/a.json"], ["is a network file of the DIRECTORY nets"]),
    (["audit", "--example", "toy", "-T", "5", "-t", "t.png", "--plot", "t.png"],
     ["--plot t.png is the --topology file"]),
    (["validate", "net.json", "-t", "ndlf", "-o", "net.json"], ["is the NETWORK file"]),
    (["validate", "net.curves.parquet", "-t", "ndlf", "-o", "net.parquet"],
     ["net.curves.parquet, where the accuracy curves go beside it, is the NETWORK file"]),
    (["validate", "--example", "toy", "--workload", "w.json", "-o", "w.json"],
     ["is the --workload file"]),
    (["validate", "--example", "toy", "--dataset", "fashion-mnist:fmnist", "-o",
      "fmnist/train-images-idx3-ubyte"], ["is a file of --dataset"]),
    (["calibrate", "runs.csv", "-o", "runs.csv"], ["--output runs.csv is the RUNS table"]),
    (["calibrate", "runs.csv", "-o", "net.json"],
     ["is the network file of row 1 of the runs table"]),
    (["calibrate", "runs.csv", "-o", "d.json"], ["is the topology file of row 1"]),
    (["calibrate", "runs.csv", "--refit", "p.json", "-o", "p.json"], ["is the --refit file"]),
    (["calibrate", "runs.csv", "--workload", "w.json", "-o", "w.json"],
     ["is the --workload file"]),
    (["probe", "probes/network.json", "-o", "probes"],
     ["--output probes: probes/network.json, written there, is the NETWORK file"]),
    (["probe", "--example", "toy", "--workload", "probes/ndlf.json", "-o", "probes"],
     ["--output probes: probes/ndlf.json, written there, is the --workload file"]),
    (["learn", "signals.npy", "--degree", "2", "-o", "signals.npy"],
     ["--output signals.npy is the SIGNALS file"]),
    (["learn-federated", "signals.npy", "clients/summary.json", "-o", "clients"],
     ["clients/summary.json, written there, is the signals file of client 2"]),
    (["gfl", "run", "config.csv", "-o", "config.csv"], ["is the CONFIG.toml file"]),
])
def test_an_output_that_is_an_input_is_refused_before_any_work(here, args, keywords):
    if "./link.json" in args:
        (here / "link.json").symlink_to(here / "net.json")
    if "t.png" in args:
        (here / "t.png").write_text(json.dumps(json.loads((here / "d.json").read_text())))
    if "net.curves.parquet" in args:
        save_network(load_example("toy"), here / "net.curves.parquet")
    if "net.nodes.json" in args:
        save_network(load_example("toy"), here / "net.nodes.json")
    if "probes/ndlf.json" in args:
        (here / "probes" / "ndlf.json").write_text((here / "w.json").read_text())
    before = digests(here)
    started = time.monotonic()
    check_one_line(args, *keywords, *NOT_INPUT)
    assert time.monotonic() - started < 30  # before the work (a design, a training)
    assert digests(here) == before  # nothing replaced, nothing new


def test_two_outputs_that_are_one_file_are_refused(here):
    before = digests(here)
    check_one_line(["design", "--example", "toy", "-o", "fig.png", "--plot", "./fig.png"],
                   "--output and --plot write the same file", "give --plot another path")
    assert digests(here) == before


def test_an_output_beside_the_inputs_is_still_written(here):
    """Only the inputs are refused: a new file beside them is written."""
    result = runner.invoke(app, ["export", "d.json", "-f", "mixing-csv", "-o", "W.csv",
                                 "--network", "net.json"])
    assert result.exit_code == 0, result.output
    assert (here / "W.csv").exists()


# ---------------------------------------------------------------------------------------------
# 2. validate's horizon
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def memory(monkeypatch):
    """Set the memory validate's cost check sees as available (bytes)."""
    def set_available(n_bytes: float) -> None:
        monkeypatch.setattr("topokit._checks.available_memory", lambda: float(n_bytes))
    return set_available


def test_a_horizon_beyond_a_day_of_cpu_is_refused_with_the_rounds_that_fit(memory):
    memory(float("inf"))
    started = time.monotonic()
    line = check_one_line(["validate", "--example", "toy", "--rounds", "1000000000"],
                          "--rounds 1000000000", "20 training runs (4 topologies x 5 trials)",
                          "of CPU", "ms a round, measured here on 6 devices",
                          "limit of one day", "or fewer")
    assert time.monotonic() - started < 30  # not a minute of silent training
    per_round = float(re.search(r"\(([\d.e+-]+) ms a round", line).group(1)) / 1e3
    fits = int(re.search(r"use --rounds (\d+) or fewer", line).group(1))
    # The rounds that fit take one day at the measured cost (the cost printed to 3 digits).
    assert fits * 20 * per_round == pytest.approx(86400, rel=0.01)


def test_a_horizon_beyond_the_memory_is_refused_with_the_rounds_that_fit(memory):
    memory(2**30)
    line = check_one_line(["validate", "--example", "toy", "-t", "ndlf", "--trials", "2",
                           "--rounds", "100000000"],
                          "--rounds 100000000", "2 training runs (1 topology x 2 trials)",
                          "of memory", "100,000,001 checkpoints", "1 GiB available")
    fits = int(re.search(r"use --rounds (\d+) or fewer", line).group(1))
    # 1 GiB over (one run training: 320 + 16 n, two curves kept: 40 + n) bytes a checkpoint.
    assert fits == pytest.approx(2**30 / (320 + 16 * 6 + 2 * (40 + 6)), rel=0.001)


def test_a_workload_files_horizon_names_the_file(here, memory):
    memory(float("inf"))
    Workload(model="logreg", epsilon=1.0, target=0.8, rounds=10**9).save(here / "big.json")
    before = digests(here)
    check_one_line(["validate", "--example", "toy", "--workload", "big.json"],
                   "the rounds of big.json (1,000,000,000)", "of CPU",
                   "set the rounds of big.json to")
    assert digests(here) == before


def test_the_library_refuses_the_horizon_before_any_work(toy, digits, monkeypatch):
    from topokit.errors import InvalidInputError
    from topokit.validation import core, validate

    monkeypatch.setattr("topokit._checks.available_memory", lambda: float("inf"))
    built = []
    monkeypatch.setattr(core, "_build_topologies", lambda *a: built.append(a))
    X, y = digits
    with pytest.raises(InvalidInputError, match=r"^rounds=1000000000: 1 training run .* use "
                                                r"rounds=\d+ or fewer"):
        validate(toy, "ndlf", X=X, y=y, trials=1, rounds=10**9, audit_rounds=0)
    assert built == []  # refused before a topology was built


# ---------------------------------------------------------------------------------------------
# 3. calibrate: a user's runs table
# ---------------------------------------------------------------------------------------------

HEADER = "network,topology,target,measured_rounds,horizon\n"


@pytest.mark.parametrize(("rows", "keywords"), [
    ("net.json,d.json,0.8,9,40\nnet.json,d.json,0.8,8.5,40\n",
     ["row 2: measured_rounds must be a whole number", "(measured_rounds 8.5, horizon 40)"]),
    ("net.json,d.json,0.8,9,40.5\n", ["row 1: horizon must be a whole number", "40.5"]),
    ("net.json,d.json,0.8,-5,40\nnet.json,d.json,0.8,,40\n",  # a float column: -5.0
     ["row 1: measured_rounds must be > 0", "(measured_rounds -5.0, horizon 40)"]),
    ("", ["runs.csv: the runs table is empty (a header, no rows)"]),
    (None, ["runs.csv is empty (0 bytes)"]),
])
def test_a_bad_runs_table_is_refused_in_plain_words(here, rows, keywords):
    (here / "runs.csv").write_text("" if rows is None else HEADER + rows)
    before = digests(here)
    line = check_one_line(["calibrate", "runs.csv", "--refit", "default", "-o", "pred.json"],
                          *keywords)
    assert "np." not in line and "must be numeric" not in line
    assert digests(here) == before


def test_whole_rounds_written_as_floats_are_taken(here):
    """8.0 (pandas writes a column with empty cells as floats) is a whole number."""
    (here / "runs.csv").write_text(HEADER + "net.json,d.json,0.8,9.0,40.0\n"
                                            "net.json,d.json,0.8,,40\n")
    result = runner.invoke(app,
                           ["calibrate", "runs.csv", "--refit", "default", "-o", "pred.json"])
    assert result.exit_code == 0, result.output


def test_an_empty_table_in_memory_is_refused_as_empty():
    import pandas as pd

    from topokit.errors import InvalidInputError
    from topokit.validation import calibrate

    with pytest.raises(InvalidInputError, match=r"the runs table is empty \(no rows\)"):
        calibrate(pd.DataFrame(columns=["network", "topology", "target", "measured_rounds",
                                        "horizon"]), predictor="default")


def test_the_shared_checks_show_numpy_values_as_plain_numbers():
    from topokit._checks import check_choice, check_int
    from topokit.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=r"got -3$"):
        check_int(np.int64(-3), "rounds", low=1)
    with pytest.raises(InvalidInputError, match=r"got 2\.5$"):
        check_int(np.float64(2.5), "rounds", low=1)
    with pytest.raises(InvalidInputError, match=r"got 'c'$"):
        check_choice(np.str_("c"), "kind", ("a", "b"))


# ---------------------------------------------------------------------------------------------
# 4. export: a design's bad recorded workload
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "keywords"), [
    (lambda w: w["workload"].update(epsilom=2), ["unknown workload field 'epsilom'"]),
    (lambda w: w["workload"].update(batch_size=-3), ["batch_size must be an integer >= 1",
                                                     "got -3"]),
    (lambda w: w.update(workload="x"), ["must be {'workload': its fields, ...}"]),
])
def test_a_bad_recorded_workload_names_the_design_file(here, change, keywords):
    design = json.loads((here / "d.json").read_text())
    change(design["stats"]["workload"])
    (here / "bad.json").write_text(json.dumps(design))
    before = digests(here)
    check_one_line(["export", "bad.json", "-f", "dp-plan", "-o", "plan.json"],
                   "bad.json: the design's recorded workload (stats.workload)", *keywords)
    assert digests(here) == before
