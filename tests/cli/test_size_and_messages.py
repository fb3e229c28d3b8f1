"""Issue #31, the newer commands: sizes refused up front, options named as the user wrote them,
folders where files go.

Every case: exit status 2, one ``error:`` line, no traceback, nothing written.

1. ``generate siot`` of a network that cannot be generated and written here,
   or whose file could not be loaded here, is refused before it is
   generated, with the estimate.
2. ``design`` of a network too large for the memory available is refused
   before the network file is read (or, for an example, before the design
   runs), with the estimate, what is available and how to shrink the run;
   it used to end in the catch-all "not enough memory" line after 26-60 s.
   So are ``analyze``, ``audit``, ``validate``, ``probe`` and ``export`` of a
   file too large to load (and to audit or design on), and an audit too large
   for the memory once its topology is known (with the --rounds that fit).
3. Library errors reach the command line naming the option (``--epsilon``,
   ``--trials``, ``--refit``), not the Python parameter (``epsilon``,
   ``trials``, ``calibrate(predictor=...)``).
4. A folder where a file is read or written is named, with what to give
   instead, before any work (it was ``Is a directory: <hidden temp file>``
   after the work, for some).
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from topokit.cli import _sizes
from topokit.cli._common import os_error_text
from topokit.design.time_predictor import DEFAULT_FEATURES
from topokit.network.examples import load_example
from topokit.network.formats import save_network

from cli_errors import check_one_line

GIB = 2.0**30


def listing(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.fixture
def memory(monkeypatch):
    """Set the memory the size checks see as available (bytes)."""
    def set_available(n_bytes: float) -> None:
        monkeypatch.setattr(_sizes, "available_memory", lambda: float(n_bytes))
    return set_available


def positions_network(path: Path, n: int) -> Path:
    """A ring of ``n`` devices with positions and no stored delays: a small file that
    loads into n x n delays."""
    rng = np.random.default_rng(0)
    nodes = [{"id": i, "compute_time": 312.0, "x": float(x), "y": float(y)}
             for i, (x, y) in enumerate(rng.random((n, 2)) * 5000)]
    edges = [{"source": i, "target": (i + 1) % n} for i in range(n)]
    path.write_text(json.dumps({"directed": False, "multigraph": False, "graph": {},
                                "nodes": nodes, "edges": edges}))
    return path


# ---------------------------------------------------------------------------------------------
# 1. generate siot
# ---------------------------------------------------------------------------------------------

def test_a_siot_network_too_large_to_write_is_refused_with_the_estimate(tmp_path, memory,
                                                                        never_generated):
    memory(4 * GIB)
    out = tmp_path / "big.json"
    line = check_one_line(["generate", "siot", "--devices", "20000", "-o", str(out)],
                          "--devices 20000", "20,000 x 20,000 delays", "social links",
                          "loading its file (analyze, design) needs about", "GiB of memory",
                          "4 GiB available", "or fewer")
    fits = int(line.split("--devices ")[-1].split()[0])
    # Generating holds no delay (450 bytes a link); loading the file and reading its delays
    # 10 bytes a pair and 650 a link: in 4 GiB, about 13,100 devices.
    assert 12500 < fits < 13500
    assert _sizes.siot_memory(20000) < 4 * GIB
    assert listing(tmp_path) == []


def test_a_graphml_siot_network_needs_more_memory(tmp_path, memory, never_generated):
    """GraphML's writer holds an XML element per link: 1,150 bytes a link, not 450; its
    loading 1,050 bytes a link, not 650."""
    memory(3 * GIB)
    assert _sizes.siot_memory(10000) < _sizes.siot_memory(10000, graphml=True)
    json_size = _sizes.NetworkFileSize(10000, 0, False, links=int(_sizes.siot_links(10000)))
    graphml_size = json_size.__class__(10000, 0, False, links=json_size.links, graphml=True)
    assert json_size.loading_bytes < 3 * GIB < graphml_size.loading_bytes
    line = check_one_line(["generate", "siot", "--devices", "10000", "-o",
                           str(tmp_path / "big.graphml")], "GiB of memory")
    assert 7500 < int(line.split("--devices ")[-1].split()[0]) < 10000
    assert listing(tmp_path) == []


def test_a_siot_network_too_large_for_the_disk_is_refused(tmp_path, memory, monkeypatch,
                                                         never_generated):
    memory(1e12)
    monkeypatch.setattr(_sizes, "_free_disk", lambda path: 1e6)
    check_one_line(["generate", "siot", "--devices", "1000", "-o", str(tmp_path / "n.json")],
                   "--devices 1000", "of disk", "free where --output goes", "or fewer")
    assert listing(tmp_path) == []


def test_a_siot_network_that_fits_is_written(tmp_path, memory):
    memory(1e9)  # 50 x 16^2 bytes
    from topokit.cli import app

    from cli_errors import runner
    out = tmp_path / "n.json"
    result = runner.invoke(app, ["generate", "siot", "-n", "16", "--seed", "0", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file()


@pytest.mark.parametrize(("scale", "keywords"), [
    ("1e300", ("--metres-per-unit 1e+300", "use at most")),
    ("1e6", ("no connected component holds 16 devices", "fewer --devices",
             "smaller --metres-per-unit")),
])
def test_a_siot_scale_without_a_network_names_the_options(tmp_path, scale, keywords):
    # Seeded: an unseeded draw at 1e6 can, rarely, place 16 devices within reach.
    line = check_one_line(["generate", "siot", "-n", "16", "--seed", "0", "--metres-per-unit",
                           scale, "-o", str(tmp_path / "n.json")], *keywords)
    for python_name in ("metres_per_unit", "public_range_m", "colocation_range_m", "n_devices"):
        assert python_name not in line
    assert listing(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# 2. design: a network too large for the memory
# ---------------------------------------------------------------------------------------------

def test_a_network_file_too_large_is_refused_before_it_is_read(tmp_path, memory, monkeypatch):
    path = positions_network(tmp_path / "big.json", 3000)

    def never(*args, **kwargs):
        raise AssertionError("the network was loaded")

    monkeypatch.setattr("topokit.network.formats.load_network", never)
    memory(0.5 * GIB)
    out = tmp_path / "design.json"
    line = check_one_line(["design", str(path), "-o", str(out)],
                          "designing for 3,000 devices (--method optimize)", "GiB of memory",
                          "an estimate", "all 4,498,500 device pairs", "512 MiB available",
                          "use a network of at most")
    fits = int(line.split("at most ")[-1].split()[0].replace(",", ""))
    assert 1000 < fits < 3000
    assert not out.exists()


def test_a_loaded_network_too_large_is_refused_before_the_design(memory, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the design ran")

    monkeypatch.setattr("topokit.design.optimize_with_references", never)
    memory(1e5)
    check_one_line(["design", "--example", "siot32"], "designing for 32 devices",
                   "more than the", "available")


def test_autotag_too_large_names_the_smaller_ways(tmp_path, memory):
    """Exact AutoTag keeps a snapshot per pair for every budget ((n + 1) x pairs x 48
    bytes: 1.2 GB at 300 devices); optimize and NEP early stopping need far less."""
    path = positions_network(tmp_path / "n300.json", 300)
    memory(0.5 * GIB)
    check_one_line(["design", str(path), "--method", "autotag", "-j", "2"],
                   "(--method autotag)", "AutoTag keeps a snapshot", "use --method optimize",
                   "--nep-patience", "at most")


def test_the_estimate_grows_with_the_pairs_and_the_threads():
    one = _sizes.design_memory(2000, 1_999_000, method="optimize")
    assert one > 480 * 1_999_000  # the reference designs list every pair
    assert _sizes.design_memory(2000, 100_000, method="optimize") < one
    assert _sizes.design_memory(2000, 1_999_000, method="optimize", workers=8) > one
    exact = _sizes.design_memory(300, 44_850, method="autotag")
    assert exact > 301 * 44_850 * 48
    assert _sizes.design_memory(300, 44_850, method="autotag", exact=False) < exact / 10


@pytest.mark.parametrize("suffix", [".json", ".graphml"])
def test_a_network_files_size_is_read_without_loading_it(tmp_path, suffix):
    net = load_example("siot32")
    path = save_network(net, tmp_path / f"n{suffix}")
    size = _sizes.network_file_size(path)
    finite = (int(np.isfinite(net.delay).sum()) - 32) // 2
    assert size.n_devices == 32 and size.delays
    assert finite - 2 <= size.min_pairs <= finite  # a null or two may not be delays


def test_a_positions_file_counts_every_pair_unless_a_range_limits_them(tmp_path):
    path = positions_network(tmp_path / "ring.json", 500)
    size = _sizes.network_file_size(path)
    assert (size.n_devices, size.min_pairs, size.delays) == (500, 500 * 499 // 2, False)
    data = json.loads(path.read_text())
    data["graph"]["physical_model"] = {"max_range_m": 300.0}
    path.write_text(json.dumps(data))
    assert _sizes.network_file_size(path).min_pairs == 0
    assert _sizes.network_file_size(tmp_path / "missing.json") is None


def test_a_token_is_counted_once_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(_sizes, "_CHUNK", 7)
    path = positions_network(tmp_path / "ring.json", 40)
    assert _sizes.network_file_size(path).n_devices == 40


@pytest.fixture
def never_loaded(monkeypatch):
    """Fail the test if a network file is loaded."""
    def never(*args, **kwargs):
        raise AssertionError("the network was loaded")

    monkeypatch.setattr("topokit.network.formats.load_network", never)


@pytest.mark.parametrize("command", [
    ["analyze", "{net}", "--audit-rounds", "0"],
    ["audit", "{net}", "-T", "5"],
    ["validate", "{net}", "-t", "ndlf", "--audit-rounds", "0", "-o", "{tmp}/runs.parquet"],
    ["probe", "{net}", "-o", "{tmp}/probes"],
    ["export", "{tmp}/design.json", "-f", "mixing-csv", "-o", "{tmp}/w.csv", "--network",
     "{net}"],
])
def test_a_network_file_too_large_to_load_is_refused_before_it_is_read(
        tmp_path, memory, never_loaded, command):
    # 10 x 3,000^2 bytes to load and read the delays (computed from the positions)
    path = positions_network(tmp_path / "big.json", 3000)
    memory(0.05 * GIB)
    line = check_one_line([arg.format(net=path, tmp=tmp_path) for arg in command],
                          f"{path} holds 3,000 devices: loading it", "of memory",
                          "an estimate", "51.2 MiB available", "use a network of at most")
    fits = int(line.split("at most ")[-1].split()[0].replace(",", ""))
    assert 300 < fits < 3000  # fewer for audit and probe: loading, then their (n, n) arrays
    assert listing(tmp_path) == ["big.json"]


@pytest.mark.parametrize(("command", "keywords"), [
    (["audit", "{net}", "-T", "50"], ("loading it and auditing them over 50 rounds of gossip",
                                      "each thread holds an observer's workspace")),
    (["analyze", "{net}"], ("auditing them over 50 rounds of gossip",)),
    (["validate", "{net}", "-t", "ndlf,erg"], ("designing on it with autotag",)),
    (["validate", "{net}", "-t", "optimize", "--audit-rounds", "0"],
     ("designing on it with optimize",)),
    (["probe", "{net}", "-o", "{tmp}/probes"], ("designing on it with optimize",)),
])
def test_a_network_too_large_to_audit_or_design_on_is_refused_before_it_is_read(
        tmp_path, memory, never_loaded, command, keywords):
    """Loading fits; the audit's (n, n) arrays, or the designs, do not."""
    path = positions_network(tmp_path / "big.json", 1500)
    memory(0.1 * GIB)  # loading: 56 MiB
    check_one_line([arg.format(net=path, tmp=tmp_path) for arg in command],
                   "holds 1,500 devices", *keywords, "use a network of at most")
    assert listing(tmp_path) == ["big.json"]


