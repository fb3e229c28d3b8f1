"""Calibration: refit the global-iterate predictor on measured runs.

:func:`calibrate` reads the runs table of :func:`topokit.validate`, keeps the
runs that reached one target accuracy, fits a
:class:`~topokit.design.GlobalIteratePredictor` on them (features H, phi and
optionally the noise variance U; response: measured rounds), cross-validates
it over topologies and says how much the rank correlation of predicted and
measured physical time improves on eq. (15).  With ``predictor=`` it refits a
:class:`~topokit.design.TrainingTimePredictor` instead, optionally shrunk
toward the predictor it starts from (``prior_strength``).

The runs may also be the user's own, trained with any stack: a table of one
row per run and target with the columns :data:`USER_RUN_COLUMNS` (network
file, topology or design file, target, rounds to reach it, rounds run).
:func:`_user_runs` computes the features of each row as :func:`validate` does
for its own rows, and the table is then calibrated as validate's.

The steps, one function each: read the runs (:func:`_read_runs`), choose the
target's rows and leave out the censored ones (:func:`_select_target`,
:func:`_usable_runs`), fit, cross-validate (:func:`_cross_validate`) and
correlate.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._checks import check_int, check_int_at_least, check_real, shown
from ..design.features import FeatureSettings, topology_features
from ..design.predictor import GlobalIteratePredictor
from ..design.workload import Workload
from ..errors import (
    InputFileError,
    InputFileNotFoundError,
    InvalidInputError,
    InvalidTopologyError,
    TopokitError,
    TopokitWarning,
)
from ..network.core import Network, Topology
from ..training.core import check_accuracy_threshold
from .result import FEATURE_COLUMNS, ValidationResult
from .stats import correlation

__all__ = ["calibrate", "leave_network_out", "CalibrationResult", "CALIBRATION_COLUMNS",
           "USER_RUN_COLUMNS", "feature_settings_for"]

#: Columns :func:`calibrate` needs.
CALIBRATION_COLUMNS = ("topology", "target", "hitting_time", "phi", "local_iterate",
                       "measured_rounds", "measured_time")

#: Columns of a table of the user's own runs, one row per run and target: the network file,
#: the topology (or ``topokit design -o``) file, the target accuracy, the rounds it took to
#: reach it (empty: never) and the rounds run.
USER_RUN_COLUMNS = ("network", "topology", "target", "measured_rounds", "horizon")

#: What :func:`_user_runs` computes for each row of a user's table (validate's names).
_DESCRIBED_COLUMNS = ("hitting_time", "spectral_gap", "phi", "local_iterate", "n_links",
                      "n_dp_devices", *FEATURE_COLUMNS)


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """A :class:`GlobalIteratePredictor` fitted on measured runs, and how good it is.

    Attributes
    ----------
    predictor : GlobalIteratePredictor
        Fitted on the runs that reached ``target`` (features H, phi[, U];
        response: measured rounds).
    target : float
    n_runs, n_censored, n_topologies : int
        Runs used, runs left out because they never reached the target, and
        distinct topologies among the runs used.
    r2 : float
        In-sample coefficient of determination.
    cv_rmse, cv_rmse_std : float
        Cross-validated root mean squared error in rounds (mean and spread
        over folds); the folds split the *topologies* (KFold, shuffled,
        seeded), so every trial of a topology lands in the same fold and the
        score is for topologies the fit has not seen.  NaN with fewer than 2
        topologies.
    cv_folds : int
    spearman_paper : float
        Spearman correlation of eq. (15)'s predicted physical time (G' x L)
        with the measured physical time.
    spearman_fitted : float
        The same with the fitted predictor (in sample).
    spearman_fitted_cv : float
        The same with out-of-fold predictions of the cross-validation.
    prior_strength : float
        lambda of the refit's prior toward the predictor it started from
        (:func:`calibrate`); 0: none.
    """

    predictor: GlobalIteratePredictor
    target: float
    n_runs: int
    n_censored: int
    n_topologies: int
    r2: float
    cv_rmse: float
    cv_rmse_std: float
    cv_folds: int
    spearman_paper: float
    spearman_fitted: float
    spearman_fitted_cv: float
    prior_strength: float = 0.0

    @property
    def coefficients(self) -> dict[str, float]:
        """Fitted coefficients by feature name, and the intercept.

        For a :class:`~topokit.design.TrainingTimePredictor`, those of its
        rounds model (log rounds on standardised, oriented features), by
        ``model_columns`` (with ``varying_with``, one per feature and corner).
        """
        if not isinstance(self.predictor, GlobalIteratePredictor):
            named = dict(zip(self.predictor.model_columns, self.predictor.rounds_coef_.tolist(),
                             strict=True))
            return {**named, "intercept": float(self.predictor.rounds_intercept_)}
        data = self.predictor.to_dict()
        named = dict(zip(data["features"], data["coef"], strict=True))
        return {**named, "intercept": data["intercept"]}

    def save(self, path: str | Path) -> Path:
        """Write the fitted predictor as JSON (``topokit design --predictor`` reads it)."""
        return self.predictor.save(path)

    def to_dict(self) -> dict[str, Any]:
        from ..design.predictor import PAPER_COEFFICIENTS, PAPER_INTERCEPT

        def clean(value: float) -> float | None:
            return float(value) if np.isfinite(value) else None

        return {
            "target": self.target,
            "n_runs": self.n_runs,
            "n_censored": self.n_censored,
            "n_topologies": self.n_topologies,
            "coefficients": self.coefficients,
            "paper_coefficients": {**PAPER_COEFFICIENTS, "intercept": PAPER_INTERCEPT},
            "r2": clean(self.r2),
            "cv_rmse": clean(self.cv_rmse),
            "cv_rmse_std": clean(self.cv_rmse_std),
            "cv_folds": self.cv_folds,
            "spearman_paper": clean(self.spearman_paper),
            "spearman_fitted": clean(self.spearman_fitted),
            "spearman_fitted_cv": clean(self.spearman_fitted_cv),
            "prior_strength": self.prior_strength,
            "predictor": self.predictor.to_dict(),
        }


# ---------------------------------------------------------------------------------------------
# The steps
# ---------------------------------------------------------------------------------------------


class _TargetRuns(NamedTuple):
    """The rows of the runs table for one target accuracy."""

    target: float
    rows: pd.DataFrame


class _Sample(NamedTuple):
    """The runs a fit uses: those that reached the target with finite features."""

    rows: pd.DataFrame
    X: NDArray[np.float64]
    y: NDArray[np.float64]
    groups: NDArray  # the topology of each row: the unit of the folds
    n_censored: int


class _CrossValidation(NamedTuple):
    """Out-of-fold scores and predictions of folds over topologies."""

    rmse: float
    rmse_std: float
    folds: int
    predictions: NDArray[np.float64]


def _read_table(runs) -> tuple[pd.DataFrame, Path | None]:
    """The table of a DataFrame, a ValidationResult or a CSV / Parquet path, and the file's
    folder (None for objects in memory)."""
    if isinstance(runs, ValidationResult):
        return runs.frame, None
    if isinstance(runs, pd.DataFrame):
        return runs, None
    if not isinstance(runs, (str, Path)):
        raise InvalidInputError(
            "runs must be a DataFrame, a ValidationResult or a CSV / Parquet path; got "
            f"{type(runs).__name__}"
        )
    path = Path(runs)
    if not path.exists():
        raise InputFileNotFoundError(f"no such runs file: {path}")
    if path.is_dir():
        raise InputFileError(
            f"{path} is a directory; expected the Parquet runs table written by "
            "topokit validate -o, or a CSV / Parquet table of your own runs"
        )
    if path.stat().st_size == 0:
        raise InputFileError(f"{path} is empty (0 bytes); {_WHAT_A_TABLE_HOLDS}")
    if path.suffix.lower() == ".csv":
        try:
            frame = pd.read_csv(path)
        except (OSError, ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError too
            raise InputFileError(f"{path}: not a readable CSV table: {exc}") from None
    else:
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InputFileError(
                f"{path}: not a Parquet runs table (written by topokit validate): {exc}"
            ) from None
    if frame.empty:
        raise InputFileError(f"{path}: the runs table is empty (a header, no rows); "
                             f"{_WHAT_A_TABLE_HOLDS}")
    return frame, path.parent


#: What a runs table holds, for the messages refusing an empty one.
_WHAT_A_TABLE_HOLDS = ("give the runs table of topokit validate -o, or one row per run and "
                       "target of your own (columns network, topology, target, "
                       "measured_rounds, horizon)")


def _is_user_table(frame: pd.DataFrame) -> bool:
    """A table of the user's own runs, not validate's: it has no H, or it has a horizon."""
    return "horizon" in frame.columns or "hitting_time" not in frame.columns


def _read_runs(runs, settings: FeatureSettings | None = None) -> pd.DataFrame:
    """The runs table in validate's shape: validate's own, or a user's with its features.

    ``settings`` are those a user's table's features are computed with
    (default ``FeatureSettings()``).
    """
    frame, folder = _read_table(runs)
    if frame.empty:  # a table in memory (a file's is refused naming the file)
        raise InvalidInputError(f"the runs table is empty (no rows); {_WHAT_A_TABLE_HOLDS}")
    if not _is_user_table(frame):
        return frame
    return _user_runs(frame, folder, settings if settings is not None else FeatureSettings())


# ---------------------------------------------------------------------------------------------
# A table of the user's own runs
# ---------------------------------------------------------------------------------------------


def _check_user_columns(frame: pd.DataFrame) -> None:
    missing = [column for column in USER_RUN_COLUMNS if column not in frame.columns]
    if missing:
        raise InvalidInputError(
            f"the runs table lacks column(s) {', '.join(missing)}; a table of your own runs "
            f"needs {', '.join(USER_RUN_COLUMNS)} (one row per run and target); the runs table "
            f"of topokit validate has {', '.join(CALIBRATION_COLUMNS)} and the feature columns"
        )


def _numbers(frame: pd.DataFrame, column: str, what: str) -> NDArray[np.float64]:
    """``column`` as floats (empty cells NaN); a cell that is not a number names its row."""
    cells = frame[column].map(lambda v: np.nan if isinstance(v, str) and not v.strip() else v)
    values = pd.to_numeric(cells, errors="coerce").to_numpy(float)
    wrong = np.flatnonzero(np.isnan(values) & cells.notna().to_numpy())
    if wrong.size:
        raise InvalidInputError(
            f"row {wrong[0] + 1}: {column} must be {what}; got "
            f"{shown(frame[column].iloc[wrong[0]])}"
        )
    return values


def _whole(values: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Whether each value is a finite whole number (8.0, not 8.5)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(values) & (values == np.floor(values))


class _UserRounds(NamedTuple):
    """The numeric columns of a user's table, checked."""

    target: NDArray[np.float64]
    measured: NDArray[np.float64]  # NaN: never reached
    horizon: NDArray[np.float64]


