"""`topokit learn` and `topokit learn-federated` through typer's CliRunner."""

import json

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from topokit import load_network
from topokit.cli.learn import app
from topokit.errors import InvalidInputError, NetworkFileNotFoundError, TopokitError
from topokit.learn.data import synthetic_federated

runner = CliRunner()


@pytest.fixture(scope="module")
def data():
    return synthetic_federated(60, n_nodes=8, n_clients=2, q=0.5, seed=1)


def test_learn_writes_node_link_json_and_plot(tmp_path, data):
    np.save(tmp_path / "x.npy", data.signals[0])
    out, png = tmp_path / "g.json", tmp_path / "g.png"
    result = runner.invoke(app, ["learn", str(tmp_path / "x.npy"), "--alpha", "1", "--beta", "0.1",
                                 "-o", str(out), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    graph = nx.node_link_graph(json.loads(out.read_text()), edges="edges")
    assert graph.number_of_nodes() == 8 and graph.number_of_edges() > 0
    assert all("weight" in d for _, _, d in graph.edges(data=True))
    assert png.stat().st_size > 0
    # The file is a topokit network: the learned graph is its social graph.
    net = load_network(out)
    assert set(net.social.edges) == {tuple(e) for e in graph.edges}
    assert net.n_devices == 8 and np.all(net.compute_time > 0)


def test_learn_csv_with_degree(tmp_path, data):
    np.savetxt(tmp_path / "x.csv", data.signals[0], delimiter=",")
    result = runner.invoke(app, ["learn", str(tmp_path / "x.csv"), "--degree", "3",
                                 "-o", str(tmp_path / "g.json")])
    assert result.exit_code == 0, result.output


def test_learn_user_errors_are_topokit_errors(tmp_path, data):
    np.save(tmp_path / "x.npy", data.signals[0])
    result = runner.invoke(app, ["learn", str(tmp_path / "x.npy")])
    assert isinstance(result.exception, InvalidInputError)
    result = runner.invoke(app, ["learn", str(tmp_path / "missing.npy"), "--degree", "2"])
    assert isinstance(result.exception, NetworkFileNotFoundError)
    np.save(tmp_path / "bad.npy", np.full((3, 4), np.nan))
    result = runner.invoke(app, ["learn", str(tmp_path / "bad.npy"), "--degree", "2"])
    assert isinstance(result.exception, TopokitError)


def test_learn_federated_with_dp(tmp_path, data):
    files = []
    for k, X in enumerate(data.signals):
        np.save(tmp_path / f"c{k}.npy", X)
        files.append(str(tmp_path / f"c{k}.npy"))
    out = tmp_path / "out"
    result = runner.invoke(app, ["learn-federated", *files, "--epsilon", "0.5", "--rounds", "20",
                                 "--seed", "0", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "basic composition" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["privacy"]["rounds"] == 20
    assert (out / "consensus.json").exists() and (out / "local_c1.json").exists()
    once = tmp_path / "once"
    result = runner.invoke(app, ["learn-federated", *files, "--epsilon", "5", "--rounds", "20",
                                 "--dp-release", "distances", "--seed", "0", "-o", str(once)])
    assert result.exit_code == 0, result.output
    privacy = json.loads((once / "summary.json").read_text())["privacy"]
    assert privacy["rounds"] == 1 and privacy["release"] == "distances"
    assert privacy["basic_epsilon"] == 5.0


def test_learn_federated_rejects_mismatched_clients(tmp_path):
    np.save(tmp_path / "a.npy", np.random.default_rng(0).random((5, 4)))
    np.save(tmp_path / "b.npy", np.random.default_rng(1).random((5, 6)))
    result = runner.invoke(app, ["learn-federated", str(tmp_path / "a.npy"),
                                 str(tmp_path / "b.npy"), "-o", str(tmp_path / "o")])
    assert isinstance(result.exception, InvalidInputError)