def test_an_audit_of_many_rounds_names_the_rounds_that_fit_before_reading(
        tmp_path, memory, never_loaded):
    """A D-SGD audit's workspace grows with the rounds: the way out names --audit-rounds."""
    path = positions_network(tmp_path / "net.json", 300)
    memory(0.1 * GIB)
    line = check_one_line(["analyze", str(path), "--audit-model", "dsgd", "--audit-rounds",
                           "1000"], "auditing them over 1,000 rounds of dsgd",
                          "--audit-rounds", "or fewer")
    fits = int(line.split("--audit-rounds ")[-1].split()[0])
    assert 1 <= fits < 1000
    assert _sizes.audit_memory(300, fits, model="dsgd") <= 0.1 * GIB


def test_an_audit_too_large_for_its_topology_names_the_rounds_and_threads(memory, monkeypatch):
    """Once the topology is known: the busiest observer's workspace, per thread."""
    def never(*args, **kwargs):
        raise AssertionError("the audit ran")

    monkeypatch.setattr("topokit.audit.core.privacy_audit", never)
    size = {"model": "dsgd", "degree": 4, "noisy": 3}  # the toy's stored topology
    one, two = (_sizes.audit_memory(6, 1000, workers=w, **size) for w in (1, 2))
    memory((one + two) / 2)
    line = check_one_line(["audit", "--example", "toy", "-m", "dsgd", "-T", "1000", "-j", "2"],
                          "auditing 6 devices over 1,000 rounds (--model dsgd)",
                          "each of 2 thread(s)", "the busiest observer hearing 4 devices",
                          "use --rounds", "or fewer", "use fewer --n-jobs")
    fits = int(line.split("use --rounds ")[-1].split()[0])
    assert _sizes.audit_memory(6, fits, workers=2, **size) <= (one + two) / 2
    assert _sizes.audit_memory(6, fits + 1, workers=2, **size) > (one + two) / 2