def _check_user_rounds(frame: pd.DataFrame) -> _UserRounds:
    """Targets given, rounds > 0 (measured may be empty: never reached), measured <= horizon.

    Rows are numbered from 1 (the header not counted).
    """
    numbers = _UserRounds(
        _numbers(frame, "target", "an accuracy in (0, 1]"),
        _numbers(frame, "measured_rounds",
                 "a number of rounds (empty if the target was never reached)"),
        _numbers(frame, "horizon", "the number of rounds the run trained"))
    target, measured, horizon = numbers
    checks = (
        (np.isnan(target), "target is empty; give the accuracy the rounds are timed to"),
        (np.isnan(horizon), "horizon is empty; give the number of rounds the run trained"),
        (horizon <= 0, "horizon must be a number of rounds > 0"),
        (~_whole(horizon), "horizon must be a whole number of rounds, the rounds the run "
                           "trained"),
        (measured <= 0, "measured_rounds must be > 0 (empty if the target was never reached)"),
        (~np.isnan(measured) & ~_whole(measured),
         "measured_rounds must be a whole number of rounds, the first round whose accuracy "
         "reached the target (empty if it never did)"),
        (measured > horizon, "measured_rounds is beyond horizon, the rounds the run trained; "
                             "check the two columns"),
    )
    for broken, message in checks:
        rows = np.flatnonzero(broken)
        if rows.size:
            row = rows[0]
            raise InvalidInputError(
                f"row {row + 1}: {message} (measured_rounds "
                f"{shown(frame['measured_rounds'].iloc[row])}, horizon "
                f"{shown(frame['horizon'].iloc[row])})"
            )
    return numbers


