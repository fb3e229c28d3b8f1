"""optimize(mixing="fastest"): fastest-mixing weights on the chosen links (issue 17, part 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from topokit import evaluate, fastest_mixing_topology, load_example, optimize
from topokit._random import keyed_seed
from topokit.cli import app
from topokit.errors import InvalidInputError
from topokit.kernels import metropolis, spectral_gap


@pytest.fixture(scope="module")
def designs():
    net = load_example("siot16")
    return net, optimize(net, seed=0), optimize(net, seed=0, mixing="fastest")


def test_the_weighted_design_is_the_plain_one_with_fastest_mixing_weights(designs):
    net, plain, weighted = designs
    assert plain.topology.weights is None and "mixing" not in plain.stats
    assert weighted.stats["mixing"]["weights"] == "fastest"
    # The search is the same, so the links are plain's; optimize seeds the weights'
    # solver from its own seed (keyed_seed(seed, 2)).
    expected = fastest_mixing_topology(plain.topology, net, seed=keyed_seed(0, 2))
    assert weighted.topology.edges == expected.edges
    assert weighted.topology.dp_devices == plain.topology.dp_devices
    np.testing.assert_allclose(weighted.topology.weights, expected.weights, rtol=1e-9, atol=1e-12)


def test_it_mixes_faster_and_is_predicted_no_slower(designs):
    net, plain, weighted = designs
    gap = spectral_gap(weighted.topology.mixing_matrix(net.nodes))
    assert gap > evaluate(net, plain.topology).spectral_gap
    assert weighted.metrics.spectral_gap == pytest.approx(gap, rel=1e-9)
    assert weighted.metrics.pseudo_time <= plain.metrics.pseudo_time * (1 + 1e-9)
    info = weighted.stats["mixing"]
    assert info["predicted_time_lazy_metropolis"] == pytest.approx(plain.metrics.pseudo_time)
    assert info["links_dropped"] == plain.topology.n_links - weighted.topology.n_links


def test_unknown_mixing_is_refused():
    with pytest.raises(InvalidInputError, match="mixing"):
        optimize(load_example("toy"), mixing="fast")


def test_cli_writes_the_weights_and_refuses_them_for_autotag(tmp_path):
    runner = CliRunner()
    out = tmp_path / "design.json"
    result = runner.invoke(app, ["design", "-e", "siot16", "--mixing", "fastest",
                                 "--audit-rounds", "0", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "mixing weights: fastest" in result.output
    record = json.loads(out.read_text())
    assert record["topology"]["weights"] is not None
    assert len(record["topology"]["weights"]) == len(record["topology"]["edges"])
    bad = runner.invoke(app, ["design", "-e", "toy", "--method", "autotag", "--mixing",
                              "fastest"])
    assert bad.exit_code == 2 and "--method optimize only" in bad.output


def test_metropolis_hastings_weights_are_the_kernels(designs):
    net, plain, _ = designs
    design = optimize(net, seed=0, mixing="metropolis")
    assert design.stats["mixing"]["links_dropped"] == 0
    assert design.stats["mixing"]["weights"] == "metropolis"  # predicted faster on siot16
    np.testing.assert_array_equal(design.topology.mixing_matrix(net.nodes),
                                  metropolis(plain.topology.graph(net.nodes)))
    assert design.metrics.pseudo_time <= plain.metrics.pseudo_time * (1 + 1e-9)
