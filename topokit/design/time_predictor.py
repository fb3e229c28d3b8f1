"""Predicting training time from what a topology does: :class:`TrainingTimePredictor`.

DeepPrivacy's eq. (15) (:class:`~topokit.design.predictor.GlobalIteratePredictor`)
predicts the rounds G to a target accuracy from the hitting time H and the
DP ratio phi.  Measured on D-PSGD with clipped DP noise it ranks topologies
poorly, and it always predicts a finite number, even for topologies whose DP
noise keeps the accuracy below the target for good.  The predictor here
models both:

(a) whether the target is reached at all: a logistic model of the
    probability of reaching it, on features oriented so that more noise,
    slower mixing or more heterogeneity can only lower it;
(b) how many rounds it takes: a linear model of log rounds with
    non-negative coefficients on the same oriented features, so that none of
    them can predict fewer rounds by getting worse; fitted as a Tobit
    regression, in which a run that never reached the target within its T
    rounds counts as "more than T" rather than being dropped.

``predict`` returns the rounds, and ``inf`` where (a) says the target is
not reached (or the topology is disconnected).  The features are those of
:func:`topokit.design.features.topology_features`; the
:class:`~topokit.design.features.FeatureSettings` they were computed with
(noise multiplier, batch size, data size, ...) are part of the predictor.

:func:`load_predictor` gives ``"paper"`` (eq. 15, unchanged), ``"default"``
(the predictor shipped in topokit's data, fitted by
``analyses/predictor_corpus.py`` on logistic-regression runs), ``"mlp"`` (the
one fitted on MLP runs, ``--model mlp``), ``"workload"`` (fitted across DP
budgets, targets and data sets, ``analyses/workload_predictor.py``) or a JSON
file written by ``save`` (either kind).  :func:`predict_topology` computes a
topology's features and predicts its rounds in one call.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    check_is_fitted,
    validate_data,
)

from .._checks import brief, check_real
from .._io import atomic_write_text, read_json_file
from .._version import __version__
from ..errors import InputFileError, InvalidInputError
from ..network.core import Network, Topology
from . import _varying
from ._defaults import PREDICTOR_NAMES
from .features import FeatureSettings, TopologyFeatures, topology_features
from .predictor import GlobalIteratePredictor, _check_file_version
from .workload import _REL_TOL, Workload, check_workload

__all__ = [
    "shipped_predictor_for",
    "workload_outside",
    "workload_clamps",
    "predictor_within_fit",
    "workload_ceiling",
    "workload_probe_rounds",
    "predictor_at_workload",
    "TrainingTimePredictor",
    "load_predictor",
    "predict_topology",
    "feature_matrix",
    "FEATURE_TRANSFORMS",
    "DEFAULT_FEATURES",
    "PREDICTOR_NAMES",
]

KIND = "topokit.TrainingTimePredictor"
_FORMAT_VERSION = 1


def _inverse(values: NDArray) -> NDArray:
    with np.errstate(divide="ignore"):
        return 1.0 / values


def _log(values: NDArray) -> NDArray:
    with np.errstate(divide="ignore"):
        return np.log(values)


def _identity(values: NDArray) -> NDArray:
    return values


def _closeness(values: NDArray) -> NDArray:
    """-log(1 - c) of the target's closeness c = target / ceiling: 0 far below the ceiling,
    growing without bound as the target nears it, ``inf`` at or beyond it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values < 1.0, -np.log1p(-np.minimum(values, 1.0)), np.inf)


#: How each feature enters the models: a transform increasing in "worse for training"
#: (slower mixing, more noise, more heterogeneity).  A feature not listed here has no
#: orientation and cannot be used.
FEATURE_TRANSFORMS: dict[str, Callable[[NDArray], NDArray]] = {
    "hitting_time": _log,
    "spectral_gap": lambda gap: -_log(gap),
    "effective_neighbours": _inverse,
    "phi": _identity,
    "noise_average": _identity,
    "noise_disagreement": _identity,
    "noise_felt": _identity,
    "heterogeneity_local": _identity,
    "heterogeneity_neighbourhood": _identity,
    "heterogeneity_disagreement": _identity,
    "target_closeness": _closeness,
    # log(1 + z): finite for a workload without noise (z = 0).
    "noise_multiplier": np.log1p,
    # Rounds the model's ceiling probe takes to 90 % of its ceiling: a slower learner's.
    "probe_rounds": _log,
}

#: Features of the workload rather than of the topology: a column of a runs table, and for
#: :class:`TopologyFeatures` the predictor's own (``target_closeness``, ``probe_rounds``, and
#: the noise multiplier of its settings).
WORKLOAD_FEATURES = ("target_closeness", "noise_multiplier", "probe_rounds")
#: The noise features, which a predictor with ``noise_scale`` takes as log(1 + x / scale).
NOISE_FEATURES = ("noise_felt", "noise_average", "noise_disagreement")

#: The features of the default predictor.
DEFAULT_FEATURES = (
    "noise_felt",
    "noise_average",
    "noise_disagreement",
    "effective_neighbours",
    "heterogeneity_local",
    "heterogeneity_neighbourhood",
    "heterogeneity_disagreement",
)

#: The shipped fits: name -> the model whose runs it was fitted on.
SHIPPED_PREDICTORS = {"default": "logreg", "mlp": "mlp"}
#: The shipped fit of each of topokit's models (the inverse of :data:`SHIPPED_PREDICTORS`).
SHIPPED_FOR_MODEL = {model: name for name, model in SHIPPED_PREDICTORS.items()}

# The classifier's decision: reached when P(reach) >= 1/2.
_THRESHOLD = 0.5
# Logit of a classifier fitted on runs that all reached the target: P(reach) ~ 1 - 1e-13.
_ALWAYS = 30.0


def feature_matrix(rows: Any, features: Sequence[str] = DEFAULT_FEATURES,
                   context: Mapping[str, float] | None = None) -> NDArray[np.float64]:
    """Rows of named features as an (n_rows, n_features) float array in ``features`` order.

    ``rows`` is a pandas DataFrame with those columns, or a sequence of
    :class:`TopologyFeatures` or mappings.  ``context`` gives the features of
    the workload (:data:`WORKLOAD_FEATURES`) that a row does not hold: one
    value for every row.
    """
    features = _check_features(features)
    if hasattr(rows, "columns"):
        missing = [name for name in features if name not in rows.columns]
        if missing:
            raise InvalidInputError(f"the table lacks feature column(s) {', '.join(missing)}")
        return rows[list(features)].to_numpy(dtype=np.float64)
    context = dict(context or {})
    records = [{**context, **(row.to_dict() if isinstance(row, TopologyFeatures) else row)}
               for row in rows]
    absent = [name for name in features if records and name not in records[0]]
    if absent:
        raise InvalidInputError(
            f"feature {absent[0]!r} is a setting of the workload, not of the topology: give "
            "the predictor a workload (topokit.predictor_at_workload)")
    return np.array([[float(record[name]) for name in features] for record in records],
                    dtype=np.float64).reshape(len(records), len(features))


def _check_features(features: Sequence[str]) -> tuple[str, ...]:
    if isinstance(features, str) or not isinstance(features, Sequence) or not features:
        raise InvalidInputError(
            f"features must be a non-empty sequence of feature names; got {features!r}"
        )
    unknown = [name for name in features if name not in FEATURE_TRANSFORMS]
    if unknown:
        raise InvalidInputError(
            f"unknown feature {unknown[0]!r}; known features: {', '.join(FEATURE_TRANSFORMS)}"
        )
    if len(set(features)) != len(features):
        raise InvalidInputError(f"features must be distinct; got {list(features)}")
    return tuple(features)


