"""decentralizepy's own weights against the design's: which to deploy, said once."""

from __future__ import annotations

import json
import warnings

import pytest

from topokit import autotag, optimize
from topokit.design.baselines import ndlf
from topokit.design.mixing import fastest_mixing_topology
from topokit.errors import TopokitWarning
from topokit.export import export_design
from topokit.network.formats import save_topology


def _export(design, tmp_path, net):
    paths = export_design(design, tmp_path / "g.edges", "decentralizepy", net=net)
    return json.loads(paths[2].read_text())


def test_the_same_predicted_time_says_nothing_and_deploys_decentralizepy(toy, tmp_path):
    design = optimize(toy, seed=0)  # fastest-mixing weights, 0.9992x under decentralizepy's
    with warnings.catch_warnings():
        warnings.simplefilter("error", TopokitWarning)
        prediction = _export(design, tmp_path, toy)
    assert prediction["time_ratio"] == pytest.approx(0.9992, abs=1e-4)
    assert prediction["deploy"] == "decentralizepy"


def test_faster_runtime_weights_are_named_and_deployed(toy, tmp_path):
    design = autotag(toy)  # Lazy-Metropolis weights, slower than decentralizepy's
    with pytest.warns(TopokitWarning, match="Metropolis-Hastings") as caught:
        prediction = _export(design, tmp_path, toy)
    assert prediction["deploy"] == "decentralizepy"
    ratio = prediction["time_ratio"]
    assert ratio < 1 - 1e-3
    ours = [w for w in caught if "Metropolis-Hastings" in str(w.message)]
    assert len(ours) == 1 and ours[0].filename == __file__
    message = str(ours[0].message)
    runtime = prediction["decentralizepy"]["predicted_time"]
    designed = prediction["design"]["predicted_time"]
    assert (f"predicted faster than the design's lazy-metropolis weights ({runtime:.4g} s "
            f"against {designed:.4g} s, {ratio:.3g}x): deploy them as decentralizepy does"
            ) in message
    assert "\n" not in message


def test_slower_runtime_weights_say_to_load_the_designs(toy, tmp_path):
    # NDLF with fastest-mixing weights, judged by eq. (15): decentralizepy's are 1.15x slower.
    path = tmp_path / "topology.json"
    save_topology(fastest_mixing_topology(ndlf(toy), toy), path)
    with pytest.warns(TopokitWarning, match=r"predicted slower than the design's weights "
                                            r"\(.* s against .* s, 1\.15x\): export mixing-csv "
                                            r"or mixing-npy and load the design's weights"):
        prediction = _export(path, tmp_path, toy)
    assert prediction["time_ratio"] == pytest.approx(1.146, abs=1e-3)
    assert prediction["deploy"] == "design"
