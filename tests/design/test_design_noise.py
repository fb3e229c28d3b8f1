"""One workload, one noise, one predicted time (issue 40): a design decides each DP
device's noise multiplier once, from the user's epsilon and delta, and every surface reads
that decision and the design's own predictor.

The agreements are checked against independent computations: the Gaussian mechanism's
epsilon of a level from ``dp_accounting`` directly, the predicted time by re-evaluating
the topology with the recorded predictor, the files by reading them back.
"""

from __future__ import annotations

import json
import math
import warnings

import dp_accounting
import pytest
from typer.testing import CliRunner

from topokit import Workload, evaluate, load_example, optimize, privacy_audit
from topokit.cli import app
from topokit.design.noise import DesignNoise, decided_noise
from topokit.design.result import Design, load_design
from topokit.errors import InputFileError, InputFileNotFoundError, TopokitWarning
from topokit.export import export_design
from topokit.network.formats import load_noise_multipliers, save_network

REL = 1e-6
#: Workloads inside and outside the fitted ranges of the shipped workload predictor: a
#: noisier epsilon than any fitted run, and a model that learns more slowly than any.
WORKLOADS = {
    "inside": Workload(epsilon=4.0, target=0.85),
    "noisier": Workload(epsilon=0.25, target=0.85),
    "slow model": Workload(epsilon=0.5, target=0.85, model="mine", ceiling=0.95,
                           probe_rounds=50),
}


@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


def _design(net, workload, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TopokitWarning)
        return optimize(net, seed=0, workload=workload, **options)


@pytest.fixture(scope="module")
def bounded(toy):
    """A design with DP devices for each workload (a stranger bound asks for them)."""
    return {name: _design(toy, workload, max_stranger_mu=0.5)
            for name, workload in WORKLOADS.items()}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_no_device_adds_less_noise_than_the_epsilon_calls_for(bounded, name):
    design, workload = bounded[name], WORKLOADS[name]
    assert design.topology.dp_devices, "the bound should need DP devices"
    noise = design.noise
    assert set(noise.noise_multipliers) == set(design.topology.dp_devices)
    for device, z in noise.noise_multipliers.items():
        assert z >= workload.resolved_noise_multiplier * (1 - 1e-12)
        # The epsilon a level guarantees, from dp-accounting directly, is within the ask.
        spent = dp_accounting.get_epsilon_gaussian(z, workload.delta)
        assert spent <= workload.epsilon * (1 + REL)
        assert noise.epsilons[device] == pytest.approx(spent, rel=1e-9)
    assert noise.workload_epsilon == workload.epsilon
    assert noise.delta == workload.delta


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_one_noise_and_one_time_on_every_surface(bounded, toy, name, tmp_path):
    design = bounded[name]
    levels = design.noise_multipliers
    path = design.save(tmp_path / "design.json")
    # The file and every reader of it.
    assert load_noise_multipliers(path, toy) == pytest.approx(levels, rel=REL)
    assert load_design(path).noise_multipliers == pytest.approx(levels, rel=REL)
    plan = json.loads(export_design(path, tmp_path / "plan.json", "dp-plan",
                                    net=toy)[0].read_text())
    planned = {d["id"]: d["noise_multiplier"] for d in plan["devices"] if d["dp"]}
    assert planned == pytest.approx(levels, rel=REL)
    assert plan["accounting"]["unit"] == "round"
    assert plan["accounting"]["workload_epsilon"] == WORKLOADS[name].epsilon
    for device in plan["devices"]:
        if device["dp"]:
            assert device["epsilon"] <= WORKLOADS[name].epsilon * (1 + REL)
            assert device["delta"] == WORKLOADS[name].delta
    graph = json.loads(export_design(design, tmp_path / "g.json", "networkx-json",
                                     net=toy)[0].read_text())
    assert {n["id"]: n["noise_multiplier"] for n in graph["nodes"] if n["dp"]} == \
        pytest.approx(levels, rel=REL)
    # The audit of the design is at its own noise by default.
    audit = privacy_audit(toy, design, rounds=10)
    assert {node: audit.noise[toy.index[node]] for node in levels} == \
        pytest.approx(levels, rel=REL)
    # One predicted time: the design's, its judge's, the export's and the file's.
    time = design.metrics.pseudo_time
    assert evaluate(toy, design.topology, design.judge()).pseudo_time == pytest.approx(
        time, rel=REL)
    assert load_design(path).judge().predict  # a predictor object, read back
    assert evaluate(toy, design.topology, load_design(path).judge()).pseudo_time == \
        pytest.approx(time, rel=REL)
    files = export_design(path, tmp_path / "toy.edges", "decentralizepy", net=toy)
    prediction = json.loads(files[2].read_text())["design"]["predicted_time"]
    assert prediction == (None if math.isinf(time) else pytest.approx(time, rel=REL))