def test_the_audit_estimate_grows_with_rounds_threads_and_neighbours():
    base = _sizes.audit_memory(500, 50, model="gossip")
    assert base >= 49 * 500**2  # the network and the audit's (n, n) arrays
    assert _sizes.audit_memory(500, 50, model="gossip", workers=2) > base
    assert _sizes.audit_memory(500, 500, model="dsgd", degree=20) > \
        _sizes.audit_memory(500, 50, model="dsgd", degree=20) > \
        _sizes.audit_memory(500, 50, model="dsgd")


# ---------------------------------------------------------------------------------------------
# Network files: compact from COMPACT_FROM_DEVICES devices on
# ---------------------------------------------------------------------------------------------

def test_a_large_network_file_holds_a_delay_row_and_a_link_a_line(tmp_path):
    from topokit import Network, Topology
    from topokit.network.formats import COMPACT_FROM_DEVICES, load_network
    from topokit.network.siot import siot

    net = siot(COMPACT_FROM_DEVICES, seed=0)
    n, links = net.n_devices, net.social.number_of_edges()
    delay = np.random.default_rng(0).random((n, n))  # no model, no shared value: the matrix
    net = Network(net.social, net.compute_time, delay + delay.T,
                  topology=Topology(list(net.social.edges)[:3], []))  # stays indented
    path = save_network(net, tmp_path / "n.json")
    lines = path.read_text().splitlines()
    assert sum(line.startswith("   [") for line in lines) == n  # a delay row a line
    assert sum(line.startswith('  {"source":') for line in lines) == links  # a link a line
    assert len(lines) < 12 * n + links + 100
    again = load_network(path)
    assert np.array_equal(again.delay, net.delay) and again.nodes == net.nodes
    assert again.topology == net.topology
    assert {frozenset(edge) for edge in again.social.edges} == \
        {frozenset(edge) for edge in net.social.edges}
    size = _sizes.network_file_size(path)
    assert (size.n_devices, size.delays) == (n, True)


