"""topokit._jobs.run_resumable: parts, resumption, job identity, atomic tables, workers."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from topokit._jobs import check_n_jobs, part_path, parts_dir_of, run_resumable
from topokit.errors import InvalidInputError

TASKS = list(range(5))
DESCRIPTION = {"kind": "test", "tasks": TASKS}


def squares(task: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two tables per task: one row of numbers, and `task` rows of a curve."""
    row = pd.DataFrame({"task": [task], "square": [task * task]})
    steps = list(range(task))
    curve = pd.DataFrame({"task": task, "step": steps, "value": [0.5 * s for s in steps]})
    return row, curve


class _Interrupted(Exception):
    pass


class Counting:
    """A worker that records its tasks and fails (like a Ctrl-C) on the task ``fail_at``."""

    def __init__(self, fail_at: int | None = None, check=None):
        self.calls: list[int] = []
        self.fail_at = fail_at
        self.check = check

    def __call__(self, task: int):
        if self.check is not None:
            self.check()
        if task == self.fail_at:
            raise _Interrupted
        self.calls.append(task)
        return squares(task)


def _run(worker, outputs, **kwargs):
    return run_resumable(TASKS, worker, tables=("rows", "curve"), outputs=outputs,
                         description=kwargs.pop("description", DESCRIPTION), **kwargs)


@pytest.fixture
def outputs(tmp_path):
    return (tmp_path / "rows.parquet", tmp_path / "curve.parquet")


def _expected() -> list[pd.DataFrame]:
    frames = [squares(task) for task in TASKS]
    return [pd.concat([f[i] for f in frames], ignore_index=True) for i in range(2)]


def test_in_memory_without_outputs(tmp_path):
    seen = []
    job = run_resumable(TASKS, squares, tables=("rows", "curve"),
                        progress=lambda done, total: seen.append((done, total)))
    rows, curve = _expected()
    pd.testing.assert_frame_equal(job.tables["rows"], rows)
    pd.testing.assert_frame_equal(job.tables["curve"], curve)
    assert list(job.tables) == ["rows", "curve"]
    assert (job.n_run, job.n_resumed) == (5, 0)
    assert seen == [(k, 5) for k in range(6)]
    assert list(tmp_path.iterdir()) == []


def test_several_tables_are_written_and_the_parts_removed(outputs):
    job = _run(squares, outputs)
    for path, expected, name in zip(outputs, _expected(), ("rows", "curve"), strict=True):
        pd.testing.assert_frame_equal(pd.read_parquet(path), expected)
        pd.testing.assert_frame_equal(job.tables[name], expected)
    assert not parts_dir_of(outputs[0]).exists()
    assert parts_dir_of(outputs[0]).name == "rows.parquet.parts"


def test_resume_skips_finished_parts(outputs):
    worker = Counting(fail_at=3)
    with pytest.raises(_Interrupted):
        _run(worker, outputs)
    assert worker.calls == [0, 1, 2]
    parts = parts_dir_of(outputs[0])
    assert sorted(p.name for p in parts.iterdir()) == [
        "curve-000000.parquet", "curve-000001.parquet", "curve-000002.parquet",
        "manifest.json",
        "rows-000000.parquet", "rows-000001.parquet", "rows-000002.parquet",
    ]
    assert json.loads((parts / "manifest.json").read_text()) == DESCRIPTION

    worker = Counting()
    seen = []
    job = _run(worker, outputs, progress=lambda done, total: seen.append(done))
    assert worker.calls == [3, 4]  # only the pieces that had not finished
    assert (job.n_run, job.n_resumed) == (2, 3)
    assert seen == [3, 4, 5]
    for path, expected in zip(outputs, _expected(), strict=True):
        pd.testing.assert_frame_equal(pd.read_parquet(path), expected)
    assert not parts.exists()


def test_a_piece_counts_as_finished_only_with_its_main_part(outputs):
    worker = Counting(fail_at=2)
    with pytest.raises(_Interrupted):
        _run(worker, outputs)
    part_path(parts_dir_of(outputs[0]), "rows", 1).unlink()  # as if killed mid-piece
    worker = Counting()
    _run(worker, outputs)
    assert worker.calls == [1, 2, 3, 4]


