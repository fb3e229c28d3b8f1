"""``load_table_data``: a user's CSV, Parquet or NPZ table as standardised X and coded y."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from topokit.errors import InputFileError, InputFileNotFoundError
from topokit.training import TableData, load_table_data
from topokit.training.user_data import check_rows_for_devices

LABELS = np.array(["pear", "apple", "fig"])


@pytest.fixture(scope="module")
def table():
    """30 rows of 3 classes (named out of sorted order), a constant and an integer column."""
    rng = np.random.default_rng(0)
    kind = LABELS[np.arange(30) % 3]
    return pd.DataFrame({"size": rng.normal(5.0, 2.0, 30), "count": rng.integers(0, 9, 30),
                         "flat": np.full(30, 7.0), "kind": kind})


@pytest.fixture(scope="module")
def files(table, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    table.to_csv(folder / "t.csv", index=False)
    table.to_parquet(folder / "t.parquet")
    np.savez(folder / "columns.npz", **{name: np.asarray(table[name].tolist())
                                        for name in table})
    np.savez(folder / "matrix.npz", X=table[["size", "count", "flat"]].to_numpy(),
             kind=table["kind"].to_numpy(dtype=str))
    return folder


def _by_hand(table):
    """Standardised as the docstring says, computed here with numpy alone."""
    X = table[["size", "count", "flat"]].to_numpy(dtype=float)
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


@pytest.mark.parametrize("name", ["t.csv", "t.parquet", "columns.npz", "matrix.npz"])
def test_every_format_reads_the_same_standardised_table(files, table, name):
    data = load_table_data(files / name, "kind")
    assert isinstance(data, TableData) and data.X.shape == (30, 3) and data.X.dtype == float
    np.testing.assert_allclose(data.X, _by_hand(table), atol=1e-12)
    np.testing.assert_allclose(data.X[:, :2].mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(data.X[:, :2].std(axis=0), 1, atol=1e-12)
    assert (data.X[:, 2] == 0).all()  # a constant column is only centred
    assert data.classes.tolist() == ["apple", "fig", "pear"]  # sorted, not as first seen
    assert data.y.dtype == np.int64 and data.y[:3].tolist() == [2, 0, 1]
    assert (data.classes[data.y] == table["kind"].to_numpy()).all()


def test_unstandardised_and_numeric_labels_in_numeric_order(tmp_path):
    path = tmp_path / "n.csv"
    pd.DataFrame({"a": [1.0, 2.0, 4.0, 8.0], "y": [10, 2, 33, 2]}).to_csv(path, index=False)
    X, y, classes = load_table_data(path, "y", standardized=False)
    assert X[:, 0].tolist() == [1.0, 2.0, 4.0, 8.0]
    assert classes.tolist() == [2, 10, 33] and y.tolist() == [1, 0, 2, 0]  # 10 after 2
    assert [a.shape for a in load_table_data(path, "y")[:2]] == [(4, 1), (4,)]


def _write(path, frame):
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("frame, label, phrases", [
    (pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]}), "kind",
     ["no label column 'kind'", "'a', 'b'"]),
    (pd.DataFrame({f"c{k}": [1.0, 2.0] for k in range(12)}), "kind", ["and 4 more"]),
    (pd.DataFrame({"a": [1.0, 2.0], "colour": ["red", "blue"], "y": [0, 1]}), "y",
     ["feature column 'colour' is not numeric", "'red'"]),
    (pd.DataFrame({"a": [1.0, np.nan, np.nan], "y": [0, 1, 0]}), "y",
     ["column 'a' has 2 missing", "data row 2"]),
    (pd.DataFrame({"a": [1.0, np.inf, 3.0], "y": [0, 1, 0]}), "y", ["1 infinite"]),
    (pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": ["x", None, "z"]}), "y",
     ["1 row(s) have no label", "data row 2"]),
    (pd.DataFrame({"a": [1.0, 2.0], "y": ["x", "x"]}), "y", ["one class only"]),
    (pd.DataFrame({"y": [0, 1]}), "y", ["no feature columns"]),
    (pd.DataFrame({"a": [], "y": []}), "y", ["no data rows"]),
    (pd.DataFrame({"": [0, 1], "a": [1.0, 2.0], "y": [0, 1]}), "y",
     ["column 1 has no name", "index=False"]),
])
def test_a_bad_table_is_one_line_naming_the_file(tmp_path, frame, label, phrases):
    path = _write(tmp_path / "bad.csv", frame)
    with pytest.raises(InputFileError) as caught:
        load_table_data(path, label)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    for phrase in phrases:
        assert phrase in message


def test_missing_files_suffixes_and_unreadable_files(tmp_path):
    with pytest.raises(InputFileNotFoundError, match="no such file: .*nope.csv"):
        load_table_data(tmp_path / "nope.csv", "y")
    (tmp_path / "t.txt").write_text("a,y\n1,0\n")
    with pytest.raises(InputFileError, match=r"unknown table format '\.txt'; give a \.csv"):
        load_table_data(tmp_path / "t.txt", "y")
    (tmp_path / "t.parquet").write_text("not parquet")
    with pytest.raises(InputFileError, match="cannot read it as Parquet"):
        load_table_data(tmp_path / "t.parquet", "y")
    np.savez(tmp_path / "o.npz", y=np.array([{"a": 1}, 2], dtype=object))
    with pytest.raises(InputFileError, match="array 'y' holds Python objects"):
        load_table_data(tmp_path / "o.npz", "y")
    np.savez(tmp_path / "r.npz", a=np.zeros(3), y=np.zeros(4))
    with pytest.raises(InputFileError, match="different numbers of rows"):
        load_table_data(tmp_path / "r.npz", "y")


def test_fewer_rows_than_devices_names_both_counts():
    data = TableData(np.zeros((4, 1)), np.array([0, 1, 0, 1]), np.array([0, 1]))
    check_rows_for_devices(data, 4, "t.csv")
    with pytest.raises(InputFileError, match="t.csv has 4 rows, fewer than the network's 6 "
                                             "devices"):
        check_rows_for_devices(data, 6, "t.csv")
