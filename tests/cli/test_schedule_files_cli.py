"""``topokit validate -t NAME=FILE`` trains a saved schedule (TopologySchedule.save) as the
Python API trains the schedule itself; a bad schedule file, or one given to a command that
reads one static topology, exits 2 with one line."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from topokit import load_example
from topokit.cli import app
from topokit.design.peers import epidemic, one_peer_exponential
from topokit.validation.core import validate

from cli_errors import check_one_line

runner = CliRunner()
EXAMPLE = "siot16"  # every pair usable: the peers' links all exist
RUN = dict(trials=1, rounds=12, targets=(0.8,), seed=3)


def test_validate_trains_saved_schedules_as_the_api_trains_the_schedules(tmp_path):
    net = load_example(EXAMPLE)
    schedules = {"ope": one_peer_exponential(net), "epi": epidemic(net, 2, seed=17)}
    for name, schedule in schedules.items():
        schedule.save(tmp_path / f"{name}.json")
    result = runner.invoke(app, [
        "validate", "--example", EXAMPLE, "-t",
        f"ope={tmp_path / 'ope.json'},{tmp_path / 'epi.json'},ndlf",
        "--trials", "1", "--rounds", "12", "--targets", "0.8", "--seed", "3",
        "-o", str(tmp_path / "runs.parquet"), "--json"])
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(tmp_path / "runs.parquet")
    expected = validate(net, {**schedules, "ndlf": "ndlf"}, **RUN)
    pd.testing.assert_frame_equal(frame, expected.frame)
    assert sorted(set(frame["topology"])) == ["epi", "ndlf", "ope"]
    assert json.loads(result.stdout)["n_runs"] == 3


def _bad_files(folder) -> dict[str, str]:
    """name -> content of schedule files that validate must refuse."""
    other = epidemic(load_example("siot32"), 1, seed=0)._file_data()
    made = epidemic(load_example(EXAMPLE), 1, seed=0)._file_data()
    return {
        "empty.json": json.dumps({"topokit_schedule": 1, "topologies": []}),
        "newer.json": json.dumps({"topokit_schedule": 7, "topologies": []}),
        "kind.json": json.dumps({**made, "generator": {"kind": "mine"}}),
        "other.json": json.dumps(other),
        "apart.json": json.dumps({"topokit_schedule": 1, "topologies": [
            {"edges": [[14608, 14765]], "dp_devices": []},
            {"edges": [[14843, 14857]], "dp_devices": []}]}),
    }


@pytest.mark.parametrize("name, keywords", [
    ("empty.json", ("--topologies empty", "empty.json", "non-empty list")),
    ("newer.json", ("newer.json", "newer topokit")),
    ("kind.json", ("kind.json", "unknown generator kind 'mine'")),
    ("other.json", ("other.json", "made over another network")),
    ("apart.json", ("apart.json", "disconnected")),
])
def test_a_bad_schedule_file_exits_2_in_one_line(name, keywords, tmp_path):
    (tmp_path / name).write_text(_bad_files(tmp_path)[name])
    check_one_line(["validate", "--example", EXAMPLE, "-t", f"{name[:-5]}={tmp_path / name}",
                    "--trials", "1", "--rounds", "2"], *keywords)


@pytest.mark.parametrize("build", [one_peer_exponential, lambda net: epidemic(net, 2, seed=5)],
                         ids=["one-peer-exponential", "epidemic"])
def test_analyze_judges_a_schedule_as_evaluate_does(build, tmp_path):
    from topokit import evaluate

    net = load_example(EXAMPLE)
    schedule = build(net)
    path = schedule.save(tmp_path / "schedule.json")
    result = runner.invoke(app, ["analyze", "--example", EXAMPLE, "-t", str(path),
                                 "--audit-rounds", "6", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    expected = evaluate(net, schedule).to_dict()
    assert record["topology"] == "given schedule"
    for key in ("hitting_time", "spectral_gap", "phi", "local_iterate", "pseudo_time",
                "n_links", "n_dp_devices", "stranger_pairs"):
        assert record[key] == pytest.approx(expected[key], rel=1e-12), key
    assert record["exposed_pairs"] is None  # the exposure walks one topology: NaN, not 0
    assert record["exposed_stranger_pairs"] is not None  # the audit gossips over the rounds


@pytest.mark.parametrize("build", [one_peer_exponential, lambda net: epidemic(net, 2, seed=5)],
                         ids=["one-peer-exponential", "epidemic"])
def test_audit_of_a_saved_schedule_is_privacy_audit_of_the_schedule(build, tmp_path):
    """Every pair's mu from the command equals the API's audit of the schedule in memory,
    round t with its own links (and the rounds differ from the union's static audit)."""
    from topokit import privacy_audit

    net = load_example(EXAMPLE)
    schedule = build(net)
    path = schedule.save(tmp_path / "schedule.json")
    result = runner.invoke(app, ["audit", "--example", EXAMPLE, "-t", str(path), "-T", "6",
                                 "-z", "2", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    expected = privacy_audit(net, schedule, rounds=6, noise_multiplier=2.0).to_dict()
    assert shown["topology_source"] == "given schedule"
    assert shown["mu"] == expected["mu"]
    static = privacy_audit(net, schedule.union(6), rounds=6, noise_multiplier=2.0).to_dict()
    assert shown["mu"] != static["mu"]
