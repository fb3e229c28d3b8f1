"""Atomic outputs: replaced together, permissions kept, leftovers of killed runs removed,
errors that name the user's path; and the one JSON encoding of non-finite numbers."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from topokit._io import atomic_path, atomic_paths, atomic_write_text, dumps_json, jsonable
from topokit.errors import InvalidInputError


def test_several_outputs_are_replaced_together_or_not_at_all(tmp_path):
    table, curves = tmp_path / "runs.parquet", tmp_path / "runs.curves.parquet"
    table.write_text("old table")
    curves.write_text("old curves")
    with pytest.raises(RuntimeError), atomic_paths(table, curves) as (new_table, new_curves):
        new_table.write_text("new table")
        raise RuntimeError("the second file failed")
    assert (table.read_text(), curves.read_text()) == ("old table", "old curves")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.curves.parquet", "runs.parquet"]
    with atomic_paths(table, curves) as (new_table, new_curves):
        new_table.write_text("new table")
        new_curves.write_text("new curves")
    assert (table.read_text(), curves.read_text()) == ("new table", "new curves")


def test_a_replaced_file_keeps_its_permissions_and_a_new_one_follows_the_umask(tmp_path):
    shared = tmp_path / "shared.json"
    shared.write_text("{}")
    shared.chmod(0o644)
    atomic_write_text(shared, "[]")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644
    previous = os.umask(0o022)
    try:
        fresh = atomic_write_text(tmp_path / "fresh.json", "[]")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644


def test_temporary_files_of_a_killed_writer_are_removed_by_the_next_write(tmp_path):
    target = tmp_path / "design.json"
    # A child process creates its temporary file and dies before renaming it.
    script = (
        "import os, sys\n"
        "from topokit._io import atomic_path\n"
        "with atomic_path(sys.argv[1]) as tmp:\n"
        "    tmp.write_text('half')\n"
        "    os._exit(1)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(target)], check=False)
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and not target.exists()
    atomic_write_text(target, "whole")
    assert [p.name for p in tmp_path.iterdir()] == ["design.json"]
    assert target.read_text() == "whole"


def test_a_live_writers_temporary_file_is_left_alone(tmp_path):
    target = tmp_path / "out.txt"
    with atomic_path(target) as mine:
        mine.write_text("in progress")
        atomic_write_text(target, "other writer")  # same process: its pid is alive
        assert mine.exists()
    assert target.read_text() == "in progress"


def test_a_file_where_a_folder_should_be_is_named_in_one_clear_error(tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    with pytest.raises(InvalidInputError, match="results is a file, not a folder"):
        atomic_write_text(blocker / "out.json", "{}")


def test_write_errors_name_the_users_path_not_the_hidden_temporary_file(tmp_path):
    target = tmp_path / "out.bin"
    with pytest.raises(OSError) as caught, atomic_path(target) as tmp:
        raise FileNotFoundError(2, "No such file or directory", str(tmp))
    assert caught.value.filename == str(target)


def test_non_finite_numbers_are_written_as_null_everywhere():
    payload = {"H": math.inf, "gap": np.float64("nan"), "trace": np.array([1.0, -np.inf]),
               "nested": ({"x": np.float32(np.inf)},), "n": np.int64(4)}
    text = dumps_json(payload)
    assert json.loads(text) == {"H": None, "gap": None, "trace": [1.0, None],
                                "nested": [{"x": None}], "n": 4}
    assert "inf" not in text.lower() and "nan" not in text.lower()
    assert jsonable({1: 2.5}) == {"1": 2.5}
