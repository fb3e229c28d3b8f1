"""Issue #31: the network, topology and design-file readers refuse bad files in one line.

Each case was found by trying a bad file: it raised a traceback (a design's
noise levels as a list, a GraphML parallel edge), was read without a word (a
future format, a directed GraphML graph, a node listed twice, a design whose
``stats`` is a list) or was refused with a message that did not say the fix
(a network given as a topology, a GraphML compute time of ``'fast'``, an
unknown node in ``optimize``'s class counts).  The Python API raises a
:class:`topokit.errors.TopokitError` naming the problem; the command line exits
with status 2 and prints that one line, no traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import topokit
from topokit import load_example, save_network
from topokit.errors import InputFileError, NodeNotFoundError
from topokit.network.formats import load_network, load_noise_multipliers, load_topology

from cli_errors import check_one_line


def raises(error: type[Exception], call: Callable[[], object], *keywords: str) -> str:
    """``call`` must raise ``error`` with a one-line message holding every keyword."""
    with pytest.raises(error) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message, message
    for keyword in keywords:
        assert keyword.lower() in message.lower(), f"{keyword!r} not in {message!r}"
    return message


# ---------------------------------------------------------------------------------------------
# Network files: GraphML
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def graphml_text(tmp_path) -> str:
    """The toy network (paper Fig. 2) as GraphML text, written by topokit."""
    save_network(load_example("toy"), tmp_path / "toy.graphml")
    return (tmp_path / "toy.graphml").read_text()


def compute_key(text: str) -> str:
    """The id of the ``<key>`` of node attribute compute_time in topokit's GraphML."""
    line = next(line for line in text.splitlines() if 'attr.name="compute_time"' in line)
    return line.split('id="')[1].split('"')[0]


def format_key(text: str) -> str:
    line = next(line for line in text.splitlines() if 'attr.name="topokit_format"' in line)
    return line.split('id="')[1].split('"')[0]


FIRST_EDGE = '<edge source="A" target="B" />'


def parallel_edge(text: str) -> str:
    assert FIRST_EDGE in text
    return text.replace(FIRST_EDGE, FIRST_EDGE + "\n    " + '<edge source="B" target="A" />')


def directed(text: str) -> str:
    assert 'edgedefault="undirected"' in text
    return text.replace('edgedefault="undirected"', 'edgedefault="directed"')


def node_twice(text: str) -> str:
    """Node A listed again with another compute time (networkx keeps the later silently)."""
    again = f'<node id="A">\n      <data key="{compute_key(text)}">9.0</data>\n    </node>\n    '
    return text.replace('<node id="B">', again + '<node id="B">', 1)


def compute_fast(text: str) -> str:
    key = compute_key(text)
    start = text.index('<node id="B">')
    end = text.index("</node>", start)
    node = text[start:end]
    changed = node.split(f'<data key="{key}">')[0] + f'<data key="{key}">fast</data>\n    '
    return text[:start] + changed + text[end:]


def future_format(text: str) -> str:
    key = format_key(text)
    assert f'<data key="{key}">1</data>' in text
    return text.replace(f'<data key="{key}">1</data>', f'<data key="{key}">99</data>')


GRAPHML_CASES = [
    pytest.param(parallel_edge, ("'A'-'B'", "2 times", "remove the repeated <edge>"),
                 id="parallel-edge"),
    pytest.param(directed, ("directed", 'edgedefault="undirected"'), id="directed"),
    pytest.param(node_twice, ("'A'", "twice"), id="node-twice"),
    pytest.param(compute_fast, ("node 'B'", "'compute_time'", "must be a number", "'fast'"),
                 id="compute-time-fast"),
    pytest.param(future_format, ("format 99", "upgrade topokit"), id="future-format"),
]


@pytest.mark.parametrize(("mutate", "keywords"), GRAPHML_CASES)
def test_a_bad_graphml_network_is_refused_in_one_line(mutate, keywords, graphml_text, tmp_path):
    path = tmp_path / "bad.graphml"
    path.write_text(mutate(graphml_text))
    raises(InputFileError, lambda: load_network(path), "bad.graphml", *keywords)
    check_one_line(["analyze", str(path)], "bad.graphml", *keywords)


def test_the_untouched_graphml_still_loads(graphml_text, tmp_path):
    path = tmp_path / "toy.graphml"
    path.write_text(graphml_text)
    assert load_network(path) == load_example("toy")


def test_regression_31_a_parallel_edge_was_a_type_error(graphml_text, tmp_path):
    """It ended in ``TypeError: 'int' object is not iterable`` inside networkx."""
    path = tmp_path / "bad.graphml"
    path.write_text(parallel_edge(graphml_text))
    with pytest.raises(InputFileError):
        load_network(path)


# ---------------------------------------------------------------------------------------------
# Network files: node-link JSON
# ---------------------------------------------------------------------------------------------


def toy_data() -> dict:
    return json.loads((topokit.design.examples.data_dir() / "toy.json").read_text())


@pytest.mark.parametrize(("version", "keywords"), [
    (99, ("format 99", "reads formats up to 1", "upgrade topokit")),
    (2, ("format 2", "upgrade topokit")),
    ("1", ("topokit_format", "whole number", "'1'")),
    (0, ("topokit_format", "whole number", "got 0")),
    (True, ("topokit_format", "whole number", "True")),
])
def test_a_network_file_of_another_format_version_is_refused(version, keywords, tmp_path):
    data = toy_data()
    data["graph"]["topokit_format"] = version
    path = tmp_path / "net.json"
    path.write_text(json.dumps(data))
    raises(InputFileError, lambda: load_network(path), "net.json", *keywords)
    check_one_line(["analyze", str(path)], "net.json", *keywords)


