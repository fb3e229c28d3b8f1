"""Predicting the global iterate (DeepPrivacy Sec. V-A, eq. 15).

The paper regresses the number of rounds G to a target accuracy on the
topology's hitting time H and DP ratio phi (and mentions the cumulative noise
variance U):

.. math:: G'(G_c) = 0.3165\\,\\mathcal{H} + 121.6365\\,\\varphi + 18.6251 \\quad (15)

Eq. (15) was fitted on CIFAR10-CNN runs to about 68-70 % accuracy; on other
data and models its absolute values mean little and its ranking of topologies
is what to judge.  :class:`GlobalIteratePredictor` is a scikit-learn regressor
that uses eq. (15) until it is fitted on measured runs, and persists as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LinearRegression
from sklearn.utils.validation import check_array, validate_data

from .._io import atomic_write_text, read_json_file
from ..errors import InputFileError, InvalidInputError

__all__ = ["GlobalIteratePredictor", "PAPER_COEFFICIENTS", "PAPER_INTERCEPT", "FEATURES"]

#: Eq. (15): coefficients of H and phi, and the intercept.
PAPER_COEFFICIENTS = {"hitting_time": 0.3165, "phi": 121.6365}
#: Eq. (15): the intercept.
PAPER_INTERCEPT = 18.6251
#: The columns :class:`GlobalIteratePredictor` reads: H, phi and (optionally) the noise variance.
FEATURES = ("hitting_time", "phi", "noise_variance")
#: The newest file format :meth:`GlobalIteratePredictor.from_dict` reads (``to_dict`` writes 1).
_FORMAT_VERSION = 1


class GlobalIteratePredictor(RegressorMixin, BaseEstimator):
    """Linear model of the global iterate on (H, phi[, U]); eq. (15) until fitted.

    Parameters
    ----------
    use_noise_variance : bool, default=False
        Add the cumulative noise variance U as a third feature (the paper's
        Corollary 1).  Eq. (15) has no coefficient for U, so such a predictor
        must be fitted before it predicts.
    fit_intercept : bool, default=True
    positive : bool, default=False
        Constrain coefficients to be >= 0 (more rounds for a larger H or phi).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Fitted coefficients, in the order (H, phi[, U]).
    intercept_ : float
    n_features_in_ : int

    Examples
    --------
    >>> predictor = GlobalIteratePredictor()
    >>> round(float(predictor.predict([[26.0, 0.5]])[0]), 3)   # Example 3 of the paper
    87.672
    """

    def __init__(self, *, use_noise_variance: bool = False, fit_intercept: bool = True,
                 positive: bool = False):
        self.use_noise_variance = use_noise_variance
        self.fit_intercept = fit_intercept
        self.positive = positive

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Unfitted, the predictor is eq. (15): predicting before fit is intended.
        tags.requires_fit = False
        return tags

    @property
    def feature_names(self) -> tuple[str, ...]:
        return FEATURES[:3] if self.use_noise_variance else FEATURES[:2]

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "coef_")

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None):
        """Fit on measured runs: X of shape (n_samples, 2 or 3) = (H, phi[, U]), y = rounds."""
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        self._check_width(X.shape[1])
        model = LinearRegression(fit_intercept=self.fit_intercept, positive=self.positive)
        model.fit(X, y, sample_weight=sample_weight)
        self.coef_ = np.asarray(model.coef_, dtype=np.float64)
        self.intercept_ = float(model.intercept_)
        return self

    def _check_width(self, width: int) -> None:
        expected = len(self.feature_names)
        if width != expected:
            raise InvalidInputError(
                f"expected {expected} features {self.feature_names}; got {width}"
            )

    def _coefficients(self) -> tuple[NDArray[np.float64], float]:
        if self.is_fitted:
            return self.coef_, self.intercept_
        if self.use_noise_variance:
            from ..errors import NotFittedError

            raise NotFittedError(
                "eq. (15) has no coefficient for the noise variance U: fit this predictor "
                "on measured runs (topokit calibrate) before predicting"
            )
        coef = np.array([PAPER_COEFFICIENTS["hitting_time"], PAPER_COEFFICIENTS["phi"]])
        return coef, PAPER_INTERCEPT

    def predict(self, X: ArrayLike) -> NDArray[np.float64]:
        """Predicted global iterate G' for rows (H, phi[, U])."""
        self._check_width(check_array(X, dtype=np.float64).shape[1])
        if self.is_fitted:
            X = validate_data(self, X, reset=False, dtype=np.float64)
        else:
            X = check_array(X, dtype=np.float64)
        coef, intercept = self._coefficients()
        return X @ coef + intercept

    def predict_one(
        self, hitting_time: float, phi: float, noise_variance: float | None = None
    ) -> float:
        """G' of one topology; ``inf`` when H is infinite (a disconnected topology)."""
        if not np.isfinite(hitting_time):
            return float("inf")
        row = [hitting_time, phi] + ([noise_variance or 0.0] if self.use_noise_variance else [])
        coef, intercept = self._coefficients()
        # Called once per AutoTag candidate: skip predict's array validation.
        return float(np.dot(coef, row) + intercept)

    # -- persistence (JSON, never pickle) ---------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        coef, intercept = self._coefficients()
        return {
            "kind": "topokit.GlobalIteratePredictor",
            "version": 1,
            "params": self.get_params(),
            "features": list(self.feature_names),
            "coef": [float(c) for c in coef],
            "intercept": float(intercept),
            "fitted": self.is_fitted,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GlobalIteratePredictor:
        if not isinstance(data, dict) or data.get("kind") != "topokit.GlobalIteratePredictor":
            raise InputFileError(
                "not a topokit predictor: expected a JSON object with kind "
                "'topokit.GlobalIteratePredictor' (written by topokit calibrate)"
            )
        _check_file_version(data, _FORMAT_VERSION)
        predictor = cls(**_predictor_params(data.get("params", {})))
        if predictor.use_noise_variance and not data.get("fitted"):
            raise InputFileError(
                "a predictor with the noise variance U must be fitted ('fitted': true, 'coef', "
                "'intercept'): eq. (15) has no coefficient for U; write one with topokit calibrate"
            )
        if data.get("fitted"):
            coef = _coefficients(data.get("coef"), len(predictor.feature_names))
            intercept = data.get("intercept")
            if isinstance(intercept, bool) or not isinstance(intercept, (int, float)) or \
                    not np.isfinite(intercept):
                raise InputFileError(
                    f"a fitted predictor needs a finite number 'intercept'; got {intercept!r}"
                )
            predictor.coef_ = coef
            predictor.intercept_ = float(intercept)
            predictor.n_features_in_ = coef.size
        return predictor

    def save(self, path: str | Path) -> Path:
        """Write the predictor as JSON (atomically)."""
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> GlobalIteratePredictor:
        """Read a predictor written by :meth:`save`."""
        path = Path(path)
        data = read_json_file(path, "predictor")
        try:
            return cls.from_dict(data)
        except InvalidInputError as exc:
            raise InputFileError(f"{path}: {exc}") from None


def _check_file_version(data: Mapping[str, Any], newest: int) -> None:
    """A predictor file's ``"version"``: absent, or a format this topokit reads.

    A file of a later format may hold what this version would misread; it is
    refused, naming the version, rather than read as if it were current.

    Raises
    ------
    InputFileError
        The version is not a whole number >= 1, or is newer than ``newest``.

    Examples
    --------
    >>> _check_file_version({"version": 1}, 1)
    >>> _check_file_version({"version": 2}, 1)
    Traceback (most recent call last):
    ...
    topokit.errors.InputFileError: this predictor file is in format version 2, but topokit ...
    """
    version = data.get("version")
    if version is None:
        return
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InputFileError(
            f"a predictor's 'version' must be a whole number >= 1 (its file format; this "
            f"topokit writes {newest}); got {version!r}"
        )
    if version > newest:
        from .._version import __version__

        raise InputFileError(
            f"this predictor file is in format version {version}, but topokit {__version__} "
            f"reads versions up to {newest}; upgrade topokit (pip install -U topokit)"
        )


def _predictor_params(params: Any) -> dict[str, bool]:
    """The constructor parameters stored in a predictor file: known names, true or false."""
    names = ("use_noise_variance", "fit_intercept", "positive")
    if not isinstance(params, dict):
        raise InputFileError(f"a predictor's 'params' must be an object; got {params!r}")
    for key, value in params.items():
        if key not in names:
            raise InputFileError(
                f"unknown predictor parameter {key!r} in 'params'; known: {', '.join(names)}"
            )
        if not isinstance(value, bool):
            raise InputFileError(f"predictor parameter {key!r} must be true or false; "
                                 f"got {value!r}")
    return params


def _coefficients(values: Any, width: int) -> NDArray[np.float64]:
    """The 'coef' of a fitted predictor file: ``width`` finite numbers."""
    numbers = isinstance(values, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    )
    if not numbers or len(values) != width:
        raise InputFileError(
            f"a fitted predictor's 'coef' must be a list of {width} numbers; got {values!r}"
        )
    coef = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(coef)):
        raise InputFileError("predictor coefficients ('coef') must be finite numbers")
    return coef
