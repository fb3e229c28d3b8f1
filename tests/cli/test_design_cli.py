"""``topokit design`` and ``topokit generate``: the CLI agrees with the Python API."""

import json

import pytest
from typer.testing import CliRunner

from topokit import autotag, evaluate, load_example, load_network, load_topology
from topokit.cli import app
from topokit.design.baselines import dlfdp, ndlf

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


@pytest.fixture(scope="module")
def toy_design(tmp_path_factory):
    folder = tmp_path_factory.mktemp("design")
    result = run("design", "--example", "toy", "--method", "autotag", "--json",
                 "-o", str(folder / "design.json"), "--plot", str(folder / "design.png"))
    assert result.exit_code == 0, result.output
    return folder, json.loads(result.output)


def test_design_json_matches_api_and_beats_baselines(toy_design):
    _, record = toy_design
    net = load_example("toy")
    expected = autotag(net)
    assert record["metrics"]["pseudo_time"] == pytest.approx(expected.metrics.pseudo_time)
    assert record["n"] == expected.n
    baselines = record["baselines"]
    assert baselines["NDLF"]["pseudo_time"] == pytest.approx(evaluate(net, ndlf(net)).pseudo_time)
    assert baselines["DLFDP"]["pseudo_time"] == pytest.approx(evaluate(net, dlfdp(net)).pseudo_time)
    for name in ("NDLF", "DLFDP"):
        assert record["metrics"]["pseudo_time"] <= baselines[name]["pseudo_time"] + 1e-9
    assert len(record["candidates"]) == net.n_devices + 1


def test_design_file_is_a_valid_topology_for_analyze(toy_design):
    folder, record = toy_design
    topology = load_topology(folder / "design.json")
    topology.validate(load_example("toy"), require_connected=True)
    analyzed = json.loads(run("analyze", "--example", "toy", "--topology",
                              str(folder / "design.json"), "--json").output)
    assert analyzed["pseudo_time"] == pytest.approx(record["metrics"]["pseudo_time"])
    png = (folder / "design.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("method", ["optimize", "autotag"])
def test_design_table_names_every_framework(method):
    result = runner.invoke(app, ["design", "--example", "toy", "--method", method],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    title = {"optimize": "optimize against", "autotag": "AutoTag against"}[method]
    for name in ("AutoTag", "NDLF", "DLFDP", "ERG", "DP devices", title):
        assert name in result.output


def test_design_with_calibrated_predictor_changes_choice(tmp_path):
    from topokit import GlobalIteratePredictor

    # A predictor that punishes DP heavily must pick a design without DP devices.
    predictor = GlobalIteratePredictor().fit([[10, 0], [10, 1], [20, 0]], [10, 1000, 13])
    predictor.save(tmp_path / "p.json")
    record = json.loads(run("design", "--example", "siot16", "--predictor",
                            str(tmp_path / "p.json"), "--json").output)
    assert record["topology"]["dp_devices"] == []


def test_design_with_the_mlp_predictor_is_optimize_s_design_under_it():
    from topokit import optimize

    record = json.loads(run("design", "--example", "toy", "--predictor", "mlp", "--seed", "3",
                            "--json").output)
    expected = optimize(load_example("toy"), predictor="mlp", seed=3)
    assert record["metrics"]["pseudo_time"] == pytest.approx(expected.metrics.pseudo_time,
                                                             rel=1e-12)
    assert sorted(map(sorted, record["topology"]["edges"])) == sorted(
        map(sorted, expected.topology.to_dict()["edges"]))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("design",), "either a NETWORK file or --example"),
        (("design", "--example", "nope"), "unknown example"),
        (("design", "--example", "toy", "--predictor", "missing.json"), "no such predictor file"),
        (("design", "--example", "toy", "--method", "greedy"), "--method must be one of"),
        (("design", "--example", "toy", "--predictor", "defualt"), "unknown predictor 'defualt'"),
        (("design", "--example", "toy", "--method", "autotag", "--predictor", "default"),
         "needs an eq. (15) predictor"),
        (("design", "--example", "toy", "--nep-patience", "3"), "--method autotag only"),
        (("design", "--example", "toy", "--ndlf-margin", "0.5"), "--ndlf-margin must be >= 1"),
        (("design", "--example", "toy", "--method", "autotag", "--ndlf-margin", "1.2"),
         "--method optimize only"),
        (("generate", "siot", "--devices", "0", "-o", "x.json"),
         "--devices must be an integer >= 1"),
    ],
)
def test_design_and_generate_user_errors(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_generate_siot_is_seeded_and_loadable(tmp_path):
    for name in ("a.json", "b.json"):
        assert run("generate", "siot", "--devices", "20", "--seed", "3", "-o",
                   str(tmp_path / name)).exit_code == 0
    first, second = load_network(tmp_path / "a.json"), load_network(tmp_path / "b.json")
    assert first == second and first.n_devices == 20
    first.require_connected()


def test_the_same_design_command_writes_the_same_bytes(tmp_path):
    # Timings are kept out of the design file: it holds results only, and a
    # topology with no connected snapshot writes null, never the string "inf".
    outputs = []
    for name in ("first.json", "second.json"):
        result = runner.invoke(app, ["design", "--example", "siot16", "--json",
                                     "-o", str(tmp_path / name), "--plot",
                                     str(tmp_path / "plot.png")])
        assert result.exit_code == 0, result.output
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]
    assert b'"inf"' not in outputs[0] and b"seconds" not in outputs[0]