def test_a_compact_file_keeps_unreachable_pairs_and_every_attribute(tmp_path, monkeypatch):
    from topokit.network import formats

    monkeypatch.setattr(formats, "COMPACT_FROM_DEVICES", 1)
    toy = load_example("toy")  # a null delay, string ids, a stored topology
    path = save_network(toy, tmp_path / "toy.json")
    assert '   [null, 30.0, 20.0, 45.0, 0.0, 40.0],' in path.read_text().splitlines()
    assert formats.load_network(path) == toy
    size = _sizes.network_file_size(path)
    assert (size.n_devices, size.min_pairs) == (6, 14)


def test_a_small_network_file_keeps_a_value_a_line(tmp_path):
    """The bundled examples' layout: one value a line, byte for byte."""
    import networkx as nx

    from topokit.network.formats import network_to_graph

    net = load_example("siot100")
    path = save_network(net, tmp_path / "n.json")
    data = nx.node_link_data(network_to_graph(net), edges="edges")
    assert path.read_text() == json.dumps(data, indent=1) + "\n"


# ---------------------------------------------------------------------------------------------
# 3. Options named as the user wrote them
# ---------------------------------------------------------------------------------------------

def runs_table(folder: Path) -> Path:
    """A runs table shaped like ``topokit validate -o``'s, one target."""
    rng = np.random.default_rng(0)
    rows = 12
    frame = pd.DataFrame({
        "topology": [f"t{k % 6}" for k in range(rows)], "target": 0.9,
        "hitting_time": rng.uniform(10, 50, rows), "phi": rng.uniform(0, 1, rows),
        "local_iterate": rng.uniform(10, 60, rows),
        "measured_rounds": rng.uniform(20, 90, rows),
        "measured_time": rng.uniform(100, 900, rows), "rounds_run": 100.0,
    })
    for name in (*DEFAULT_FEATURES, "spectral_gap", "noise_multiplier"):
        frame[name] = rng.uniform(0.1, 1.0, rows)
    frame["target_closeness"] = 0.95  # one target: the workload predictor cannot vary with it
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "runs.parquet"
    frame.to_parquet(path, index=False)
    return path