def test_the_cli_agrees_with_the_design(toy, tmp_path):
    """design -o, analyze --topology, audit -t and export read one noise and one time."""
    network = save_network(toy, tmp_path / "toy.json")
    runner = CliRunner()
    design_file = tmp_path / "design.json"
    run = runner.invoke(app, ["design", str(network), "--epsilon", "0.5", "--target", "0.85",
                              "--max-stranger-mu", "0.5", "-o", str(design_file)])
    assert run.exit_code == 0, run.output
    assert "noise: every DP device adds z = 7.032" in " ".join(run.output.split())
    assert "by predictor workload" in " ".join(run.output.split())
    design = load_design(design_file)
    expected = _design(toy, Workload(epsilon=0.5, target=0.85), max_stranger_mu=0.5)
    assert design.topology == expected.topology
    assert design.noise_multipliers == pytest.approx(expected.noise_multipliers, rel=REL)
    analysed = runner.invoke(app, ["analyze", str(network), "-t", str(design_file), "--json",
                                   "--audit-rounds", "10"])
    assert analysed.exit_code == 0, analysed.output
    shown = json.loads(analysed.output)
    assert shown["pseudo_time"] == pytest.approx(design.metrics.pseudo_time, rel=REL)
    assert shown["predictor"] == "the design's (workload)"
    audited = runner.invoke(app, ["audit", str(network), "-t", str(design_file), "-T", "10",
                                  "--json"])
    assert audited.exit_code == 0, audited.output
    noise = json.loads(audited.output)["noise_multiplier"]
    assert [noise[toy.index[d]] for d in design.noise_multipliers] == pytest.approx(
        list(design.noise_multipliers.values()), rel=REL)


