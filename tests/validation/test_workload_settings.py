"""A workload stands for its settings where runs are described: probes and calibration."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from topokit import Workload, load_example, load_predictor
from topokit.cli import app
from topokit.design.time_predictor import predictor_at_workload
from topokit.errors import InvalidInputError
from topokit.validation.calibration import feature_settings_for
from topokit.validation.probes import probe_index, probe_topologies

runner = CliRunner()


def test_a_workload_gives_the_predictors_settings_at_it():
    workload = Workload(epsilon=0.5, batch_size=32, local_steps=2)
    settings = feature_settings_for(workload, load_predictor("default"))
    assert settings == predictor_at_workload(load_predictor("default"), workload).feature_settings
    assert settings.batch_size == 32 and settings.local_steps == 2
    assert settings.noise_multiplier == workload.resolved_noise_multiplier
    assert feature_settings_for(None) is None


def test_probes_for_a_workload_are_described_at_its_noise():
    net = load_example("siot16")
    workload = Workload(epsilon=0.5)
    probes = probe_topologies(net, 4, settings=workload, seed=0)
    told = probe_index(net, probes, settings=workload).set_index("name")
    plain = probe_index(net, probes).set_index("name")
    dp = told.index[told["n_dp_devices"] > 0]
    # More noise per DP device (epsilon 0.5 < 1): every probe with DP devices feels more.
    assert (told.loc[dp, "noise_felt"] > plain.loc[dp, "noise_felt"]).all()
    no_dp = told.index[told["n_dp_devices"] == 0]
    pd.testing.assert_series_equal(told.loc[no_dp, "noise_felt"], plain.loc[no_dp, "noise_felt"])


def test_a_settings_object_of_another_type_is_one_line():
    with pytest.raises(InvalidInputError, match="FeatureSettings, a Workload or None"):
        probe_topologies(load_example("toy"), 3, settings={"epsilon": 1})


def test_probe_cli_takes_a_workload(tmp_path):
    path = tmp_path / "workload.json"
    Workload(epsilon=0.5).save(path)
    result = runner.invoke(app, ["probe", "-e", "toy", "-k", "3", "--workload", str(path),
                                 "-o", str(tmp_path / "probes"), "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["probes"]) == 3
