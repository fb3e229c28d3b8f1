"""The bad-input corpus of issue #18: every user mistake gets one clear line.

The promise: a mistake in a file, a field or an option is reported in one line
that names the file, field or option and says how to fix it; the command line
exits with status 2 and prints no traceback; nothing is silently accepted or
silently changed.  The Python API raises a :class:`topokit.errors.TopokitError`
subclass whose message names the culprit.

Every case builds its inputs in a fresh ``tmp_path``: a CLI case returns the
argument list, an API case makes the call that must raise.  Cases marked
``before_work`` must fail before any training, design or learning starts (the
expensive step is replaced by a function that fails the test if called).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import topokit
from topokit import Topology, load_example, save_network
from topokit.cli import app
from topokit.errors import TopokitError

runner = CliRunner()
#: A wide terminal, so rich never wraps the one error line.
WIDE = {"COLUMNS": "400"}


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


def toy_dict() -> dict:
    """The toy network (paper Fig. 2) as node-link JSON data, without its stored topology."""
    data = json.loads((topokit.design.examples.data_dir() / "toy.json").read_text())
    data["graph"].pop("topology")
    return data


def positioned_dict() -> dict:
    """A 4-device network whose delays come from positions (no delay matrix)."""
    data = toy_dict()
    data["graph"].pop("delay")
    data["nodes"] = data["nodes"][:4]
    ids = {node["id"] for node in data["nodes"]}
    data["edges"] = [e for e in data["edges"] if e["source"] in ids and e["target"] in ids]
    for k, node in enumerate(data["nodes"]):
        node["x"], node["y"] = 50.0 * k, 0.0
    return data


def write_json(tmp: Path, name: str, payload) -> str:
    path = tmp / name
    path.write_text(json.dumps(payload))
    return str(path)


def write_text(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


def net_file(tmp: Path, mutate: Callable[[dict], object] | None = None,
             base: Callable[[], dict] = toy_dict) -> str:
    """A network file: the toy network, changed by ``mutate`` (in place)."""
    data = base()
    if mutate is not None:
        mutate(data)
    return write_json(tmp, "net.json", data)


def good_net(tmp: Path) -> str:
    return net_file(tmp)


def a_file(tmp: Path) -> Path:
    """A regular file where a folder is expected."""
    path = tmp / "blocker"
    path.write_text("x")
    return path


def topology_file(tmp: Path, payload) -> str:
    return write_json(tmp, "topology.json", payload)


def signals(tmp: Path, name: str = "x.npy", values=None, *, seed: int = 0) -> str:
    """A signals file (.npy or .csv) of shape (30, 6) unless ``values`` is given."""
    if values is None:
        values = np.random.default_rng(seed).standard_normal((30, 6)).cumsum(axis=1)
    path = tmp / name
    if name.endswith(".npy"):
        np.save(path, values)
    else:
        np.savetxt(path, values, delimiter=",")
    return str(path)


def similar_clients(tmp: Path, count: int = 3) -> list[str]:
    """Clients whose graphs are alike: where the explicit client step diverges."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((40, 8)).cumsum(axis=1)
    return [signals(tmp, f"c{k}.npy", base + 0.01 * rng.standard_normal(base.shape))
            for k in range(count)]