def _user_files(frame: pd.DataFrame, column: str, folder: Path,
                load: Callable[[Path], Any]) -> dict[str, Any]:
    """Each distinct file of ``column`` loaded once (relative to ``folder``); errors name the
    first row that gives the file."""
    loaded: dict[str, Any] = {}
    for row, value in enumerate(frame[column], start=1):
        if isinstance(value, str) and value in loaded:
            continue
        if not isinstance(value, str) or not value.strip():
            raise InvalidInputError(f"row {row}: {column} must be a file path; got "
                                    f"{shown(value)}")
        path = _table_path(value, folder)
        try:
            loaded[value] = load(path)
        except InputFileNotFoundError:
            raise InputFileNotFoundError(
                f"row {row}: no such {column} file {value!r} ({path})") from None
        except InputFileError as exc:
            raise InputFileError(f"row {row}: {column} file {value!r}: {exc}") from None
    return loaded


def _table_path(value: str, folder: Path) -> Path:
    """A file a user's table names: absolute, or relative to the table's ``folder``."""
    return Path(value) if Path(value).is_absolute() else folder / value


def runs_table_files(runs: str | Path) -> list[tuple[str, Path]]:
    """The files the runs table ``runs`` names, each with where it is named: a user's
    table's network and topology files (resolved as :func:`calibrate` reads them), none
    for validate's table.

    For checks made before any work (``topokit calibrate -o`` must be none of them).  A
    table that cannot be read names none: :func:`calibrate` says what is wrong with it.
    """
    try:
        frame, folder = _read_table(runs)
    except TopokitError:
        return []
    if folder is None or not _is_user_table(frame):
        return []
    named: dict[Path, str] = {}
    for column in ("network", "topology"):
        if column not in frame.columns:
            continue
        for row, value in enumerate(frame[column], start=1):
            if isinstance(value, str) and value.strip():
                named.setdefault(_table_path(value, folder),
                                 f"the {column} file of row {row} of the runs table")
    return [(what, path) for path, what in named.items()]


class _UserTopology(NamedTuple):
    """A topology file of a user's table: the topology, and the file (a design file may
    record per-device noise levels)."""

    topology: Topology
    path: Path


def _load_topology_file(path: Path) -> _UserTopology:
    from ..network.formats import load_topology

    return _UserTopology(load_topology(path), path)


def _settings_for(net: Network, topology: _UserTopology,
                  settings: FeatureSettings) -> FeatureSettings:
    """``settings``, with a design file's per-device noise levels when it records them
    (:func:`topokit.optimize` under ``max_stranger_mu``: what its DP devices train with)."""
    from ..network.formats import load_noise_multipliers

    levels = load_noise_multipliers(topology.path, net)
    if levels is None:
        return settings
    return dataclasses.replace(settings, device_noise_multipliers=tuple(
        float(levels.get(node, 0.0)) for node in net.nodes))


def described_topology(net: Network, topology: Topology,
                       settings: FeatureSettings) -> dict[str, float]:
    """What the runs table says of a topology beside what was measured (validate's columns).

    H, the spectral gap, phi, L, the links and DP devices and the
    :data:`~topokit.validation.result.FEATURE_COLUMNS`, from
    :func:`~topokit.design.features.topology_features` with ``settings``.

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> row = described_topology(net, net.topology, FeatureSettings())
    >>> round(row["hitting_time"], 3), row["phi"], row["local_iterate"]
    (25.967, 0.5, 52.0)
    """
    features = topology_features(net, topology, **settings.to_dict()).to_dict()
    return {name: float(features[name]) for name in _DESCRIBED_COLUMNS}


def _described_row(row: int, net_text: str, net: Network, topology_text: str,
                   topology: _UserTopology, settings: FeatureSettings) -> dict[str, float]:
    try:
        topology.topology.validate(net)
    except InvalidInputError as exc:  # NodeNotFoundError is a KeyError: its text is args[0]
        raise InvalidTopologyError(
            f"row {row}: topology {topology_text!r} is not valid on network {net_text!r}: "
            f"{exc.args[0]}") from None
    try:
        settings = _settings_for(net, topology, settings)
    except InputFileError as exc:  # the design's noise levels name other devices
        raise InputFileError(f"row {row}: {exc}") from None
    return described_topology(net, topology.topology, settings)


def _user_runs(frame: pd.DataFrame, folder: Path | None,
               settings: FeatureSettings) -> pd.DataFrame:
    """A user's table (:data:`USER_RUN_COLUMNS`) in the shape of validate's runs table.

    Relative paths are resolved against ``folder`` (the table file's; the
    working directory for a table in memory).  The features of each
    (network, topology) pair are computed once, with ``settings``; computed
    columns replace columns of the same name, other columns are kept.
    ``horizon`` becomes ``rounds_run`` and ``measured_time`` is rounds x L.
    """
    from ..network.formats import load_network

    _check_user_columns(frame)
    frame = frame.reset_index(drop=True)
    numbers = _check_user_rounds(frame)
    folder = Path.cwd() if folder is None else folder
    networks = _user_files(frame, "network", folder, load_network)
    topologies = _user_files(frame, "topology", folder, _load_topology_file)
    described: dict[tuple[str, str], dict[str, float]] = {}
    for row, pair in enumerate(zip(frame["network"], frame["topology"], strict=True), start=1):
        if pair not in described:
            described[pair] = _described_row(row, pair[0], networks[pair[0]], pair[1],
                                             topologies[pair[1]], settings)
    computed = pd.DataFrame([described[pair] for pair in zip(frame["network"],
                                                             frame["topology"], strict=True)],
                            columns=list(_DESCRIBED_COLUMNS), index=frame.index)
    kept = frame.drop(columns=[c for c in (*_DESCRIBED_COLUMNS, "rounds_run", "measured_time")
                               if c in frame.columns])
    return pd.concat([kept, computed], axis=1).assign(
        target=numbers.target, measured_rounds=numbers.measured, horizon=numbers.horizon,
        rounds_run=numbers.horizon,
        measured_time=numbers.measured * computed["local_iterate"].to_numpy())


def _features(use_noise_variance: bool) -> list[str]:
    return ["hitting_time", "phi"] + (["noise_variance"] if use_noise_variance else [])


def _check_columns(frame: pd.DataFrame, use_noise_variance: bool) -> None:
    needed = list(CALIBRATION_COLUMNS) + (["noise_variance"] if use_noise_variance else [])
    missing = [column for column in needed if column not in frame.columns]
    if missing:
        raise InvalidInputError(
            f"the runs table lacks column(s) {', '.join(missing)}; expected the output of "
            "topokit validate"
        )
    _check_numeric(frame, needed[1:])  # all but the topology's name are numbers