def _logistic_fit(Z: NDArray, reached: NDArray, C: float) -> tuple[NDArray, float]:
    """Logistic regression of ``reached`` on -Z with non-negative weights (L2 penalty 1 / 2C).

    P(reach) = sigmoid(b - Z @ a), a >= 0: a larger (worse) feature cannot
    raise the probability of reaching the target.
    """
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    sign = np.where(reached, 1.0, -1.0)
    m, d = Z.shape

    def loss(theta: NDArray) -> tuple[float, NDArray]:
        a, b = theta[:d], theta[d]
        margin = sign * (b - Z @ a)
        value = -log_expit(margin).sum() / m + a @ a / (2.0 * C * m)
        weight = -sign * expit(-margin) / m
        gradient = np.append(-(Z.T @ weight) + a / (C * m), weight.sum())
        return float(value), gradient

    bounds = [(0.0, None)] * d + [(None, None)]
    result = minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return np.asarray(result.x[:d], dtype=np.float64), float(result.x[d])


def _censored_fit(Z: NDArray, log_rounds: NDArray, reached: NDArray, log_horizon: float,
                  centre: NDArray | None = None,
                  strength: float = 0.0) -> tuple[NDArray, float, float]:
    """Tobit regression of log rounds on Z, right-censored at the horizon, coefficients >= 0.

    log rounds = d + Z @ c + sigma e, e ~ N(0, 1); a run that never reached
    the target within the horizon T only says log rounds > log T.  Returns
    (c, d, sigma) of maximum likelihood, or with ``strength`` lambda > 0 of the
    likelihood plus lambda / 2 ||c - centre||^2 (a Gaussian prior on c around
    ``centre``; none on d and sigma).  The coefficients are searched as
    centre + step * delta with step = 1 / sqrt(1 + lambda), so that the penalty is
    about ||delta||^2 / 2 at any lambda and a strong prior stays well conditioned;
    at lambda = 0 this is the plain fit, operation for operation.
    """
    from scipy.optimize import minimize
    from scipy.special import log_ndtr

    m, width = Z.shape
    centre = np.zeros(width) if centre is None else np.asarray(centre, dtype=np.float64)
    step = 1.0 / np.sqrt(1.0 + strength)
    observed = np.where(reached, log_rounds, 0.0)

    def loss(theta: NDArray) -> tuple[float, NDArray]:
        shift, d, log_sigma = step * theta[:width], theta[width], theta[width + 1]
        sigma = np.exp(log_sigma)
        mean = d + Z @ (centre + shift)
        residual = (observed - mean) / sigma  # used on reached rows
        excess = (mean - log_horizon) / sigma  # used on censored rows
        log_tail = log_ndtr(excess)
        hazard = np.exp(-0.5 * excess**2 - 0.5 * np.log(2 * np.pi) - log_tail)
        value = np.where(reached, 0.5 * residual**2 + log_sigma, -log_tail).sum() / m \
            + 0.5 * strength * (shift @ shift) / m
        d_mean = np.where(reached, -residual, -hazard) / (sigma * m)
        d_log_sigma = np.where(reached, 1.0 - residual**2, hazard * excess).sum() / m
        d_shift = step * (Z.T @ d_mean + strength * shift / m)
        return float(value), np.concatenate([d_shift, [d_mean.sum(), d_log_sigma]])

    start = np.zeros(width + 2)
    start[width] = log_rounds[reached].mean()
    start[width + 1] = np.log(max(log_rounds[reached].std(), 1e-3))
    bounds = [(-c / step, None) for c in centre] + [(None, None), (-10.0, 10.0)]
    result = minimize(loss, start, jac=True, method="L-BFGS-B", bounds=bounds)
    theta = np.asarray(result.x, dtype=np.float64)
    coefficients = np.maximum(centre + step * theta[:width], 0.0)
    return coefficients, float(theta[width]), float(np.exp(theta[width + 1]))