def runs_table(tmp: Path, mutate: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
               rows: int = 12) -> str:
    """A runs table shaped like ``topokit validate -o``'s (columns calibrate needs)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "topology": [f"t{k % 6}" for k in range(rows)],
        "target": 0.9,
        "hitting_time": rng.uniform(10, 50, rows),
        "phi": rng.uniform(0, 1, rows),
        "local_iterate": rng.uniform(10, 60, rows),
        "measured_rounds": rng.uniform(20, 90, rows),
        "measured_time": rng.uniform(100, 900, rows),
        "noise_variance": rng.uniform(0, 1, rows),
    })
    if mutate is not None:
        frame = mutate(frame)
    path = tmp / "runs.parquet"
    frame.to_parquet(path, index=False)
    return str(path)


def toml(tmp: Path, text: str) -> str:
    return write_text(tmp, "gfl.toml", text)


def network_dir(tmp: Path, *files: tuple[str, str]) -> str:
    folder = tmp / "nets"
    folder.mkdir()
    save_network(load_example("toy"), folder / "good.json")
    for name, text in files:
        (folder / name).write_text(text)
    return str(folder)


# Mutations of node-link data -------------------------------------------------------------


def set_graph(key, value):
    return lambda d: d["graph"].__setitem__(key, value)


def set_node(index, key, value):
    return lambda d: d["nodes"][index].__setitem__(key, value)


def drop_node_key(index, key):
    return lambda d: d["nodes"][index].pop(key)


def set_delay(i, j, value):
    def mutate(d):
        d["graph"]["delay"][i][j] = value
        d["graph"]["delay"][j][i] = value
    return mutate


def edges_as_pairs(d):
    d["edges"] = [[e["source"], e["target"]] for e in d["edges"]]


def edge_without_target(d):
    d["edges"][0].pop("target")


def duplicate_node(d):
    d["nodes"].append(dict(d["nodes"][0], compute_time=99.0))


def edge_to_unknown_node(d):
    d["edges"].append({"source": "A", "target": "Z"})


def self_loop(d):
    d["edges"].append({"source": "A", "target": "A"})


def huge_delays(d):
    # Each delay and compute time is finite, but their sum overflows to inf.
    d["graph"]["delay"] = [[0.0 if i == j else 1e308 for j in range(6)] for i in range(6)]
    for node in d["nodes"]:
        node["compute_time"] = 1e308


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------

N = "analyze"


def cli(build, keyword, *, before_work=False, id):
    return pytest.param(build, keyword, before_work, id=id)


CLI_CASES = [
    # -- analyze: the network argument -----------------------------------------------------
    cli(lambda t: [N, str(t / "missing.json")], "missing.json", id="analyze-missing-file"),
    cli(lambda t: [N, str(t)], "directory", id="analyze-directory"),
    cli(lambda t: [N], "NETWORK", id="analyze-no-network"),
    cli(lambda t: [N, good_net(t), "--example", "toy"], "not both", id="analyze-file-and-example"),
    cli(lambda t: [N, "--example", "nope"], "example", id="analyze-unknown-example"),
    cli(lambda t: [N, write_text(t, "n.json", "{")], "malformed JSON", id="analyze-malformed"),
    cli(lambda t: [N, write_text(t, "n.json", "")], "n.json", id="analyze-empty-file"),
    cli(lambda t: [N, write_json(t, "n.json", [1, 2])], "node-link", id="analyze-json-list"),
    cli(lambda t: [N, write_json(t, "n.json", {"edges": []})], "nodes", id="analyze-no-nodes-key"),
    cli(lambda t: [N, net_file(t, lambda d: d.__setitem__("nodes", [1, 2, 3]))], "nodes",
        id="analyze-nodes-not-objects"),
    cli(lambda t: [N, net_file(t, lambda d: d.__setitem__("nodes", {"A": 1}))], "nodes",
        id="analyze-nodes-a-dict"),
    cli(lambda t: [N, net_file(t, lambda d: d.__setitem__("nodes", []))], "no nodes",
        id="analyze-nodes-empty"),
    cli(lambda t: [N, net_file(t, edges_as_pairs)], "edges", id="analyze-edges-as-pairs"),
    cli(lambda t: [N, net_file(t, lambda d: d.__setitem__("edges", "A-B"))], "edges",
        id="analyze-edges-a-string"),
    cli(lambda t: [N, net_file(t, edge_without_target)], "target", id="analyze-edge-no-target"),
    cli(lambda t: [N, net_file(t, edge_to_unknown_node)], "'Z'", id="analyze-edge-unknown-node"),
    cli(lambda t: [N, net_file(t, self_loop)], "self-loop", id="analyze-self-loop"),
    cli(lambda t: [N, net_file(t, drop_node_key(0, "id"))], "id", id="analyze-node-without-id"),
    cli(lambda t: [N, net_file(t, duplicate_node)], "'A'", id="analyze-duplicate-node"),
    cli(lambda t: [N, net_file(t, lambda d: d.__setitem__("directed", True))], "undirected",
        id="analyze-directed"),
    cli(lambda t: [N, net_file(t, set_node(0, "compute_time", True))], "compute_time",
        id="analyze-compute-time-true"),
    cli(lambda t: [N, net_file(t, set_node(0, "compute_time", -4))], "compute_time",
        id="analyze-compute-time-negative"),
    cli(lambda t: [N, net_file(t, set_node(0, "compute_time", "fast"))], "device class",
        id="analyze-compute-time-unknown-class"),
    cli(lambda t: [N, net_file(t, set_node(0, "compute_time", None))], "compute_time",
        id="analyze-compute-time-null"),
    cli(lambda t: [N, net_file(t, set_node(0, "compute_time", [1, 2]))], "compute_time",
        id="analyze-compute-time-list"),
    cli(lambda t: [N, net_file(t, drop_node_key(1, "compute_time"))], "compute_time",
        id="analyze-compute-time-missing"),
    cli(lambda t: [N, write_text(t, "n.json", json.dumps(toy_dict()).replace(
        '"compute_time": 5.0', '"compute_time": NaN'))], "compute_time",
        id="analyze-compute-time-nan"),
    cli(lambda t: [N, write_text(t, "n.json", json.dumps(toy_dict()).replace(
        '"compute_time": 5.0', '"compute_time": 1e999'))], "too large",
        id="analyze-compute-time-overflow"),
    cli(lambda t: [N, net_file(t, set_graph("delay", [[0, 1], [1, 0]]))], "delay",
        id="analyze-delay-wrong-shape"),
    cli(lambda t: [N, net_file(t, set_graph("delay", "fast"))], "delay",
        id="analyze-delay-a-string"),
    cli(lambda t: [N, net_file(t, set_delay(0, 1, -3))], "delay", id="analyze-delay-negative"),
    cli(lambda t: [N, net_file(t, set_delay(0, 1, "slow"))], "delay", id="analyze-delay-text"),
    cli(lambda t: [N, net_file(t, lambda d: d["graph"]["delay"][0].__setitem__(1, 99.0))],
        "symmetric", id="analyze-delay-asymmetric"),
    cli(lambda t: [N, write_text(t, "n.json", json.dumps(toy_dict()).replace(
        "10.0", "1e999"))], "too large", id="analyze-delay-overflow"),
    cli(lambda t: [N, write_text(t, "n.json", json.dumps(toy_dict()).replace(
        "10.0", "1" + "0" * 400))], "too large", id="analyze-delay-huge-integer"),
    cli(lambda t: [N, write_text(t, "n.json", json.dumps(toy_dict()).replace(
        '"compute_time": 5.0', '"compute_time": 1' + "0" * 400))], "too large",
        id="analyze-compute-time-huge-integer"),
    cli(lambda t: [N, net_file(t, huge_delays)], "too large", id="analyze-delay-sum-overflow"),
    cli(lambda t: [N, net_file(t, set_node(0, "x", "abc"), base=positioned_dict)], "'x'",
        id="analyze-x-a-string"),
    cli(lambda t: [N, net_file(t, set_node(0, "y", None), base=positioned_dict)], "'y'",
        id="analyze-y-null"),
    cli(lambda t: [N, write_text(t, "n.json", json.dumps(positioned_dict()).replace(
        '"x": 50.0', '"x": 1e999'))], "'x'", id="analyze-x-overflow"),
    cli(lambda t: [N, net_file(t, drop_node_key(1, "x"), base=positioned_dict)], "'x'",
        id="analyze-x-on-some-nodes-only"),
    cli(lambda t: [N, net_file(t, set_graph("physical_model", {"lte": "cat-m9"}),
                               base=positioned_dict)], "lte", id="analyze-unknown-lte"),
    cli(lambda t: [N, net_file(t, set_graph("physical_model", {"model_size_mb": "big"}),
                               base=positioned_dict)], "model_size_mb",
        id="analyze-model-size-text"),
    cli(lambda t: [N, net_file(t, set_graph("physical_model", {"model_size_mb": -4}),
                               base=positioned_dict)], "model_size_mb",
        id="analyze-model-size-negative"),
    cli(lambda t: [N, net_file(t, set_graph("physical_model", "4 MB"), base=positioned_dict)],
        "physical_model", id="analyze-physical-model-a-string"),
    cli(lambda t: [N, net_file(t, set_graph("topology", "A-B"))], "topology",
        id="analyze-stored-topology-a-string"),
    cli(lambda t: [N, net_file(t, set_graph("topology", {"edges": 5}))], "edges",
        id="analyze-stored-topology-edges-int"),
    cli(lambda t: [N, write_text(t, "n.graphml", "<graphml><broken")], "GraphML",
        id="analyze-broken-graphml"),
    cli(lambda t: [N, str((t / "b.json").write_bytes(b"\xff\xfe\x00{") and t / "b.json")],
        "UTF-8", id="analyze-binary-file"),
    # -- analyze: --topology and --predictor ---------------------------------------------------
    cli(lambda t: [N, good_net(t), "-t", str(t / "nope.json")], "nope.json",
        id="topology-missing"),
    cli(lambda t: [N, good_net(t), "-t", str(t)], "directory", id="topology-directory"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": "A-B"})], "edges",
        id="topology-edges-a-string"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": 7})], "edges",
        id="topology-edges-an-int"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [["A", "B"]],
                                                          "dp_devices": "C"})], "dp_devices",
        id="topology-dp-devices-a-string"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [["A", "B"]],
                                                          "dp_devices": 3})], "dp_devices",
        id="topology-dp-devices-an-int"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [["A", "B", "C"]]})],
        "pair", id="topology-edge-of-three"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [["A", "A"]]})],
        "self-loop", id="topology-self-loop"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [["A", "Q"]]})], "'Q'",
        id="topology-unknown-node"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [["A", "C"]]})],
        "DP device", id="topology-stranger-link-without-dp"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [{"u": "A"}]})], "edges",
        id="topology-edge-an-object"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, [["A", "B"]])], "edges",
        id="topology-a-list"),
    cli(lambda t: [N, good_net(t), "-t", write_text(t, "t.json", "[[")], "malformed",
        id="topology-malformed"),
    cli(lambda t: [N, good_net(t), "--predictor", str(t / "p.json")], "p.json",
        id="predictor-missing"),
    cli(lambda t: [N, good_net(t), "--predictor", str(t)], "directory",
        id="predictor-directory"),
    cli(lambda t: [N, good_net(t), "--predictor", write_json(t, "p.json", {"kind": "x"})],
        "predictor", id="predictor-wrong-kind"),
    cli(lambda t: [N, good_net(t), "--predictor", write_text(t, "p.json", "{")], "malformed",
        id="predictor-malformed"),
    cli(lambda t: [N, good_net(t), "--predictor", write_json(t, "p.json", {
        "kind": "topokit.GlobalIteratePredictor", "fitted": True, "coef": ["a", "b"],
        "intercept": 1.0})], "coef", id="predictor-coef-text"),
    cli(lambda t: [N, good_net(t), "--predictor", write_json(t, "p.json", {
        "kind": "topokit.GlobalIteratePredictor", "fitted": True, "coef": [1.0, 2.0]})],
        "intercept", id="predictor-no-intercept"),
    cli(lambda t: [N, good_net(t), "--predictor", write_json(t, "p.json", {
        "kind": "topokit.GlobalIteratePredictor", "params": {"colour": 1}})], "colour",
        id="predictor-unknown-param"),
    cli(lambda t: [N, good_net(t), "--predictor", write_json(t, "p.json", {
        "kind": "topokit.GlobalIteratePredictor", "params": {"use_noise_variance": True}})],
        "fit", id="predictor-unfitted-noise-variance"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [[{"id": "A"}, "B"]]})],
        "node ids", id="topology-node-an-object"),
    cli(lambda t: [N, good_net(t), "-t", topology_file(t, {"edges": [["A", "Q"]]})],
        "topology.json", id="topology-unknown-node-names-the-file"),
    # -- design --------------------------------------------------------------------------------
    cli(lambda t: ["design", "-e", "toy", "--plot", str(t / "x.xyz")], "--plot",
        before_work=True, id="design-plot-suffix"),
    cli(lambda t: ["design", "-e", "toy", "--seed", "-1"], "--seed", before_work=True,
        id="design-negative-seed"),
    cli(lambda t: ["design", "-e", "toy", "-j", "0"], "n-jobs", before_work=True,
        id="design-zero-jobs"),
    cli(lambda t: ["design", "-e", "toy", "--nep-patience", "0"], "nep-patience",
        before_work=True, id="design-zero-nep-patience"),
    cli(lambda t: ["design", "-e", "toy", "-o", str(a_file(t) / "d.json")], "blocker",
        before_work=True, id="design-output-under-a-file"),
    cli(lambda t: ["design", "-e", "toy", "-o", str(t)], "directory", before_work=True,
        id="design-output-a-directory"),
    cli(lambda t: ["design", "-e", "toy", "--plot", str(a_file(t) / "d.png")], "blocker",
        before_work=True, id="design-plot-under-a-file"),
    cli(lambda t: ["design", str(t / "none.json")], "none.json", before_work=True,
        id="design-missing-network"),
    cli(lambda t: ["design", "-e", "toy", "--predictor", str(t / "p.json")], "p.json",
        before_work=True, id="design-missing-predictor"),
    # -- generate siot -------------------------------------------------------------------------
    cli(lambda t: ["generate", "siot", "-n", "0", "-o", str(t / "g.json")], "devices",
        id="generate-zero-devices"),
    cli(lambda t: ["generate", "siot", "-n", "-5", "-o", str(t / "g.json")], "devices",
        id="generate-negative-devices"),
    cli(lambda t: ["generate", "siot", "-n", str(10**9), "-o", str(t / "g.json")], "devices",
        id="generate-billion-devices"),
    cli(lambda t: ["generate", "siot", "-n", "16", "--seed", "-1", "-o", str(t / "g.json")],
        "--seed", id="generate-negative-seed"),
    cli(lambda t: ["generate", "siot", "-n", "16", "--metres-per-unit", "0", "-o",
                   str(t / "g.json")], "metres-per-unit", id="generate-zero-scale"),
    cli(lambda t: ["generate", "siot", "-n", "16", "--metres-per-unit", "nan", "-o",
                   str(t / "g.json")], "metres-per-unit", id="generate-nan-scale"),
    cli(lambda t: ["generate", "siot", "-n", "16", "--metres-per-unit", "inf", "-o",
                   str(t / "g.json")], "metres-per-unit", id="generate-inf-scale"),
    cli(lambda t: ["generate", "siot", "-n", "16", "-o", str(a_file(t) / "g.json")], "blocker",
        id="generate-output-under-a-file"),
    cli(lambda t: ["generate", "siot", "-n", "16", "-o", str(t / "g.csv")], "--output",
        id="generate-output-suffix"),
    cli(lambda t: ["generate", "siot", "-n", "16", "-o", str(t)], "directory",
        id="generate-output-a-directory"),
    # -- examples ------------------------------------------------------------------------------
    cli(lambda t: ["examples"], "datasets", id="examples-data-missing"),
    # -- batch ---------------------------------------------------------------------------------
    cli(lambda t: ["batch", "-o", str(t / "o.parquet")], "DIRECTORY", id="batch-no-source"),
    cli(lambda t: ["batch", network_dir(t), "--random", "n=8,m=12,count=2", "-o",
                   str(t / "o.parquet")], "DIRECTORY", id="batch-both-sources"),
    cli(lambda t: ["batch", "--random", "n=8,m=12,count=2", "-j", "0", "-o",
                   str(t / "o.parquet")], "n-jobs", id="batch-zero-jobs"),
    cli(lambda t: ["batch", "--random", "n=8,m=12,count=2", "--chunk-size", "0", "-o",
                   str(t / "o.parquet")], "chunk-size", id="batch-zero-chunk"),
    cli(lambda t: ["batch", "--random", "n=16", "-o", str(t / "o.parquet")], "lacks",
        id="batch-spec-incomplete"),
    cli(lambda t: ["batch", "--random", "n=ab,m=3,count=1", "-o", str(t / "o.parquet")],
        "'n=ab'", id="batch-spec-not-a-number"),
    cli(lambda t: ["batch", "--random", "n=8,m=12,count=2,k=3", "-o", str(t / "o.parquet")],
        "'k=3'", id="batch-spec-unknown-key"),
    cli(lambda t: ["batch", "--random", "n=8,n=9,m=12,count=2", "-o", str(t / "o.parquet")],
        "twice", id="batch-spec-repeated-key"),
    cli(lambda t: ["batch", "--random", "n=1,m=0,count=2", "-o", str(t / "o.parquet")], "n",
        id="batch-spec-one-node"),
    cli(lambda t: ["batch", "--random", "n=8,m=40,count=2", "-o", str(t / "o.parquet")], "m=40",
        id="batch-spec-too-many-links"),
    cli(lambda t: ["batch", "--random", "n=8,m=12,count=0", "-o", str(t / "o.parquet")],
        "count", id="batch-spec-zero-count"),
    cli(lambda t: ["batch", "--random", f"n=16,m=32,count={10**12}", "-o",
                   str(t / "o.parquet")], "count", id="batch-spec-huge-count"),
    cli(lambda t: ["batch", "--random", f"n={10**6},m={2 * 10**6},count=1", "-o",
                   str(t / "o.parquet")], "n=", id="batch-spec-huge-graphs"),
    cli(lambda t: ["batch", "--random", "n=60,m=59,count=1", "-o", str(t / "o.parquet")],
        "m=59", id="batch-spec-hopelessly-sparse"),
    cli(lambda t: ["batch", str(t / "nowhere"), "-o", str(t / "o.parquet")], "nowhere",
        id="batch-missing-directory"),
    cli(lambda t: ["batch", good_net(t), "-o", str(t / "o.parquet")], "directory",
        id="batch-file-not-directory"),
    cli(lambda t: ["batch", str((t / "empty").mkdir() or t / "empty"), "-o",
                   str(t / "o.parquet")], "no network files", id="batch-empty-directory"),
    cli(lambda t: ["batch", "--random", "n=8,m=12,count=2", "-o",
                   str(a_file(t) / "o.parquet")], "blocker", id="batch-output-under-a-file"),
    cli(lambda t: ["batch", "--random", "n=8,m=12,count=2", "-o", str(t)], "directory",
        id="batch-output-a-directory"),
    # -- validate ------------------------------------------------------------------------------
    cli(lambda t: ["validate", "-e", "toy", "--seed", "-1", "-o", str(t / "v.parquet")],
        "seed", before_work=True, id="validate-negative-seed"),
    cli(lambda t: ["validate", "-e", "toy", "--trials", "0", "-o", str(t / "v.parquet")],
        "trials", before_work=True, id="validate-zero-trials"),
    cli(lambda t: ["validate", "-e", "toy", "--targets", "abc", "-o", str(t / "v.parquet")],
        "target", before_work=True, id="validate-target-text"),
    cli(lambda t: ["validate", "-e", "toy", "--targets", "1.5", "-o", str(t / "v.parquet")],
        "target", before_work=True, id="validate-target-above-one"),
    cli(lambda t: ["validate", "-e", "toy", "--targets", ",", "-o", str(t / "v.parquet")],
        "target", before_work=True, id="validate-no-target"),
    cli(lambda t: ["validate", "-e", "toy", "--targets", "nan", "-o", str(t / "v.parquet")],
        "target", before_work=True, id="validate-target-nan"),
    cli(lambda t: ["validate", "-e", "toy", "-t", "best", "-o", str(t / "v.parquet")],
        "'best'", before_work=True, id="validate-unknown-topology"),
    cli(lambda t: ["validate", "-e", "toy", "-t", "random:0", "-o", str(t / "v.parquet")],
        "random:K", before_work=True, id="validate-random-zero"),
    cli(lambda t: ["validate", "-e", "toy", "--dataset", "imagenet", "-o",
                   str(t / "v.parquet")], "dataset", before_work=True,
        id="validate-unknown-dataset"),
    cli(lambda t: ["validate", "-e", "toy", "--dataset", f"cifar10:{t / 'nowhere'}", "-o",
                   str(t / "v.parquet")], "nowhere", before_work=True,
        id="validate-dataset-folder-missing"),
    cli(lambda t: ["validate", "-e", "toy", "--rounds", "0", "-o", str(t / "v.parquet")],
        "rounds", before_work=True, id="validate-zero-rounds"),
    cli(lambda t: ["validate", "-e", "toy", "--skewness", "2", "-o", str(t / "v.parquet")],
        "skewness", before_work=True, id="validate-skewness-above-one"),
    cli(lambda t: ["validate", "-e", "toy", "-j", "0", "-o", str(t / "v.parquet")], "n-jobs",
        before_work=True, id="validate-zero-jobs"),
    cli(lambda t: ["validate", "-e", "toy", "--plot", str(t / "p.xyz"), "-o",
                   str(t / "v.parquet")], "--plot", before_work=True, id="validate-plot-suffix"),
    cli(lambda t: ["validate", "-e", "toy", "--plot", str(a_file(t) / "p.png"), "-o",
                   str(t / "v.parquet")], "--plot", before_work=True,
        id="validate-plot-under-a-file"),
    cli(lambda t: ["validate", "-e", "toy", "-o", str(a_file(t) / "v.parquet")], "blocker",
        before_work=True, id="validate-output-under-a-file"),
    cli(lambda t: ["validate", "-e", "toy", "-o", str(t)], "directory", before_work=True,
        id="validate-output-a-directory"),
    cli(lambda t: ["validate", "-e", "toy", "--predictor", str(t / "p.json"), "-o",
                   str(t / "v.parquet")], "p.json", before_work=True,
        id="validate-missing-predictor"),
    # -- calibrate -----------------------------------------------------------------------------
    cli(lambda t: ["calibrate", str(t / "r.parquet"), "-o", str(t / "p.json")], "r.parquet",
        id="calibrate-missing-runs"),
    cli(lambda t: ["calibrate", str(t), "-o", str(t / "p.json")], "directory",
        id="calibrate-directory"),
    cli(lambda t: ["calibrate", write_text(t, "r.parquet", "topology,target\n"), "-o",
                   str(t / "p.json")], "Parquet", id="calibrate-text-file"),
    cli(lambda t: ["calibrate", runs_table(t, lambda f: f.drop(columns="phi")), "-o",
                   str(t / "p.json")], "phi", id="calibrate-missing-column"),
    cli(lambda t: ["calibrate", runs_table(t, lambda f: f.assign(measured_rounds="many")),
                   "-o", str(t / "p.json")], "measured_rounds",
        id="calibrate-text-measured-rounds"),
    cli(lambda t: ["calibrate", runs_table(t, lambda f: f.assign(hitting_time="long")),
                   "-o", str(t / "p.json")], "hitting_time", id="calibrate-text-hitting-time"),
    cli(lambda t: ["calibrate", runs_table(t, lambda f: f.assign(target="high")),
                   "-o", str(t / "p.json")], "target", id="calibrate-text-target"),
    cli(lambda t: ["calibrate", runs_table(t, lambda f: f.iloc[:0]), "-o", str(t / "p.json")],
        "empty", id="calibrate-empty-table"),
    cli(lambda t: ["calibrate", runs_table(t, rows=3), "-o", str(t / "p.json")], "too few",
        id="calibrate-too-few-runs"),
    cli(lambda t: ["calibrate", runs_table(t), "--target", "1.5", "-o", str(t / "p.json")],
        "target", id="calibrate-target-above-one"),
    cli(lambda t: ["calibrate", runs_table(t), "--target", "0.5", "-o", str(t / "p.json")],
        "0.5", id="calibrate-target-not-in-table"),
    cli(lambda t: ["calibrate", runs_table(t), "--cv", "1", "-o", str(t / "p.json")], "cv",
        id="calibrate-one-fold"),
    cli(lambda t: ["calibrate", runs_table(t), "--seed", "-1", "-o", str(t / "p.json")],
        "seed", id="calibrate-negative-seed"),
    cli(lambda t: ["calibrate", runs_table(t), "-o", str(a_file(t) / "p.json")], "blocker",
        id="calibrate-output-under-a-file"),
    cli(lambda t: ["calibrate", runs_table(t), "-o", str(t)], "directory",
        id="calibrate-output-a-directory"),
    # -- learn ---------------------------------------------------------------------------------
    cli(lambda t: ["learn", str(t / "x.npy"), "--degree", "2"], "x.npy",
        id="learn-missing-signals"),
    cli(lambda t: ["learn", str(t), "--degree", "2"], "directory", id="learn-directory"),
    cli(lambda t: ["learn", write_text(t, "x.txt", "1,2\n3,4\n"), "--degree", "2"], ".npy",
        id="learn-wrong-suffix"),
    cli(lambda t: ["learn", write_text(t, "x.npy", "1,2,3\n4,5,6\n"), "--degree", "2"],
        "x.npy", id="learn-text-file-as-npy"),
    cli(lambda t: ["learn", signals(t, values=np.array([{"a": 1}, None], dtype=object)),
                   "--degree", "2"], "x.npy", id="learn-object-npy"),
    cli(lambda t: ["learn", signals(t, values=np.arange(6.0)), "--degree", "2"], "shape",
        id="learn-1d-signals"),
    cli(lambda t: ["learn", signals(t, values=np.zeros((2, 3, 4))), "--degree", "2"], "shape",
        id="learn-3d-signals"),
    cli(lambda t: ["learn", signals(t, values=np.ones((5, 1))), "--degree", "2"], "n_nodes",
        id="learn-one-node"),
    cli(lambda t: ["learn", signals(t, values=np.zeros((0, 4))), "--degree", "2"], "signal",
        id="learn-no-signals"),
    cli(lambda t: ["learn", signals(t, values=np.full((3, 4), np.nan)), "--degree", "2"], "NaN",
        id="learn-nan-signals"),
    cli(lambda t: ["learn", signals(t, values=np.full((3, 4), np.inf)), "--degree", "2"], "inf",
        id="learn-inf-signals"),
    cli(lambda t: ["learn", signals(t, values=np.array([[1e200, -1e200, 0.0, 1.0]] * 3)),
                   "--degree", "2"], "too large", id="learn-overflowing-signals"),
    cli(lambda t: ["learn", signals(t, values=np.array([[1, 2j], [3, 4]])), "--degree", "2"],
        "x.npy", id="learn-complex-signals"),
    cli(lambda t: ["learn", write_text(t, "x.csv", "1,2,3\n4,5\n6,7,8\n"), "--degree", "2"],
        "x.csv", id="learn-ragged-csv"),
    cli(lambda t: ["learn", write_text(t, "x.csv", "1,2,3\n4,5,6,7\n6,7,8,9\n"), "--degree",
                   "2"], "x.csv", id="learn-ragged-first-row"),
    cli(lambda t: ["learn", write_text(t, "x.csv", "1,2,3\n4,five,6\n"), "--degree", "2"],
        "x.csv", id="learn-csv-text-cell"),
    cli(lambda t: ["learn", write_text(t, "x.csv", ""), "--degree", "2"], "x.csv",
        id="learn-empty-csv"),
    cli(lambda t: ["learn", signals(t), "--alpha", "0", "--beta", "1"], "alpha",
        id="learn-zero-alpha"),
    cli(lambda t: ["learn", signals(t), "--alpha", "nan", "--beta", "1"], "alpha",
        id="learn-nan-alpha"),
    cli(lambda t: ["learn", signals(t), "--alpha", "1", "--beta", "-1"], "beta",
        id="learn-negative-beta"),
    cli(lambda t: ["learn", signals(t), "--alpha", "1"], "--beta", id="learn-alpha-only"),
    cli(lambda t: ["learn", signals(t), "--degree", "2", "--alpha", "1"], "--degree",
        id="learn-degree-and-alpha"),
    cli(lambda t: ["learn", signals(t), "--degree", "0"], "degree", id="learn-zero-degree"),
    cli(lambda t: ["learn", signals(t), "--degree", "99"], "degree", id="learn-degree-too-high"),
    cli(lambda t: ["learn", signals(t), "--degree", "2", "--solver", "magic"], "solver",
        id="learn-unknown-solver"),
    cli(lambda t: ["learn", signals(t), "--degree", "2", "--tol", "0"], "tol",
        id="learn-zero-tol"),
    cli(lambda t: ["learn", signals(t), "--degree", "2", "--seed", "-1"], "--seed",
        before_work=True, id="learn-negative-seed"),
    cli(lambda t: ["learn", signals(t), "--degree", "2", "--plot", str(t / "g.xyz")], "--plot",
        before_work=True, id="learn-plot-suffix"),
    cli(lambda t: ["learn", signals(t), "--degree", "2", "--plot", str(a_file(t) / "g.png")],
        "--plot", before_work=True, id="learn-plot-under-a-file"),
    cli(lambda t: ["learn", signals(t), "--degree", "2", "-o", str(a_file(t) / "g.json")],
        "blocker", before_work=True, id="learn-output-under-a-file"),
    cli(lambda t: ["learn", signals(t), "--degree", "2", "-o", str(t)], "directory",
        before_work=True, id="learn-output-a-directory"),
    # -- learn-federated -----------------------------------------------------------------------
    cli(lambda t: ["learn-federated", signals(t, "a.npy"), signals(t, "a.npy"), "-o",
                   str(t / "o")], "a.npy", before_work=True, id="federated-same-file-twice"),
    cli(lambda t: ["learn-federated", signals(t, "a.npy"),
                   str(Path(signals((t / "b").mkdir() or t / "b", "a.npy", seed=1))), "-o",
                   str(t / "o")], "a.npy", before_work=True, id="federated-same-stem"),
    cli(lambda t: ["learn-federated", signals(t, "a.npy"), str(t / "b.npy"), "-o",
                   str(t / "o")], "b.npy", before_work=True, id="federated-missing-client"),
    cli(lambda t: ["learn-federated", signals(t, "a.npy"),
                   signals(t, "b.npy", np.ones((5, 4))), "-o", str(t / "o")], "node",
        id="federated-different-nodes"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--rounds", "0", "-o",
                   str(t / "o")], "rounds", id="federated-zero-rounds"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--alpha", "0", "-o",
                   str(t / "o")], "alpha", id="federated-zero-alpha"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--rho", "-1", "-o",
                   str(t / "o")], "rho", id="federated-negative-rho"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--lam", "-1", "-o",
                   str(t / "o")], "lam", id="federated-negative-lam"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--epsilon", "0", "-o",
                   str(t / "o")], "epsilon", id="federated-zero-epsilon"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--epsilon", "1", "--delta",
                   "1", "-o", str(t / "o")], "delta", id="federated-delta-one"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--epsilon", "1", "--clip", "0",
                   "-o", str(t / "o")], "clip", id="federated-zero-clip"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--dp-release", "models", "-o",
                   str(t / "o")], "--dp-release", id="federated-unknown-release"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--coupling", "tight", "-o",
                   str(t / "o")], "--coupling", id="federated-unknown-coupling"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--seed", "-1", "-o",
                   str(t / "o")], "--seed", before_work=True, id="federated-negative-seed"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "--tol", "0", "-o",
                   str(t / "o")], "tol", id="federated-zero-tol"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "-o", str(a_file(t))],
        "blocker", before_work=True, id="federated-output-a-file"),
    cli(lambda t: ["learn-federated", *similar_clients(t, 2), "-o", str(a_file(t) / "o")],
        "blocker", before_work=True, id="federated-output-under-a-file"),
    cli(lambda t: ["learn-federated", signals(t, "a.npy"), signals(t, "b.npy"), "--coupling",
                   "explicit", "-o", str(t / "o")], "diverged",
        id="federated-explicit-diverges-on-identical-clients"),
    cli(lambda t: ["learn-federated", signals(t, "a.npy"),
                   signals(t, "b.npy", np.array([[1e200, -1e200, 0, 1, 2, 3]] * 3)), "-o",
                   str(t / "o")], "too large", id="federated-overflowing-signals"),
    # -- gfl run -------------------------------------------------------------------------------
    cli(lambda t: ["gfl", "run", str(t / "c.toml")], "c.toml", id="gfl-missing-config"),
    cli(lambda t: ["gfl", "run", str(t)], "directory", id="gfl-config-directory"),
    cli(lambda t: ["gfl", "run", toml(t, "iterations = ")], "TOML", id="gfl-bad-toml"),
    cli(lambda t: ["gfl", "run", toml(t, "colour = 3")], "colour", id="gfl-unknown-key"),
    cli(lambda t: ["gfl", "run", toml(t, "n_servers = 0")], "n_servers",
        id="gfl-zero-servers"),
    cli(lambda t: ["gfl", "run", toml(t, "n_servers = 2.5")], "n_servers",
        id="gfl-fractional-servers"),
    cli(lambda t: ["gfl", "run", toml(t, "clients_per_server = 100_000_000")],
        "clients_per_server", id="gfl-hundred-million-clients"),
    cli(lambda t: ["gfl", "run", toml(t, "n_features = 1_000_000_000")], "n_features",
        id="gfl-billion-features"),
    cli(lambda t: ["gfl", "run", toml(t, "iterations = 1_000_000_000_000")], "iterations",
        id="gfl-trillion-iterations"),
    cli(lambda t: ["gfl", "run", toml(t, "clients_per_round = 500")], "clients_per_round",
        id="gfl-more-sampled-than-clients"),
    cli(lambda t: ["gfl", "run", toml(t, "mu = -0.1")], "mu", id="gfl-negative-mu"),
    cli(lambda t: ["gfl", "run", toml(t, "mu = nan")], "mu", id="gfl-nan-mu"),
    cli(lambda t: ["gfl", "run", toml(t, "mu = 1" + "0" * 400)], "mu", id="gfl-huge-integer-mu"),
    cli(lambda t: ["gfl", "run", toml(t, "edge_probability = 1.5")], "edge_probability",
        id="gfl-edge-probability-above-one"),
    cli(lambda t: ["gfl", "run", toml(t, 'task = "ranking"')], "task", id="gfl-unknown-task"),
    cli(lambda t: ["gfl", "run", toml(t, "samples_per_client = [50, 10]")],
        "samples_per_client", id="gfl-range-reversed"),
    cli(lambda t: ["gfl", "run", toml(t, "epochs = [1, 2, 3]")], "epochs",
        id="gfl-range-of-three"),
    cli(lambda t: ["gfl", "run", toml(t, "seed = -3")], "seed", id="gfl-negative-seed-in-file"),
    cli(lambda t: ["gfl", "run", toml(t, 'seed = "abc"')], "seed", id="gfl-text-seed"),
    cli(lambda t: ["gfl", "run", toml(t, 'include_self_noise = "yes"')], "include_self_noise",
        id="gfl-text-bool"),
    cli(lambda t: ["gfl", "run", toml(t, 'preset = "huge"')], "preset",
        id="gfl-unknown-preset-in-file"),
    cli(lambda t: ["gfl", "run", "--preset", "huge"], "preset", id="gfl-unknown-preset"),
    cli(lambda t: ["gfl", "run", "--seed", "-1"], "seed", id="gfl-negative-seed"),
    cli(lambda t: ["gfl", "run", "-o", str(t / "o.txt")], "--output", id="gfl-output-suffix"),
    cli(lambda t: ["gfl", "run", "--plot", str(t / "p.xyz")], "--plot", id="gfl-plot-suffix"),
    cli(lambda t: ["gfl", "run", "--plot", str(a_file(t) / "p.png")], "--plot",
        id="gfl-plot-under-a-file"),
    cli(lambda t: ["gfl", "run", toml(t, "repetitions = 1_000_000_000")], "repetitions",
        id="gfl-billion-repetitions"),
    cli(lambda t: ["gfl", "run", toml(t, "samples_per_client = 0")], "samples_per_client",
        id="gfl-zero-samples"),
    cli(lambda t: ["gfl", "run", "-o", str(a_file(t) / "o.csv")], "blocker",
        id="gfl-output-under-a-file"),
]


def _forbid_work(monkeypatch) -> None:
    """Make the expensive steps fail loudly: a case must be refused before them."""

    def work(*args, **kwargs):
        raise AssertionError("the bad input was not refused before the work started")

    import topokit.design._autotag as autotag_module
    import topokit.learn.federated as federated_module
    import topokit.learn.solvers as solvers_module
    import topokit.validation.core as validation_module

    monkeypatch.setattr(autotag_module, "autotag", work)
    monkeypatch.setattr(validation_module, "train", work)
    # The learn commands import their solvers when they run (topokit --help stays light).
    monkeypatch.setattr(solvers_module, "learn_graph", work)
    monkeypatch.setattr(federated_module, "learn_federated", work)


def _check_one_line(result, keyword: str) -> None:
    output = result.output
    assert result.exit_code == 2, f"exit {result.exit_code}: {output}\n{result.exception!r}"
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in output, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{output}"
    assert lines[0].startswith("error: "), output
    assert keyword.lower() in lines[0].lower(), f"{keyword!r} not in {lines[0]!r}"


@pytest.mark.parametrize(("build", "keyword", "before_work"), CLI_CASES)
def test_cli_bad_input(build, keyword, before_work, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = build(tmp_path)
    if args == ["examples"]:  # an installation without its data files
        import topokit.network.examples as examples

        monkeypatch.setattr(examples, "__file__", str(tmp_path / "topokit" / "design" / "x.py"))
    if before_work:
        _forbid_work(monkeypatch)
    result = runner.invoke(app, args, env=WIDE)
    _check_one_line(result, keyword)


# ---------------------------------------------------------------------------------------------
# The Python API
# ---------------------------------------------------------------------------------------------


def api(call, keyword, *, id):
    return pytest.param(call, keyword, id=id)


def _net():
    return load_example("toy")


def _train(**kwargs):
    from topokit.training import train

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((120, 4)), rng.integers(0, 2, 120)
    arguments = {"rounds": 2, "seed": 0, **kwargs}
    net = arguments.pop("net", _net())
    topology = arguments.pop("topology", None)
    X, y = arguments.pop("X", X), arguments.pop("y", y)
    return train(net, topology, X, y, **arguments)


def _federated(signals=None, **kwargs):
    from topokit.learn import learn_federated

    rng = np.random.default_rng(0)
    data = signals if signals is not None else [rng.standard_normal((20, 5)) for _ in range(2)]
    return learn_federated(data, 1.0, 0.1, 0.5, 0.01, **{"rounds": 5, **kwargs})


def _siot(*args, **kwargs):
    from topokit.network.siot import siot

    return siot(*args, **kwargs)


def _gfl_run(**changes):
    from topokit.gfl import preset, run

    return run(preset("regression").replace(iterations=2, **changes))


def _validate(**kwargs):
    return topokit.validate(_net(), **{"trials": 1, "rounds": 2, **kwargs})


API_CASES = [
    # load_network / load_topology
    api(lambda t: topokit.load_network(t / "missing.json"), "missing.json",
        id="load_network-missing"),
    api(lambda t: topokit.load_network(t), "directory", id="load_network-directory"),
    api(lambda t: topokit.load_network(net_file(t, lambda d: d.__setitem__("nodes", [1, 2]))),
        "nodes", id="load_network-nodes-not-objects"),
    api(lambda t: topokit.load_network(net_file(t, edges_as_pairs)), "edges",
        id="load_network-edges-as-pairs"),
    api(lambda t: topokit.load_network(net_file(t, edge_without_target)), "target",
        id="load_network-edge-no-target"),
    api(lambda t: topokit.load_network(net_file(t, set_node(0, "x", "abc"),
                                                base=positioned_dict)), "'x'",
        id="load_network-x-a-string"),
    api(lambda t: topokit.load_network(net_file(t, duplicate_node)), "'A'",
        id="load_network-duplicate-node"),
    api(lambda t: topokit.load_network(net_file(t, set_node(2, "compute_time", True))),
        "compute_time", id="load_network-compute-time-true"),
    api(lambda t: topokit.load_network(net_file(t, set_node(2, "compute_time", False))),
        "compute_time", id="load_network-compute-time-false"),
    api(lambda t: topokit.load_network(net_file(t, huge_delays)), "too large",
        id="load_network-delay-sum-overflow"),
    api(lambda t: topokit.load_network(net_file(t, edge_to_unknown_node)), "'Z'",
        id="load_network-edge-unknown-node"),
    api(lambda t: topokit.load_network(net_file(t, lambda d: d["graph"]["delay"][2].pop())),
        "delay", id="load_network-delay-ragged-rows"),
    api(lambda t: topokit.load_topology(topology_file(t, {"edges": {"A": "B"}})), "edges",
        id="load_topology-edges-a-dict"),
    api(lambda t: topokit.load_topology(topology_file(t, {"edges": [["A", "B"]],
                                                          "dp_devices": "AB"})), "dp_devices",
        id="load_topology-dp-devices-a-string"),
    api(lambda t: topokit.load_topology(topology_file(t, {"edges": [["A", "B"]],
                                                          "dp_devices": {"A": 1}})),
        "dp_devices", id="load_topology-dp-devices-a-dict"),
    api(lambda t: topokit.load_topology(topology_file(t, {"edges": [["A", "B"]],
                                                          "dp_devices": [{"id": "A"}]})),
        "dp_devices", id="load_topology-dp-device-an-object"),
    api(lambda t: topokit.load_topology(topology_file(t, {"edges": [[{"id": 1}, "B"]]})),
        "edges", id="load_topology-node-an-object"),
    api(lambda t: topokit.load_topology(t / "t.json"), "t.json", id="load_topology-missing"),
    # Network, Topology
    api(lambda t: Topology(5), "edges", id="Topology-edges-an-int"),
    api(lambda t: Topology([("A", "B")], dp_devices="AB"), "dp_devices",
        id="Topology-dp-devices-a-string"),
    api(lambda t: Topology([("A", "B")], dp_devices=7), "dp_devices",
        id="Topology-dp-devices-an-int"),
    api(lambda t: topokit.Network(nx.path_graph(3), [1, 1, np.nan], np.zeros((3, 3))),
        "compute_time", id="Network-nan-compute-time"),
    api(lambda t: topokit.Network(nx.path_graph(3), [1, 1, True], np.zeros((3, 3))),
        "compute_time", id="Network-bool-compute-time"),
    api(lambda t: topokit.Network(nx.path_graph(3), [1, 1, 1], np.full((3, 3), -1.0)),
        "delay", id="Network-negative-delay"),
    api(lambda t: topokit.Network(nx.path_graph(3), [1e308] * 3, np.full((3, 3), 1e308)),
        "too large", id="Network-overflowing-link-times"),
    api(lambda t: topokit.Network(nx.path_graph(3), [1, 1, 1], np.zeros((3, 3)),
                                  positions=[[0, 0], [1, "a"], [2, 2]]), "positions",
        id="Network-text-position"),
    # evaluate
    api(lambda t: topokit.evaluate("toy"), "net", id="evaluate-net-a-string"),
    api(lambda t: topokit.evaluate(_net(), [("A", "B")]), "topology",
        id="evaluate-topology-a-list"),
    api(lambda t: topokit.evaluate(_net(), None, "eq15"), "predictor",
        id="evaluate-predictor-a-string"),
    api(lambda t: topokit.evaluate(_net(), Topology([("A", "C")])), "DP device",
        id="evaluate-invalid-topology"),
    api(lambda t: topokit.evaluate(_net(), Topology([("A", "Q")])), "'Q'",
        id="evaluate-unknown-node"),
    api(lambda t: topokit.evaluate(_net(), noise_variance="high"), "noise_variance",
        id="evaluate-text-noise-variance"),
    # autotag
    api(lambda t: topokit.autotag("toy"), "net", id="autotag-net-a-string"),
    api(lambda t: topokit.autotag(_net(), n_jobs=0), "n_jobs", id="autotag-zero-jobs"),
    api(lambda t: topokit.autotag(_net(), "eq15"), "predictor", id="autotag-predictor-string"),
    # topokit.datasets.siot
    api(lambda t: _siot(0), "n_devices", id="siot-zero-devices"),
    api(lambda t: _siot(10**9), "n_devices", id="siot-billion-devices"),
    api(lambda t: _siot("16"), "n_devices", id="siot-devices-a-string"),
    api(lambda t: _siot(16.0), "n_devices", id="siot-devices-a-float"),
    api(lambda t: _siot(16, seed=-1), "seed", id="siot-negative-seed"),
    api(lambda t: _siot(16, metres_per_unit=float("nan")), "metres_per_unit",
        id="siot-nan-scale"),
    api(lambda t: _siot(16, public_range_m=0), "public_range_m", id="siot-zero-range"),
    api(lambda t: _siot(16, cat_m2_probability=1.5), "cat_m2_probability",
        id="siot-probability-above-one"),
    api(lambda t: _siot(16, class_probabilities={"rpi9": 1.0}), "rpi9",
        id="siot-unknown-class"),
    api(lambda t: _siot(16, class_probabilities={"rpi3": 0.5}), "class_probabilities",
        id="siot-probabilities-not-summing"),
    api(lambda t: _siot(16, class_probabilities={"rpi3": "all"}), "class_probabilities",
        id="siot-probability-text"),
    api(lambda t: _siot(16, model_size_mb=-1), "model_size_mb", id="siot-negative-model"),
    api(lambda t: topokit.datasets.load_siot_devices(write_text(t, "d.csv", "a,b\n1,2\n")),
        "id_device", id="siot-devices-missing-columns"),
    api(lambda t: topokit.datasets.load_siot_devices(t / "none.csv"), "none.csv",
        id="siot-devices-missing-file"),
    # batch_analyze
    api(lambda t: topokit.batch_analyze(t / "nowhere", t / "o.parquet"), "nowhere",
        id="batch-missing-directory"),
    api(lambda t: topokit.batch_analyze(42, t / "o.parquet"), "source", id="batch-source-int"),
    api(lambda t: topokit.batch_analyze(network_dir(t), t / "o.parquet", n_jobs=0), "n_jobs",
        id="batch-zero-jobs"),
    api(lambda t: topokit.batch_analyze(network_dir(t), t / "o.parquet", chunk_size=0),
        "chunk_size", id="batch-zero-chunk"),
    api(lambda t: topokit.batch_analyze(network_dir(t), a_file(t) / "o.parquet"), "blocker",
        id="batch-output-under-a-file"),
    api(lambda t: topokit.design.batch.RandomEnsemble(n=60, m=59, count=1), "m=59",
        id="batch-ensemble-hopelessly-sparse"),
    api(lambda t: topokit.design.batch.RandomEnsemble(n=16, m=32, count=10**12), "count",
        id="batch-ensemble-huge-count"),
    api(lambda t: topokit.design.batch.parse_ensemble("n=16,m=32,count=5,m=40"), "twice",
        id="batch-spec-repeated-key"),
    # validate
    api(lambda t: topokit.validate("toy"), "net", id="validate-net-a-string"),
    api(lambda t: _validate(topologies="best"), "'best'", id="validate-unknown-topology"),
    api(lambda t: _validate(targets=[2.0]), "target", id="validate-target-above-one"),
    api(lambda t: _validate(targets=["high"]), "target", id="validate-target-text"),
    api(lambda t: _validate(trials=0), "trials", id="validate-zero-trials"),
    api(lambda t: _validate(seed=-1), "seed", id="validate-negative-seed"),
    api(lambda t: _validate(n_jobs=0), "n_jobs", id="validate-zero-jobs"),
    api(lambda t: _validate(colour=3), "colour", id="validate-unknown-option"),
    api(lambda t: _validate(X=np.zeros((3, 2))), "y", id="validate-X-without-y"),
    api(lambda t: _validate(dataset="imagenet"), "dataset", id="validate-unknown-dataset"),
    api(lambda t: _validate(output=a_file(t) / "v.parquet"), "blocker",
        id="validate-output-under-a-file"),
    # calibrate
    api(lambda t: topokit.calibrate(t / "r.parquet"), "r.parquet", id="calibrate-missing"),
    api(lambda t: topokit.calibrate(t), "directory", id="calibrate-directory"),
    api(lambda t: topokit.calibrate(42), "runs", id="calibrate-runs-an-int"),
    api(lambda t: topokit.calibrate(pd.DataFrame({"topology": ["a"]})), "hitting_time",
        id="calibrate-missing-columns"),
    api(lambda t: topokit.calibrate(runs_table(t, lambda f: f.assign(measured_rounds="x"))),
        "measured_rounds", id="calibrate-text-measured-rounds"),
    api(lambda t: topokit.calibrate(runs_table(t), cv=1), "cv", id="calibrate-one-fold"),
    api(lambda t: topokit.calibrate(runs_table(t), target=2.0), "target",
        id="calibrate-target-above-one"),
    api(lambda t: topokit.calibrate(runs_table(t), seed=-1), "seed",
        id="calibrate-negative-seed"),
    api(lambda t: topokit.calibrate(runs_table(t), seed="zero"), "seed",
        id="calibrate-text-seed"),
    # topokit.training.train
    api(lambda t: _train(rounds=0), "rounds", id="train-zero-rounds"),
    api(lambda t: _train(lr=-1.0), "lr", id="train-negative-lr"),
    api(lambda t: _train(lr=float("nan")), "lr", id="train-nan-lr"),
    api(lambda t: _train(batch_size=0), "batch_size", id="train-zero-batch"),
    api(lambda t: _train(local_steps=0), "local_steps", id="train-zero-local-steps"),
    api(lambda t: _train(model="transformer"), "model", id="train-unknown-model"),
    api(lambda t: _train(seed=-1), "seed", id="train-negative-seed"),
    api(lambda t: _train(partition=2.0), "partition", id="train-skewness-above-one"),
    api(lambda t: _train(y=np.zeros(5)), "y", id="train-y-wrong-length"),
    api(lambda t: _train(X=np.full((120, 4), np.nan)), "X", id="train-nan-X"),
    api(lambda t: _train(net="toy"), "net", id="train-net-a-string"),
    api(lambda t: _train(topology=Topology([("A", "C")])), "DP device",
        id="train-invalid-topology"),
    api(lambda t: _train(checkpoint_every=0), "checkpoint_every", id="train-zero-checkpoint"),
    api(lambda t: _train(dp="yes"), "dp", id="train-dp-a-string"),
    # topokit.learn.learn_federated
    api(lambda t: _federated(np.zeros((5, 4))), "client_signals", id="federated-one-array"),
    api(lambda t: _federated([np.zeros((5, 4)), np.zeros((5, 6))]), "node",
        id="federated-different-nodes"),
    api(lambda t: _federated(coupling="tight"), "coupling", id="federated-unknown-coupling"),
    api(lambda t: _federated(rounds=0), "rounds", id="federated-zero-rounds"),
    api(lambda t: _federated(epsilon=1.0), "clip", id="federated-epsilon-without-clip"),
    api(lambda t: _federated(epsilon=1.0, clip=1.0, delta=2.0), "delta",
        id="federated-delta-above-one"),
    api(lambda t: _federated([np.array([[1e200, -1e200, 0.0, 1.0]] * 3)] * 2), "too large",
        id="federated-overflowing-signals"),
    api(lambda t: _federated([np.full((3, 4), np.nan)] * 2), "NaN", id="federated-nan"),
    api(lambda t: _federated([]), "client", id="federated-no-clients"),
    # topokit.learn.learn_graph
    api(lambda t: topokit.learn.learn_graph(np.array([[1e200, -1e200, 0.0]] * 4), 1.0, 0.1),
        "too large", id="learn_graph-overflowing-signals"),
    api(lambda t: topokit.learn.learn_graph(np.ones((4, 3)), 1.0, 0.1, solver="magic"),
        "solver", id="learn_graph-unknown-solver"),
    api(lambda t: topokit.learn.load_signals(write_text(t, "x.npy", "1,2\n")), "x.npy",
        id="load_signals-text-as-npy"),
    api(lambda t: topokit.learn.load_signals(write_text(t, "x.csv", "1,2,3\n4,5\n")), "x.csv",
        id="load_signals-ragged-csv"),
    api(lambda t: topokit.learn.load_signals(t), "directory", id="load_signals-directory"),
    # topokit.gfl
    api(lambda t: topokit.gfl.run("regression"), "config", id="gfl-run-config-a-string"),
    api(lambda t: _gfl_run(clients_per_server=10**8, clients_per_round=2),
        "clients_per_server", id="gfl-run-hundred-million-clients"),
    api(lambda t: _gfl_run(n_features=10**9), "n_features", id="gfl-run-billion-features"),
    api(lambda t: _gfl_run(repetitions=10**9), "repetitions", id="gfl-run-billion-repetitions"),
    api(lambda t: topokit.gfl.preset("regression").replace(n_servers=0), "n_servers",
        id="gfl-config-zero-servers"),
    api(lambda t: topokit.gfl.preset("regression").replace(colour=1), "colour",
        id="gfl-config-unknown-key"),
    api(lambda t: topokit.gfl.preset("regression").replace(seed=-2), "seed",
        id="gfl-config-negative-seed"),
    api(lambda t: topokit.gfl.preset("huge"), "preset", id="gfl-unknown-preset"),
    api(lambda t: topokit.gfl.load_config(t), "directory", id="gfl-load-config-directory"),
    api(lambda t: topokit.gfl.load_config(toml(t, "mu = [1, 2]")), "mu",
        id="gfl-load-config-mu-a-list"),
    api(lambda t: topokit.gfl.load_config(toml(t, "[gfl]\nn_servers = -1")), "n_servers",
        id="gfl-load-config-table"),
]


@pytest.mark.parametrize(("call", "keyword"), API_CASES)
def test_api_bad_input(call, keyword, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TopokitError) as caught:
        call(tmp_path)
    message = str(caught.value)
    assert keyword.lower() in message.lower(), f"{keyword!r} not in {message!r}"
    assert "\n" not in message.strip(), message


# ---------------------------------------------------------------------------------------------
# Cases that are not an exit 2
# ---------------------------------------------------------------------------------------------


def test_one_bad_file_is_a_failed_row_of_a_directory_batch(tmp_path):
    folder = network_dir(tmp_path, ("bad.json", json.dumps({"nodes": [1, 2], "edges": []})),
                         ("pairs.json", json.dumps({**toy_dict(), "edges": [["A", "B"]]})))
    output = tmp_path / "o.parquet"
    result = runner.invoke(app, ["batch", folder, "-o", str(output)], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    table = pd.read_parquet(output).set_index("file")
    assert pd.isna(table.loc["good.json", "error"])
    assert "nodes" in table.loc["bad.json", "error"]
    assert "edges" in table.loc["pairs.json", "error"]
    # The run says which files failed instead of hiding it in the table.
    assert "bad.json" in result.output and "pairs.json" in result.output


def test_learn_federated_cli_is_stable_on_similar_clients_by_default(tmp_path):
    files = similar_clients(tmp_path)
    result = runner.invoke(app, ["learn-federated", *files, "-o", str(tmp_path / "o")],
                           env=WIDE)
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    api_result = _federated([np.load(f) for f in files], rounds=50, coupling="implicit")
    assert summary["objective"] == pytest.approx(api_result.objective, rel=1e-12)


def test_resumed_directory_batch_notices_an_edited_file(tmp_path, monkeypatch):
    """Issue #18, nothing stale: the job of a directory batch is its files' contents."""
    import topokit.design.batch as batch_module

    folder = Path(network_dir(tmp_path))
    save_network(load_example("siot16"), folder / "second.json")
    output = tmp_path / "o.parquet"
    original = batch_module._file_rows

    def interrupted(paths):
        if any(Path(p).name == "second.json" for p in paths):
            raise KeyboardInterrupt
        return original(paths)

    monkeypatch.setattr(batch_module, "_file_rows", interrupted)
    with pytest.raises(KeyboardInterrupt):
        topokit.batch_analyze(folder, output, chunk_size=1)
    monkeypatch.setattr(batch_module, "_file_rows", original)
    save_network(load_example("toy").with_topology(None), folder / "good.json")  # edited
    with pytest.raises(TopokitError, match="different job"):
        topokit.batch_analyze(folder, output, chunk_size=1)
    table = topokit.batch_analyze(folder, output, chunk_size=1, resume=False)
    assert table.set_index("file").loc["good.json", "topology"] == "social"


def test_design_autotag_too_large_for_memory_says_what_to_use_instead(monkeypatch):
    # Issue 19: a network too large for exact AutoTag in the memory available gets one line
    # naming the method to use instead, before anything is allocated.
    import topokit.design._autotag as autotag_module

    def no_allocation(*args, **kwargs):
        raise AssertionError("allocated before the memory check")

    monkeypatch.setattr(autotag_module, "_available_memory", lambda: 10_000)
    monkeypatch.setattr(autotag_module, "_problem", no_allocation)
    result = runner.invoke(app, ["design", "--example", "siot16", "--method", "autotag"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "topokit.optimize" in lines[0] and "memory" in lines[0]
