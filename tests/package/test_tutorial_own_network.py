"""docs/tutorial/own_network.md runs as written and prints what the text says.

The page's commands and Python blocks are found by ``doc_commands.py`` (the rules of the
other tutorials' test, ``test_tutorial_commands.py``) and run in reading order in one fresh
folder: a command reads the files an earlier step wrote, a Python block the names an
earlier block defined.  Each command must exit 0 at ``COLUMNS=80`` and print no line wider
than 80 columns, each Python block must run, and the output shown under a ``$`` prompt must
be among the lines the command printed.  The numbers the text states are checked below on
the values they describe.  ``-rP`` shows every step's time; the whole page takes about
80 s on 2 cores.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from doc_commands import (
    check_ran,
    fenced_blocks,
    metrics_table,
    prose_spans,
    run_steps,
    steps,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tutorial" / "own_network.md"
TEXT = PAGE.read_text(encoding="utf-8")
FLAT = " ".join(TEXT.split())
STEPS = steps(TEXT, "own_network.md")
COMMANDS = [step.label for step in STEPS if step.kind == "shell"]
BLOCKS = [step.label for step in STEPS if step.kind == "python"]
#: The block that runs the service's app needs the ``serve`` extra (FastAPI).
NEEDS_SERVE = {step.label for step in STEPS
               if step.kind == "python" and "fastapi" in step.code}
HAS_SERVE = importlib.util.find_spec("fastapi") is not None

CEILING = "topokit ceiling --data data.csv --label label --model logreg --rounds 100"
DESIGN = ("topokit design net.json --workload workload.json --max-stranger-mu 0.5 "
          "-o design_cli.json")
VALIDATE = ("topokit validate net.json --data data.csv --label label -t mine=design.json,ndlf "
            "--workload workload.json --trials 1 --audit-rounds 0")
EDGES = "topokit export design.json --network net.json --format decentralizepy -o mine.edges"
PLAN = "topokit export design.json --network net.json --format dp-plan -o plan.json"
AUDIT = "topokit audit net.json -t design.json --rounds 20"
PROBE = ("topokit probe net.graphml --data data.csv --label label --workload workload_own.json "
         "-k 4 -o probes")
CALIBRATE = ("topokit calibrate runs.csv --refit default --workload workload_own.json "
             "--prior-strength 10 -o mine_predictor.json")
DESIGN_OWN = ("topokit design probes/network.json --workload workload_own.json "
              "--predictor mine_predictor.json -o design_own.json")


def _block(fragment: str) -> str:
    """The code of the one Python block that contains ``fragment``."""
    found = [step.code for step in STEPS if step.kind == "python" and fragment in step.code]
    assert len(found) == 1, f"{len(found)} Python blocks contain {fragment!r}"
    return found[0]


def test_the_steps_are_found_in_order():
    assert COMMANDS == [CEILING, DESIGN, VALIDATE, EDGES, PLAN, AUDIT, PROBE, CALIBRATE,
                        DESIGN_OWN]
    assert len(BLOCKS) == 17
    order = [step.label for step in STEPS]
    # The data and the workload exist before the commands that read them.
    assert order.index(BLOCKS[2]) < order.index(CEILING)          # data.csv
    assert order.index(BLOCKS[5]) < order.index(DESIGN)           # workload.json
    assert order.index(BLOCKS[8]) < order.index(VALIDATE)         # design.json
    assert order.index(PLAN) < order.index(BLOCKS[10])            # the plan is read
    assert order.index(BLOCKS[14]) < order.index(PROBE)           # workload_own.json
    assert order.index(PROBE) < order.index(BLOCKS[15]) < order.index(CALIBRATE)  # runs.csv
    assert order.index(DESIGN_OWN) < order.index(BLOCKS[16])      # design_own.json
    assert not [block for block in fenced_blocks(TEXT, "own_network.md") if block.not_run]


def test_topokit_spans_without_an_option_only_name_commands():
    from doc_commands import command_names

    names = command_names()
    for span in prose_spans(TEXT, "own_network.md"):
        assert set(span.split()[1:]) <= names, span


# --- running them ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    page_steps = STEPS
    if not HAS_SERVE:
        page_steps = [step for step in STEPS if step.label not in NEEDS_SERVE]
    return run_steps(page_steps, tmp_path_factory.mktemp("own_network"),
                     "tutorial_own_network")


@pytest.mark.parametrize("command", COMMANDS)
def test_command_runs_and_fits_80_columns(command, ran):
    result = ran.results[command]
    print(f"{result.seconds:.1f} s: {command}")  # shown with -rP
    check_ran(f"own_network.md: {command}", result)


def test_each_step_takes_seconds_not_minutes(ran):
    assert "so each step takes seconds, not minutes" in FLAT
    slowest = max(ran.results.values(), key=lambda result: result.seconds)
    assert slowest.seconds < 60


@pytest.mark.parametrize("block", BLOCKS)
def test_python_block_runs(block, ran):
    if block in NEEDS_SERVE and not HAS_SERVE:
        pytest.skip("the service's block needs the serve extra (FastAPI)")
    result = ran.results[block]
    print(f"{result.seconds:.1f} s: {block}")
    assert result.returncode == 0, f"own_network.md, {block}:\n{result.stderr}"


def _stdout(ran, command: str) -> str:
    result = ran.results[command]
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_console_output_is_what_the_command_printed(ran):
    """The lines under a ``$`` prompt are lines the command printed (trailing blanks aside)."""
    shown = 0
    for block in fenced_blocks(TEXT, "own_network.md"):
        if block.language != "console":
            continue
        command, output, continued = None, [], False
        for line in block.lines + ["$ "]:
            if continued:  # a command's line ends with a backslash: it goes on
                command = " ".join((command + " " + line.removesuffix("\\")).split())
            elif line.startswith("$ "):
                if command and output:
                    printed = [row.rstrip() for row in _stdout(ran, command).splitlines()]
                    for row in output:
                        assert row.rstrip() in printed, f"{command}: {row!r} not printed"
                        shown += 1
                command, output = " ".join(line[2:].removesuffix("\\").split()), []
            else:
                output.append(line)
            continued = line.endswith("\\")
    assert shown == 3  # topokit ceiling's first three lines


# --- what the text says ----------------------------------------------------------------

def test_the_network_and_its_files(ran):
    topokit = ran.namespace["topokit"]
    net = ran.namespace["net"]
    block = _block("connected_watts_strogatz_graph")
    assert "# Network('mine', 20 devices, 40 social links)" in block
    assert repr(net.with_class_counts(None)) == "Network('mine', 20 devices, 40 social links)"
    assert "# True: the same network" in _block('save_network(net, "net.graphml")')
    assert topokit.load_network(ran.folder / "net.graphml") == net.with_class_counts(None)
    # The class counts were saved with the network (net.json of step 2).
    assert topokit.load_network(ran.folder / "net.json") == net
    assert net.delay.diagonal().tolist() == [0.0] * 20
    assert np.array_equal(net.delay, net.delay.T)


def test_the_class_counts_are_the_rows_of_each_device(ran):
    namespace = ran.namespace
    counts, device, label = namespace["counts"], namespace["device"], namespace["label"]
    assert "# (20, 4): rows per class of each device" in _block("np.bincount")
    assert counts.shape == (20, 4) and counts.sum() == 6000
    for i in range(20):  # rows in node order: device i of `device` is net.nodes[i]
        assert counts[i].tolist() == np.bincount(label[device == i], minlength=4).tolist()
    # "class k to devices 5k to 5k + 9 (modulo 20), so every device holds two classes"
    assert ((counts > 0).sum(axis=1) == 2).all()
    for k in range(4):
        assert set(np.flatnonzero(counts[:, k])) == {(5 * k + j) % 20 for j in range(10)}
    assert np.array_equal(namespace["net"].class_counts, counts)


def test_the_table_is_read_and_standardised(ran):
    X, y, classes = (ran.namespace[name] for name in ("X", "y", "classes"))
    assert "# (6000, 8), array([0, 1, 2, 3])" in _block("load_table_data(")
    assert X.shape == (6000, 8) and classes.tolist() == [0, 1, 2, 3]
    assert np.allclose(X.mean(axis=0), 0) and np.allclose(X.std(axis=0), 1)
    assert np.array_equal(y, ran.namespace["label"])


def test_the_ceiling(ran):
    probe = ran.namespace["probe"]
    assert "# (0.9279, 14)" in _block("probe = ceiling_probe(")
    assert (round(probe.ceiling, 4), probe.probe_rounds) == (0.9279, 14)
    # The command measures the same (its output lines are checked above).
    output = _stdout(ran, CEILING)
    assert "--ceiling 0.928 --probe-rounds 14" in output
    assert "Workload(model='logreg', ceiling=0.928, probe_rounds=14, rounds=100)" in output


def test_the_workload(ran):
    topokit, workload = ran.namespace["topokit"], ran.namespace["workload"]
    assert "# 0.84" in _block("workload = topokit.Workload(")
    assert ran.namespace["target"] == 0.84 < ran.namespace["probe"].ceiling
    assert topokit.load_workload(ran.folder / "workload.json") == workload
    # "z = 7.03 for epsilon = 0.5 at delta = 1e-5"
    assert (workload.epsilon, workload.delta) == (0.5, 1e-5)
    assert round(workload.resolved_noise_multiplier, 2) == 7.03


def test_a_design_without_dp_devices_warns(ran):
    from topokit.errors import StrangersExposedWarning

    namespace = ran.namespace
    assert "# {}: no DP device" in _block("unbounded =")
    assert namespace["unbounded"].noise_multipliers == {}
    assert namespace["unbounded"].metrics.n_dp_devices == 0
    assert {w.category for w in namespace["caught"]} == {StrangersExposedWarning}
    # "all 300 stranger pairs ... receive a device's data without noise"
    assert "300 of its 300 stranger pairs" in str(namespace["caught"][0].message)
    assert "all 300 stranger pairs" in FLAT


def test_the_bounded_design(ran):
    design, workload = ran.namespace["design"], ran.namespace["workload"]
    block = _block("max_stranger_mu=0.5, seed=0)")
    for comment in ("# Design(36 links, 9 DP devices, pseudo_time=6884 s, ...)",
                    "7.03 on each of the 9", "guarantees: 0.5",
                    "predicted seconds to the target: 6884", "# 'workload'"):
        assert comment in block
    assert repr(design).startswith("Design(36 links, 9 DP devices, pseudo_time=6884 s, ")
    levels = design.noise_multipliers
    assert len(levels) == 9 and {round(z, 2) for z in levels.values()} == {7.03}
    assert set(levels) == set(design.topology.dp_devices)
    epsilons = design.noise.epsilons
    assert {round(e, 6) for e in epsilons.values()} == {0.5}
    assert max(epsilons.values()) <= workload.epsilon + 1e-9  # "never ... more than"
    assert round(design.metrics.pseudo_time) == 6884
    assert design.predictor["name"] == "workload"
    bound = design.stats["stranger_bound"]
    assert bound["stranger_mu_max"] <= 0.5
    assert "over 50 rounds of gossip by default" in FLAT
    assert (bound["audit_rounds"], bound["audit_model"]) == (50, "gossip")
    # "about 6,900 s, against about 4,700 s for the unbounded design"
    assert "about 6,900 s, against about 4,700 s" in FLAT
    assert round(design.metrics.pseudo_time, -2) == 6900
    assert round(ran.namespace["unbounded"].metrics.pseudo_time, -2) == 4700


def test_the_saved_design_reads_back(ran):
    saved, design = ran.namespace["saved"], ran.namespace["design"]
    assert saved.topology == design.topology
    assert saved.noise_multipliers == design.noise_multipliers
    assert saved.metrics.pseudo_time == design.metrics.pseudo_time


def test_the_design_command_prints_what_the_text_says(ran):
    output = _stdout(ran, DESIGN)
    flat = " ".join(output.split())
    assert "every DP device adds z = 7.032: epsilon <= 0.5 per round" in flat
    table = metrics_table(output)
    exposed = table["exposed_stranger_pairs"]
    assert (exposed["optimize"], exposed["NDLF"], exposed["AutoTag"]) == ("0", "300", "300")
    assert table["stranger_pairs"]["optimize"] == "300"
    # The same design as in Python.
    written = json.loads((ran.folder / "design_cli.json").read_text())
    assert written["topology"] == ran.namespace["design"].to_dict()["topology"]
    assert written["noise"] == ran.namespace["design"].to_dict()["noise"]


def _validate_rows(output: str) -> tuple[dict, dict]:
    """Predicted G' and measured rounds to the target, by topology, from validate's tables."""
    predicted, measured = {}, {}
    for cells in map(str.split, output.splitlines()):
        if len(cells) == 8 and cells[0] in ("mine", "ndlf"):
            predicted[cells[0]] = float(cells[4])
        if len(cells) == 4 and cells[0] in ("mine", "ndlf"):
            measured[(cells[0], cells[1])] = cells[2]
    return predicted, measured


def test_validate_prints_what_the_text_says(ran):
    # "36.2 rounds against 53.4 ... the design reaches 0.84 in 31 rounds, NDLF in 18"
    assert "36.2 rounds against 53.4" in FLAT
    assert "the design reaches 0.84 in 31 rounds, NDLF in 18" in FLAT
    predicted, measured = _validate_rows(_stdout(ran, VALIDATE))
    assert predicted["mine"] == 36.2
    assert round(ran.namespace["design"].metrics.predicted_global_iterate, 1) == 53.4
    assert measured == {("mine", "0.84"): "31", ("ndlf", "0.84"): "18"}
    # Python's validate trains the same runs.
    frame = ran.namespace["result"].frame.set_index("topology")
    assert frame.loc["mine", "measured_rounds"] == 31
    assert frame.loc["ndlf", "measured_rounds"] == 18
    assert round(frame.loc["mine", "predicted_global_iterate"], 1) == 36.2


def test_the_decentralizepy_export(ran):
    folder, net = ran.folder, ran.namespace["net"]
    lines = (folder / "mine.edges").read_text().splitlines()
    assert lines[0] == "20"
    design = ran.namespace["design"]
    index = {node: i for i, node in enumerate(net.nodes)}
    links = {tuple(sorted(map(int, line.split()))) for line in lines[1:]}
    assert links == {tuple(sorted((index[u], index[v]))) for u, v in design.topology.edges}
    assert json.loads((folder / "mine.nodes.json").read_text()) == net.nodes
    assert (folder / "mine.prediction.json").is_file()
    # "the export predicts the time under those weights and says, with a warning, when
    # they differ"
    result = ran.results[EDGES]
    assert "Metropolis-Hastings" in result.stdout and "warning:" in result.stderr


def test_the_dp_plan_and_the_numpy_step(ran):
    namespace = ran.namespace
    plan, dp, counts = namespace["plan"], namespace["dp"], namespace["counts"]
    block = _block("plan = json.load(file)")
    for comment in ("# ('round', 1.0)", "# 1e-05", "# ('d01', 7.03, 0.5)", "# 0.5 again"):
        assert comment in block
    accounting = plan["accounting"]
    assert (accounting["unit"], accounting["sampling_rate"], accounting["delta"]) \
        == ("round", 1.0, 1e-05)
    assert (dp["id"], round(dp["noise_multiplier"], 2), round(dp["epsilon"], 3)) \
        == ("d01", 7.03, 0.5)
    assert round(namespace["topokit"].dp.per_release_epsilon(dp["noise_multiplier"],
                                                              dp["delta"]), 6) == 0.5
    for entry in plan["devices"]:  # rows from the class counts, rate batch / rows
        assert entry["rows"] == counts[entry["index"]].sum()
        assert math.isclose(entry["sampling_rate"], entry["batch_size"] / entry["rows"])
        assert entry["dp"] == (entry["id"] in namespace["design"].topology.dp_devices)
    # The step: the device's own rows, every clipped gradient within C, a finite model.
    rows, device = namespace["rows"], namespace["device"]
    assert len(set(rows)) == dp["batch_size"] and (device[rows] == dp["index"]).all()
    B, C = dp["batch_size"], dp["max_grad_norm"]
    norms = np.linalg.norm(namespace["clipped"].reshape(B, -1), axis=1)
    assert (norms <= C + 1e-12).all() and (namespace["norms"] > C).any()
    assert namespace["W"].shape == (9, 4) and np.isfinite(namespace["W"]).all()
    step = [line for line in _block("np.linalg.norm(grads").splitlines() if line.strip()]
    assert len(step) <= 15  # short, as the text promises no more


def test_the_audit_at_the_design_noise(ran):
    summary = ran.namespace["summary"]
    assert "# (0, 0.354)" in _block("privacy_audit(")
    assert summary["exposed_stranger_pairs"] == 0
    assert round(summary["stranger_mu_max"], 3) == 0.354 <= 0.5
    assert "the worst stranger pair's mu, 0.354, is within the bound of 0.5" in FLAT
    output = _stdout(ran, AUDIT)
    assert "(the design's)" in output and "z = 7.03183" in output
    rows = {cells[0]: cells[1] for cells in map(str.split, output.splitlines())
            if len(cells) == 2}
    assert rows["exposed_stranger_pairs"] == "0"
    assert round(float(rows["stranger_mu_max"]), 3) == 0.354


@pytest.mark.skipif(not HAS_SERVE, reason="the service's block needs the serve extra (FastAPI)")
def test_the_service_returns_the_same_design(ran):
    namespace = ran.namespace
    assert namespace["job"]["status"] == "done"
    served, design = namespace["served"], namespace["design"]
    assert served["topology"] == design.to_dict()["topology"]
    assert served["noise"] == design.to_dict()["noise"]
    block = _block("TestClient(")
    assert block.count("# True") == 2


# --- a model of your own -----------------------------------------------------------------

def test_the_own_model_is_a_model_with_exact_gradients(ran):
    """The page's SmallMLP: its per-example gradients agree with central differences of
    its own scores' cross-entropy (an independent computation), so the ceiling and the runs
    below measure that model."""
    mine = ran.namespace["mine"]
    rng = np.random.default_rng(0)
    params = mine.init(2, rng) + 0.1 * rng.normal(size=(2, mine.n_params))
    X, y = rng.normal(size=(3, 8)), np.array([0, 3, 1])

    def losses(flat):
        scores = mine.scores(flat[None, :], X)[0]
        scores = scores - scores.max(axis=1, keepdims=True)
        return np.log(np.exp(scores).sum(axis=1)) - scores[np.arange(3), y]

    grads = mine.per_example_gradients(params, X, y)
    assert grads.shape == (2, 3, mine.n_params) == (2, 3, 8 * 16 + 16 + 16 * 4 + 4)
    step = 1e-6
    for i in rng.choice(mine.n_params, size=25, replace=False):
        shift = np.zeros(mine.n_params)
        shift[i] = step
        numeric = (losses(params[1] + shift) - losses(params[1] - shift)) / (2 * step)
        assert np.allclose(grads[1, :, i], numeric, atol=1e-6)


def test_the_own_model_traits_and_workload(ran):
    probe_own, workload_own = ran.namespace["probe_own"], ran.namespace["workload_own"]
    assert "# (0.9252, 26)" in _block("probe_own = ceiling_probe(")
    assert (round(probe_own.ceiling, 4), probe_own.probe_rounds) == (0.9252, 26)
    assert "(26 probe rounds against 14)" in FLAT
    assert ran.namespace["probe"].probe_rounds == 14
    assert workload_own.target == 0.83 < probe_own.ceiling
    assert not workload_own.trained_by_topokit   # the model is not topokit's by name


def test_the_probes_and_the_runs(ran):
    import pandas as pd

    index = pd.read_csv(ran.folder / "probes" / "index.csv")
    assert len(index) == 4 and "ndlf" in set(index["name"])
    runs = pd.read_csv(ran.folder / "runs.csv")
    assert len(runs) == 8 and set(runs["horizon"]) == {100}
    reached = runs["measured_rounds"].dropna()
    assert (reached == reached.round()).all() and reached.between(1, 100).all()
    # NDLF reaches the target in both trials: the refit has uncensored runs to learn from.
    ndlf = runs[runs["topology"] == "probes/ndlf.json"]["measured_rounds"]
    assert ndlf.notna().all()


def test_the_calibration_records_the_measured_model(ran):
    data = json.loads((ran.folder / "mine_predictor.json").read_text())
    traits = data["provenance"]["model_traits"]
    assert data["provenance"]["trained_model"] == "small-mlp"
    assert traits["probe_rounds"] == 26 and traits["ceiling"] == pytest.approx(0.9252, abs=1e-4)


def test_the_own_design_follows_the_measurement(ran):
    design = ran.namespace["design_own"]
    decided = design.stats["workload"]["decided_by"]
    assert "# probe rounds 26 -> lazy-metropolis, 1.12" in _block("design_own = topokit.load")
    assert (decided["probe_rounds"], decided["mixing"], decided["ndlf_margin"]) == (
        26, "lazy-metropolis", 1.12)
    assert design.predictor["name"] == "mine_predictor.json"
    from topokit.design.baselines import ndlf

    # "The design is NDLF itself": the searched design's 1.07 and AutoTag's 1.0003 are
    # below the margin 1.12
    assert design.topology == ndlf(ran.namespace["probe_net"])
    margin = design.stats["ndlf_margin"]
    assert margin["kept_ndlf"] is True
    assert "# 1.07: below the margin, 1.12" in _block("result_own = topokit.validate(")
    assert round(margin["predicted_gain"], 2) == 1.07 and "1.0003x" in FLAT
    assert round(margin["reference_gain"], 4) == 1.0003 and margin["margin"] == 1.12


def test_the_own_design_against_ndlf(ran):
    frame = ran.namespace["result_own"].frame
    median = frame.groupby("topology")["measured_time"].median()
    assert "# mine 7085 s, ndlf 7085 s" in _block("result_own = topokit.validate(")
    assert (round(median["mine"]), round(median["ndlf"])) == (7085, 7085)
    # "trains as NDLF does": the same runs, trial by trial
    by_trial = frame.pivot_table(index="trial", columns="topology", values="measured_time")
    assert (by_trial["mine"] == by_trial["ndlf"]).all()
