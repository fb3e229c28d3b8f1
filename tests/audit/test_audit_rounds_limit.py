"""An audit too long to finish is refused up front, naming the option and the limit."""

from __future__ import annotations

import time

import pytest

from topokit import InvalidInputError, load_example, optimize, privacy_audit
from topokit.audit.core import MAX_AUDIT_ROUNDS, check_audit_rounds

from cli_errors import check_one_line


@pytest.mark.parametrize("args, option", [
    (["design", "--example", "toy", "--audit-rounds", "1000000000"], "--audit-rounds"),
    (["design", "--example", "toy", "--audit-rounds", "1000000000",
      "--max-stranger-mu", "0.2"], "--audit-rounds"),
    (["design", "--example", "toy", "--audit-rounds", "3000", "--audit-model", "dsgd"],
     "--audit-rounds"),
    (["audit", "--example", "toy", "--rounds", "3000", "--model", "dsgd"], "--rounds"),
    (["audit", "--example", "toy", "--rounds", "1000000000"], "--rounds"),
    (["validate", "--example", "toy", "--audit-rounds", "1000000000"], "--audit-rounds"),
])
def test_the_cli_refuses_an_audit_beyond_its_limit_before_any_work(args, option):
    started = time.perf_counter()
    line = check_one_line(args, option, "give at most")
    assert time.perf_counter() - started < 30  # before the design, not after it
    assert "_" not in line.split(":", 1)[1].split(" is more")[0]  # the CLI's name, not Python's


def test_the_library_refuses_the_same_with_its_parameter_names():
    toy = load_example("toy")
    with pytest.raises(InvalidInputError, match="audit_rounds 200000"):
        optimize(toy, max_stranger_mu=0.2, audit_rounds=200_000)
    with pytest.raises(InvalidInputError, match="rounds 1001 is more than the 1000"):
        privacy_audit(toy, rounds=1001, model="dsgd")


def test_the_limit_itself_is_accepted():
    assert check_audit_rounds(MAX_AUDIT_ROUNDS["dsgd"], "dsgd") == 1000
    assert check_audit_rounds(0, "gossip", "--audit-rounds", low=0) == 0
