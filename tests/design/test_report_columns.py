"""The report beside a design: every topology's metrics and stranger audit, with progress."""

from __future__ import annotations

import pytest

from topokit import load_example, privacy_audit
from topokit.design.baselines import dlfdp, ndlf
from topokit.design.report import StrangerAudit, metric_columns
from topokit.design.time_predictor import load_predictor


@pytest.fixture(scope="module")
def toy():
    return load_example("toy")


def test_progress_counts_every_observer_of_every_audit_once_in_order(toy):
    topologies = {"NDLF": ndlf(toy), "DLFDP": dlfdp(toy)}
    reports = []
    columns = metric_columns(toy, topologies, load_predictor("default"),
                             audit=StrangerAudit(20, 3.731), progress=lambda *r: reports.append(r))
    total = 2 * toy.n_devices
    assert [done for done, _ in reports] == list(range(1, total + 1))
    assert {size for _, size in reports} == {total}
    # The columns are the audits' own numbers, with or without a progress callback.
    for name, topology in topologies.items():
        summary = privacy_audit(toy, topology, rounds=20, noise_multiplier=3.731).summary()
        assert columns[name]["exposed_stranger_pairs"] == summary["exposed_stranger_pairs"]
        assert columns[name]["stranger_mu_max"] == summary["stranger_mu_max"]


def test_no_audit_reports_no_progress(toy):
    reports = []
    columns = metric_columns(toy, {"NDLF": ndlf(toy)}, load_predictor("default"),
                             audit=StrangerAudit(0, 3.731), progress=lambda *r: reports.append(r))
    assert reports == [] and "stranger_mu_max" not in columns["NDLF"]
