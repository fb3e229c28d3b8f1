"""The docstring examples of the analysis scripts' shared helpers and of the two scripts
built on topokit.validation, which pytest's --doctest-modules does not collect (its
testpaths are tests/ and topokit/)."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["_common", "design_benchmark", "predictor_corpus"])
def test_the_examples_of_the_analysis_helpers_run(name):
    results = doctest.testmod(importlib.import_module(f"analyses.{name}"))
    assert results.attempted > 0  # the examples were found
    assert results.failed == 0
