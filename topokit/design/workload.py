"""What a user trains: :class:`Workload`, and whether a predictor was fitted on it.

A training-time predictor is fitted on runs of one workload: one model, one
DP budget (hence one noise multiplier), one clipping norm, batch size and
number of local steps, one target accuracy and one horizon of rounds.
:class:`Workload` describes the workload a user trains, and
:func:`~topokit.design.time_predictor.workload_outside` says, one line per
setting, where it lies outside what a predictor was fitted on (its :attr:`feature_settings
<topokit.design.time_predictor.TrainingTimePredictor.feature_settings>` and
``provenance_``).

``Workload()`` is the workload of today's defaults: the settings of
:class:`~topokit.design.features.FeatureSettings`,
:class:`topokit.training.DPConfig` and :func:`topokit.training.train`, and the
target accuracy the shipped predictors predict rounds to.  It is saved as a
JSON object of its fields (:meth:`Workload.save`, :func:`load_workload`).

The design layer does not import the training core, so a workload gives the
keyword arguments of its ``DPConfig`` (:meth:`Workload.dp_config_kwargs`)
rather than the object itself.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._checks import check_int, check_output_path, check_real
from .._io import atomic_write_text, read_json_file
from ..errors import InputFileError, InvalidInputError

if TYPE_CHECKING:  # annotations only: the predictor module imports scikit-learn
    from .features import FeatureSettings

__all__ = [
    "Workload",
    "load_workload",
    "check_workload",
    "TOPOKIT_MODELS",
    "DEFAULT_TARGET",
]

#: The models :func:`topokit.training.train` builds by name (``topokit.training.models``;
#: restated here: the design layer does not import the training core).
TOPOKIT_MODELS = ("logreg", "mlp")

#: The accuracy the shipped predictors predict rounds to (their ``provenance_["target"]``);
#: ``topokit validate`` times 0.85 and 0.9 by default, on either side of it.
DEFAULT_TARGET = 0.88

# Settings closer than this (relative) are the same setting: the noise multiplier is the
# root of an equation, recomputed by whatever dp-accounting version is installed.
_REL_TOL = 1e-6  # used by topokit.design.time_predictor.workload_outside


@dataclass(frozen=True, kw_only=True)
class Workload:
    """What a user trains: the model, the DP budget, the SGD settings and the goal.

    Parameters
    ----------
    model : str, default "logreg"
        A model :func:`topokit.training.train` builds (``"logreg"``, ``"mlp"``:
        :data:`TOPOKIT_MODELS`) or any other name for the user's own model
        (say ``"cnn"``); see :attr:`trained_by_topokit`.
    epsilon : float > 0, default 1.0
        Privacy budget of each round (``DPConfig(per="round")``'s meaning).
    delta : float in (0, 1), default 1e-5
        The delta of each round.
    max_grad_norm : float > 0, default 1.0
        Per-example clipping norm C.
    batch_size : int >= 1, default 64
        Expected minibatch size B.
    local_steps : int >= 1, default 1
        Local SGD steps K per round.
    target : float in (0, 1], default 0.88
        The test accuracy whose rounds count (:data:`DEFAULT_TARGET`).
    rounds : int >= 1, default 200
        The horizon T: the most rounds a run trains (``train``'s ``rounds``).
        A setting, not a limit of the predictors: rounds to the target are
        predicted as fitted, and a shorter horizon only moves the cut-off
        beyond which a topology counts as never reaching the target.
    n_samples : int >= 1, optional
        Training rows in all, where known.
    n_classes : int >= 2, optional
        Classes of the data, where known.
    noise_multiplier : float > 0, optional
        z = sigma / Delta of every DP device.  None (default): calibrated from
        epsilon and delta as ``DPConfig`` calibrates a round
        (:attr:`resolved_noise_multiplier`); when given, epsilon is not used
        for calibration, as in ``DPConfig``.
    ceiling : float in (0, 1], optional
        The accuracy the model reaches on the data without DP noise and with
        exact averaging (:func:`topokit.training.ceiling.ceiling_probe`
        measures it in one cheap run).  The predictor that knows the workload
        judges how hard the target is by ``target / ceiling``; a target above
        it is refused (no topology reaches it).  None
        (default): the ceiling the predictor measured for the model on
        topokit's default data (digits), where it has one.
    probe_rounds : float > 0, optional
        The rounds the model takes to 90 % of its ceiling in that same probe
        (:attr:`topokit.training.ceiling.CeilingProbe.probe_rounds`): how fast it
        learns with exact averaging and no noise.  A predictor with the
        feature ``probe_rounds`` tells models apart by it, so a model of the
        user's own is judged by a measured trait rather than by its name.
        None (default): the value the predictor measured for the model on
        topokit's default data, where it has one; :meth:`to_dict` then leaves
        the field out (records of workloads without it stay as they were).

    Raises
    ------
    InvalidInputError
        A field of the wrong type or outside its range (NaN and inf included),
        one line naming the field.

    Examples
    --------
    >>> workload = Workload(model="cnn", epsilon=0.5)
    >>> workload.trained_by_topokit
    False
    >>> round(workload.resolved_noise_multiplier, 4)
    7.0318
    >>> Workload.from_dict(workload.to_dict()) == workload
    True
    >>> Workload(target=1.5)
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: target must be an accuracy in (0, 1]; got 1.5
    """

    model: str = "logreg"
    epsilon: float = 1.0
    delta: float = 1e-5
    max_grad_norm: float = 1.0
    batch_size: int = 64
    local_steps: int = 1
    target: float = DEFAULT_TARGET
    rounds: int = 200
    n_samples: int | None = None
    n_classes: int | None = None
    noise_multiplier: float | None = None
    ceiling: float | None = None
    probe_rounds: float | None = None

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "model", _check_model(self.model))
        for name, (accepted, interval) in _REAL_FIELDS.items():
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL:
                set_(self, name, _check_number(value, name, accepted, interval))
        for name, low in _INT_FIELDS.items():
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL:
                set_(self, name, check_int(value, name, low=low))
        if self.ceiling is not None and self.target > self.ceiling:
            raise InvalidInputError(
                f"target {self.target:g} lies above the ceiling {self.ceiling:g} the model "
                "reaches without noise, so no topology reaches it; lower the target below the "
                "ceiling or measure the ceiling again (ceiling_probe)")

    @property
    def trained_by_topokit(self) -> bool:
        """True when :func:`topokit.training.train` builds the model by its name.

        >>> Workload(model="mlp").trained_by_topokit, Workload(model="cnn").trained_by_topokit
        (True, False)
        """
        return self.model in TOPOKIT_MODELS

    @functools.cached_property
    def resolved_noise_multiplier(self) -> float:
        """z = sigma / Delta of the DP devices: ``noise_multiplier``, or the per-round calibration.

        The calibration is :func:`topokit.dp.calibrate_noise` (epsilon, delta) at
        unit sensitivity, the call ``DPConfig(per="round")`` makes
        (``topokit.training.privacy.resolve_noise_multipliers``).

        >>> round(Workload().resolved_noise_multiplier, 4)
        3.7306
        >>> Workload(noise_multiplier=5).resolved_noise_multiplier
        5.0
        """
        if self.noise_multiplier is not None:
            return self.noise_multiplier
        from ..dp import calibrate_noise  # dp-accounting is a heavy import

        return float(calibrate_noise(self.epsilon, self.delta))

    def feature_settings(self) -> FeatureSettings:
        """The :class:`~topokit.design.features.FeatureSettings` of this workload.

        Noise multiplier, clipping norm, batch size, local steps and data size;
        the decay ``gamma`` keeps its default.

        >>> Workload(batch_size=32).feature_settings().batch_size
        32
        """
        from .features import FeatureSettings

        return FeatureSettings(
            noise_multiplier=self.resolved_noise_multiplier,
            max_grad_norm=self.max_grad_norm,
            batch_size=self.batch_size,
            local_steps=self.local_steps,
            n_samples=self.n_samples,
        )

    def dp_config_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of this workload's ``topokit.training.DPConfig`` (per round).

        ``noise_multiplier`` is None unless the workload fixes it, so the
        config calibrates it from epsilon and delta itself.

        >>> from topokit.training.privacy import DPConfig
        >>> DPConfig(**Workload(epsilon=0.5).dp_config_kwargs()).epsilon
        0.5
        """
        return {"epsilon": self.epsilon, "delta": self.delta,
                "max_grad_norm": self.max_grad_norm, "per": "round",
                "noise_multiplier": self.noise_multiplier}

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready data (None where not given; ``probe_rounds`` left out
        when not given)."""
        data = asdict(self)
        if data["probe_rounds"] is None:
            del data["probe_rounds"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Workload:
        """A workload from :meth:`to_dict`; missing fields take their defaults.

        >>> Workload.from_dict({"model": "cnn", "epsilon": 2}).epsilon
        2.0
        >>> Workload.from_dict({"epsilom": 2})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        topokit.errors.InvalidInputError: unknown workload field 'epsilom' (did you mean ...
        """
        if not isinstance(data, Mapping):
            raise InvalidInputError(
                f"a workload must be a mapping of its fields; got {type(data).__name__}")
        known = [f.name for f in fields(cls)]
        for key in data:
            if key not in known:
                raise InvalidInputError(f"unknown workload field {key!r}{_did_you_mean(key, known)}"
                                        f"; the fields are {', '.join(known)}")
        return cls(**data)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the workload as JSON to ``path`` (atomically); return the path."""
        target = check_output_path(path, "path")
        return atomic_write_text(target, json.dumps(self.to_dict(), indent=1,
                                                    allow_nan=False) + "\n")


def _check_model(model: Any) -> str:
    """A model name: one of topokit's or any other non-blank string."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(
            f"model must be a non-empty name: {' or '.join(map(repr, TOPOKIT_MODELS))} "
            f"(trained by topokit) or your own model's, such as 'cnn'; got {model!r}")
    return model


# Each real field: what it must be (said in the error) and the interval check_real enforces.
_REAL_FIELDS: dict[str, tuple[str, dict[str, Any]]] = {
    "epsilon": ("a finite number > 0 (the budget of one round)",
                {"low": 0, "closed": "neither"}),
    "delta": ("a number in (0, 1)", {"low": 0, "high": 1, "closed": "neither"}),
    "max_grad_norm": ("a finite number > 0", {"low": 0, "closed": "neither"}),
    "target": ("an accuracy in (0, 1]", {"low": 0, "high": 1, "closed": "right"}),
    "noise_multiplier": ("a finite number > 0, or None to calibrate it from epsilon and delta",
                         {"low": 0, "closed": "neither"}),
    "ceiling": ("an accuracy in (0, 1], or None for the one the predictor knows",
                {"low": 0, "high": 1, "closed": "right"}),
    "probe_rounds": ("a number of rounds > 0, or None for the one the predictor knows",
                     {"low": 0, "closed": "neither"}),
}
# Each integer field and its least value.
_INT_FIELDS = {"batch_size": 1, "local_steps": 1, "rounds": 1, "n_samples": 1, "n_classes": 2}
# Fields that may be None (unknown, or derived).
_OPTIONAL = frozenset({"n_samples", "n_classes", "noise_multiplier", "ceiling",
                       "probe_rounds"})


def _check_number(value: Any, name: str, accepted: str, interval: dict[str, Any]) -> float:
    """``value`` as a float in ``interval``; else one line saying what ``name`` must be."""
    try:
        return check_real(value, name, **interval)
    except InvalidInputError:
        raise InvalidInputError(f"{name} must be {accepted}; got {value!r}") from None


def _did_you_mean(key: Any, known: list[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def load_workload(path: str | os.PathLike) -> Workload:
    """Read a workload written by :meth:`Workload.save` (or by hand).

    Parameters
    ----------
    path : path
        A JSON object of :class:`Workload`'s fields; missing fields take
        their defaults.

    Returns
    -------
    Workload

    Raises
    ------
    InputFileNotFoundError
        No file there.
    InputFileError
        Not a JSON object, or a field of the wrong type or range (the message
        names the file and the field).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "workload.json"
    >>> load_workload(Workload(model="cnn").save(path)).model
    'cnn'
    """
    path = Path(path)
    data = read_json_file(path, "workload")
    if not isinstance(data, dict):
        raise InputFileError(f"{path}: expected a JSON object of workload fields; "
                             f"got {type(data).__name__}")
    try:
        return Workload.from_dict(data)
    except InvalidInputError as exc:
        raise InputFileError(f"{path}: {exc}") from None


def check_workload(workload: Any) -> Workload | None:
    """``workload`` as a :class:`Workload`: None, a Workload, or a mapping of its fields."""
    if workload is None or isinstance(workload, Workload):
        return workload
    if isinstance(workload, Mapping):
        return Workload.from_dict(workload)
    raise InvalidInputError(
        f"workload must be a topokit Workload (or a dict of its fields); got "
        f"{type(workload).__name__}")
