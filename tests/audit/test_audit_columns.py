"""What strangers learn, where users look: design, analyze and validate report the privacy audit.

Each reported figure is checked against an independent call of
``topokit.privacy_audit`` on the same topology, rounds and noise.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from topokit import load_example, privacy_audit
from topokit.cli import app
from topokit.design.baselines import dlfdp, ndlf
from topokit.errors import InvalidInputError
from topokit.network.core import Topology
from topokit.training import train
from topokit.validation.core import validate

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(arg) for arg in args])


def _stranger_summary(net, topology, rounds, z):
    summary = privacy_audit(net, topology, rounds=rounds, noise_multiplier=z).summary()
    return summary["exposed_stranger_pairs"], summary["stranger_mu_max"]


def test_analyze_reports_the_audit_of_the_stored_topology():
    net = load_example("toy")
    result = run("analyze", "-e", "toy", "--audit-rounds", 20, "-z", 2.0, "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    exposed, worst = _stranger_summary(net, net.topology, 20, 2.0)
    assert record["exposed_stranger_pairs"] == exposed
    assert record["stranger_mu_max"] == pytest.approx(worst, rel=1e-12)
    assert record["stranger_audit"]["rounds"] == 20
    assert record["stranger_audit"]["noise_multiplier"] == 2.0


def test_noise_scales_the_finite_mu_inversely():
    # Every DP device with the same z: the view's noise covariance scales with z^2, so mu
    # scales with 1 / z exactly while the exposed pairs stay the same.
    one = json.loads(run("analyze", "-e", "toy", "-z", 1.0, "--json").output)
    four = json.loads(run("analyze", "-e", "toy", "-z", 4.0, "--json").output)
    assert one["exposed_stranger_pairs"] == four["exposed_stranger_pairs"]
    assert four["stranger_mu_max"] == pytest.approx(one["stranger_mu_max"] / 4, rel=1e-9)


def test_design_reports_the_audit_of_every_column():
    net = load_example("toy")
    result = run("design", "-e", "toy", "--method", "autotag", "--audit-rounds", 30, "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    chosen = Topology(record["topology"]["edges"], record["topology"]["dp_devices"])
    # By default the audit's z is the one training adds at epsilon = 1 per round.
    assert record["stranger_audit"]["noise_multiplier"] == pytest.approx(3.7306, abs=1e-4)
    for name, topology in (("AutoTag", chosen), ("NDLF", ndlf(net)), ("DLFDP", dlfdp(net))):
        column = record["baselines"][name]
        exposed, worst = _stranger_summary(net, topology, 30,
                                           record["stranger_audit"]["noise_multiplier"])
        assert column["exposed_stranger_pairs"] == exposed
        assert (column["stranger_mu_max"] is None) == (worst is None)
        if worst is not None:
            assert column["stranger_mu_max"] == pytest.approx(worst, rel=1e-12)
    # NDLF sends everything in the clear: every stranger pair is exposed.
    assert record["baselines"]["NDLF"]["exposed_stranger_pairs"] == 16
    assert record["baselines"]["NDLF"]["stranger_mu_max"] is None


def test_audit_rounds_zero_skips_the_audit():
    result = run("analyze", "-e", "toy", "--audit-rounds", 0, "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert "exposed_stranger_pairs" not in record and "stranger_mu_max" not in record


@pytest.mark.parametrize("command", ["analyze", "design"])
@pytest.mark.parametrize("option, value", [("--audit-rounds", -1), ("--noise-multiplier", -0.5),
                                           ("--noise-multiplier", "nan")])
def test_bad_audit_options_exit_2_with_one_line(command, option, value):
    result = run(command, "-e", "toy", option, value)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert option in result.output


@pytest.fixture(scope="module")
def validated():
    net = load_example("toy")
    topologies = {"stored": net.topology, "dlfdp": dlfdp(net), "ndlf": ndlf(net)}
    return net, validate(net, topologies, trials=1, rounds=3, lr=0.5, targets=(0.5,),
                         audit_rounds=25)


def test_validate_records_the_audit_with_each_runs_noise(validated):
    net, result = validated
    frame = result.frame.set_index("topology")
    dp = dlfdp(net)
    row = frame.loc["dlfdp"]
    assert row["exposed_stranger_pairs"] == 0
    # Each DP device's training noise multiplier is its z in the audit, and the sensitivity
    # its noise was calibrated to its Delta (here every device holds >= 64 examples, so
    # all Delta are 2 C / 64 and the audit is the unit one).
    run_ = train(net, dp, *_digits(), seed=int(row["seed"]), rounds=3, lr=0.5)
    noise = {node: z for node, z in run_.noise_multiplier.items() if z is not None}
    _, worst = _stranger_summary(net, dp, 25, noise)
    assert np.all(run_.sensitivity == run_.sensitivity[0])
    assert row["stranger_mu_max"] == pytest.approx(worst, rel=1e-12)
    ndlf_row = frame.loc["ndlf"]
    assert ndlf_row["exposed_stranger_pairs"] == 16 and math.isnan(ndlf_row["stranger_mu_max"])
    summary = result.summary().set_index("topology")
    assert summary.loc["dlfdp", "stranger_mu_max"] == pytest.approx(worst, rel=1e-12)
    assert result.config["audit_rounds"] == 25


def test_validate_audits_a_schedule_over_its_rounds_with_each_runs_noise():
    # The toy's links in two rounds used in turn: the audit of the schedule, as it trained.
    from topokit.network import TopologySchedule

    net = load_example("toy")
    links, dp = net.topology.edges, net.topology.dp_devices
    schedule = TopologySchedule([Topology(links[::2], dp), Topology(links[1::2], dp)])
    result = validate(net, {"halves": schedule}, trials=1, rounds=3, lr=0.5, targets=(0.5,),
                      audit_rounds=12)
    row = result.frame.iloc[0]
    run_ = train(net, schedule, *_digits(), seed=int(row["seed"]), rounds=3, lr=0.5)
    noise = {node: z for node, z in run_.noise_multiplier.items() if z is not None}
    exposed, worst = _stranger_summary(net, schedule, 12, noise)
    assert worst is not None and exposed != _stranger_summary(net, net.topology, 12, noise)[0]
    assert row["exposed_stranger_pairs"] == exposed
    assert row["stranger_mu_max"] == pytest.approx(worst, rel=1e-12)
    assert np.isfinite(row["hitting_time"])  # the schedule's: of its rounds' mean matrix
    assert result.config["schedules_extrapolated"]["topologies"] == ["halves"]


def test_validate_audits_in_each_device_s_own_sensitivity():
    # A batch larger than every device's data: B_i = |D_i| differ (299 or 300 examples),
    # so each DP device's noise is z 2 C / |D_i| and the audit counts it so; the devices
    # that add no noise are audited as if they clipped the same way.
    net = load_example("toy")
    topology = net.topology  # Fig. 2(b): C, D and E are DP
    frame = validate(net, {"stored": topology}, trials=1, rounds=2, lr=0.5, targets=(0.5,),
                     audit_rounds=10, batch_size=1000).frame
    row = frame.iloc[0]
    run_ = train(net, topology, *_digits(), seed=int(row["seed"]), rounds=2, lr=0.5,
                 batch_size=1000)
    assert len(set(run_.partition_sizes)) > 1
    deltas = {node: 2 * 1.0 / size for node, size in zip(run_.nodes, run_.partition_sizes,
                                                          strict=True)}  # 2 C / B_i, C = 1
    for node, reported in zip(run_.nodes, run_.sensitivity, strict=True):
        if node in topology.dp_devices:  # what training calibrated its noise to
            assert reported == pytest.approx(deltas[node], rel=1e-12)
    noise = {node: z for node, z in run_.noise_multiplier.items() if z is not None}
    audit = privacy_audit(net, topology, rounds=10, noise_multiplier=noise, sensitivity=deltas)
    assert row["stranger_mu_max"] == pytest.approx(audit.summary()["stranger_mu_max"],
                                                   rel=1e-12)
    _, unit = _stranger_summary(net, topology, 10, noise)
    assert abs(row["stranger_mu_max"] / unit - 1) > 1e-4  # the units matter here


def _digits():
    from topokit.validation.core import _training_data

    data = _training_data(None, None, "digits")
    return data.X, data.y


def test_validate_audit_rounds_zero_gives_nan_and_bad_values_are_refused():
    net = load_example("toy")
    frame = validate(net, {"dlfdp": dlfdp(net)}, trials=1, rounds=2, lr=0.5, targets=(0.5,),
                     audit_rounds=0).frame
    assert np.isnan(frame["exposed_stranger_pairs"]).all()
    assert np.isnan(frame["stranger_mu_max"]).all()
    with pytest.raises(InvalidInputError, match="audit_rounds"):
        validate(net, {"dlfdp": dlfdp(net)}, trials=1, rounds=2, audit_rounds=-3)


def test_design_under_a_stranger_bound_shows_the_design_at_its_noise():
    net = load_example("toy")
    result = run("design", "-e", "toy", "--max-stranger-mu", 0.2, "--audit-rounds", 20,
                 "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)  # the warning goes to stderr
    bound = record["stats"]["stranger_bound"]
    assert bound["max_stranger_mu"] == 0.2 and bound["audit_rounds"] == 20
    saved = record["topology"]
    chosen = Topology(saved["edges"], saved["dp_devices"], saved["weights"])
    # optimize's default fastest-mixing weights, when kept, change what the gossip leaks.
    assert (saved["weights"] is not None) == (record["stats"]["mixing"]["weights"] == "fastest")
    exposed, worst = _stranger_summary(net, chosen, 20, bound["noise_multiplier"])
    column = record["baselines"]["optimize"]
    assert column["exposed_stranger_pairs"] == exposed == 0
    assert column["stranger_mu_max"] == pytest.approx(worst, rel=1e-12)
    assert worst <= 0.2 * (1 + 1e-9)


@pytest.mark.parametrize("options, message", [
    (("--method", "autotag", "--max-stranger-mu", 0.2), "--method optimize only"),
    (("--max-stranger-mu", 0), "--max-stranger-mu"),
    (("--max-stranger-mu", 0.2, "--audit-rounds", 0), "--audit-rounds >= 1"),
])
def test_bad_stranger_bounds_exit_2(options, message):
    result = run("design", "-e", "toy", *options)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_library_warnings_reach_the_cli_user_as_one_message_that_fits_the_terminal():
    # optimize warns that no design meeting the bound trains to the target: the CLI shows
    # that as a "warning:" message, not a source location and the code line under it,
    # on one line of a wide terminal and wrapped at 80 columns.
    args = ["design", "-e", "toy", "--max-stranger-mu", "0.2", "--audit-rounds", "10"]
    wide = runner.invoke(app, args, env={"COLUMNS": "400"})
    assert wide.exit_code == 0, wide.output
    lines = [line for line in wide.output.splitlines() if "predicted to reach" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: ")
    assert "optimize_with_references(" not in wide.output
    narrow = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert max(len(line) for line in narrow.output.splitlines()) <= 80
    assert "warning: " in narrow.output and "optimize_with_references(" not in narrow.output


def test_the_dsgd_audit_model_reaches_the_columns():
    net = load_example("toy")
    result = run("analyze", "-e", "toy", "--audit-rounds", 10, "--audit-model", "dsgd", "-z", 2,
                 "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    summary = privacy_audit(net, net.topology, rounds=10, noise_multiplier=2.0,
                            model="dsgd").summary()
    assert record["stranger_audit"]["model"] == "dsgd"
    assert record["stranger_mu_max"] == pytest.approx(summary["stranger_mu_max"], rel=1e-12)
    bad = run("analyze", "-e", "toy", "--audit-model", "sgd")
    assert bad.exit_code == 2 and "--audit-model" in bad.output