def test_the_service_designs_what_the_cli_designs(toy):
    """The same workload to the service's design job and to optimize: one design, judged
    by the same predictor ('workload' is a name the service accepts)."""
    from topokit.service.schema import parse_design, parse_evaluation
    from topokit.service.worker import design_payload

    body = json.loads(json.dumps({"network": _network_body(toy), "options": {
        "workload": {"epsilon": 0.5, "target": 0.85}, "max_stranger_mu": 0.5}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TopokitWarning)
        payload = design_payload(parse_design(body))
    expected = _design(toy, Workload(epsilon=0.5, target=0.85), max_stranger_mu=0.5)
    served = Design.from_dict(payload)
    assert served.topology == expected.topology
    assert served.noise_multipliers == pytest.approx(expected.noise_multipliers, rel=REL)
    assert payload["predictor"]["name"] == "workload"
    assert served.metrics.pseudo_time == pytest.approx(expected.metrics.pseudo_time, rel=REL)
    # Evaluating the served design judges it by its own predictor: the same time.
    from topokit.service.app import _evaluate

    answer = _evaluate({"network": body["network"], "design": payload}, None)
    assert answer["predictor"] == "workload"
    assert answer["metrics"]["pseudo_time"] == pytest.approx(expected.metrics.pseudo_time,
                                                             rel=REL)
    named = parse_design(json.loads(json.dumps({**body, "options": {
        **body["options"], "predictor": "workload"}})))
    assert named.predictor == "workload"
    assert parse_evaluation({"network": body["network"], "topology": {"edges": []}})[3] is None


def _network_body(net):
    import networkx as nx

    from topokit.network.formats import network_to_graph

    return nx.node_link_data(network_to_graph(net), edges="edges")


def test_an_epsilon_without_dp_devices_says_strangers_are_exposed(toy):
    with pytest.warns(TopokitWarning, match=r"stranger pairs receive a device's data"):
        design = optimize(toy, seed=0, workload=Workload(epsilon=0.5, target=0.85))
    assert design.metrics.exposed_pairs > 0
    assert design.noise.noise_multipliers == {}


def test_designs_without_a_workload_record_training_s_default(toy):
    from topokit import autotag

    design = autotag(toy)
    assert design.noise.noise_multipliers == pytest.approx(
        dict.fromkeys(design.topology.dp_devices, 3.7306), rel=1e-4)
    assert all(math.isclose(e, 1.0, rel_tol=1e-6) for e in design.noise.epsilons.values())


def test_a_level_below_the_ask_is_raised_to_it():
    noise = decided_noise(["A", "B"], base=5.0, delta=1e-5, epsilon=None, source="x",
                          levels={"A": 4.0, "B": 6.0})
    assert noise.noise_multipliers == {"A": 5.0, "B": 6.0}


def test_save_and_load_round_trip(toy, tmp_path):
    design = _design(toy, WORKLOADS["inside"], max_stranger_mu=0.5)
    path = design.save(tmp_path / "d.json")
    again = load_design(path)
    assert again == design and again.noise == design.noise
    assert again.stats == json.loads(json.dumps(design.to_dict()["stats"]))
    assert design.save(tmp_path / "e.json").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("tampered, phrase", [
    (lambda d: {"nodes": [], "edges": []}, "a network file, not a design"),
    (lambda d: {"edges": [["A", "B"]], "dp_devices": []}, "a topology file, not a design"),
    (lambda d: {**d, "noise": {"noise_multipliers": {"Z": 1.0}, "delta": 1e-5}},
     "not one of its DP devices"),
    (lambda d: {**d, "noise": {"noise_multipliers": {}, "delta": 1e-5}}, "no level for its DP"),
    (lambda d: {**d, "metrics": {}}, "'metrics' has no 'hitting_time'"),
    (lambda d: [1, 2], "a design must be a JSON object"),
])
def test_load_design_refuses_what_is_not_a_design(bounded, tmp_path, tampered, phrase):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(tampered(bounded["inside"].to_dict())))
    with pytest.raises(InputFileError, match=phrase) as caught:
        load_design(path)
    assert "\n" not in str(caught.value)


def test_load_design_names_a_missing_file(tmp_path):
    with pytest.raises(InputFileNotFoundError, match="no such design file"):
        load_design(tmp_path / "missing.json")
    with pytest.raises(InputFileError, match="is a directory"):
        load_design(tmp_path)


def test_a_recorded_level_must_be_a_number():
    with pytest.raises(InputFileError, match="finite number >= 0"):
        DesignNoise.from_dict({"noise_multipliers": {"A": "loud"}, "delta": 1e-5}, ["A"])


def test_validate_trains_a_design_with_its_noise_and_judges_it_by_its_predictor(bounded, toy):
    from topokit import validate
    from topokit.training import DPConfig

    design = bounded["slow model"]
    quick = {"trials": 1, "rounds": 5, "audit_rounds": 0, "targets": [0.5], "seed": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        given = validate(toy, topologies={"mine": design}, **quick).frame
        by_hand = validate(toy, topologies={"mine": design.topology}, dp=DPConfig(
            noise_multiplier=design.noise_multipliers, delta=design.noise.delta), **quick).frame
        default = validate(toy, topologies={"mine": design.topology}, **quick).frame
    for column in ("epsilon", "noise_variance", "measured_rounds", "final_accuracy"):
        assert given[column].tolist() == pytest.approx(by_hand[column].tolist(), nan_ok=True)
    assert given["noise_variance"].iloc[0] > default["noise_variance"].iloc[0]
    # Predicted by the design's own predictor, at the trial's partition of the data.
    trial_net = toy.with_class_counts(_trial_counts(toy, quick["seed"]))
    expected = evaluate(trial_net, design.topology, design.judge()).pseudo_time
    assert given["pseudo_time"].iloc[0] == pytest.approx(expected, rel=REL)
    assert by_hand["pseudo_time"].iloc[0] != pytest.approx(expected, rel=1e-3)  # eq. (15)


def _trial_counts(net, seed):
    from topokit.training import load_digits
    from topokit.validation.core import _partition_counts, trial_seed

    return _partition_counts(net, load_digits()[1], trial_seed(seed, 0), partition=None,
                             test=None)


def test_a_dp_plan_of_a_design_without_dp_devices_is_refused(toy, tmp_path):
    design = optimize(toy, seed=0)
    assert not design.topology.dp_devices
    with pytest.raises(Exception, match="no DP device, so there is no DP-SGD to plan") as caught:
        export_design(design, tmp_path / "plan.json", "dp-plan", net=toy)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "plan.json").exists()