TOY = ["--example", "toy"]
VALIDATE = ["validate", *TOY, "-t", "ndlf", "--trials", "1", "--rounds", "3"]

OPTION_CASES = [
    pytest.param(["design", *TOY, "--epsilon", "-1"], ("--epsilon must be",), "epsilon must",
                 id="design-epsilon"),
    pytest.param(["design", *TOY, "--target", "2"], ("--target must be",), "target must",
                 id="design-target"),
    pytest.param(["design", *TOY, "--ceiling", "2", "--target", "0.9"],
                 ("--ceiling must be", "leave the option out"), "None", id="design-ceiling"),
    pytest.param(["design", *TOY, "--probe-rounds", "-3"],
                 ("--probe-rounds must be", "leave the option out"), "None",
                 id="design-probe-rounds"),
    pytest.param(["design", *TOY, "--model", " ", "--target", "0.9"], ("--model must be",),
                 "model must", id="design-model"),
    pytest.param(["validate", *TOY, "-t", "ndlf", "--trials", "0"], ("--trials must be",),
                 "trials must", id="validate-trials"),
    pytest.param(["validate", *TOY, "-t", "ndlf", "--trials", "1", "--rounds", "0"],
                 ("--rounds must be",), "rounds must", id="validate-rounds"),
    pytest.param([*VALIDATE, "--targets", "2"], ("--targets must be",), "target must",
                 id="validate-targets"),
    pytest.param(["validate", *TOY, "-t", "ndlf,foo", "--trials", "1"],
                 ("--topologies: unknown topology spec 'foo'",), "Topology",
                 id="validate-topologies"),
    pytest.param(["probe", *TOY, "-k", "1", "-o", "{tmp}/probes"], ("-k must be",),
                 "k must", id="probe-k"),
    pytest.param(["probe", *TOY, "--predictor", "paper", "-o", "{tmp}/probes"],
                 ("use --predictor default",), "predictor=", id="probe-predictor"),
    pytest.param(["gfl", "run", "--preset", "foo"], ("--preset must be one of",),
                 "preset must", id="gfl-preset"),
    pytest.param(["calibrate", "{runs}", "-o", "{tmp}/p.json", "--cv", "1"],
                 ("--cv must be",), "cv must", id="calibrate-cv"),
    pytest.param(["calibrate", "{runs}", "-o", "{tmp}/p.json", "--target", "2"],
                 ("--target must be",), "target must", id="calibrate-target"),
    pytest.param(["calibrate", "{runs}", "-o", "{tmp}/p.json", "--seed", "99999999999"],
                 ("--seed must be",), "seed must", id="calibrate-seed"),
    pytest.param(["calibrate", "{runs}", "-o", "{tmp}/p.json", "--refit", "default",
                  "--prior-strength", "-1"], ("--prior-strength must be",), "prior_strength",
                 id="calibrate-prior-strength"),
    pytest.param(["calibrate", "{runs}", "-o", "{tmp}/p.json", "--refit", "paper"],
                 ("--refit refits a TrainingTimePredictor", "'paper'"), "calibrate(",
                 id="calibrate-refit-paper"),
    pytest.param(["calibrate", "{runs}", "-o", "{tmp}/p.json", "--refit", "nosuch"],
                 ("--refit: unknown predictor 'nosuch'",), "predictor=",
                 id="calibrate-refit-unknown"),
    pytest.param(["calibrate", "{runs}", "-o", "{tmp}/p.json", "--refit", "workload"],
                 ("--refit: the predictor's coefficients vary with", "refit 'default'"),
                 "varying_with", id="calibrate-refit-workload"),
]