def _check_numeric(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    """Each of ``columns`` holds numbers (not text, not booleans); else name it and a value."""
    for column in columns:
        if not pd.api.types.is_numeric_dtype(frame[column]) or \
                pd.api.types.is_bool_dtype(frame[column]):
            values = frame[column].dropna()
            first = values.iloc[0] if len(values) else None
            first = first.item() if isinstance(first, np.generic) else first
            example = f" such as {first!r}" if len(values) else ""
            raise InvalidInputError(
                f"column {column!r} of the runs table must be numeric; it holds "
                f"{frame[column].dtype} values{example}: give numbers (as topokit validate -o "
                "writes them)"
            )


def _select_target(frame: pd.DataFrame, target: float | None) -> _TargetRuns:
    """The rows of ``target`` (default: the highest target of the table)."""
    available = sorted(float(t) for t in frame["target"].dropna().unique())
    if not available:
        raise InvalidInputError("the runs table is empty")
    if target is None:
        target = available[-1]
    target = check_accuracy_threshold(target, "target")
    rows = frame[np.isclose(frame["target"].to_numpy(float), target)]
    if rows.empty:
        raise InvalidInputError(
            f"no runs for target {target}; the table holds targets {', '.join(map(str, available))}"
        )
    return _TargetRuns(target, rows)


def _usable_runs(chosen: _TargetRuns, features: list[str]) -> _Sample:
    """Leave out the censored runs (never reached the target) and non-finite features."""
    rows = chosen.rows
    usable = rows.dropna(subset=["measured_rounds"])
    usable = usable[np.isfinite(usable[features].to_numpy(float)).all(axis=1)]
    censored = int(rows["measured_rounds"].isna().sum())
    minimum = len(features) + 2
    if len(usable) < minimum:
        raise InvalidInputError(
            f"too few runs to fit: {len(usable)} run(s) reached target {chosen.target} with "
            f"finite features ({censored} never reached it); fitting {len(features)} coefficients "
            f"and an intercept needs at least {minimum}. Use more topologies (random:30), more "
            "trials or a lower target"
        )
    X = usable[features].to_numpy(float)
    design = np.column_stack([X, np.ones(len(X))])
    if np.linalg.matrix_rank(design) < design.shape[1]:
        raise InvalidInputError(
            f"the runs do not vary enough to fit {', '.join(features)} and an intercept "
            "(e.g. every topology has the same phi): add topologies, such as random:30"
        )
    return _Sample(usable, X, usable["measured_rounds"].to_numpy(float),
                   usable["topology"].astype(str).to_numpy(), censored)


def _topology_folds(groups: NDArray, folds: int, seed: int) -> list[tuple[NDArray, NDArray]]:
    """(train rows, test rows) of KFold over the distinct topologies in ``groups``."""
    from sklearn.model_selection import KFold

    names = np.unique(groups)
    splitter = KFold(n_splits=folds, shuffle=True, random_state=seed)
    return [(np.flatnonzero(np.isin(groups, names[train])),
             np.flatnonzero(np.isin(groups, names[test])))
            for train, test in splitter.split(names)]


def _cross_validate(predictor: GlobalIteratePredictor, sample: _Sample, cv: int,
                    seed: int) -> _CrossValidation:
    """Fit a clone of ``predictor`` once per fold: the fold's RMSE and out-of-fold predictions.

    Folds are over topologies, so all trials of a topology go to the same fold.
    """
    from sklearn.base import clone
    from sklearn.metrics import root_mean_squared_error

    folds = min(cv, len(np.unique(sample.groups)))
    predictions = np.full(len(sample.y), np.nan)
    if folds < 2:
        return _CrossValidation(float("nan"), float("nan"), 0, predictions)
    X, y = sample.X, sample.y
    scores = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rank-deficient folds: lstsq copes
        for train_rows, test_rows in _topology_folds(sample.groups, folds, seed):
            model = clone(predictor).fit(X[train_rows], y[train_rows])
            predictions[test_rows] = model.predict(X[test_rows])
            scores.append(root_mean_squared_error(y[test_rows], predictions[test_rows]))
    scores = np.asarray(scores)
    return _CrossValidation(float(scores.mean()), float(scores.std()), folds, predictions)


def calibrate(
    runs,
    *,
    use_noise_variance: bool = False,
    target: float | None = None,
    cv: int = 5,
    positive: bool = False,
    seed: int = 0,
    predictor: Any = None,
    settings: FeatureSettings | None = None,
    prior_strength: float = 0.0,
) -> CalibrationResult:
    r"""Fit the global-iterate predictor on measured runs.

    Parameters
    ----------
    runs : DataFrame, ValidationResult or path
        The runs table of :func:`validate` (or ``topokit validate -o``):
        columns ``topology``, ``target``, ``hitting_time``, ``phi``,
        ``local_iterate``, ``measured_rounds``, ``measured_time`` (and
        ``noise_variance`` with ``use_noise_variance``).  Or a table of your
        own runs, trained with any stack (a DataFrame, a CSV or a Parquet
        file), one row per run and target with the columns
        :data:`USER_RUN_COLUMNS`: ``network`` (a network file,
        :func:`topokit.load_network`), ``topology`` (a topology file, or a
        design file written by ``topokit design -o``), ``target``,
        ``measured_rounds`` (rounds to reach the target; empty if never) and
        ``horizon`` (rounds run).  Relative paths are resolved against the
        table file's folder (the working directory for a DataFrame).  Such a
        table is told apart by its columns (a ``horizon``, or no
        ``hitting_time``); its features are computed as :func:`validate`
        computes its rows' (:func:`described_topology`), with ``settings``,
        and with a design file's per-device noise levels when it records
        them.  Computed columns replace columns of the same name; the rest
        (``trial``, ``noise_variance``, ...) are kept.
    use_noise_variance : bool, default False
        Fit on (H, phi, U) instead of (H, phi).
    target : float, optional
        Which target's rounds to fit; default: the only target of the table,
        or the highest one when it holds several.
    cv : int, default 5
        Folds of the cross-validation (over topologies; fewer when there are
        fewer topologies).
    positive : bool, default False
        Constrain the coefficients to be >= 0.
    seed : int, default 0
        Shuffles the folds.
    predictor : "default", "mlp", path or TrainingTimePredictor, optional
        Refit this :class:`~topokit.design.TrainingTimePredictor` (its
        features, settings and hyper-parameters) instead of eq. (15)'s form:
        on every run of the target, those that never reached it included
        (censored at the longest run's rounds), from the runs table's feature
        columns.  ``r2`` and ``cv_rmse`` are then NaN (rounds may be
        infinite); the Spearman correlations rank never-reached runs slowest.
        ``use_noise_variance`` and ``positive`` do not apply.
    settings : FeatureSettings or Workload, optional
        The training settings of the runs (noise multiplier, clipping norm,
        batch size, ...): a user's table's features are computed with them,
        and the refit predictor records them.  A
        :class:`~topokit.design.workload.Workload` stands for its settings
        (:func:`feature_settings_for`) and names the runs' model: the refit
        records the model and its measured traits (``provenance_["model_traits"]``:
        the workload's ``probe_rounds`` and ``ceiling``, or topokit's measurement
        of its own models), and :func:`topokit.optimize` chooses its design's
        mixing weights and NDLF margin by them (:mod:`topokit.design.trust`).
        Untold, the refit claims no model and designs judged by it get the safe
        choices.  Default: the predictor's (``FeatureSettings()`` without one).
    prior_strength : float >= 0, default 0
        lambda, the weight of a prior that keeps the refit's coefficients
        near those of ``predictor`` (see the Notes); 0 refits every
        coefficient on the runs alone.  Needs ``predictor``.

    Returns
    -------
    CalibrationResult

    Raises
    ------
    InvalidInputError
        Missing columns, a target not in the table or outside (0, 1], fewer
        measured runs than the fit needs, or features that do not vary
        enough to identify every coefficient.  In a user's table: a cell
        that is not a number, rounds <= 0, ``measured_rounds`` beyond
        ``horizon``; each names its row (counted from 1, the header not
        counted).
    InputFileNotFoundError
        A network or topology file of a user's table that does not exist
        (its row and path named).
    InputFileError
        A runs file or a user's network or topology file that cannot be read.
    InvalidTopologyError
        A user's topology that breaks a DeepPrivacy rule on its row's network.

    Notes
    -----
    With ``prior_strength`` :math:`\lambda > 0`, the TrainingTimePredictor
    is refitted on the standardised features of the *base* predictor,
    :math:`z = (t(x) - \mu_0) / s_0`, so that the coefficients :math:`c_0`
    of its rounds model are the prior's centre:

    .. math::

        (c, d, \sigma) = \arg\min_{c \ge 0,\, d,\, \sigma} \sum_i
            \ell_i(c, d, \sigma) + \frac{\lambda}{2} \lVert c - c_0 \rVert^2,

    with :math:`\ell_i` the Tobit negative log-likelihood of run i:
    :math:`\tfrac12 r_i^2 + \log\sigma`, :math:`r_i = (\log G_i - d -
    z_i^\top c)/\sigma`, if it reached the target in :math:`G_i` rounds;
    :math:`-\log\Phi((d + z_i^\top c - \log T)/\sigma)` if it did not within
    the horizon T.  That is the MAP estimate under a Gaussian prior of
    precision :math:`\lambda` on each standardised coefficient (in units of
    the base's corpus spread, so a feature the runs barely vary keeps its
    base coefficient), with no prior on the intercept d and on sigma: the
    workload's overall speed and run-to-run spread are always refitted.  The
    reach model (whether the target is reached within T rounds, which
    depends on the workload's target and horizon) is refitted as the
    predictor fits it, logistic with :math:`a \ge 0` and its own L2 penalty
    :math:`\lVert a \rVert^2 / 2C`, on the same standardisation.  As
    :math:`\lambda \to \infty` the rounds model keeps the base's
    coefficients and refits d and sigma only; :math:`\lambda = 0` is the
    plain refit (on the runs' own standardisation, under which the rounds
    model's fit is the same).  On 16 runs of one network (logistic
    regression on digits), lambda = 10 ranked the runs of two other
    networks better than the plain refit (mean censored Spearman 0.92
    against 0.88).

    Examples
    --------
    Runs of your own (two networks and trials would be better):

    >>> import tempfile
    >>> import pandas as pd
    >>> from topokit import load_example, save_network, save_topology
    >>> from topokit.design.baselines import dlfdp, ndlf
    >>> net, folder = load_example("toy"), Path(tempfile.mkdtemp())
    >>> _ = save_network(net, folder / "toy.json")
    >>> for name, topology in {"ndlf": ndlf(net), "dlfdp": dlfdp(net),
    ...                        "paper": net.topology}.items():
    ...     _ = save_topology(topology, folder / f"{name}.json")
    >>> runs = pd.DataFrame({
    ...     "network": "toy.json", "target": 0.8, "horizon": 40,
    ...     "topology": ["ndlf.json", "dlfdp.json", "paper.json"] * 2,
    ...     "measured_rounds": [9, 38, 21, 8, None, 24]})
    >>> runs.to_csv(folder / "runs.csv", index=False)
    >>> result = calibrate(folder / "runs.csv", predictor="default", prior_strength=10)
    >>> result.n_runs, result.n_censored, result.n_topologies
    (6, 1, 3)
    """
    cv = check_int_at_least(cv, "cv", minimum=2)
    if seed is not None:  # the folds' KFold takes seeds below 2**32
        seed = check_int(seed, "seed", low=0, high=2**32 - 1)
    model = None if predictor is None else _time_predictor(predictor)
    workload = settings
    settings = feature_settings_for(settings, model)
    refit = _check_refit(model, settings, prior_strength)
    if settings is None and model is not None:
        settings = model.feature_settings
    frame = _read_runs(runs, settings)
    _check_columns(frame, use_noise_variance)
    if model is not None:
        frame, model = _with_workload_columns(frame, model, workload, settings)
    if model is not None:
        told = workload if isinstance(workload, Workload) else None
        return _calibrate_time_predictor(frame, model, target, cv, seed, refit, told)
    return _calibrate_global_iterate(frame, use_noise_variance, target, cv, positive, seed)


def _calibrate_global_iterate(frame: pd.DataFrame, use_noise_variance: bool,
                              target: float | None, cv: int, positive: bool,
                              seed: int) -> CalibrationResult:
    """:func:`calibrate` without a predictor: eq. (15)'s form on the runs that reached it."""
    chosen = _select_target(frame, target)
    sample = _usable_runs(chosen, _features(use_noise_variance))
    predictor = GlobalIteratePredictor(use_noise_variance=use_noise_variance, positive=positive)
    predictor.fit(sample.X, sample.y)
    _warn_of_wrong_signs(predictor, sample.X, sample.y)
    r2 = float(predictor.score(sample.X, sample.y))
    folds = _cross_validate(predictor, sample, cv, seed)

    L = sample.rows["local_iterate"].to_numpy(float)
    measured_time = sample.rows["measured_time"].to_numpy(float)
    paper = GlobalIteratePredictor().predict(sample.X[:, :2]) * L
    return CalibrationResult(
        predictor=predictor,
        target=chosen.target,
        n_runs=int(len(sample.y)),
        n_censored=sample.n_censored,
        n_topologies=int(len(np.unique(sample.groups))),
        r2=r2,
        cv_rmse=folds.rmse,
        cv_rmse_std=folds.rmse_std,
        cv_folds=folds.folds,
        spearman_paper=correlation(paper, measured_time, "spearman"),
        spearman_fitted=correlation(predictor.predict(sample.X) * L, measured_time, "spearman"),
        spearman_fitted_cv=correlation(folds.predictions * L, measured_time, "spearman"),
    )


def _warn_of_wrong_signs(predictor: GlobalIteratePredictor, X: NDArray[np.float64],
                        y: NDArray[np.float64]) -> None:
    """Warn when eq. (15)'s fit says a worse topology needs fewer rounds.

    Every feature of eq. (15) (H, phi, U) slows training as it grows; a negative
    coefficient, which a fit on few runs can give, predicts fewer rounds (even
    negative ones) for slower-mixing or noisier topologies, and a search by it
    heads for them.  A coefficient counts as negative when it moves the
    prediction over the feature's range by more than rounding does (1e-9 of the
    largest rounds).
    """
    spans = np.ptp(X, axis=0)
    scale = 1e-9 * max(float(np.max(np.abs(y))), 1.0)
    wrong = {name: float(c) for name, c, span in zip(predictor.feature_names, predictor.coef_,
                                                     spans, strict=True) if -c * span > scale}
    if wrong:
        named = ", ".join(f"{name} {value:.3g}" for name, value in wrong.items())
        warnings.warn(
            f"the fit on {len(y)} runs gives negative coefficients ({named}): it predicts "
            "fewer rounds for a topology that mixes more slowly or adds more noise, and a "
            "design searched by it heads there; fit with positive=True (topokit calibrate "
            "--positive), on more runs, or refit a training-time predictor (--refit default)",
            TopokitWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------
# The fitted training-time predictor: refit and leave-network-out evaluation
# ---------------------------------------------------------------------------------------------

def _time_predictor(predictor: Any):
    """The TrainingTimePredictor a name, a path or an object gives (callers fit clones)."""
    from ..design.time_predictor import TrainingTimePredictor, load_predictor

    model = load_predictor(predictor)
    if not isinstance(model, TrainingTimePredictor):
        raise InvalidInputError(
            "leave_network_out and calibrate(predictor=...) refit a TrainingTimePredictor "
            f"('default', 'mlp', its file or object); got {type(model).__name__}"
        )
    return model


def _warn_of_one_network(rows: pd.DataFrame, prior_strength: float) -> None:
    """Warn when a plain refit (no prior) rests on the runs of a single network: nothing in
    them says how its coefficients carry over to the networks ``optimize`` designs for."""
    if prior_strength > 0 or "network" not in rows.columns:
        return
    networks = rows["network"].astype(str).unique()
    if len(networks) == 1:
        warnings.warn(
            f"every run is of one network ({networks[0]!r}): a refit on one network may rank "
            "another network's topologies wrongly, and designs judged by it rest on that; add "
            "probe runs of a second network (topokit probe) or keep the refit near its base "
            "(prior_strength=10, topokit calibrate --prior-strength 10)",
            TopokitWarning, stacklevel=4)


def _record_runs_model(refit: Any, base: Any, workload: Workload | None) -> None:
    """Record in ``refit``'s provenance the model its runs trained and what was measured of
    it: ``trained_model`` and ``model_traits`` (the model, its probe rounds and ceiling, and
    where the probe rounds come from), from the workload calibrate was told.

    :func:`topokit.design.default_mixing` (:mod:`topokit.design.trust`) reads the traits to
    choose ``optimize``'s weights and NDLF margin: a predictor calibrated on a model's runs
    designs by that model's measurement, whatever predictor it started from.  Untold, the
    runs' model is unknown and nothing of ``base``'s model is carried over (the runs may be
    any model's): designs judged by the refit get the safe choices.
    """
    from ..design.time_predictor import load_predictor, workload_ceiling
    from ..design.trust import measured_probe_rounds

    provenance = {key: value for key, value in (getattr(refit, "provenance_", None) or {}
                                                ).items()
                  if key not in ("trained_model", "model_traits")}
    if workload is not None:
        trait = measured_probe_rounds(base, workload)
        ceiling = workload_ceiling(load_predictor("workload"), workload)
        provenance["trained_model"] = workload.model
        provenance["model_traits"] = {"model": workload.model,
                                      "probe_rounds": trait.probe_rounds,
                                      "probe_rounds_source": trait.source,
                                      "ceiling": ceiling}
    refit.provenance_ = provenance


class _Refit(NamedTuple):
    """How :func:`calibrate` refits a TrainingTimePredictor (checked)."""

    settings: FeatureSettings | None  # the runs' settings as given (None: the predictor's)
    prior_strength: float  # lambda >= 0
    base: Any  # the predictor refitted, the prior's centre (None without one)


def _with_workload_columns(frame: pd.DataFrame, model: Any, workload: Any = None,
                           settings: FeatureSettings | None = None):
    """``frame`` with each run's ``target_closeness`` (target / ceiling) and
    ``noise_multiplier`` (that of ``settings``, the runs' description; default the
    predictor's) where ``model`` judges them and the table lacks them, and ``model`` at
    the workload's closeness.

    The ceiling is the workload's, else the one the predictor measured for its model
    (:func:`~topokit.design.time_predictor.workload_ceiling`); unknown, it is one line
    asking for ``Workload(ceiling=...)``.

    >>> from topokit import Workload, load_predictor
    >>> runs = pd.DataFrame({"target": [0.5, 0.6]})
    >>> frame, model = _with_workload_columns(runs, load_predictor("workload"),
    ...                                      Workload(target=0.6, ceiling=0.8))
    >>> frame["target_closeness"].round(3).tolist(), round(model.target_closeness, 3)
    ([0.625, 0.75], 0.75)
    """
    if "noise_multiplier" in model.features and "noise_multiplier" not in frame.columns:
        # The runs are described at the predictor's settings (the workload's, where given).
        described = settings if settings is not None else model.feature_settings
        frame = frame.assign(noise_multiplier=described.noise_multiplier)
    told = workload if isinstance(workload, Workload) else None
    if "target_closeness" in model.features:
        frame, model = _with_closeness(frame, model, told)
    return _with_probe_rounds(frame, model, told)


def _with_closeness(frame: pd.DataFrame, model: Any, told: Workload | None):
    """``frame`` with ``target_closeness`` and ``model`` at the workload's closeness."""
    from ..design.time_predictor import workload_ceiling

    ceiling = workload_ceiling(model, told if told is not None else Workload())
    if ceiling is None:
        raise InvalidInputError(
            "the predictor judges how close the target is to the accuracy the model reaches "
            "without noise, which is unknown for these runs: give settings=Workload(..., "
            "ceiling=...) (topokit.training.ceiling.ceiling_probe measures it)")
    if told is not None:  # the refit predicts at the workload's own target
        model = copy.deepcopy(model).set_params(target_closeness=told.target / ceiling)
    if "target_closeness" in frame.columns:
        return frame, model
    return frame.assign(target_closeness=frame["target"].to_numpy(float) / ceiling), model


def _with_probe_rounds(frame: pd.DataFrame, model: Any, told: Workload | None):
    """``frame`` with the runs' model's ``probe_rounds`` where ``model`` judges it and the
    table lacks it, and ``model`` at that value.

    The workload's, else the one the predictor measured for the runs' model
    (:func:`~topokit.design.time_predictor.workload_probe_rounds`); unknown, it is one
    line asking for ``Workload(probe_rounds=...)``.
    """
    from ..design.time_predictor import workload_probe_rounds

    if "probe_rounds" not in model.features:
        return frame, model
    rounds = workload_probe_rounds(model, told if told is not None else Workload())
    if rounds is None:
        raise InvalidInputError(
            "the predictor judges how fast the model learns without noise (the rounds its "
            "ceiling probe takes to 90 % of its ceiling), which is unknown for these runs' "
            "model: give settings=Workload(..., probe_rounds=...) "
            "(topokit.training.ceiling.ceiling_probe(...).probe_rounds measures it)")
    if told is not None:  # the refit predicts at the workload's own model
        model = copy.deepcopy(model).set_params(probe_rounds=rounds)
    if "probe_rounds" in frame.columns:
        return frame, model
    return frame.assign(probe_rounds=rounds), model


def feature_settings_for(settings: Any, predictor: Any = None) -> FeatureSettings | None:
    """``settings`` as the FeatureSettings that describe runs: a
    :class:`~topokit.design.workload.Workload` gives ``predictor``'s settings at that
    workload (:func:`~topokit.design.time_predictor.predictor_at_workload`; the shipped
    default predictor's when ``predictor`` is None); FeatureSettings or None as given.

    >>> from topokit import Workload
    >>> feature_settings_for(Workload(epsilon=0.5, batch_size=32)).batch_size
    32
    """
    from ..design.time_predictor import load_predictor, predictor_at_workload

    if not isinstance(settings, Workload):
        return settings
    base = load_predictor("default") if predictor is None else predictor
    return predictor_at_workload(base, settings).feature_settings


def _check_refit(model: Any, settings: Any, prior_strength: Any) -> _Refit:
    """The settings a user's table is described with, and the prior, checked."""
    if settings is not None and not isinstance(settings, FeatureSettings):
        raise InvalidInputError(
            "settings must be a topokit FeatureSettings, a Workload or None; got "
            f"{type(settings).__name__}")
    strength = check_real(prior_strength, "prior_strength", low=0)
    if strength > 0 and model is None:
        raise InvalidInputError(
            "prior_strength keeps a refit TrainingTimePredictor near the one it starts from; "
            "give predictor= ('default', 'mlp' or a predictor file)")
    if strength > 0 and not hasattr(model, "rounds_coef_"):
        raise InvalidInputError(
            "prior_strength needs a fitted predictor as the prior's centre; this "
            "TrainingTimePredictor is not fitted")
    return _Refit(settings, strength, model)


def _censored_rows(chosen: _TargetRuns, features: tuple[str, ...]) -> pd.DataFrame:
    """The target's runs with finite features; ``rounds`` is inf where never reached."""
    missing = [c for c in (*features, "local_iterate", "measured_rounds", "hitting_time", "phi")
               if c not in chosen.rows.columns]
    if missing:
        raise InvalidInputError(
            f"the runs table lacks column(s) {', '.join(missing)}; runs of topokit validate "
            "0.2 or later have them"
        )
    _check_numeric(chosen.rows, features)
    finite = np.isfinite(chosen.rows[list(features)].to_numpy(float))
    if len(chosen.rows) and not finite.all(axis=1).any():
        raise InvalidInputError(_no_finite_runs(chosen.target, features, finite))
    rows = chosen.rows[finite.all(axis=1)]
    return rows.assign(rounds=rows["measured_rounds"].fillna(np.inf).to_numpy(float))


def _no_finite_runs(target: float, features: tuple[str, ...], finite: NDArray) -> str:
    """Why no run of ``target`` can be fitted on: the column with no finite value, if one."""
    empty = [name for name, column in zip(features, finite.T, strict=True) if not column.any()]
    detail = (f"column {empty[0]!r} is NaN or inf in every row" if empty else
              f"every run has NaN or inf in one of the columns {', '.join(features)}")
    return (f"no run of target {target} has finite features to fit on: {detail}; write the "
            "table with topokit validate -o, or give your own runs (columns "
            f"{', '.join(USER_RUN_COLUMNS)}) and topokit computes the features")


def _fit_time_predictor(model, rows: pd.DataFrame, refit: _Refit | None = None):
    """``model`` fitted on ``rows``; its horizon is the longest run's round count.

    With ``refit.prior_strength`` > 0, kept near ``refit.base`` (``TrainingTimePredictor.fit``'s
    ``prior``).
    """
    horizon = float(rows["rounds_run"].max()) if "rounds_run" in rows.columns else model.horizon
    model.set_params(horizon=horizon)
    X, rounds = rows[list(model.features)].to_numpy(float), rows["rounds"].to_numpy()
    if refit is None or refit.prior_strength == 0:
        return model.fit(X, rounds)
    return model.fit(X, rounds, prior=refit.base, prior_strength=refit.prior_strength)


def _censored_rank(predicted: NDArray, measured: NDArray) -> float:
    from .stats import censored_spearman

    return censored_spearman(np.asarray(predicted, float), np.asarray(measured, float))


def leave_network_out(runs, predictor: Any = "default", *, target: float | None = None,
                      by: tuple[str, ...] = ("network",)) -> pd.DataFrame:
    """How well a TrainingTimePredictor ranks topologies on networks it was not fitted on.

    For every network of the runs table, a clone of ``predictor`` is refitted
    on the runs of the *other* networks and predicts this network's runs.
    Within each group of ``by`` (the network, and e.g. ``"skewness"`` when the
    table has such a column), the Spearman correlation of predicted and
    measured time-to-target (rounds x L) is computed with runs that never
    reached the target ranked slowest (on both sides: a prediction of
    ``inf`` means "never"), next to eq. (15)'s on the same runs.

    Parameters
    ----------
    runs : DataFrame, ValidationResult or path
        Runs of :func:`topokit.validate` on several networks (column
        ``network``), with the feature columns
        (:data:`topokit.validation.FEATURE_COLUMNS`); or a table of your own
        runs (:data:`USER_RUN_COLUMNS`, see :func:`calibrate`), described
        with the predictor's settings.
    predictor : "default", "mlp", path or TrainingTimePredictor, default "default"
        What to refit (its features, settings and hyper-parameters).
    target : float, optional
        Default: the highest target of the table.
    by : tuple of str, default ("network",)
        The groups whose topologies are ranked; must include ``"network"``.

    Returns
    -------
    DataFrame
        One row per group: its keys, ``n_runs``, ``n_never`` (runs that
        never reached the target), ``n_never_predicted``, ``spearman`` (the
        refitted predictor) and ``spearman_paper`` (eq. 15).
    """
    model = _time_predictor(predictor)
    frame, model = _with_workload_columns(_read_runs(runs, model.feature_settings), model)
    by = tuple(by)
    if "network" not in by or any(column not in frame.columns for column in by):
        raise InvalidInputError(
            f"by must name columns of the runs table including 'network'; got {by!r}"
        )
    rows = _censored_rows(_select_target(frame, target), tuple(model.features))
    networks = rows["network"].unique()
    if len(networks) < 2:
        raise InvalidInputError(
            "leave-network-out needs runs of at least 2 networks (column 'network'); got "
            f"{len(networks)}"
        )
    results = [_held_out(model, rows, network, by) for network in networks]
    return pd.concat(results, ignore_index=True)


def _held_out(model, rows: pd.DataFrame, network: Any, by: tuple[str, ...]) -> pd.DataFrame:
    """Refit without ``network``, predict its runs, rank them group by group."""
    from sklearn.base import clone

    held = rows["network"] == network
    fitted = _fit_time_predictor(clone(model), rows[~held])
    test = rows[held]
    predicted = fitted.predict(test[list(model.features)].to_numpy(float))
    paper = GlobalIteratePredictor().predict(test[["hitting_time", "phi"]].to_numpy(float))
    test = test.assign(predicted_time=predicted * test["local_iterate"].to_numpy(float),
                       paper_time=paper * test["local_iterate"].to_numpy(float),
                       measured=test["rounds"] * test["local_iterate"].to_numpy(float),
                       never_predicted=~np.isfinite(predicted))
    records = []
    for keys, group in test.groupby(list(by), sort=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        records.append({
            **dict(zip(by, keys, strict=True)), "n_runs": len(group),
            "n_never": int(np.isinf(group["rounds"]).sum()),
            "n_never_predicted": int(group["never_predicted"].sum()),
            "spearman": _censored_rank(group["predicted_time"], group["measured"]),
            "spearman_paper": _censored_rank(group["paper_time"], group["measured"]),
        })
    return pd.DataFrame(records)


def _calibrate_time_predictor(frame: pd.DataFrame, model: Any, target: float | None,
                              cv: int, seed: int, refit: _Refit,
                              told: Workload | None = None) -> CalibrationResult:
    """:func:`calibrate` with ``predictor``: refit a TrainingTimePredictor on every run."""
    from sklearn.base import clone

    rows = _censored_rows(_select_target(frame, target), tuple(model.features))
    chosen_target = float(rows["target"].iloc[0]) if len(rows) else float("nan")
    unfitted = clone(model) if refit.settings is None \
        else clone(model).set_params(settings=refit.settings)
    fitted = _fit_time_predictor(clone(unfitted), rows, refit)
    _record_runs_model(fitted, model, told)
    _warn_of_one_network(rows, refit.prior_strength)  # after the fit: errors come alone
    groups = rows["topology"].astype(str).to_numpy()
    folds = min(cv, len(np.unique(groups)))
    out_of_fold = np.full(len(rows), np.nan)
    for train_rows, test_rows in (_topology_folds(groups, folds, seed) if folds >= 2 else []):
        try:
            fold = _fit_time_predictor(clone(unfitted), rows.iloc[train_rows], refit)
        except InvalidInputError:  # no run of the fold reached the target: nothing to fit
            continue
        out_of_fold[test_rows] = fold.predict(rows.iloc[test_rows][list(model.features)]
                                              .to_numpy(float))
    L = rows["local_iterate"].to_numpy(float)
    measured = rows["rounds"].to_numpy(float) * L
    features = rows[list(model.features)].to_numpy(float)
    paper = GlobalIteratePredictor().predict(rows[["hitting_time", "phi"]].to_numpy(float))
    return CalibrationResult(
        predictor=fitted, target=chosen_target, n_runs=int(len(rows)),
        n_censored=int(np.isinf(rows["rounds"]).sum()),
        n_topologies=int(len(np.unique(groups))), r2=float("nan"), cv_rmse=float("nan"),
        cv_rmse_std=float("nan"), cv_folds=folds if folds >= 2 else 0,
        spearman_paper=_censored_rank(paper * L, measured),
        spearman_fitted=_censored_rank(fitted.predict(features) * L, measured),
        spearman_fitted_cv=_censored_rank(out_of_fold * L, measured),
        prior_strength=refit.prior_strength,
    )