class TrainingTimePredictor(RegressorMixin, BaseEstimator):
    """Rounds to a target accuracy from a topology's features; ``inf`` where never reached.

    Parameters
    ----------
    features : sequence of str, default :data:`DEFAULT_FEATURES`
        The columns of ``X``, names of :class:`TopologyFeatures` fields listed
        in :data:`FEATURE_TRANSFORMS`.
    settings : FeatureSettings, optional
        The settings the features are computed with (used by
        :func:`predict_topology`); default ``FeatureSettings()``.
    C : float, default 10.0
        Inverse L2 regularisation of the reach classifier (on standardised
        features).
    horizon : float, default 200.0
        The target round T of the runs fitted on: a run that never reached
        the target is right-censored there (its rounds are > T).
    noise_scale : float > 0, optional
        With a value s, every noise feature x (:data:`NOISE_FEATURES`) enters
        as log(1 + x / (s m)), m its median positive value in the runs fitted
        on (``noise_reference_``): a DP device's harm grows with the log of its
        noise rather than its variance, which is what a corpus spanning epsilon
        = 0.25-8 measures (``analyses/workload_predictor.py``).  None
        (default): as they are (a fit at one noise level).
    target_closeness : float > 0, optional
        The target's closeness to the accuracy the model reaches without noise
        (target / ceiling) at which :meth:`predict_features` predicts, for a
        predictor with the feature ``target_closeness`` (a column of ``X`` in
        :meth:`fit` and :meth:`predict`); set by
        :func:`predictor_at_workload`.
    probe_rounds : float > 0, optional
        The model's rounds to 90 % of its ceiling in its ceiling probe
        (:attr:`~topokit.training.ceiling.CeilingProbe.probe_rounds`) at which
        :meth:`predict_features` predicts, for a predictor with the feature
        ``probe_rounds`` (a trait telling models apart); set by
        :func:`predictor_at_workload`, as ``target_closeness`` is.
    max_rounds : float > 0, optional
        The workload's horizon, where it is shorter than ``horizon``: a
        topology predicted to need more rounds than this is predicted never
        to reach the target (``inf``).  The rounds themselves are predicted
        as fitted; a horizon longer than the fitted one changes nothing (the
        reach model still says which topologies stall within ``horizon``, the
        only horizon the runs measured).  Set by :func:`predictor_at_workload`.
        None (default): no cut-off but ``horizon``'s.
    varying_with : sequence of str, default ()
        Workload features (of ``features`` and :data:`WORKLOAD_FEATURES`)
        along which the coefficients of the topology features vary: each is
        interpolated bilinearly between its values at the corners of the
        range fitted on (``varying_range_``), every corner's >= 0, so the
        models stay monotone in every topology feature at every workload.
        With ``("target_closeness", "noise_multiplier")`` the ranking of one
        workload's topologies changes with its DP budget and target
        (``analyses/workload_predictor.py``).  Empty (default): one
        coefficient per feature.

    Attributes
    ----------
    mean_, scale_ : ndarray of shape (n_features,)
        Standardisation of the transformed features.
    reach_coef_ : ndarray of shape (n_features,)
        a >= 0 of P(reach) = sigmoid(b - z @ a).
    reach_intercept_ : float
        b.
    rounds_coef_ : ndarray of shape (n_features,)
        c >= 0 of log rounds = d + z @ c + sigma e.
    rounds_intercept_ : float
        d.
    rounds_sigma_ : float
        sigma, the spread of log rounds around the prediction (run to run).
    n_features_in_ : int
    n_samples_fit_, n_never_fit_ : int
        Runs fitted on, and how many of them never reached the target.
    provenance_ : dict
        What the predictor was fitted on (set when loaded from a file).
    noise_reference_ : dict
        With ``noise_scale``: m of each noise feature (name -> value).
    varying_range_ : dict
        With ``varying_with``: the (low, high) of each varying feature,
        transformed, over the runs fitted on (name -> [low, high]).

    Notes
    -----
    Each feature x_j is transformed by :data:`FEATURE_TRANSFORMS` (log H,
    -log gap, 1 / n_eff, the rest as they are) so that larger means worse,
    and standardised to z_j.  The reach classifier is a logistic regression
    with a >= 0; the rounds model is a Tobit regression: log rounds is
    Gaussian around d + z @ c, and a run that never reached the target
    within the horizon T counts as log rounds > log T (its likelihood is
    the Gaussian tail), so the slowest topologies pull the fit up instead
    of being dropped.  ``predict`` gives exp(d + z @ c), and ``inf`` where
    P(reach) < 1/2.  With the sign constraints, of two topologies where one
    is at least as bad in every feature, the worse one is predicted at least
    as slow and at most as likely to reach the target.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> noise = rng.uniform(0, 1, 200)
    >>> rounds = np.where(noise < 0.8, np.exp(2 + 2 * noise), np.inf)  # runs of T = 40 rounds
    >>> model = TrainingTimePredictor(features=("noise_felt",), horizon=40)
    >>> model.fit(noise[:, None], rounds).predict([[0.1], [0.95]]).round(1)
    array([ 9., inf])
    """

    def __init__(self, *, features: Sequence[str] = DEFAULT_FEATURES,
                 settings: FeatureSettings | None = None, C: float = 10.0,
                 horizon: float = 200.0, noise_scale: float | None = None,
                 target_closeness: float | None = None, varying_with: Sequence[str] = (),
                 probe_rounds: float | None = None, max_rounds: float | None = None):
        self.features = features
        self.settings = settings
        self.C = C
        self.horizon = horizon
        self.noise_scale = noise_scale
        self.target_closeness = target_closeness
        self.varying_with = varying_with
        self.probe_rounds = probe_rounds
        self.max_rounds = max_rounds

    # -- fitting -----------------------------------------------------------------------------

    def _transform(self, X: NDArray) -> NDArray:
        columns = [self._transform_one(name, X[:, j]) for j, name in enumerate(self.features)]
        return np.column_stack(columns) if columns else np.empty((X.shape[0], 0))

    def _transform_one(self, name: str, values: NDArray) -> NDArray:
        if self.noise_scale is not None and name in NOISE_FEATURES:
            return np.log1p(values / (self.noise_scale * self.noise_reference_[name]))
        return FEATURE_TRANSFORMS[name](values)

    def _set_noise_reference(self, X: NDArray, prior: TrainingTimePredictor | None) -> None:
        """m of each noise feature: the prior's (its coefficients hold on its scale), else
        the median positive value of X's column (1 where none is positive)."""
        if prior is not None and getattr(prior, "noise_scale", None) != self.noise_scale:
            raise InvalidInputError(
                f"the prior's noise_scale {getattr(prior, 'noise_scale', None)} differs from "
                f"this predictor's {self.noise_scale}; a prior holds for the same transforms "
                "only")
        if self.noise_scale is None:
            return
        if prior is not None:
            self.noise_reference_ = dict(prior.noise_reference_)
            return
        reference = {}
        for j, name in enumerate(self.features):
            if name in NOISE_FEATURES:
                positive = X[:, j][X[:, j] > 0]
                reference[name] = float(np.median(positive)) if positive.size else 1.0
        self.noise_reference_ = reference

    @property
    def feature_context(self) -> dict[str, float]:
        """The workload's features that :class:`TopologyFeatures` do not hold (name -> value)."""
        context = {}
        if "target_closeness" in self.features and self.target_closeness is not None:
            context["target_closeness"] = float(self.target_closeness)
        if "noise_multiplier" in self.features:
            context["noise_multiplier"] = float(self.feature_settings.noise_multiplier)
        if "probe_rounds" in self.features and self.probe_rounds is not None:
            context["probe_rounds"] = float(self.probe_rounds)
        return context

    @property
    def model_columns(self) -> tuple[str, ...]:
        """Names of the models' columns, in the order of ``reach_coef_`` and ``rounds_coef_``:
        the features, or with ``varying_with`` the workload's features and then each topology
        feature at each corner of the fitted range (``feature@name=low,...``)."""
        varying = _check_varying(self.varying_with, self.features)
        if not varying:
            return tuple(self.features)
        topology, workload = _split_features(self.features)
        return _varying.corner_names([self.features[j] for j in topology],
                                     [self.features[j] for j in workload], varying)

    def _model_matrix(self, Z: NDArray) -> NDArray:
        """The models' columns from standardised features Z (finite): Z itself, or the varying
        coefficients' columns (:mod:`topokit.design._varying`)."""
        varying = _check_varying(self.varying_with, self.features)
        if not varying:
            return Z
        at = [list(self.features).index(name) for name in varying]
        oriented = Z[:, at] * self.scale_[at] + self.mean_[at]
        weights = _varying.corner_weights(
            oriented, _varying.ranges_in_order(self.varying_range_, varying))
        topology, workload = _split_features(self.features)
        return _varying.varying_columns(Z, topology, workload, weights)

    def _set_varying_range(self, oriented: NDArray, prior: TrainingTimePredictor | None) -> None:
        """The box the corners span: the prior's (its coefficients hold there), else the range
        of each varying feature over the runs; a feature that does not vary is refused."""
        varying = _check_varying(self.varying_with, self.features)
        if not varying:
            return
        if prior is not None:
            self.varying_range_ = {name: list(prior.varying_range_[name]) for name in varying}
            return
        at = [list(self.features).index(name) for name in varying]
        ranges = _varying.fitted_ranges(oriented[:, at], varying)
        flat = [name for name, (low, high) in ranges.items() if not high > low]
        if flat:
            raise InvalidInputError(
                f"varying_with names {flat[0]!r}, which takes one value in these runs: its "
                "coefficients cannot vary; fit on runs at several of its values or leave it out")
        self.varying_range_ = ranges

    def feature_rows(self, features: Sequence[TopologyFeatures]) -> NDArray[np.float64]:
        """:func:`feature_matrix` of topologies' features with this predictor's context."""
        return feature_matrix(features, self.features, self.feature_context)

    def oriented_rows(self, features: Sequence[TopologyFeatures]) -> NDArray[np.float64]:
        """The features of each topology (rows) transformed so that larger is worse, before
        standardisation (:data:`FEATURE_TRANSFORMS`, log noise with ``noise_scale``)."""
        with np.errstate(invalid="ignore"):
            return self._transform(self.feature_rows(features))

    def standardised_rows(self, features: Sequence[TopologyFeatures]) -> NDArray[np.float64]:
        """The oriented, standardised features z of each topology (rows), as the models see
        them."""
        check_is_fitted(self)
        return self._standardise_checked(self.feature_rows(features))

    def _check_width(self, width: int) -> None:
        expected = len(self.features)
        if width != expected:
            raise InvalidInputError(
                f"expected {expected} feature columns {tuple(self.features)}; got {width}"
            )

    def fit(self, X: ArrayLike, y: ArrayLike, *, prior: TrainingTimePredictor | None = None,
            prior_strength: float = 0.0):
        """Fit on runs: X of shape (n_runs, n_features), y = rounds (``inf``: never reached).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features in the order of ``features``.
        y : array-like of shape (n_samples,)
            Rounds to the target, > 0; ``inf`` for a run that never reached
            it (NaN is refused: say ``inf`` for "never").
        prior : TrainingTimePredictor, optional
            A fitted predictor of the same features whose rounds model the fit
            is kept near (for refits from few runs, :func:`topokit.calibrate`):
            with ``prior_strength`` lambda > 0 the features are standardised as
            ``prior``'s, and the rounds coefficients c maximise the censored
            likelihood minus lambda / 2 ||c - c_prior||^2 (the MAP estimate under
            a Gaussian prior of precision lambda; the intercept, sigma and the
            reach model are fitted freely).  lambda = 0: the plain fit.
        prior_strength : float >= 0, default 0

        Returns
        -------
        self
        """
        _check_features(self.features)
        check_real(self.C, "C", low=0, closed="neither")
        if self.noise_scale is not None:
            check_real(self.noise_scale, "noise_scale", low=0, closed="neither")
        X = validate_data(self, X, dtype=np.float64)
        self._check_width(X.shape[1])
        y = _check_rounds(y)
        check_consistent_length(X, y)
        strength = check_real(prior_strength, "prior_strength", low=0)
        self._set_noise_reference(X, prior if strength > 0 else None)
        Z = self._transform(X)
        self._set_varying_range(Z, prior if strength > 0 else None)
        if not np.all(np.isfinite(Z)):
            raise InvalidInputError(
                "features must be finite and positive where a log or inverse is taken "
                "(a disconnected topology cannot be fitted on)"
            )
        centre = self._prior_centre(prior) if strength > 0 else None
        if centre is None:
            self.mean_ = Z.mean(axis=0)
            scale = Z.std(axis=0)
            self.scale_ = np.where(scale > 0, scale, 1.0)
        else:  # the prior's coefficients hold on the prior's standardisation
            self.mean_, self.scale_ = prior.mean_.copy(), prior.scale_.copy()
        Z = self._model_matrix((Z - self.mean_) / self.scale_)
        self._fit_reach(Z, np.isfinite(y))
        self._fit_rounds(Z, y, centre, strength)
        self.n_samples_fit_ = int(y.size)
        self.n_never_fit_ = int(np.isinf(y).sum())
        return self

    def _prior_centre(self, prior: Any) -> NDArray:
        """The rounds coefficients of ``prior``, checked to be a fitted predictor of the same
        features."""
        if not isinstance(prior, TrainingTimePredictor):
            raise InvalidInputError(
                "prior must be a fitted TrainingTimePredictor (the one a refit is kept near); "
                f"got {type(prior).__name__}")
        check_is_fitted(prior)
        if prior.model_columns != self.model_columns:
            raise InvalidInputError(
                f"the prior's model columns {prior.model_columns} differ from these "
                f"{self.model_columns}; a prior holds for the same features (and varying_with) "
                "only")
        return prior.rounds_coef_

    def _fit_reach(self, Z: NDArray, reached: NDArray) -> None:
        if reached.all():  # nothing to separate: every topology reaches the target
            self.reach_coef_ = np.zeros(Z.shape[1])
            self.reach_intercept_ = _ALWAYS
            return
        self.reach_coef_, self.reach_intercept_ = _logistic_fit(Z, reached, float(self.C))

    def _fit_rounds(self, Z: NDArray, rounds: NDArray, centre: NDArray | None = None,
                    strength: float = 0.0) -> None:
        reached = np.isfinite(rounds)
        if not reached.any():
            raise InvalidInputError(
                "no run reached the target: the number of rounds cannot be fitted; use a lower "
                "target or topologies with less DP noise"
            )
        horizon = check_real(self.horizon, "horizon", low=0, closed="neither")
        log_rounds = np.log(np.where(reached, rounds, 1.0))
        self.rounds_coef_, self.rounds_intercept_, self.rounds_sigma_ = _censored_fit(
            Z, log_rounds, reached, float(np.log(max(horizon, rounds[reached].max()))),
            centre, strength)

    # -- prediction --------------------------------------------------------------------------

    def _standardised(self, X: ArrayLike) -> NDArray:
        check_is_fitted(self)
        # inf is a feature value (a disconnected topology's H); NaN is a mistake.
        X = check_array(X, dtype=np.float64, ensure_all_finite=False)
        self._check_width(X.shape[1])
        X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite=False)
        if np.isnan(X).any():
            raise InvalidInputError("X contains NaN; features are numbers or inf")
        return self._standardise_checked(X)

    def _standardise_checked(self, X: NDArray[np.float64]) -> NDArray:
        with np.errstate(invalid="ignore"):
            return (self._transform(X) - self.mean_) / self.scale_

    def _columns(self, Z: NDArray) -> tuple[NDArray, NDArray]:
        """Which rows are finite, and the models' columns of every row (a row with an
        infinite feature as zeros: its prediction is replaced anyway)."""
        finite = np.all(np.isfinite(Z), axis=1)
        return finite, self._model_matrix(np.where(finite[:, None], Z, 0.0))

    def _reach_of(self, finite: NDArray, columns: NDArray) -> NDArray[np.float64]:
        from scipy.special import expit

        return np.where(finite, expit(self.reach_intercept_ - columns @ self.reach_coef_), 0.0)

    def _reach_probability(self, Z: NDArray) -> NDArray[np.float64]:
        return self._reach_of(*self._columns(Z))

    def _rounds(self, Z: NDArray) -> NDArray[np.float64]:
        # Both models read the same columns: built once (with varying_with, one product per
        # feature and corner).
        finite, columns = self._columns(Z)
        # Features far outside the corpus (a huge noise multiplier) can overflow exp: the
        # prediction is then inf rounds, which is what an overflow gives.
        with np.errstate(over="ignore"):
            rounds = np.exp(self.rounds_intercept_ + columns @ self.rounds_coef_)
        reached = self._reach_of(finite, columns) >= _THRESHOLD
        if self.max_rounds is not None:  # the workload's shorter horizon: a later cut-off
            reached &= rounds <= self.max_rounds
        return np.where(finite & reached, rounds, np.inf)

    def reach_probability(self, X: ArrayLike) -> NDArray[np.float64]:
        """P(the target is reached) for every row; 0 where a feature is infinite."""
        return self._reach_probability(self._standardised(X))

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """Predicted rounds to the target; ``inf`` where it is predicted never to be reached.

        A row with an infinite feature (a disconnected topology) is ``inf``.
        """
        return self._rounds(self._standardised(X))

    def predict_features(self, features: TopologyFeatures | Sequence[TopologyFeatures]):
        """:meth:`predict` on :class:`TopologyFeatures`; a float for one, an array for many.

        A disconnected topology is ``inf``: its parts never agree on one model.
        """
        single = isinstance(features, TopologyFeatures)
        rows = [features] if single else list(features)
        check_is_fitted(self)
        # Features computed by topokit are numbers or inf, in the predictor's order: no
        # need for predict's checks, which cost more than the features of a small graph.
        rounds = self._rounds(self._standardise_checked(self.feature_rows(rows)))
        rounds = np.where([row.connected for row in rows], rounds, np.inf)
        return float(rounds[0]) if single else rounds

    def rounds_and_oriented(self, features: TopologyFeatures) -> tuple[float, NDArray]:
        """:meth:`predict_features` of one topology and its :meth:`oriented_rows` row, from
        one feature row: a search scores every candidate by both."""
        check_is_fitted(self)
        oriented = self.oriented_rows([features])
        with np.errstate(invalid="ignore"):  # as _standardise_checked
            standardised = (oriented - self.mean_) / self.scale_
        rounds = float(self._rounds(standardised)[0])
        return (rounds if features.connected else np.inf), oriented[0]

    def predict_network(self, net: Network, topology: Topology | None = None, *,
                        class_counts: ArrayLike | None = None) -> float:
        """Predicted rounds of one topology on ``net`` (``inf``: never reaches the target).

        The features are computed with the settings the predictor was fitted
        with (:attr:`feature_settings`); :func:`topokit.evaluate` calls this.
        ``class_counts`` (each device's training rows per class, node order)
        defaults to the network's own ``net.class_counts``; when both are
        None the data is assumed IID.  Given counts win over the network's.
        """
        settings = self.feature_settings.to_dict()
        return self.predict_features(
            topology_features(net, topology, class_counts=class_counts, **settings))

    @property
    def feature_settings(self) -> FeatureSettings:
        """The settings features must be computed with (``settings`` or the defaults)."""
        return self.settings if self.settings is not None else FeatureSettings()

    # -- persistence (JSON, never pickle) ----------------------------------------------------

    def to_dict(self, provenance: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The fitted predictor as JSON-ready data (``provenance`` merged into the record's)."""
        check_is_fitted(self)
        record = dict(getattr(self, "provenance_", {}) or {})
        record.update(provenance or {})
        return {
            "kind": KIND,
            "version": _FORMAT_VERSION,
            "features": list(self.features),
            "settings": self.feature_settings.to_dict(),
            "params": self._params_record(),
            "model": {
                "mean": self.mean_.tolist(), "scale": self.scale_.tolist(),
                "reach_coef": self.reach_coef_.tolist(),
                "reach_intercept": float(self.reach_intercept_),
                "rounds_coef": self.rounds_coef_.tolist(),
                "rounds_intercept": float(self.rounds_intercept_),
                "rounds_sigma": float(self.rounds_sigma_),
                "n_samples_fit": self.n_samples_fit_, "n_never_fit": self.n_never_fit_,
                **({"noise_reference": dict(self.noise_reference_)}
                   if self.noise_scale is not None else {}),
                **({"varying_range": dict(self.varying_range_)} if self.varying_with else {}),
            },
            "provenance": {"topokit_version": __version__, **record},
        }

    def _params_record(self) -> dict[str, float]:
        """The hyper-parameters as written; those left at None are left out, so files written
        before they existed read and predict the same."""
        params = {"C": float(self.C), "horizon": float(self.horizon)}
        for name in _OPTIONAL_PARAMS:
            if getattr(self, name) is not None:
                params[name] = float(getattr(self, name))
        if self.varying_with:
            params["varying_with"] = list(self.varying_with)
        return params

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingTimePredictor:
        """A predictor from :meth:`to_dict`; :class:`InputFileError` on anything else."""
        if not isinstance(data, Mapping) or data.get("kind") != KIND:
            raise InputFileError(f"not a topokit training-time predictor: expected kind {KIND!r}")
        _check_file_version(data, _FORMAT_VERSION)
        try:
            features = _check_features(data["features"])
            settings = FeatureSettings.from_dict(dict(data["settings"]))
            params = data["params"]
            predictor = cls(features=features, settings=settings,
                            C=_fitted_number(params["C"], "params.C", positive=True),
                            horizon=_fitted_number(params["horizon"], "params.horizon",
                                                   positive=True),
                            **{name: _fitted_number(params[name], f"params.{name}",
                                                    positive=True)
                               for name in _OPTIONAL_PARAMS if name in params},
                            varying_with=_check_varying(params.get("varying_with", ()),
                                                        features))
            _restore_model(predictor, data["model"])
        except InputFileError:
            raise
        except KeyError as exc:
            raise InputFileError(
                f"not a predictor of this topokit's format: it has no {exc.args[0]!r}"
            ) from None
        except (TypeError, ValueError) as exc:
            raise InputFileError(
                f"not a predictor of this topokit's feature set or format: {exc}"
            ) from None
        predictor.provenance_ = dict(data.get("provenance") or {})
        return predictor

    def save(self, path: str | Path, provenance: Mapping[str, Any] | None = None) -> Path:
        """Write the predictor as JSON (atomically); ``provenance`` is recorded in it."""
        text = json.dumps(self.to_dict(provenance), indent=1, allow_nan=False) + "\n"
        return atomic_write_text(path, text)

    @classmethod
    def load(cls, path: str | Path) -> TrainingTimePredictor:
        """Read a predictor written by :meth:`save`."""
        return cls.from_dict(_read_json(Path(path)))


def _restore_model(predictor: TrainingTimePredictor, model: Mapping[str, Any]) -> None:
    """The fitted attributes of a predictor file, each checked: a NaN intercept or a spread
    <= 0 would otherwise predict NaN or nonsense without a word."""
    if predictor.varying_with:
        predictor.varying_range_ = _varying_range(model.get("varying_range"),
                                                  predictor.varying_with)
    arrays = {}
    for name in ("mean", "scale", "reach_coef", "rounds_coef"):
        width = len(predictor.features if name in ("mean", "scale")
                    else predictor.model_columns)
        try:
            values = np.asarray(model[name], dtype=np.float64)
        except (TypeError, ValueError):  # text or nested lists
            values = np.full(0, np.nan)
        if values.shape != (width,) or not np.all(np.isfinite(values)):
            raise InputFileError(f"model.{name} must hold {width} finite numbers, one per "
                                 f"{'feature' if name in ('mean', 'scale') else 'column'}; "
                                 f"got {brief(model[name])}{_REFIT}")
        arrays[name] = values
    for name in ("reach_coef", "rounds_coef"):
        if (arrays[name] < 0).any():
            raise InputFileError(f"model.{name} must be >= 0 (the models are monotone in "
                                 f"every feature); got {arrays[name].min():g}{_REFIT}")
    if (arrays["scale"] <= 0).any():
        raise InputFileError(f"model.scale must be > 0; got {arrays['scale'].min():g}{_REFIT}")
    predictor.mean_, predictor.scale_ = arrays["mean"], arrays["scale"]
    predictor.reach_coef_, predictor.rounds_coef_ = arrays["reach_coef"], arrays["rounds_coef"]
    predictor.reach_intercept_ = _fitted_number(model["reach_intercept"],
                                                "model.reach_intercept")
    predictor.rounds_intercept_ = _fitted_number(model["rounds_intercept"],
                                                 "model.rounds_intercept")
    predictor.rounds_sigma_ = _fitted_number(model["rounds_sigma"], "model.rounds_sigma",
                                             positive=True)
    predictor.n_samples_fit_ = _fitted_count(model["n_samples_fit"], "model.n_samples_fit")
    predictor.n_never_fit_ = _fitted_count(model["n_never_fit"], "model.n_never_fit")
    predictor.n_features_in_ = len(predictor.features)
    if predictor.noise_scale is not None:
        predictor.noise_reference_ = _noise_reference(model["noise_reference"], predictor.features)


def _noise_reference(values: Any, features: Sequence[str]) -> dict[str, float]:
    """model.noise_reference of a file: a positive number for every noise feature used."""
    if not isinstance(values, Mapping):
        raise InputFileError(f"model.noise_reference must map each noise feature to a number; "
                             f"got {brief(values)}{_REFIT}")
    return {name: _fitted_number(values.get(name), f"model.noise_reference.{name}",
                                 positive=True)
            for name in features if name in NOISE_FEATURES}


def _varying_range(values: Any, varying: Sequence[str]) -> dict[str, list[float]]:
    """model.varying_range of a file: finite low < high for every varying feature."""
    if not isinstance(values, Mapping):
        raise InputFileError("model.varying_range must map each varying feature to [low, high]; "
                             f"got {brief(values)}{_REFIT}")
    ranges = {}
    for name in varying:
        pair = values.get(name)
        ok = (isinstance(pair, Sequence) and not isinstance(pair, str) and len(pair) == 2
              and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                      and math.isfinite(v) for v in pair) and pair[0] < pair[1])
        if not ok:
            raise InputFileError(f"model.varying_range.{name} must be [low, high] with finite "
                                 f"low < high; got {brief(pair)}{_REFIT}")
        ranges[name] = [float(pair[0]), float(pair[1])]
    return ranges


def _check_varying(varying: Any, features: Sequence[str]) -> tuple[str, ...]:
    """``varying_with`` as a tuple of distinct workload features among ``features``."""
    if isinstance(varying, str) or not isinstance(varying, Sequence):
        raise InvalidInputError(
            f"varying_with must be a sequence of workload feature names; got {varying!r}")
    varying = tuple(varying)
    allowed = [name for name in WORKLOAD_FEATURES if name in features]
    for name in varying:
        if name not in allowed:
            raise InvalidInputError(
                f"varying_with names {name!r}; it must be one of the predictor's features that "
                f"describe the workload ({', '.join(allowed) or 'none'})")
    if len(set(varying)) != len(varying):
        raise InvalidInputError(f"varying_with must be distinct; got {list(varying)}")
    return varying


def _split_features(features: Sequence[str]) -> tuple[list[int], list[int]]:
    """Positions of the topology's features and of the workload's, in ``features``."""
    topology = [j for j, name in enumerate(features) if name not in WORKLOAD_FEATURES]
    workload = [j for j, name in enumerate(features) if name in WORKLOAD_FEATURES]
    return topology, workload


#: The hyper-parameters a file holds only when set (files without them read as before).
_OPTIONAL_PARAMS = ("noise_scale", "target_closeness", "probe_rounds", "max_rounds")

#: How to fix a predictor file whose fitted values are broken.
_REFIT = "; refit it (topokit calibrate --refit) or use a file topokit wrote"


def _fitted_number(value: Any, name: str, *, positive: bool = False) -> float:
    """A number of a predictor file: finite (and > 0 with ``positive``); text and booleans
    refused, naming the field."""
    need = "a finite number > 0" if positive else "a finite number"
    number = None
    if isinstance(value, (int, float, np.integer, np.floating)) \
            and not isinstance(value, (bool, np.bool_)):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range
            number = None
    if number is None or not np.isfinite(number) or (positive and number <= 0):
        raise InputFileError(f"{name} must be {need}; got {brief(value)}{_REFIT}")
    return number


def _fitted_count(value: Any, name: str) -> int:
    """A count of a predictor file: a whole number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InputFileError(f"{name} must be a whole number >= 0; got {brief(value)}{_REFIT}")
    return int(value)


def _check_rounds(y: ArrayLike) -> NDArray[np.float64]:
    if y is None:  # scikit-learn's wording, which its estimator checks look for
        raise InvalidInputError(
            "TrainingTimePredictor requires y to be passed, but the target y is None"
        )
    try:
        rounds = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"y must hold numbers of rounds; {exc}") from None
    if rounds.ndim == 2 and rounds.shape[1] == 1:
        rounds = rounds[:, 0]
    if rounds.ndim != 1:
        raise InvalidInputError(f"y must be 1-dimensional; got shape {rounds.shape}")
    if np.isnan(rounds).any():
        raise InvalidInputError(
            "y contains NaN; give inf for a run that never reached the target"
        )
    if (rounds <= 0).any():
        raise InvalidInputError(
            f"y must be rounds > 0 (inf: never reached); got {rounds[rounds <= 0][0]:g}"
        )
    return rounds


def _read_json(path: Path) -> Any:
    return read_json_file(path, "predictor")


Predictor = GlobalIteratePredictor | TrainingTimePredictor
_NAMES_TEXT = ", ".join(f"'{name}'" for name in PREDICTOR_NAMES)


def _shipped_path(name: str = "default") -> Path:
    """The file of a shipped predictor (``predictor_NAME.json`` in topokit's data)."""
    from ..network.examples import data_dir

    return data_dir() / f"predictor_{name}.json"


def load_predictor(name_or_path: str | Path | Predictor) -> Predictor:
    """A predictor by name, from a file, or as given.

    Parameters
    ----------
    name_or_path : {"default", "paper", "mlp", "workload"}, path or predictor
        ``"paper"``: DeepPrivacy's eq. (15), :class:`GlobalIteratePredictor`
        unfitted.  ``"default"``: the :class:`TrainingTimePredictor` shipped
        with topokit, fitted on logistic-regression runs
        (``predictor_default.json`` in its data, fitted by
        ``analyses/predictor_corpus.py``; its ``provenance_`` says on what).
        ``"mlp"``: the one shipped for topokit's MLP, fitted the same way on
        MLP runs (``predictor_mlp.json``, ``analyses/predictor_corpus.py
        --model mlp``): use it when the model trained is a neural network,
        whose rounds answer the topology differently.  ``"workload"``: the one
        fitted across workloads (``predictor_workload.json``,
        ``analyses/workload_predictor.py``: epsilon 0.25-8 per round, targets
        far from and near the ceiling, two data sets), whose features carry
        the workload's noise and its target's closeness to the ceiling
        (:func:`predictor_at_workload`); :func:`topokit.optimize` judges a
        workload with it unless told another predictor.  A path: a JSON file
        written by either predictor's ``save`` (or ``topokit calibrate``).  A
        predictor object is returned unchanged.

    Returns
    -------
    GlobalIteratePredictor or TrainingTimePredictor

    Raises
    ------
    InvalidInputError
        An unknown name (neither a predictor name nor an existing file).
    InputFileNotFoundError
        A path (with a suffix or a folder) that does not exist.
    InputFileError
        A file that is not a predictor, or one of another feature set.

    Examples
    --------
    >>> load_predictor("paper").predict([[26.0, 0.5]]).round(3)
    array([87.672])
    >>> load_predictor("mlp").provenance_["model"]
    "one-hidden-layer MLP (topokit.training, model='mlp')"
    """
    if isinstance(name_or_path, (GlobalIteratePredictor, TrainingTimePredictor)):
        return name_or_path
    if not isinstance(name_or_path, (str, Path)):
        raise InvalidInputError(
            f"predictor must be {_NAMES_TEXT}, a predictor file or a predictor; "
            f"got {type(name_or_path).__name__}"
        )
    if isinstance(name_or_path, str) and name_or_path.strip().lower() in PREDICTOR_NAMES:
        name = name_or_path.strip().lower()
        return GlobalIteratePredictor() if name == "paper" \
            else TrainingTimePredictor.load(_shipped_path(name))
    path = Path(name_or_path)
    looks_like_a_path = isinstance(name_or_path, Path) or path.suffix or len(path.parts) > 1
    if not path.exists() and not looks_like_a_path:
        raise InvalidInputError(
            f"unknown predictor {str(name_or_path)!r}: expected {_NAMES_TEXT} or the path "
            "of a predictor JSON file"
        )
    return _from_record(_read_json(path), path)


def _from_record(data: Any, path: Path) -> Predictor:
    kind = data.get("kind") if isinstance(data, dict) else None
    try:
        if kind == KIND:
            return TrainingTimePredictor.from_dict(data)
        if kind == "topokit.GlobalIteratePredictor":
            return GlobalIteratePredictor.from_dict(data)
    except InputFileError as exc:
        raise InputFileError(f"{path}: {exc}") from None
    raise InputFileError(
        f"{path}: not a topokit predictor (kind {kind!r}); expected {KIND!r} or "
        "'topokit.GlobalIteratePredictor'"
    )


def predict_topology(
    net: Network,
    topology: Topology | None = None,
    *,
    class_counts: ArrayLike | None = None,
    predictor: str | Path | Predictor = "default",
    workload: Any = None,
) -> float:
    """Predicted rounds to the target of one topology (``inf``: never reached).

    Computes the topology's features with the predictor's settings
    (:func:`topology_features`) and predicts.  With the ``"paper"``
    predictor this is eq. (15)'s G' from H and phi.

    Parameters
    ----------
    net : Network
    topology : Topology or TopologySchedule, optional
        Default: NDLF (the social links, no DP device).  A time-varying
        topology is predicted from its features over its rounds, an
        extrapolation of predictors fitted on static topologies.
    class_counts : array-like of shape (n_devices, n_classes), optional
        Each device's class counts (node order).  None (default): the
        network's ``net.class_counts``; IID data when that is None too.
        Given counts win over the network's.
    predictor : "default", "paper", "mlp", path or predictor, default "default"
    workload : Workload, optional
        Predict at this workload's settings (its noise multiplier, clipping
        norm, batch size, local steps; :func:`~topokit.design.workload.predictor_at_workload`).
        Where it lies outside what the predictor was fitted on, the prediction
        is an extrapolation and a :class:`~topokit.errors.TopokitWarning` says
        so.  None (default): the predictor's own settings.

    Returns
    -------
    float

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> round(predict_topology(net, net.topology, predictor="paper"), 3)
    87.662
    """
    predictor = _at_workload(load_predictor(predictor), workload, "predicted by extrapolation")
    if isinstance(predictor, GlobalIteratePredictor):
        if predictor.use_noise_variance:
            raise InvalidInputError(
                "this eq. (15) predictor also needs a run's noise variance U: use "
                "topokit.evaluate(net, topology, predictor, noise_variance=U)"
            )
        features = topology_features(net, topology, class_counts=class_counts)
        return predictor.predict_one(features.hitting_time, features.phi)
    return predictor.predict_network(net, topology, class_counts=class_counts)


def _at_workload(predictor: Predictor, workload: Any, what: str) -> Predictor:
    """``predictor`` judging at ``workload``'s settings (itself when None), warning with
    ``what`` where the workload lies outside the fit."""
    workload = check_workload(workload)
    if workload is None:
        return predictor
    warn_outside(workload_outside(predictor, workload), what)
    return predictor_at_workload(predictor, workload)


# ---------------------------------------------------------------------------------------------
# A predictor and the user's workload
# ---------------------------------------------------------------------------------------------

def workload_outside(predictor: str | os.PathLike | Predictor,
                     workload: Workload) -> tuple[str, ...]:
    """Where ``workload`` lies outside what ``predictor`` was fitted on, one line per setting.

    A fitted predictor saw runs of one workload, or of a range of them: its
    ``feature_settings`` (noise multiplier, clipping norm, batch size, local
    steps, data size) and its ``provenance_`` (the models trained, the target
    accuracy, the ranges fitted) record it.  A setting the workload leaves
    unknown (``n_samples=None``) or the predictor does not record is not
    compared.

    What each field of a :class:`~topokit.design.workload.Workload` does to a
    predictor fitted across workloads (``"workload"``):

    - ``epsilon``, ``delta``, ``noise_multiplier``: one feature, the noise
      multiplier; outside its fitted range it is a reason, and
      :func:`workload_clamps` predicts at the range's nearest end.
    - ``target`` with ``ceiling``: one feature, target / ceiling; likewise.
    - ``model`` with ``probe_rounds``: one feature, the measured trait; the
      name is bookkeeping once the trait is measured (or known for topokit's
      own models), a reason while it is not.
    - ``max_grad_norm``, ``batch_size``, ``local_steps``, ``n_samples``: the
      corpus trained one value of each; they change the noise a device feels
      and are reasons where they differ (predicted at the workload's values,
      an extrapolation).
    - ``rounds`` (the horizon) and ``n_classes``: bookkeeping, never a
      reason; a horizon shorter than the fitted one moves the cut-off
      (:func:`predictor_at_workload`).

    Parameters
    ----------
    predictor : {"default", "mlp", "paper"}, path or predictor
        What :func:`~topokit.design.time_predictor.load_predictor` takes.
        DeepPrivacy's eq. (15) (``"paper"``) records no training settings:
        nothing is outside it.
    workload : Workload

    Returns
    -------
    tuple of str
        One reason per setting that differs, naming the setting and both
        values; empty when the workload is the one fitted on.

    Examples
    --------
    >>> workload_outside("default", Workload())
    ()
    >>> workload_outside("default", Workload(target=0.55))
    ('target 0.55 differs from the 0.88 the predictor predicts rounds to',)
    """
    if not isinstance(workload, Workload):
        raise InvalidInputError(f"workload must be a topokit Workload; got "
                                f"{type(workload).__name__}")
    predictor = load_predictor(predictor)
    if not isinstance(predictor, TrainingTimePredictor):
        return ()
    provenance = getattr(predictor, "provenance_", None) or {}
    ranges = provenance.get("fitted_ranges")
    if isinstance(ranges, Mapping):  # a predictor fitted across workloads
        return (*_models_reasons(workload, () if _judged_by_trait(predictor, workload)
                                 else provenance.get("trained_models") or ()),
                *_range_reasons(workload, predictor, ranges),
                *_settings_reasons(workload, predictor.feature_settings),
                *_goal_reasons(workload, {}))
    return (*_model_reasons(workload, _trained_model(provenance)),
            *_noise_reasons(workload, predictor.feature_settings.noise_multiplier),
            *_settings_reasons(workload, predictor.feature_settings),
            *_goal_reasons(workload, provenance))


def _models_reasons(workload: Workload, trained: Sequence[str]) -> tuple[str, ...]:
    if not trained or workload.model in trained:
        return ()
    return (f"model {workload.model!r} is not among the models the predictor was fitted on "
            f"({', '.join(map(repr, trained))})",)


def _judged_by_trait(predictor: TrainingTimePredictor, workload: Workload) -> bool:
    """Whether ``predictor`` tells models apart by a measured trait and ``workload`` gives
    its model's measurements (ceiling and probe rounds): then the model is judged by them,
    whatever its name."""
    return ("probe_rounds" in predictor.features and workload.ceiling is not None
            and workload.probe_rounds is not None)


def workload_ceiling(predictor: TrainingTimePredictor, workload: Workload) -> float | None:
    """The accuracy ``workload``'s model reaches without noise: the workload's ``ceiling``,
    else the one ``predictor`` measured for that model on topokit's default data, else None.

    >>> workload_ceiling(load_predictor("default"), Workload(target=0.55, ceiling=0.6))
    0.6
    """
    return _of_model(predictor, workload, "ceiling", "ceilings")


def workload_probe_rounds(predictor: TrainingTimePredictor,
                          workload: Workload) -> float | None:
    """How fast ``workload``'s model learns without noise: the workload's ``probe_rounds``,
    else the value ``predictor`` measured for that model on topokit's default data
    (``provenance_["probe_rounds"]``), else None.

    >>> workload_probe_rounds(load_predictor("workload"), Workload(probe_rounds=12))
    12.0
    """
    return _of_model(predictor, workload, "probe_rounds", "probe_rounds")


def _of_model(predictor: TrainingTimePredictor, workload: Workload, field: str,
              known_as: str) -> float | None:
    """The workload's ``field``, else the predictor's ``provenance_[known_as]`` for its model."""
    if getattr(workload, field) is not None:
        return getattr(workload, field)
    known = (getattr(predictor, "provenance_", None) or {}).get(known_as) or {}
    value = known.get(workload.model) if isinstance(known, Mapping) else None
    return float(value) if isinstance(value, (int, float)) else None


def _workload_values(predictor: TrainingTimePredictor,
                     workload: Workload) -> dict[str, float | None]:
    """The workload's values of the predictor's workload features (name -> value; None
    where unknown): its noise multiplier, target closeness and its model's probe rounds."""
    values: dict[str, float | None] = {"noise_multiplier": workload.resolved_noise_multiplier}
    if "target_closeness" in predictor.features:
        ceiling = workload_ceiling(predictor, workload)
        values["target_closeness"] = None if ceiling is None else workload.target / ceiling
    if "probe_rounds" in predictor.features:
        values["probe_rounds"] = workload_probe_rounds(predictor, workload)
    return values


#: Why a workload feature is unknown, and how to measure it.
_UNKNOWN = {
    "target_closeness": "the accuracy model {model!r} reaches without noise is unknown: give "
                        "the workload's ceiling (ceiling_probe measures it)",
    "probe_rounds": "how fast model {model!r} learns without noise is unknown: give the "
                    "workload's probe_rounds (ceiling_probe measures it)",
}


def _inside(value: float, low: float, high: float) -> bool:
    return low * (1 - _REL_TOL) <= value <= high * (1 + _REL_TOL)


def _range_reasons(workload: Workload, predictor: TrainingTimePredictor,
                   ranges: Mapping[str, Any]) -> tuple[str, ...]:
    """Where the workload's noise multiplier, target closeness (and probe rounds) leave the
    ranges fitted, or are unknown."""
    reasons = []
    for name, value in _workload_values(predictor, workload).items():
        low, high = ranges.get(name, (-math.inf, math.inf))
        if value is None:
            reasons.append(_UNKNOWN[name].format(model=workload.model))
        elif not _inside(value, low, high):
            reasons.append(f"{name.replace('_', ' ')} {value:.4g} lies outside the "
                           f"{low:.4g}-{high:.4g} the predictor was fitted on")
    return tuple(reasons)


def workload_clamps(predictor: str | os.PathLike | Predictor,
                    workload: Workload) -> dict[str, dict[str, float | None]]:
    """The workload features a predictor fitted across workloads predicts at instead of the
    workload's own: those outside the ranges fitted, moved to the nearest end, and those
    unknown, assumed.

    A predictor fitted across workloads (``provenance_["fitted_ranges"]``) knows
    the noise multipliers, target closenesses and model traits (probe rounds) it
    was fitted on.  Graded trust: a workload feature outside its fitted range is
    clamped to the range's nearest end and the rest of the workload is kept, so a
    user's epsilon and target still count where only one field is new.  An
    unknown target closeness (no ceiling measured) is assumed to be the
    predictor's own (``target_closeness``); unknown probe rounds are assumed to
    be the slowest-learning model's fitted (the range's upper end), the
    neural network's, matching the safe choices :func:`topokit.optimize` makes
    for a model it cannot place (:mod:`topokit.design.trust`).

    Parameters
    ----------
    predictor : "workload", path or predictor
    workload : Workload

    Returns
    -------
    dict
        Feature name -> ``{"given": value or None (unknown), "used": value}``,
        one entry per feature predicted at another value; empty for a workload
        inside the fit and for predictors fitted at one workload (they have no
        ranges: :func:`workload_outside` names where such a workload differs).

    Examples
    --------
    >>> workload_clamps("workload", Workload(epsilon=1))
    {}
    >>> clamps = workload_clamps("workload", Workload(epsilon=64))  # less noise than fitted
    >>> round(clamps["noise_multiplier"]["used"], 3)
    0.6
    """
    predictor = load_predictor(predictor)
    ranges = (getattr(predictor, "provenance_", None) or {}).get("fitted_ranges")
    if not isinstance(predictor, TrainingTimePredictor) or not isinstance(ranges, Mapping):
        return {}
    own = {"target_closeness": predictor.target_closeness}
    clamps = {}
    for name, value in _workload_values(predictor, workload).items():
        low, high = (float(end) for end in ranges.get(name, (-math.inf, math.inf)))
        if value is None:
            used = own.get(name)
            used = high if used is None else float(used)
        elif _inside(value, low, high):
            continue
        else:
            used = min(max(value, low), high)
        clamps[name] = {"given": value, "used": used}
    return clamps


def predictor_within_fit(predictor: Any, workload: Workload
                         ) -> tuple[Any, dict[str, dict[str, float | None]]]:
    """:func:`predictor_at_workload` with the features outside the fit clamped into it.

    Returns the predictor at the workload's settings, except that every
    feature :func:`workload_clamps` names is predicted at its ``"used"``
    value, and those clamps.

    >>> model, clamps = predictor_within_fit(load_predictor("workload"),
    ...                                      Workload(epsilon=0.5, rounds=500))
    >>> clamps, round(model.feature_settings.noise_multiplier, 3)
    ({}, 7.032)
    """
    from dataclasses import replace

    at_workload = predictor_at_workload(predictor, workload)
    clamps = workload_clamps(predictor, workload)
    if "noise_multiplier" in clamps:
        at_workload.set_params(settings=replace(at_workload.feature_settings,
                                                noise_multiplier=clamps["noise_multiplier"]
                                                ["used"]))
    for name in ("target_closeness", "probe_rounds"):
        if name in clamps:
            at_workload.set_params(**{name: clamps[name]["used"]})
    return at_workload, clamps


def _trained_model(provenance: Mapping[str, Any]) -> str | None:
    """The model a predictor was fitted on: ``trained_model``, else ``model='...'`` in its
    ``model`` description (the shipped default's record predates ``trained_model``)."""
    trained = provenance.get("trained_model")
    if isinstance(trained, str):
        return trained
    found = re.search(r"model='([^']+)'", str(provenance.get("model", "")))
    return found.group(1) if found else None


def _model_reasons(workload: Workload, trained: str | None) -> tuple[str, ...]:
    if trained is None or workload.model == trained:
        return ()
    return (f"model {workload.model!r} is not the {trained!r} the predictor was fitted on",)


def _noise_reasons(workload: Workload, fitted: float) -> tuple[str, ...]:
    z = workload.resolved_noise_multiplier
    if math.isclose(z, fitted, rel_tol=_REL_TOL):
        return ()
    source = ("given" if workload.noise_multiplier is not None
              else f"epsilon={workload.epsilon:g}, delta={workload.delta:g} per round")
    return (f"noise multiplier {z:.4g} ({source}) differs from the {fitted:.4g} "
            "the predictor was fitted with",)


def _settings_reasons(workload: Workload, settings: FeatureSettings) -> tuple[str, ...]:
    reasons = []
    for name in ("max_grad_norm", "batch_size", "local_steps", "n_samples"):
        mine, fitted = getattr(workload, name), getattr(settings, name)
        if mine is not None and fitted is not None \
                and not math.isclose(mine, fitted, rel_tol=_REL_TOL):
            reasons.append(f"{name} {_text(mine)} differs from the {_text(fitted)} the "
                           "predictor was fitted with")
    return tuple(reasons)


def _text(value: float) -> str:
    """A setting as written: integers in full, floats in short (``%g``)."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def _goal_reasons(workload: Workload, provenance: Mapping[str, Any]) -> tuple[str, ...]:
    reasons = []
    target = provenance.get("target")
    if isinstance(target, (int, float)) and not math.isclose(workload.target, target,
                                                             rel_tol=_REL_TOL):
        reasons.append(f"target {workload.target:g} differs from the {target:g} the predictor "
                       "predicts rounds to")
    # The horizon is a setting, not a fence: rounds are predicted as fitted, a shorter horizon
    # only moves the cut-off (predictor_at_workload's max_rounds) and a longer one can only
    # turn "never within T" into "later", which the reach model cannot tell; nothing to report.
    return tuple(reasons)


def shipped_predictor_for(workload: Workload | None) -> str:
    """The shipped predictor that judges ``workload`` when the user names none.

    ``"workload"``, fitted across DP budgets, targets, data sets and models (it
    tells models apart by their measured ceiling and probe rounds), for every
    workload: where a field lies outside what it was fitted on or is unknown,
    it predicts at the nearest value it knows (:func:`workload_clamps`) and
    keeps the rest of the workload, which a predictor fitted at one workload
    cannot.  ``"default"`` without a workload.

    >>> shipped_predictor_for(None), shipped_predictor_for(Workload(model="mlp"))
    ('default', 'workload')
    >>> shipped_predictor_for(Workload(model="cnn"))
    'workload'
    """
    return "default" if workload is None else "workload"


def predictor_at_workload(predictor: Any, workload: Workload) -> Any:
    """A copy of ``predictor`` that computes a topology's features at ``workload``'s settings.

    The noise multiplier, clipping norm, batch size and local steps (and the data
    size, where the workload knows it) replace the predictor's own, and for a
    predictor with the feature ``target_closeness`` so does the workload's target
    over its ceiling (:func:`workload_ceiling`), and for one with ``probe_rounds``
    the model's (:func:`workload_probe_rounds`); its fitted coefficients stay, so
    where :func:`workload_outside` names a reason the prediction is an
    extrapolation (:func:`predictor_within_fit` clamps instead).  A horizon
    (``rounds``) shorter than the one fitted over becomes the predictor's
    ``max_rounds`` cut-off; a longer one changes nothing.  Eq. (15) sees
    none of these settings and is returned as it is.

    Examples
    --------
    >>> from topokit import load_example, load_predictor, predict_topology
    >>> net = load_example("toy")
    >>> noisy = predictor_at_workload(load_predictor("default"), Workload(epsilon=0.5))
    >>> noisy.feature_settings.noise_multiplier > 3.73  # more noise at a smaller epsilon
    True
    """
    import copy
    from dataclasses import replace

    if not isinstance(predictor, TrainingTimePredictor):
        return predictor
    fitted = predictor.feature_settings
    settings = replace(
        fitted, noise_multiplier=workload.resolved_noise_multiplier,
        max_grad_norm=workload.max_grad_norm, batch_size=workload.batch_size,
        local_steps=workload.local_steps,
        n_samples=fitted.n_samples if workload.n_samples is None else workload.n_samples)
    at_workload = copy.deepcopy(predictor).set_params(settings=settings)
    ceiling = workload_ceiling(predictor, workload)
    if "target_closeness" in predictor.features and ceiling is not None:
        at_workload.set_params(target_closeness=workload.target / ceiling)
    trait = workload_probe_rounds(predictor, workload)
    if "probe_rounds" in predictor.features and trait is not None:
        at_workload.set_params(probe_rounds=trait)
    # A shorter horizon cuts the rounds predicted; a longer one keeps the fitted reach model.
    at_workload.set_params(max_rounds=float(workload.rounds)
                           if workload.rounds < predictor.horizon else None)
    return at_workload


def warn_outside(reasons: tuple[str, ...], what: str) -> None:
    """One :class:`~topokit.errors.TopokitWarning` line saying where a workload lies
    outside a predictor's fit and what ``what`` did about it."""
    import warnings

    from ..errors import TopokitWarning

    if reasons:
        warnings.warn(f"the workload lies outside what the predictor was fitted on "
                      f"({'; '.join(reasons)}): {what}; calibrate a predictor for it from "
                      "probe runs (topokit probe, then topokit calibrate --refit)",
                      TopokitWarning, stacklevel=3)