@pytest.mark.parametrize(("args", "keywords", "python_text"), OPTION_CASES)
def test_a_library_error_names_the_option(tmp_path, args, keywords, python_text):
    runs = runs_table(tmp_path) if "{runs}" in args else None
    args = [arg.format(tmp=tmp_path, runs=runs) for arg in args]
    before = listing(tmp_path)
    line = check_one_line(args, *keywords)
    assert python_text not in line.replace(keywords[0], "")
    assert listing(tmp_path) == before


def test_the_audits_memory_refusal_names_the_options(monkeypatch):
    """privacy_audit's way out ("observers=...", "n_jobs") as the audit command's options."""
    monkeypatch.setattr("topokit._checks._physical_memory", lambda: 100.0)
    line = check_one_line(["audit", *TOY, "-T", "5"], "audit fewer --rounds",
                          "fewer --n-jobs")
    assert "observers=" not in line and "(n_jobs)" not in line


def test_the_bounded_designs_refusal_names_the_options():
    from topokit.cli._common import naming_options
    from topokit.cli.design import _OPTIMIZE_OPTIONS, _OPTIMIZE_PHRASES
    from topokit.errors import InvalidInputError

    with pytest.raises(InvalidInputError) as caught, \
            naming_options(_OPTIMIZE_OPTIONS, _OPTIMIZE_PHRASES):
        raise InvalidInputError("no design meets max_stranger_mu=0.1: every start leaves a "
                                "stranger exposed over 50 rounds; audit one with "
                                "topokit.privacy_audit to see which")
    assert str(caught.value) == ("no design meets --max-stranger-mu 0.1: every start leaves a "
                                 "stranger exposed over 50 rounds; audit one with topokit "
                                 "audit to see which")


def test_an_error_that_names_no_parameter_is_left_as_it_is():
    from topokit.cli._common import naming_options
    from topokit.errors import InputFileError

    error = InputFileError("runs.csv: column 'target' must be numeric")
    with pytest.raises(InputFileError) as caught, naming_options({"target": "--target"}):
        raise error
    assert caught.value is error


