"""``--scheduler`` runs that cannot fail silently (issue 43, item 4).

One real cluster for the module, started as a user starts one: a ``dask scheduler``
process and a ``dask worker`` process with ONE thread, whose working directory is a
folder of its own.  The tests run the commands from another folder (``monkeypatch.chdir``)
with relative paths: the results must be those of a local run, every file must land beside
the output the user named (nothing in the worker's folder), and the work must have run on
the worker (joblib's Dask backend ran everything in the client on a one-thread cluster).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest
from typer.testing import CliRunner

from topokit import load_example, save_network
from topokit._jobs import parts_dir_of, run_resumable
from topokit.cli import app
from topokit.testing.processes import free_port

from cli_errors import WIDE, check_one_line

distributed = pytest.importorskip("distributed")

runner = CliRunner()
#: Tasks are keyed ``topokit-piece-<job>-<k>`` by topokit._jobs: the scheduler's log names them.
PIECE_PREFIX = "topokit-piece-"


class Cluster(NamedTuple):
    """The module's cluster: its address, the worker's working directory and process id."""

    address: str
    worker_home: Path
    worker_pid: int
    client: distributed.Client  # the test's own, for asking the scheduler what ran


def _start(args: list[str], cwd: Path, log: Path) -> subprocess.Popen:
    """A ``dask`` command in ``cwd``, its output in ``log`` (read when the start fails)."""
    dask = Path(sys.executable).with_name("dask")
    return subprocess.Popen([str(dask), *args], cwd=cwd, stdout=log.open("w"),
                            stderr=subprocess.STDOUT)


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A scheduler and one single-threaded worker process in a working directory of its own."""
    logs = tmp_path_factory.mktemp("dask-logs")
    worker_home = tmp_path_factory.mktemp("worker-home")
    scratch = tmp_path_factory.mktemp("worker-scratch")  # Dask's own files, not in its cwd
    address = f"tcp://127.0.0.1:{free_port()}"
    scheduler = _start(["scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                        "--no-dashboard"], logs, logs / "scheduler.log")
    worker = None
    try:
        worker = _start(["worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                         "--local-directory", str(scratch)], worker_home, logs / "worker.log")
        client = _connect(address, logs)
        try:
            client.wait_for_workers(1, timeout=60)
            (pid,) = client.run(os.getpid).values()
            assert pid == worker.pid  # no nanny: the worker is the process started here
            yield Cluster(address, worker_home, pid, client)
        finally:
            client.close()
    finally:
        for process in (worker, scheduler):
            if process is not None:
                _stop(process)


def _connect(address: str, logs: Path, seconds: float = 60) -> distributed.Client:
    """A client of the scheduler once it listens (it takes a few seconds to start)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return distributed.Client(address, timeout="5s")
        except (OSError, TimeoutError):
            if time.monotonic() > deadline:
                raise AssertionError((logs / "scheduler.log").read_text()) from None
            time.sleep(0.3)


def _pieces_done(cluster: Cluster) -> set[str]:
    """Keys of topokit's tasks that a worker finished (processing -> memory on the scheduler:
    only a worker's report makes that transition)."""
    def done(dask_scheduler):
        return sorted({str(key) for key, start, finish, *_ in dask_scheduler.transition_log
                       if str(key).startswith(PIECE_PREFIX) and start == "processing"
                       and finish == "memory"})

    return set(cluster.client.run_on_scheduler(done))


def _network_folder(home: Path) -> None:
    """``home/nets``: a network with its topology and a social graph."""
    toy = load_example("toy")
    save_network(toy, home / "nets" / "toy.json")
    save_network(toy.with_topology(None), home / "nets" / "social.graphml")


def test_a_relative_folder_on_the_cluster_gives_the_local_table(cluster, tmp_path,
                                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    _network_folder(tmp_path)
    before = _pieces_done(cluster)
    on_cluster = runner.invoke(app, ["batch", "nets", "-o", "cluster.parquet", "--chunk-size",
                                     "1", "--scheduler", cluster.address], env=WIDE)
    assert on_cluster.exit_code == 0, on_cluster.output
    local = runner.invoke(app, ["batch", "nets", "-o", "local.parquet", "--chunk-size", "1"],
                          env=WIDE)
    assert local.exit_code == 0, local.output
    table = pd.read_parquet(tmp_path / "cluster.parquet")
    assert table["error"].isna().all(), table["error"].tolist()
    pd.testing.assert_frame_equal(table, pd.read_parquet(tmp_path / "local.parquet"))
    assert len(_pieces_done(cluster) - before) == 2  # both chunks ran on the worker
    # The checkpoints lived beside the output, here, and are gone; the worker wrote nothing.
    assert not parts_dir_of(tmp_path / "cluster.parquet").exists()
    assert list(cluster.worker_home.iterdir()) == []


def test_a_batch_whose_rows_all_fail_exits_2_in_one_line(cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nets").mkdir()
    for name in ("a.json", "b.json", "c.json"):
        (tmp_path / "nets" / name).write_text("{")
    line = check_one_line(["batch", "nets", "-o", "out.parquet", "--scheduler",
                           cluster.address], "all 3 networks failed: first error:",
                          "malformed JSON", "error column", "out.parquet")
    assert "a.json" in line  # the first file's error
    assert pd.read_parquet(tmp_path / "out.parquet")["error"].notna().all()  # the table says why
    assert list(cluster.worker_home.iterdir()) == []


def test_one_failed_row_of_several_is_reported_and_exits_0(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _network_folder(tmp_path)
    (tmp_path / "nets" / "broken.json").write_text("{")
    result = runner.invoke(app, ["batch", "nets", "-o", "out.parquet"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "1 of 3 files could not be analysed" in result.output
    assert "broken.json" in result.output


def test_files_the_workers_cannot_see_are_named_as_such():
    from topokit.cli.batch import _refuse_if_all_failed
    from topokit.errors import InvalidInputError

    table = pd.DataFrame({"file": ["a.json"], "error": ["no such file: /data/nets/a.json"]})
    with pytest.raises(InvalidInputError, match="all 1 networks failed.*shared filesystem"):
        _refuse_if_all_failed(table, Path("o.parquet"), "tcp://127.0.0.1:8786")
    with pytest.raises(InvalidInputError) as local:
        _refuse_if_all_failed(table, Path("o.parquet"), None)
    assert "shared filesystem" not in str(local.value)


def test_a_one_thread_cluster_runs_every_task_on_its_worker(cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def where(task: int) -> tuple[pd.DataFrame]:  # nested: cloudpickle sends it by value
        return (pd.DataFrame({"task": [task], "pid": [os.getpid()]}),)

    job = run_resumable(list(range(4)), where, outputs=("pids.parquet",),
                        description={"kind": "pids"}, scheduler=cluster.address)
    pids = set(job.tables["part"]["pid"])
    assert pids == {cluster.worker_pid} and os.getpid() not in pids
    assert job.tables["part"]["task"].tolist() == [0, 1, 2, 3]
    assert (tmp_path / "pids.parquet").exists() and not parts_dir_of("pids.parquet").exists()
    assert list(cluster.worker_home.iterdir()) == []


def test_workers_that_cannot_import_the_tasks_code_say_so_in_one_line(cluster):
    from topokit.errors import InvalidInputError

    def needs_a_missing_module(task: int) -> tuple[pd.DataFrame]:
        import topokit_test_module_nowhere  # noqa: F401  (installed on no worker)

    with pytest.raises(InvalidInputError, match="cannot import what the tasks need .*"
                       "topokit_test_module_nowhere"):
        run_resumable([0], needs_a_missing_module, scheduler=cluster.address)


def test_an_interrupted_run_on_the_cluster_resumes_from_parts_here(cluster, tmp_path,
                                                                   monkeypatch):
    monkeypatch.chdir(tmp_path)

    def square(task: int) -> tuple[pd.DataFrame]:
        return (pd.DataFrame({"task": [task], "square": [task * task]}),)

    def failing_at_2(task: int) -> tuple[pd.DataFrame]:
        if task == 2:
            raise ValueError("piece 2 fails")
        return square(task)

    run = dict(outputs=("sq.parquet",), description={"kind": "squares"},
               scheduler=cluster.address)
    with pytest.raises(ValueError, match="piece 2 fails"):
        run_resumable(list(range(5)), failing_at_2, **run)
    parts = tmp_path / "sq.parquet.parts"
    # One thread runs the tasks in the order given: 0 and 1 were back before 2 failed.
    assert {"part-000000.parquet", "part-000001.parquet"} <= {p.name for p in parts.iterdir()}
    assert not (tmp_path / "sq.parquet").exists()
    job = run_resumable(list(range(5)), square, **run)
    assert job.n_resumed >= 2 and job.n_resumed + job.n_run == 5
    assert job.tables["part"]["square"].tolist() == [0, 1, 4, 9, 16]
    assert not parts.exists()
    assert list(cluster.worker_home.iterdir()) == []


def test_validate_with_relative_outputs_writes_them_here(cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = _pieces_done(cluster)
    result = runner.invoke(app, ["validate", "--example", "toy", "-t", "ndlf", "--trials", "1",
                                 "--rounds", "2", "--audit-rounds", "0", "-o", "runs.parquet",
                                 "--scheduler", cluster.address], env=WIDE)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "runs.parquet").exists() and (tmp_path / "runs.curves.parquet").exists()
    assert not parts_dir_of(tmp_path / "runs.parquet").exists()
    assert len(_pieces_done(cluster) - before) == 1
    assert list(cluster.worker_home.iterdir()) == []


def test_a_scheduler_without_workers_is_refused_in_one_line(tmp_path, monkeypatch):
    import topokit._jobs as jobs

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(jobs, "WORKER_TIMEOUT", 0.5)  # not 10 s of waiting in a test
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # distributed's own start-up warnings (a busy port)
        empty = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp",
                                         host="127.0.0.1", dashboard_address=None)
    with empty:
        check_one_line(["batch", "--random", "n=8,m=12,count=2", "-o", "never.parquet",
                        "--scheduler", empty.scheduler_address], "has no workers",
                       "dask worker")
    assert list(tmp_path.iterdir()) == []  # no output, no parts folder
