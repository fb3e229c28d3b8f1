"""Calibration: refit the global-iterate predictor on measured runs.

:func:`calibrate` reads the runs table of :func:`topokit.validate`, keeps the
runs that reached one target accuracy, fits a
:class:`~topokit.design.GlobalIteratePredictor` on them (features H, phi and
optionally the noise variance U; response: measured rounds), cross-validates
it over topologies and says how much the rank correlation of predicted and
measured physical time improves on eq. (15).

The steps, one function each: read the runs (:func:`_read_runs`), choose the
target's rows and leave out the censored ones (:func:`_select_target`,
:func:`_usable_runs`), fit, cross-validate (:func:`_cross_validate`) and
correlate.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._checks import check_int, check_int_at_least
from ..errors import InputFileError, InputFileNotFoundError, InvalidInputError
from ..training.core import check_accuracy_threshold
from .predictor import GlobalIteratePredictor

__all__ = ["calibrate", "leave_network_out", "CalibrationResult", "CALIBRATION_COLUMNS"]

#: Columns :func:`calibrate` needs.
CALIBRATION_COLUMNS = ("topology", "target", "hitting_time", "phi", "local_iterate",
                       "measured_rounds", "measured_time")


def _correlation(x: np.ndarray, y: np.ndarray, method: str) -> float:
    """Spearman or Pearson correlation over the finite pairs; NaN where undefined."""
    from scipy.stats import pearsonr, spearmanr

    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")  # undefined for fewer than 3 points or a constant side
    function = spearmanr if method == "spearman" else pearsonr
    return float(function(x, y).statistic)


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

    @property
    def coefficients(self) -> dict[str, float]:
        """Fitted coefficients by feature name, and the intercept.

        For a :class:`~topokit.design.TrainingTimePredictor`, those of its
        rounds model (log rounds on standardised, oriented features).
        """
        if not isinstance(self.predictor, GlobalIteratePredictor):
            named = dict(zip(self.predictor.features, self.predictor.rounds_coef_.tolist(),
                             strict=True))
            return {**named, "intercept": float(self.predictor.rounds_intercept_)}
        data = self.predictor.to_dict()
        named = dict(zip(data["features"], data["coef"], strict=True))
        return {**named, "intercept": data["intercept"]}

    def save(self, path: str | Path) -> Path:
        """Write the fitted predictor as JSON (``topokit design --predictor`` reads it)."""
        return self.predictor.save(path)

    def to_dict(self) -> dict[str, Any]:
        from .predictor import PAPER_COEFFICIENTS, PAPER_INTERCEPT

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


def _read_runs(runs) -> pd.DataFrame:
    """The runs table of a DataFrame, a ValidationResult or a Parquet path."""
    # Imported here: validation imports this module to re-export calibrate.
    from .validation import ValidationResult

    if isinstance(runs, ValidationResult):
        return runs.frame
    if isinstance(runs, pd.DataFrame):
        return runs
    if isinstance(runs, (str, Path)):
        path = Path(runs)
        if not path.exists():
            raise InputFileNotFoundError(f"no such runs file: {path}")
        if path.is_dir():
            raise InputFileError(
                f"{path} is a directory; expected the Parquet runs table written by "
                "topokit validate -o"
            )
        try:
            return pd.read_parquet(path)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InputFileError(
                f"{path}: not a Parquet runs table (written by topokit validate): {exc}"
            ) from None
    raise InvalidInputError(
        f"runs must be a DataFrame, a ValidationResult or a Parquet path; got {type(runs).__name__}"
    )


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
    for column in needed[1:]:  # all but the topology's name are numbers
        if not pd.api.types.is_numeric_dtype(frame[column]) or \
                pd.api.types.is_bool_dtype(frame[column]):
            values = frame[column].dropna()
            example = f"; e.g. {values.iloc[0]!r}" if len(values) else ""
            raise InvalidInputError(
                f"column {column!r} of the runs table must be numeric; it holds "
                f"{frame[column].dtype} values{example}"
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
) -> CalibrationResult:
    """Fit the global-iterate predictor on measured runs.

    Parameters
    ----------
    runs : DataFrame, ValidationResult or path
        The runs table of :func:`validate` (or ``topokit validate -o``):
        columns ``topology``, ``target``, ``hitting_time``, ``phi``,
        ``local_iterate``, ``measured_rounds``, ``measured_time`` (and
        ``noise_variance`` with ``use_noise_variance``).
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

    Returns
    -------
    CalibrationResult

    Raises
    ------
    InvalidInputError
        Missing columns, a target not in the table or outside (0, 1], fewer
        measured runs than the fit needs, or features that do not vary
        enough to identify every coefficient.
    """
    frame = _read_runs(runs)
    _check_columns(frame, use_noise_variance)
    cv = check_int_at_least(cv, "cv", minimum=2)
    if seed is not None:  # the folds' KFold takes seeds below 2**32
        seed = check_int(seed, "seed", low=0, high=2**32 - 1)
    if predictor is not None:
        return _calibrate_time_predictor(frame, predictor, target, cv, seed)
    chosen = _select_target(frame, target)
    sample = _usable_runs(chosen, _features(use_noise_variance))
    predictor = GlobalIteratePredictor(use_noise_variance=use_noise_variance, positive=positive)
    predictor.fit(sample.X, sample.y)
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
        spearman_paper=_correlation(paper, measured_time, "spearman"),
        spearman_fitted=_correlation(predictor.predict(sample.X) * L, measured_time, "spearman"),
        spearman_fitted_cv=_correlation(folds.predictions * L, measured_time, "spearman"),
    )


# ---------------------------------------------------------------------------------------------
# The fitted training-time predictor: refit and leave-network-out evaluation
# ---------------------------------------------------------------------------------------------

def _time_predictor(predictor: Any):
    """The TrainingTimePredictor a name, a path or an object gives (callers fit clones)."""
    from .time_predictor import TrainingTimePredictor, load_predictor

    model = load_predictor(predictor)
    if not isinstance(model, TrainingTimePredictor):
        raise InvalidInputError(
            "leave_network_out and calibrate(predictor=...) refit a TrainingTimePredictor "
            f"('default', 'mlp', its file or object); got {type(model).__name__}"
        )
    return model


def _keep_trained_model(refit: Any, base: Any) -> None:
    """Give ``refit`` the model the predictor ``base`` was trained on: its provenance's
    ``trained_model`` (which cloning drops).

    A user refits the predictor of the model they train (``"mlp"`` for an MLP), and
    :func:`topokit.design.default_mixing` reads it to choose ``optimize``'s weights.
    """
    trained = (getattr(base, "provenance_", None) or {}).get("trained_model")
    if trained is not None:
        refit.provenance_ = {**(getattr(refit, "provenance_", None) or {}),
                             "trained_model": trained}


def _censored_rows(chosen: _TargetRuns, features: tuple[str, ...]) -> pd.DataFrame:
    """The target's runs with finite features; ``rounds`` is inf where never reached."""
    missing = [c for c in (*features, "local_iterate", "measured_rounds", "hitting_time", "phi")
               if c not in chosen.rows.columns]
    if missing:
        raise InvalidInputError(
            f"the runs table lacks column(s) {', '.join(missing)}; runs of topokit validate "
            "0.2 or later have them"
        )
    rows = chosen.rows[np.isfinite(chosen.rows[list(features)].to_numpy(float)).all(axis=1)]
    return rows.assign(rounds=rows["measured_rounds"].fillna(np.inf).to_numpy(float))


