"""Batch analysis: correctness against single evaluations, resumption, atomic output, Dask."""

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from topokit import evaluate, load_example, save_network
from topokit.design.batch import (
    RandomEnsemble,
    batch_analyze,
    parse_ensemble,
    random_connected_adjacency,
)
from topokit.errors import InvalidInputError
from topokit.testing import naive_kernels as naive


def test_rows_match_reference_computation(tmp_path):
    table = batch_analyze(RandomEnsemble(n=10, m=15, count=30, seed=5), tmp_path / "t.parquet",
                          chunk_size=7)
    assert table["index"].tolist() == list(range(30))
    for row in table.itertuples():
        adjacency = random_connected_adjacency(10, 15, np.random.default_rng([5, row.index]))
        graph = nx.from_numpy_array(adjacency)
        assert nx.is_connected(graph) and graph.number_of_edges() == 15
        hitting, gap = naive.reference_metrics(graph)
        assert row.hitting_time == pytest.approx(hitting, rel=1e-9)
        assert row.spectral_gap == pytest.approx(gap, abs=1e-9)
        degrees = np.array([d for _, d in graph.degree()])
        assert row.degree_deviation == pytest.approx(np.abs(degrees - 3).mean())


def test_same_rows_whatever_the_chunking_and_workers(tmp_path):
    ensemble = RandomEnsemble(n=12, m=20, count=25, seed=1)
    first = batch_analyze(ensemble, tmp_path / "a.parquet", chunk_size=25)
    second = batch_analyze(ensemble, tmp_path / "b.parquet", chunk_size=4, n_jobs=2)
    pd.testing.assert_frame_equal(first, second)


def test_resume_skips_finished_chunks(tmp_path, monkeypatch):
    import topokit.design.batch as batch_module

    ensemble = RandomEnsemble(n=8, m=10, count=30, seed=2)
    output = tmp_path / "out.parquet"
    calls = []
    original = batch_module._ensemble_chunk

    def failing(ens, start, stop):
        calls.append(start)
        if start == 20:
            raise KeyboardInterrupt  # a Ctrl-C in the middle of the run
        return original(ens, start, stop)

    monkeypatch.setattr(batch_module, "_ensemble_chunk", failing)
    with pytest.raises(KeyboardInterrupt):
        batch_analyze(ensemble, output, chunk_size=10)
    assert not output.exists()  # nothing half-written
    assert sorted(p.name for p in (tmp_path / "out.parquet.parts").glob("part-*")) == [
        "part-000000.parquet", "part-000001.parquet"
    ]
    calls.clear()
    monkeypatch.setattr(batch_module, "_ensemble_chunk", original)
    resumed = batch_analyze(ensemble, output, chunk_size=10)
    fresh = batch_analyze(ensemble, tmp_path / "fresh.parquet", chunk_size=10)
    pd.testing.assert_frame_equal(resumed, fresh)
    assert not (tmp_path / "out.parquet.parts").exists()


def test_resume_refuses_a_different_job(tmp_path):
    parts = tmp_path / "o.parquet.parts"
    parts.mkdir()
    (parts / "manifest.json").write_text('{"kind": "random", "n": 5}')
    with pytest.raises(InvalidInputError, match="different job"):
        batch_analyze(RandomEnsemble(n=8, m=10, count=3), tmp_path / "o.parquet")


def test_directory_of_networks(tmp_path):
    toy = load_example("toy")
    save_network(toy, tmp_path / "nets" / "toy.json")
    save_network(toy.with_topology(None), tmp_path / "nets" / "social.graphml")
    save_network(toy, tmp_path / "nets" / "packed.json.gz")
    (tmp_path / "nets" / "broken.json").write_text("{")
    (tmp_path / "nets" / "notes.gz").write_text("not a network")
    table = batch_analyze(tmp_path / "nets", tmp_path / "t.parquet").set_index("file")
    expected = evaluate(toy, toy.topology).pseudo_time
    assert table.loc["toy.json", "pseudo_time"] == pytest.approx(expected)
    assert table.loc["packed.json.gz", "pseudo_time"] == table.loc["toy.json", "pseudo_time"]
    assert "notes.gz" not in table.index
    assert table.loc["social.graphml", "topology"] == "social"
    assert "malformed JSON" in table.loc["broken.json", "error"]


def test_parse_ensemble():
    assert parse_ensemble("n=16,m=32,count=10000,seed=0") == RandomEnsemble(16, 32, 10000, 0)
    with pytest.raises(InvalidInputError, match="lacks count"):
        parse_ensemble("n=16,m=32")


def test_dask_cluster_gives_same_rows(tmp_path):
    distributed = pytest.importorskip("distributed")
    ensemble = RandomEnsemble(n=8, m=12, count=20, seed=4)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        on_dask = batch_analyze(ensemble, tmp_path / "d.parquet", chunk_size=5,
                                scheduler=cluster.scheduler_address)
    local = batch_analyze(ensemble, tmp_path / "l.parquet", chunk_size=5)
    pd.testing.assert_frame_equal(on_dask, local)
