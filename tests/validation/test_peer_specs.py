"""validate's peers of the field: the time-varying "one-peer-exponential", "base:K" and
"epidemic:S" specs, trained over a network's usable links and measured by the sum of their
rounds' times, and the static "equistatic" / "equistatic:M" (U-EquiStatic)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topokit import Topology, TopologySchedule, load_example, validate
from topokit._random import keyed_seed
from topokit.cli import app
from topokit.design.metrics import evaluate
from topokit.design.peers import base_graph, equistatic, one_peer_exponential
from topokit.errors import InvalidInputError, InvalidTopologyError
from topokit.network.siot import siot
from topokit.training import train
from topokit.validation.core import _EQUISTATIC, SCHEDULE_PREDICTION_NOTE, parse_topology_specs

from cli_errors import check_one_line, runner

SPECS = "ndlf,exponential,equistatic:3,one-peer-exponential,base:2,epidemic:2"
QUICK = dict(trials=1, rounds=20, targets=[0.7], audit_rounds=4, seed=5)


@pytest.fixture(scope="module")
def net():
    return siot(16, seed=3)


@pytest.fixture(scope="module")
def result(net):
    return validate(net, SPECS, **QUICK)


def test_the_specs_parse_with_their_counts():
    specs = [tuple(spec) for spec in parse_topology_specs("one-peer-exponential, base:3, "
                                                          "Epidemic:2")]
    assert specs == [("one-peer-exponential", "one-peer-exponential", None),
                     ("base:3", "base", 3), ("epidemic:2", "epidemic", 2)]
    assert tuple(parse_topology_specs({"mine": "base:1"})[0]) == ("mine", "base", 1)


def test_equistatic_parses_with_and_without_m():
    specs = [tuple(spec) for spec in parse_topology_specs("equistatic, EquiStatic:3")]
    assert specs == [("equistatic", "equistatic", None), ("equistatic:3", "equistatic", 3)]
    assert tuple(parse_topology_specs({"mine": "equistatic"})[0]) == ("mine", "equistatic",
                                                                         None)


def test_each_peer_is_its_construction_over_the_network(net, result):
    built = result.topologies
    assert built["one-peer-exponential"] == one_peer_exponential(net)
    assert built["base:2"] == base_graph(net, 2)
    assert isinstance(built["epidemic:2"], TopologySchedule)
    assert built["epidemic:2"].is_generated and built["epidemic:2"].name == "epidemic:2"
    assert set(result.frame["kind"]) == {"ndlf", "exponential", "equistatic",
                                         "one-peer-exponential", "base", "epidemic"}


def test_equistatic_is_u_equistatic_over_the_network_drawn_from_the_seed(net, result):
    built = result.topologies["equistatic:3"]
    # Static, in node order, its offsets drawn from the validation seed's own stream.
    assert built == equistatic(net, 3, seed=keyed_seed(QUICK["seed"], _EQUISTATIC, 0))
    W, n = built.mixing_matrix(net.nodes), net.n_devices
    assert np.allclose(W, W.T) and np.allclose(W.sum(axis=1), 1) and np.allclose(np.diag(W), 1 / n)
    # Every link weighs a whole number of (n - 1) / (2nM), and a device has at most 2M peers.
    units = np.array(built.weights) * 2 * n * 3 / (n - 1)
    assert np.allclose(units, np.round(units)) and (np.count_nonzero(W, axis=1) - 1 <= 6).all()
    # A static topology: predicted like the exponential graph, measured like it.
    frame = result.frame.set_index("topology")
    assert np.isfinite(frame.loc["equistatic:3", "hitting_time"])
    assert "equistatic:3" not in result.config["schedules_extrapolated"]["topologies"]


def test_equistatic_without_m_draws_ceil_log2_n_offsets(net):
    result = validate(net, "equistatic", trials=1, rounds=3, targets=[0.5], audit_rounds=0,
                      seed=5)
    assert result.topologies["equistatic"] == equistatic(net, 4, seed=keyed_seed(5, _EQUISTATIC,
                                                                                 0))


def test_measured_time_is_the_sum_of_the_rounds_times(net, digits, result):
    frame = result.frame.set_index("topology")
    for name in ("one-peer-exponential", "base:2", "epidemic:2"):
        schedule = result.topologies[name]
        rounds = frame.loc[name, "measured_rounds"]
        assert np.isfinite(rounds)
        expected = schedule.physical_time(net, int(rounds))
        assert frame.loc[name, "measured_time"] == pytest.approx(expected)
    # The runs are train's over the schedule, with the trial's seed.
    seed = int(frame.loc["base:2", "seed"])
    run = train(net, result.topologies["base:2"], *digits, rounds=20, seed=seed)
    assert frame.loc["base:2", "measured_rounds"] == run.rounds_to(0.7)
    assert frame.loc["base:2", "final_accuracy"] == pytest.approx(run.final_accuracy)
    curve = result.curves[result.curves["topology"] == "base:2"]
    assert curve["time"].tolist() == pytest.approx(run.elapsed(run.rounds).tolist())


def test_a_schedule_is_predicted_from_its_rounds_and_the_result_says_so_once(net, result):
    frame = result.frame.set_index("topology")
    peers = ["one-peer-exponential", "base:2", "epidemic:2"]
    for column in ("hitting_time", "predicted_global_iterate", "pseudo_time", "noise_average",
                   "effective_neighbours"):
        assert frame.loc[peers + ["ndlf", "exponential", "equistatic:3"], column].notna().all()
    # Its time is at the mean time of the rounds run; its gap is its rounds' contraction.
    for peer in peers:
        row = frame.loc[peer]
        assert row["pseudo_time"] == pytest.approx(
            row["predicted_global_iterate"] * row["local_iterate"], rel=1e-12)
        gap = evaluate(net, result.topologies[peer]).spectral_gap
        assert row["spectral_gap"] == pytest.approx(gap, rel=1e-12) and 0 < gap <= 1
    # The stranger audit is not a prediction: a schedule's gossips over its rounds in turn.
    exposed = frame.loc[peers, "exposed_stranger_pairs"]
    assert exposed.notna().all() and (exposed <= frame.loc[peers, "stranger_pairs"]).all()
    assert result.config["schedules_extrapolated"] == {"topologies": peers,
                                                        "why": SCHEDULE_PREDICTION_NOTE}
    # What is known of a schedule is there: its DP devices, its mean round time, its links.
    assert (frame.loc[peers, "local_iterate"] > 0).all()
    assert frame.loc["epidemic:2", "n_dp_devices"] == len(
        result.topologies["epidemic:2"].dp_devices)
    json.dumps(result.to_dict())  # the schedules write as JSON too


def test_correlations_rank_the_schedules_and_leave_out_what_an_old_result_did_not_predict(
        net):
    with_peers = validate(net, "ndlf,dlfdp,exponential,one-peer-exponential", **QUICK)
    static = validate(net, "ndlf,dlfdp,exponential", **QUICK)
    assert "schedules_extrapolated" not in static.config
    assert with_peers.correlations()["n"].tolist() == [4]
    # A result written before schedules were predicted names them under "not_predicted".
    old = with_peers.config.pop("schedules_extrapolated")
    with_peers.config["not_predicted"] = old
    assert with_peers.correlations().equals(static.correlations())


def test_a_users_schedule_trains_by_name(net):
    ring = [Topology([(u, v)], ()) for u, v in zip(net.nodes, net.nodes[1:], strict=False)]
    mine = TopologySchedule(ring, dp_devices=net.nodes, name="token")
    result = validate(net, {"token": mine}, trials=1, rounds=3, targets=[0.5], audit_rounds=0)
    assert result.topologies["token"] == mine
    assert result.frame["kind"].tolist() == ["custom"]


@pytest.mark.parametrize(("spec", "message"), [
    ("base:0", "base:K needs a positive integer K"),
    ("base:-1", "base:K needs a positive integer K"),
    ("epidemic:", "epidemic:S needs a positive integer S"),
    ("epidemic:x", "epidemic:S needs a positive integer S"),
    ("epidemic:16", "can reach only 15"),
    ("base:16", "at most 15 peers"),
    ("one-peer-exponential:2", "unknown topology spec"),
    ("equistatic:0", "equistatic:M needs a positive integer M"),
    ("equistatic:", "equistatic:M needs a positive integer M"),
    ("equistatic:x", "equistatic:M needs a positive integer M"),
    ("equistatics", "unknown topology spec"),
])
def test_a_degree_the_network_cannot_give_is_refused_in_one_line(net, spec, message):
    with pytest.raises(InvalidInputError, match=message) as caught:
        validate(net, spec, **QUICK)
    assert "\n" not in str(caught.value)


def test_a_peer_that_needs_a_missing_link_is_refused_naming_it():
    with pytest.raises(InvalidInputError, match="'A'-'E'") as caught:
        validate(load_example("toy"), "ndlf,one-peer-exponential", **QUICK)
    assert "topology 'one-peer-exponential'" in str(caught.value)


@pytest.mark.parametrize(("seed", "message"), [
    (5, "needs the link 'A'-'E'"),  # this draw's ring offset 2 joins A and E
    (0, "share the factor 2 with the 6 devices"),  # offsets 2 and 4: two groups never mix
])
def test_an_equistatic_draw_the_network_cannot_give_is_refused_in_one_line(seed, message):
    with pytest.raises(InvalidInputError, match=message) as caught:
        validate(load_example("toy"), "ndlf,equistatic:2", **{**QUICK, "seed": seed})
    assert str(caught.value).startswith("topology 'equistatic:2': ")
    assert "\n" not in str(caught.value)


def test_a_users_schedule_with_a_disconnected_union_is_refused(net):
    half = TopologySchedule([Topology([(net.nodes[0], net.nodes[1])])])
    with pytest.raises(InvalidTopologyError, match="disconnected"):
        validate(net, {"half": half}, **QUICK)


def test_the_cli_trains_a_peer(tmp_path):
    output = tmp_path / "runs.parquet"
    result = runner.invoke(app, ["validate", "-e", "siot16", "-t", "ndlf,one-peer-exponential",
                                 "--trials", "1", "--rounds", "5", "--targets", "0.5",
                                 "--audit-rounds", "0", "-o", str(output)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "one-peer-exponential" in result.output and "time-varying" in result.output
    assert output.exists()


@pytest.mark.parametrize(("spec", "keyword"), [("base:0", "base:K"),
                                               ("epidemic:99", "can reach only"),
                                               ("equistatic:0", "equistatic:M")])
def test_the_cli_refuses_a_bad_peer_in_one_line(tmp_path, spec, keyword):
    check_one_line(["validate", "-e", "siot16", "-t", spec, "--trials", "1", "--rounds", "3",
                    "-o", str(tmp_path / "runs.parquet")], keyword)


def test_the_cli_help_lists_the_peers():
    text = runner.invoke(app, ["validate", "--help"], env={"COLUMNS": "200"}).output
    for kind in ("one-peer-exponential", "base:K", "epidemic:S"):
        assert kind in text