def test_design_says_when_it_keeps_ndlf_and_the_margin_is_the_api_s():
    from topokit import load_example, optimize

    kept = run("design", "--example", "siot32", "--mixing", "lazy-metropolis")
    assert kept.exit_code == 0
    assert "kept NDLF (lazy-metropolis weights)" in kept.output
    searched = json.loads(run("design", "--example", "siot32", "--ndlf-margin", "1",
                              "--json").output)
    api = optimize(load_example("siot32"), seed=0, ndlf_margin=1.0)
    assert searched["stats"]["ndlf_margin"]["kept_ndlf"] is False
    assert searched["topology"] == json.loads(json.dumps(api.to_dict()["topology"]))


def test_design_table_reads_at_80_columns():
    from typer.testing import CliRunner

    from topokit.cli import app

    result = CliRunner().invoke(app, ["design", "--example", "toy"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert "…" not in result.stdout
    assert any(line.startswith("predicted_global_iterate") for line in lines)
    assert any(line.startswith("exposed_stranger_pairs") for line in lines)


def test_a_design_interrupted_while_auditing_is_written_with_the_audits_done(tmp_path,
                                                                            monkeypatch):
    """Ctrl-C (a real SIGINT) during NDLF's audit: the design and optimize's audited column
    are written, the line says what is missing, and the status is 130."""
    import os
    import signal

    from topokit.design.report import StrangerAudit
    from topokit.design.result import load_design

    audited = StrangerAudit.columns
    calls = []

    def interrupted_second(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt here
        return audited(self, *args, **kwargs)

    monkeypatch.setattr(StrangerAudit, "columns", interrupted_second)
    output = tmp_path / "design.json"
    result = run("design", "--example", "toy", "-o", str(output))
    assert result.exit_code == 130, result.output
    record = json.loads(output.read_text())
    assert list(record["baselines"]) == ["optimize"]
    assert "exposed_stranger_pairs" in record["baselines"]["optimize"]
    design = load_design(output)  # a design file as any other, the one made uninterrupted
    assert design.metrics.pseudo_time == pytest.approx(331.273, abs=1e-3)
    said = [line for line in result.output.splitlines() if line.startswith("interrupted")]
    assert len(said) == 1 and "NDLF, DLFDP, ERG" in said[0] and str(output) in said[0]
