"""Per-device noise levels from a design file (issue 20): load_noise_multipliers and
``topokit audit --topology design.json``, which audits each DP device at its own level."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from topokit import privacy_audit
from topokit.cli import app
from topokit.design import load_noise_multipliers
from topokit.errors import InputFileError
from topokit.network.formats import load_topology, save_network, save_topology
from topokit.network.siot import siot

ROUNDS = 3
runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def designed(tmp_path_factory):
    # siot(10, seed=1) under a bound over 3 rounds: optimize lowers one device below z*.
    folder = tmp_path_factory.mktemp("noise")
    net = siot(10, seed=1)
    network = save_network(net, folder / "siot10.json")
    design = folder / "design.json"
    result = run("design", network, "--max-stranger-mu", 0.25, "--audit-rounds", ROUNDS,
                 "-o", design)
    assert result.exit_code == 0, result.output
    return net, network, design


def test_the_levels_come_back_with_the_network_s_node_ids(designed):
    net, _, design = designed
    levels = load_noise_multipliers(design, net)
    saved = json.loads(design.read_text())["stats"]["stranger_bound"]["noise_multipliers"]
    assert all(isinstance(node, int) for node in levels)  # JSON made them strings
    assert {str(node): z for node, z in levels.items()} == saved
    assert set(levels) == set(load_topology(design).dp_devices)
    assert len(set(levels.values())) > 1  # one device was lowered


def test_audit_of_a_design_uses_its_levels_unless_z_is_given(designed):
    net, network, design = designed
    result = run("audit", network, "-t", design, "-T", ROUNDS, "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    topology = load_topology(design)
    expected = privacy_audit(net, topology, rounds=ROUNDS,
                             noise_multiplier=load_noise_multipliers(design, net)).summary()
    assert record["summary"]["stranger_mu_max"] == pytest.approx(expected["stranger_mu_max"],
                                                                 rel=1e-12)
    assert record["summary"]["stranger_mu_max"] <= 0.25 * (1 + 1e-9)
    text = run("audit", network, "-t", design, "-T", ROUNDS)
    assert "z per DP device from the design" in text.output
    fixed = json.loads(run("audit", network, "-t", design, "-T", ROUNDS, "-z", 2,
                           "--json").stdout)
    two = privacy_audit(net, topology, rounds=ROUNDS, noise_multiplier=2.0).summary()
    assert fixed["summary"]["stranger_mu_max"] == pytest.approx(two["stranger_mu_max"],
                                                                rel=1e-12)


def test_a_plain_topology_has_no_levels_and_audits_at_z_1(designed, tmp_path):
    net, network, design = designed
    plain = save_topology(load_topology(design), tmp_path / "plain.json")
    assert load_noise_multipliers(plain, net) is None
    result = run("audit", network, "-t", plain, "-T", ROUNDS)
    assert result.exit_code == 0 and "z = 1;" in result.output


@pytest.mark.parametrize(("change", "said"), [
    (lambda levels: {**levels, "99999": 3.0}, "'99999', which is not in the network"),
    (lambda levels: {key: -1.0 for key in levels}, "finite number >= 0"),
    (lambda levels: {key: "4" for key in levels}, "finite number >= 0"),
    (lambda levels: {key: 10**400 for key in levels}, "finite number >= 0; got 1000"),
])
def test_bad_levels_are_refused_in_one_line(designed, tmp_path, change, said):
    net, network, design = designed
    record = json.loads(design.read_text())
    noise = record["noise"]  # the design's decided noise: what every reader takes
    noise["noise_multipliers"] = change(noise["noise_multipliers"])
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(record))
    with pytest.raises(InputFileError, match="broken.json") as caught:
        load_noise_multipliers(broken, net)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    result = run("audit", network, "-t", broken, "-T", ROUNDS)
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output


def test_a_file_that_is_neither_is_refused(tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"nodes": []}))
    with pytest.raises(InputFileError, match="not a design or topology file"):
        load_noise_multipliers(other, siot(10, seed=1))
