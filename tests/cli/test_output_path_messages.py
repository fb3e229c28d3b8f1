"""An output that cannot be written names the user's path and the fix, never a temp file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_errors import check_one_line


def test_an_unwritable_output_names_the_users_path():
    line = check_one_line(["design", "--example", "toy", "-o", "/proc/topokit-test.json"],
                          "/proc/topokit-test.json")
    assert ".tmp" not in line


def test_a_file_where_the_parts_folder_goes_is_named_with_the_fix(tmp_path: Path):
    (tmp_path / "runs.parquet.parts").write_text("not a folder")
    check_one_line(["validate", "--example", "toy", "-t", "ndlf", "--trials", "1", "--rounds",
                    "2", "-o", str(tmp_path / "runs.parquet")],
                   "runs.parquet.parts is a file", "choose another output path")


@pytest.mark.parametrize("command", [["design", "--example", "toy"],
                                     ["validate", "--example", "toy", "-t", "ndlf"]])
def test_a_folder_given_as_output_is_refused(tmp_path: Path, command):
    check_one_line([*command, "-o", str(tmp_path)], "is a directory", "give a file name")