def test_an_error_after_the_progress_bar_started_is_one_line(tmp_path):
    """The bar erased on an error used to leave an empty line above it (stderr not a
    terminal): here validate's scheduler check, after the bar appeared."""
    check_one_line([*VALIDATE, "--scheduler", "localhost:1", "-o", str(tmp_path / "r.parquet")],
                   "cannot reach the Dask scheduler at localhost:1")
    assert listing(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# 4. A folder where a file goes
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def design_file(tmp_path_factory) -> Path:
    from topokit.cli import app

    from cli_errors import runner
    path = tmp_path_factory.mktemp("design") / "design.json"
    result = runner.invoke(app, ["design", *TOY, "-o", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.parametrize("command", [
    ["design", *TOY],
    [*VALIDATE],
    ["calibrate", "{runs}"],
    ["export", "{design}", "-f", "mixing-csv"],
    ["generate", "siot", "-n", "16"],
])
def test_a_folder_given_as_output_is_refused(tmp_path, design_file, command):
    runs = runs_table(tmp_path / "in") if "{runs}" in command else None
    command = [arg.format(runs=runs, design=design_file) for arg in command]
    folder = tmp_path / "out"
    folder.mkdir()
    check_one_line([*command, "-o", str(folder)], f"--output: {folder} is a directory",
                   "give a file name")
    assert listing(folder) == []


@pytest.mark.parametrize(("args", "keywords"), [
    (["design", *TOY, "--predictor", "{dir}"], ("--predictor: {dir} is a directory",)),
    (["analyze", *TOY, "--predictor", "{dir}"], ("--predictor: {dir} is a directory",)),
    ([*VALIDATE, "--predictor", "{dir}"], ("--predictor: {dir} is a directory",)),
    (["probe", *TOY, "--predictor", "{dir}", "-o", "{tmp}/probes"],
     ("--predictor: {dir} is a directory",)),
    (["calibrate", "{runs}", "--refit", "{dir}", "-o", "{tmp}/p.json"],
     ("--refit: {dir} is a directory", "predictor JSON file")),
    (["analyze", *TOY, "--topology", "{dir}"], ("--topology: {dir} is a directory",
                                                "topology JSON file")),
    (["audit", *TOY, "-T", "3", "--topology", "{dir}"], ("--topology: {dir} is a directory",)),
    (["export", "{dir}", "-f", "mixing-csv", "-o", "{tmp}/w.csv"],
     ("DESIGN: {dir} is a directory", "design JSON file")),
])
def test_a_folder_given_as_an_input_file_is_named(tmp_path, args, keywords):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    runs = runs_table(tmp_path) if "{runs}" in args else None
    fill = {"dir": folder, "tmp": tmp_path, "runs": runs}
    before = listing(tmp_path)
    line = check_one_line([arg.format(**fill) for arg in args],
                          *(keyword.format(**fill) for keyword in keywords))
    assert "Is a directory" not in line
    assert listing(tmp_path) == before


@pytest.mark.parametrize(("format", "output", "sidecar"), [
    ("mixing-npy", "w.npy", "w.nodes.json"),
    ("decentralizepy", "g.edges", "g.prediction.json"),
])
def test_a_folder_where_an_export_sidecar_goes_is_named(tmp_path, design_file, format, output,
                                                       sidecar):
    (tmp_path / sidecar).mkdir()
    line = check_one_line(["export", str(design_file), "-f", format, "-o",
                           str(tmp_path / output)],
                          f"--output: {tmp_path / sidecar}", f"which {format} writes beside "
                          f"{output}", "is a directory", "choose another --output")
    assert "path:" not in line
    assert listing(tmp_path) == [sidecar]


@pytest.mark.parametrize("beside", ["r.curves.parquet", "r.timings.parquet"])
def test_a_folder_where_validate_writes_beside_its_output_is_refused_first(tmp_path, beside):
    (tmp_path / beside).mkdir()
    check_one_line([*VALIDATE, "-o", str(tmp_path / "r.parquet")],
                   f"--output: {tmp_path / beside}", "beside r.parquet", "is a directory")
    assert listing(tmp_path) == [beside]  # no run trained, no parts folder


@pytest.mark.parametrize("taken", ["network.json", "ndlf.json"])
def test_a_folder_where_a_probe_file_goes_is_named(tmp_path, taken):
    probes = tmp_path / "probes"
    (probes / taken).mkdir(parents=True)
    line = check_one_line(["probe", *TOY, "-k", "2", "-o", str(probes)],
                          f"--output: {probes} holds a folder {taken}", "another folder")
    assert ".tmp" not in line
    assert listing(probes) == [taken]


@pytest.mark.parametrize(("error", "keywords"), [
    (IsADirectoryError(errno.EISDIR, "Is a directory", "/x/.out.json.123.abc.tmp", None,
                       "/x/out.json"), ("/x/out.json is a directory", "give a file path")),
    (FileExistsError(errno.EEXIST, "File exists", "/x/runs"),
     ("/x/runs already exists", "choose another path")),
    (NotADirectoryError(errno.ENOTDIR, "Not a directory", "/x/f.json/y"),
     ("/x/f.json/y: part of this path is a file",)),
    (PermissionError(errno.EACCES, "Permission denied", "/x/y"), ("Permission denied: /x/y",)),
])
def test_an_os_error_names_the_users_path_and_the_fix(error, keywords):
    text = os_error_text(error)
    assert ".tmp" not in text
    for keyword in keywords:
        assert keyword in text