def test_a_network_file_without_a_format_version_is_read(tmp_path):
    """Hand-written node-link files carry no topokit_format: they are format 1."""
    data = toy_data()
    del data["graph"]["topokit_format"]
    path = tmp_path / "net.json"
    path.write_text(json.dumps(data))
    assert load_network(path).n_devices == 6


# ---------------------------------------------------------------------------------------------
# Topology files: a network given where a topology is expected
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["saved", "links", "graphml"])
def test_a_network_file_given_as_a_topology_says_so(shape, tmp_path):
    net = load_example("toy")
    if shape == "graphml":
        path = tmp_path / "net.graphml"
        save_network(net, path)
    else:
        path = tmp_path / "net.json"
        save_network(net, path)
        if shape == "links":  # networkx's older key, and no topokit_format
            data = json.loads(path.read_text())
            data["links"] = data.pop("edges")
            del data["graph"]["topokit_format"]
            path.write_text(json.dumps(data))
    keywords = ("network file", "not a design or topology file", "topokit design -o wrote")
    message = raises(InputFileError, lambda: load_topology(path), path.name, *keywords)
    assert "must be a pair" not in message
    raises(InputFileError, lambda: load_noise_multipliers(path, net), *keywords)
    check_one_line(["analyze", "-e", "toy", "--topology", str(path)], *keywords)
    check_one_line(["audit", "-e", "toy", "--topology", str(path), "-T", "2"], *keywords)


# ---------------------------------------------------------------------------------------------
# Design files: the per-device noise levels and the stats that hold them
# ---------------------------------------------------------------------------------------------


def design_file(tmp: Path, stats) -> Path:
    """A design of the toy network (DP devices A and B) whose ``stats`` is ``stats``."""
    design = {"network": "toy",
              "topology": {"edges": [["A", "B"], ["A", "D"], ["A", "F"], ["B", "C"],
                                     ["B", "E"], ["C", "D"], ["D", "F"]],
                           "dp_devices": []},
              "stats": stats}
    path = tmp / "design.json"
    path.write_text(json.dumps(design))
    return path


LEVELS = "'stats.stranger_bound.noise_multipliers' must be an object device -> noise multiplier"
STATS_CASES = [
    pytest.param({"stranger_bound": {"noise_multipliers": [4.0, 3.5]}}, (LEVELS, "[4.0, 3.5]"),
                 id="levels-a-list"),
    pytest.param({"stranger_bound": {"noise_multipliers": "4.0"}}, (LEVELS, "'4.0'"),
                 id="levels-a-string"),
    pytest.param([{"stranger_bound": {}}], ("'stats' must be an object",), id="stats-a-list"),
    pytest.param("stranger bound", ("'stats' must be an object", "'stranger bound'"),
                 id="stats-a-string"),
    pytest.param({"stranger_bound": [4.0]}, ("'stats.stranger_bound' must be an object",),
                 id="stranger-bound-a-list"),
]


@pytest.mark.parametrize(("stats", "keywords"), STATS_CASES)
def test_a_design_whose_noise_levels_have_the_wrong_type_is_refused(stats, keywords, tmp_path):
    path = design_file(tmp_path, stats)
    net = load_example("toy")
    raises(InputFileError, lambda: load_noise_multipliers(path, net), "design.json", *keywords)
    check_one_line(["audit", "-e", "toy", "--topology", str(path), "-T", "2"], "design.json",
                   *keywords)
    check_one_line(["export", str(path), "-f", "mixing-csv", "-o", str(tmp_path / "w.csv")],
                   "design.json", *keywords)
    assert not (tmp_path / "w.csv").exists()


def test_regression_31_noise_levels_as_a_list_were_an_attribute_error(tmp_path):
    """It ended in ``AttributeError: 'list' object has no attribute 'items'``."""
    path = design_file(tmp_path, {"stranger_bound": {"noise_multipliers": [1.0]}})
    with pytest.raises(InputFileError):
        load_noise_multipliers(path, load_example("toy"))
    with pytest.raises(InputFileError):
        topokit.design.export_design(path, tmp_path / "w.csv", format="mixing-csv")


@pytest.mark.parametrize("stats", [None, {}, {"stranger_bound": None},
                                   {"stranger_bound": {"noise_multipliers": None}}])
def test_a_design_without_noise_levels_still_reads_as_none(stats, tmp_path):
    assert load_noise_multipliers(design_file(tmp_path, stats), load_example("toy")) is None


# ---------------------------------------------------------------------------------------------
# Class counts keyed by node where an array is expected
# ---------------------------------------------------------------------------------------------


def test_optimize_class_counts_as_a_mapping_names_an_unknown_node():
    """It said the counts "must be numeric", whatever the mapping's nodes."""
    net = load_example("toy")
    counts = {"A": [3, 1], "Z": [1, 1]}
    message = raises(NodeNotFoundError,
                     lambda: topokit.optimize(net, class_counts=counts, n_starts=1),
                     "'Z'", "not in the network")
    assert "must be numeric" not in message
    # ... as the network's own setter does, even with other nodes missing.
    raises(NodeNotFoundError, lambda: net.with_class_counts(counts), "'Z'",
           "not in the network")
    # A mapping of every node is the array in node order.
    mapping = {node: [k + 1, 1] for k, node in enumerate(net.nodes)}
    as_rows = [[k + 1, 1] for k in range(net.n_devices)]
    assert topokit.optimize(net, seed=0, class_counts=mapping, n_starts=1).topology == \
        topokit.optimize(net, seed=0, class_counts=as_rows, n_starts=1).topology
