"""A user's own table of training data: :func:`load_table_data`.

One row per example, one column of labels, every other column a numeric
feature, in a CSV, Parquet or NPZ file.  The features are standardised as
:func:`~topokit.training.load_digits` standardises its pixels and the labels
become the codes 0..C-1 the training core takes, so ``topokit validate --data``
and ``topokit ceiling --data`` train on the user's data as on topokit's own.
Every mistake in the file is one :class:`~topokit.errors.InputFileError`
line naming the file and what to do.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..errors import InputFileError, InputFileNotFoundError, InvalidInputError
from .data import standardize

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TableData", "load_table_data", "check_rows_for_devices", "TABLE_SUFFIXES"]

#: The file suffixes :func:`load_table_data` reads, and the format of each.
TABLE_SUFFIXES = {".csv": "CSV", ".parquet": "Parquet", ".pq": "Parquet", ".npz": "NPZ"}
#: Columns named in a message before "and N more": a wide table stays one readable line.
_COLUMNS_SHOWN = 8


class TableData(NamedTuple):
    """What :func:`load_table_data` read.

    Attributes
    ----------
    X : ndarray of shape (n_rows, n_features)
        The feature columns, float64, in the file's column order.
    y : ndarray of shape (n_rows,)
        The labels as int64 codes 0..C-1: code k is ``classes[k]``.
    classes : ndarray of shape (C,)
        The distinct label values in sorted order.
    """

    X: NDArray[np.float64]
    y: NDArray[np.int64]
    classes: NDArray


def _check_path(path: str | Path) -> Path:
    """An existing file of a suffix :data:`TABLE_SUFFIXES` knows."""
    if not isinstance(path, (str, Path)):
        raise InvalidInputError(f"path must be a file path; got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise InputFileNotFoundError(
            f"no such file: {path}; give the path of a CSV, Parquet or NPZ table")
    if path.is_dir():
        raise InputFileError(f"{path} is a directory; give a CSV, Parquet or NPZ file")
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise InputFileError(
            f"{path}: unknown table format {path.suffix or '(no suffix)'!r}; give a .csv, "
            ".parquet or .npz file")
    return path


def _first_line(exc: Exception) -> str:
    """A reader's error as one line (pandas' and pyarrow's run over several)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _npz_array(archive: Any, name: str, path: Path) -> NDArray:
    """One array of an NPZ; one of Python objects (pickled) is refused, naming it."""
    try:
        return archive[name]
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise
        raise InputFileError(
            f"{path}: array {name!r} holds Python objects, which topokit does not unpickle "
            "(that could run code); save it as numbers or strings, e.g. "
            "np.asarray(labels, dtype=str)") from None


def _npz_frame(path: Path) -> pd.DataFrame:
    """The columns of an NPZ: a 1-D array is one column named as the array, a 2-D array
    ``NAME`` of k columns is the columns ``NAME[0]`` .. ``NAME[k-1]``."""
    import pandas as pd

    columns: dict[str, Any] = {}
    # allow_pickle=False: an NPZ of object arrays could run code when read.
    with np.load(path, allow_pickle=False) as archive:
        for name in archive.files:
            array = _npz_array(archive, name, path)
            if array.ndim == 1:
                columns[name] = array
            elif array.ndim == 2:
                columns.update({f"{name}[{j}]": array[:, j] for j in range(array.shape[1])})
            else:
                raise InputFileError(
                    f"{path}: array {name!r} has shape {array.shape}; an NPZ table holds 1-D "
                    "columns or 2-D (rows, features) arrays")
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InputFileError(f"{path}: its arrays have different numbers of rows ({lengths}); "
                             "give every array one entry per row")
    return pd.DataFrame(columns)


def _read_frame(path: Path) -> pd.DataFrame:
    """The file as a DataFrame; an unreadable file is one line naming it."""
    import pandas as pd

    kind = TABLE_SUFFIXES[path.suffix.lower()]
    try:
        if kind == "CSV":
            return _named_columns(pd.read_csv(path), path)
        if kind == "Parquet":
            return pd.read_parquet(path)
        return _npz_frame(path)
    except InputFileError:
        raise
    except (ValueError, OSError, ImportError, pd.errors.ParserError, UnicodeDecodeError,
            KeyError, EOFError) as exc:  # EmptyDataError is a ValueError
        raise InputFileError(f"{path}: cannot read it as {kind}: {_first_line(exc)}") from None


def _named_columns(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """A CSV whose header names every column: pandas calls an empty header cell
    'Unnamed: k', most often a saved row index, which must not pass for a feature."""
    for position, name in enumerate(frame.columns):
        if re.fullmatch(r"Unnamed: \d+", str(name)):
            raise InputFileError(
                f"{path}: column {position + 1} has no name in the header (a saved row index? "
                "DataFrame.to_csv(..., index=False) leaves it out); name it or drop it")
    return frame


def _column_list(columns: list[str]) -> str:
    shown = ", ".join(map(repr, columns[:_COLUMNS_SHOWN]))
    more = len(columns) - _COLUMNS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _check_label_column(frame: pd.DataFrame, label: Any, path: Path) -> str:
    if not isinstance(label, str) or not label:
        raise InvalidInputError(f"label must be the name of a column; got {label!r}")
    if label not in frame.columns:
        names = [str(c) for c in frame.columns]
        raise InputFileError(
            f"{path}: no label column {label!r}; its columns are {_column_list(names)}: name "
            "the one that holds the labels")
    return label


def _feature_matrix(frame: pd.DataFrame, path: Path) -> NDArray[np.float64]:
    """The feature columns as floats: numeric (or boolean, as 0/1), none missing or
    infinite."""
    import pandas as pd

    if frame.shape[1] == 0:
        raise InputFileError(f"{path}: no feature columns beside the labels; give at least "
                             "one numeric column of features")
    for name in frame.columns:
        column = frame[name]
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)):
            text = column[pd.to_numeric(column, errors="coerce").isna() & column.notna()]
            example = f" (such as {text.iloc[0]!r})" if len(text) else ""
            raise InputFileError(
                f"{path}: feature column {str(name)!r} is not numeric{example}; encode it as "
                "numbers or drop it (only the label column may hold text)")
    X = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    for bad, what in ((np.isnan(X), "missing (NaN)"), (np.isinf(X), "infinite")):
        if bad.any():
            column = int(np.flatnonzero(bad.any(axis=0))[0])
            rows = np.flatnonzero(bad[:, column])
            raise InputFileError(
                f"{path}: feature column {str(frame.columns[column])!r} has {rows.size} "
                f"{what} value(s), the first in data row {rows[0] + 1}; fill or drop those "
                "rows")
    return X


