"""The docstring examples of analyses/_common.py, which pytest's --doctest-modules does not
collect (its testpaths are tests/ and topokit/)."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analyses"))

import _common  # noqa: E402


def test_the_examples_of_the_analysis_helpers_run():
    results = doctest.testmod(_common)
    assert results.attempted > 0  # the examples were found
    assert results.failed == 0