def test_outputs_appear_only_when_every_part_is_done(outputs):
    def no_output_yet():
        assert not any(path.exists() for path in outputs)

    worker = Counting(fail_at=4, check=no_output_yet)
    with pytest.raises(_Interrupted):
        _run(worker, outputs)
    assert not any(path.exists() for path in outputs)
    _run(Counting(check=no_output_yet), outputs)
    assert all(path.exists() for path in outputs)


def test_a_different_job_on_the_same_output_is_refused(outputs):
    with pytest.raises(_Interrupted):
        _run(Counting(fail_at=1), outputs)
    other = {**DESCRIPTION, "kind": "other"}
    worker = Counting()
    with pytest.raises(InvalidInputError, match="different job"):
        _run(worker, outputs, description=other)
    assert worker.calls == []
    assert part_path(parts_dir_of(outputs[0]), "rows", 0).exists()  # not someone else's to delete
    # resume=False discards the interrupted pieces and starts the other job afresh.
    _run(worker, outputs, description=other, resume=False)
    assert worker.calls == TASKS


def test_failure_before_any_piece_leaves_no_parts_folder(tmp_path, outputs):
    with pytest.raises(_Interrupted):
        _run(Counting(fail_at=0), outputs)
    assert list(tmp_path.iterdir()) == []


def test_parallel_workers_give_the_same_tables(outputs):
    job = _run(squares, outputs, n_jobs=2)
    for name, expected in zip(("rows", "curve"), _expected(), strict=True):
        pd.testing.assert_frame_equal(job.tables[name], expected)


def test_bad_arguments():
    with pytest.raises(InvalidInputError, match="n_jobs"):
        run_resumable(TASKS, squares, n_jobs=0)
    with pytest.raises(InvalidInputError, match="n_jobs"):
        check_n_jobs(1.5)
    assert check_n_jobs(-1) == -1
    with pytest.raises(TypeError, match="one per table"):
        run_resumable(TASKS, lambda task: squares(task)[0])
    with pytest.raises(ValueError, match="one path per table"):
        run_resumable(TASKS, squares, tables=("rows", "curve"), outputs=("a.parquet",),
                      description={})


def test_a_truncated_part_is_recomputed_not_a_traceback(outputs):
    with pytest.raises(_Interrupted):
        _run(Counting(fail_at=3), outputs)
    damaged = part_path(parts_dir_of(outputs[0]), "rows", 1)
    damaged.write_bytes(damaged.read_bytes()[:20])  # a copy cut short
    worker = Counting()
    _run(worker, outputs)
    assert worker.calls == [1, 3, 4]
    for path, expected in zip(outputs, _expected(), strict=True):
        pd.testing.assert_frame_equal(pd.read_parquet(path), expected)


def test_a_corrupt_manifest_is_one_clear_error_with_the_way_out(outputs):
    with pytest.raises(_Interrupted):
        _run(Counting(fail_at=2), outputs)
    (parts_dir_of(outputs[0]) / "manifest.json").write_text('{"kind": "te')
    with pytest.raises(InvalidInputError, match="unreadable.*resume=False"):
        _run(Counting(), outputs)
    worker = Counting()
    _run(worker, outputs, resume=False)
    assert worker.calls == TASKS


def test_a_failed_final_write_keeps_the_old_outputs_together(outputs, monkeypatch):
    _run(squares, outputs)
    before = [path.read_bytes() for path in outputs]
    calls = []
    original = pd.DataFrame.to_parquet

    def fail_on_last(self, *args, **kwargs):
        # 5 pieces x 2 part files, then the two outputs: the 12th write is the last output.
        calls.append(1)
        if len(calls) == 12:
            raise OSError(28, "No space left on device")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", fail_on_last)
    def other_numbers(task):
        return tuple(frame * 2 for frame in squares(task))

    with pytest.raises(OSError):
        run_resumable(TASKS, other_numbers, tables=("rows", "curve"), outputs=outputs,
                      description={**DESCRIPTION, "kind": "again"})
    assert len(calls) == 12
    assert [path.read_bytes() for path in outputs] == before