def _fit_time_predictor(model, rows: pd.DataFrame):
    """``model`` fitted on ``rows``; its horizon is the longest run's round count."""
    horizon = float(rows["rounds_run"].max()) if "rounds_run" in rows.columns else model.horizon
    model.set_params(horizon=horizon)
    return model.fit(rows[list(model.features)].to_numpy(float), rows["rounds"].to_numpy())


def _censored_rank(predicted: NDArray, measured: NDArray) -> float:
    from .validation import _censored_spearman

    return _censored_spearman(np.asarray(predicted, float), np.asarray(measured, float))


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
        (:data:`topokit.design.validation.FEATURE_COLUMNS`).
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
    frame = _read_runs(runs)
    by = tuple(by)
    if "network" not in by or any(column not in frame.columns for column in by):
        raise InvalidInputError(
            f"by must name columns of the runs table including 'network'; got {by!r}"
        )
    model = _time_predictor(predictor)
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


def _calibrate_time_predictor(frame: pd.DataFrame, predictor: Any, target: float | None,
                              cv: int, seed: int) -> CalibrationResult:
    """:func:`calibrate` with ``predictor``: refit a TrainingTimePredictor on every run."""
    from sklearn.base import clone

    model = _time_predictor(predictor)
    rows = _censored_rows(_select_target(frame, target), tuple(model.features))
    chosen_target = float(rows["target"].iloc[0]) if len(rows) else float("nan")
    fitted = _fit_time_predictor(clone(model), rows)
    _keep_trained_model(fitted, model)
    groups = rows["topology"].astype(str).to_numpy()
    folds = min(cv, len(np.unique(groups)))
    out_of_fold = np.full(len(rows), np.nan)
    for train_rows, test_rows in (_topology_folds(groups, folds, seed) if folds >= 2 else []):
        try:
            fold = _fit_time_predictor(clone(model), rows.iloc[train_rows])
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
    )
