"""``topokit design --schedules``: the field's schedules judged beside the design, as
consider_schedules judges them, in the design's JSON and one printed line."""

from __future__ import annotations

import json

import pytest

from topokit import load_design, save_network
from topokit.cli import app
from topokit.design.schedules import EXTRAPOLATION_NOTE, consider_schedules
from topokit.network.siot import siot

from cli_errors import WIDE, check_one_line, runner


@pytest.fixture(scope="module")
def network_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("schedules") / "net.json"
    save_network(siot(16, seed=3), path)
    return path


def test_the_design_records_and_prints_the_schedules_as_the_api_judges_them(network_file,
                                                                          tmp_path):
    output = tmp_path / "design.json"
    result = runner.invoke(app, ["design", str(network_file), "--schedules", "-o", str(output)],
                           env=WIDE)
    assert result.exit_code == 0, result.output
    recorded = json.loads(output.read_text())["stats"]["schedules"]
    design = load_design(output)
    expected = consider_schedules(siot(16, seed=3), design, seed=0).to_dict()
    # The file's numbers are the API's for the design it holds (the JSON rounds nothing).
    assert recorded["times"] == expected["times"]
    assert recorded["design_time"] == expected["design_time"]
    assert recorded["chosen"] == expected["chosen"] and recorded["note"] == EXTRAPOLATION_NOTE
    assert "schedules (predicted, an extrapolation" in result.output
    assert recorded["why"][1:] in " ".join(result.output.split())


@pytest.mark.parametrize("extra, words", [
    (["--method", "autotag"], ["--schedules", "--method optimize"]),
    (["--max-stranger-mu", "0.5"], ["--schedules", "--max-stranger-mu"]),
])
def test_schedules_with_an_option_it_cannot_go_with_is_one_line(network_file, extra, words):
    check_one_line(["design", str(network_file), "--schedules", *extra], *words)