def _label_codes(labels: pd.Series, label: str,
                 path: Path) -> tuple[NDArray[np.int64], NDArray]:
    """The labels as codes 0..C-1 of their sorted distinct values, and those values."""
    missing = np.flatnonzero(labels.isna().to_numpy())
    if missing.size:
        raise InputFileError(
            f"{path}: {missing.size} row(s) have no label in column {label!r}, the first "
            f"data row {missing[0] + 1}; fill or drop those rows")
    try:
        classes, codes = np.unique(labels.to_numpy(), return_inverse=True)
    except TypeError:  # a column mixing numbers and text (an object column) cannot be sorted
        raise InputFileError(
            f"{path}: label column {label!r} mixes types (numbers and text); give labels of "
            "one type") from None
    if classes.size < 2:
        raise InputFileError(
            f"{path}: label column {label!r} holds one class only ({classes[0]!r}); a "
            "classifier needs rows of at least two classes")
    return codes.astype(np.int64).reshape(-1), classes


def load_table_data(path: str | Path, label: str, *, standardized: bool = True) -> TableData:
    """Read a table of training data: features X, integer labels y and the label values.

    Parameters
    ----------
    path : str or Path
        A ``.csv`` (a header row of column names, read with pandas),
        ``.parquet`` / ``.pq`` (pandas with pyarrow) or ``.npz`` file
        (numpy).  An NPZ's arrays are its columns: a 1-D array is one
        column named as the array, a 2-D array ``NAME`` of shape (rows, k)
        is k feature columns ``NAME[0]`` .. ``NAME[k-1]``; so both
        ``np.savez(f, X=X, label=y)`` and one array per column work.
        Object arrays are refused (reading them could run code).
    label : str
        The column of the labels.  Every other column is a feature.
    standardized : bool, default True
        Standardise every feature column over the whole set, as
        :func:`~topokit.training.load_digits` does
        (:func:`~topokit.training.data.standardize`: zero mean and unit
        variance; a constant column is only centred, to all zeros).

    Returns
    -------
    TableData
        ``(X, y, classes)``: X float64 of shape (rows, features) in the
        file's column order, y int64 codes, ``classes`` the label values.
        The labels (of any type: text, integers, ...) are mapped to 0..C-1
        in the sorted order of their values: ``classes[y]`` gives them back.
        ``X, y = load_table_data(path, label)[:2]`` takes the arrays alone.

    Raises
    ------
    InputFileNotFoundError
        No file at ``path``.
    InputFileError
        One line naming the file: a directory, a suffix other than those
        above, a file its reader cannot parse, a CSV column without a name
        in the header (a saved row index), no column ``label`` (the
        columns are listed), no feature column, a feature column that is
        not numeric (booleans count as 0/1), a missing (NaN) or infinite
        feature, a row without a label, labels mixing numbers and text, or
        a single class.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "data.csv").write_text("size,weight,kind\\n1,10,pear\\n2,10,apple\\n"
    ...                                      "3,10,pear\\n")
    >>> X, y, classes = load_table_data(folder / "data.csv", "kind")
    >>> X.round(3).tolist()
    [[-1.225, 0.0], [0.0, 0.0], [1.225, 0.0]]
    >>> y.tolist(), classes.tolist()
    ([1, 0, 1], ['apple', 'pear'])
    """
    path = _check_path(path)
    frame = _read_frame(path)
    label = _check_label_column(frame, label, path)
    if frame.shape[0] == 0:
        raise InputFileError(f"{path}: no data rows; give a table of at least two classes")
    X = _feature_matrix(frame.drop(columns=[label]), path)
    y, classes = _label_codes(frame[label], label, path)
    return TableData(standardize(X) if standardized else X, y, classes)


def check_rows_for_devices(data: TableData, n_devices: int, source: str, *,
                           whose: str = "the network's") -> None:
    """Refuse data with fewer rows than devices: each device trains on rows of its own.

    ``source`` names the data in the message (the file), ``whose`` the devices.  The training core
    also holds out a test split (a quarter by default) and refuses a
    partition that leaves a device without rows; this check catches the
    plain case before any work.

    Examples
    --------
    >>> data = TableData(np.zeros((3, 1)), np.array([0, 1, 0]), np.array([0, 1]))
    >>> check_rows_for_devices(data, 5, "tiny.csv")
    Traceback (most recent call last):
    ...
    topokit.errors.InputFileError: tiny.csv has 3 rows, fewer than the network's 5 devices; ...
    """
    rows = int(data.X.shape[0])
    if rows < n_devices:
        raise InputFileError(
            f"{source} has {rows} rows, fewer than {whose} {n_devices} devices; each device "
            "trains on rows of its own (and a quarter is held out for testing): give more "
            "rows" + (" or a network of fewer devices" if whose == "the network's" else ""))
