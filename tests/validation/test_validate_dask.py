"""``validate(scheduler=...)``: the same runs on a Dask cluster, and clear errors without one."""

import warnings

import pandas as pd
import pytest
from typer.testing import CliRunner

from topokit import load_example
from topokit.cli import app
from topokit.errors import InvalidInputError
from topokit.validation.core import validate

SMALL = dict(topologies="ndlf,dlfdp", trials=2, rounds=4, targets=(0.3,), seed=1)


def test_dask_cluster_gives_the_same_runs_and_resumes(tmp_path):
    distributed = pytest.importorskip("distributed")
    net = load_example("toy")
    local = validate(net, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # distributed's own start-up warnings
        with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                      dashboard_address=None) as cluster:
            on_dask = validate(net, scheduler=cluster.scheduler_address,
                               output=tmp_path / "runs.parquet", **SMALL)
            again = validate(net, scheduler=cluster.scheduler_address,
                             output=tmp_path / "runs.parquet", **SMALL)
    pd.testing.assert_frame_equal(on_dask.frame, local.frame)
    pd.testing.assert_frame_equal(again.frame, local.frame)


@pytest.mark.parametrize("address", ["", "tcp://host 8786", 8786])
def test_bad_scheduler_address_is_refused_before_work(address):
    with pytest.raises(InvalidInputError, match="Dask scheduler address"):
        validate(load_example("toy"), scheduler=address, **SMALL)


def test_unreachable_scheduler_says_so():
    pytest.importorskip("distributed")
    with pytest.raises(InvalidInputError, match="cannot reach the Dask scheduler"):
        validate(load_example("toy"), scheduler="tcp://127.0.0.1:9", **SMALL)


def test_cli_scheduler_option_errors_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["validate", "--example", "toy", "-o",
                                      str(tmp_path / "r.parquet"), "--scheduler", "a b"])
    assert result.exit_code == 2 and "scheduler" in result.output
    assert "Traceback" not in result.output
