"""What :func:`topokit.optimize` decides from what was measured about the model, not its name.

Two choices of :func:`~topokit.optimize` depend on the model trained rather than
on the topology: the mixing weights its design gets and the margin by which a
searched design must be predicted faster than NDLF to replace it
(``DEFAULT_NDLF_MARGINS`` in :mod:`topokit.design._optimize`).  Both follow one
measured trait of the model, its *probe rounds*: the rounds
:func:`~topokit.training.ceiling.ceiling_probe` takes to 90 % of its own ceiling
with exact averaging and no noise (:attr:`~topokit.design.Workload.probe_rounds`).

- Fastest-mixing weights (Boyd, Diaconis and Xiao) with margin 1.0 were never
  more than 2 % slower than NDLF for logistic regression in the design
  benchmark, whose probe rounds measured 3-10 per seed (digits and generated
  data; ``provenance_["probe_rounds_note"]`` of the shipped ``"workload"``
  predictor).  Up to :data:`FASTEST_MIXING_MAX_PROBE_ROUNDS` they stay the
  default.
- For the MLP (probe rounds 33-48 per seed) fastest-mixing weights were more
  than 2 % slower than NDLF in 21 and 26 of 69 settings, the paper's
  Lazy-Metropolis weights with margin 1.12 in 0 and 3 (module notes of
  :mod:`topokit.design._optimize`).  A model that learns more slowly than the
  fast learners measured, or one whose probe rounds nobody measured, gets
  these *safe* choices (:data:`SAFE_MIXING`), and optimize says how to
  measure it.

Where the trait comes from (:func:`measured_probe_rounds`), first found wins:
the workload's ``probe_rounds``; the runs a predictor was calibrated on
(``provenance_["model_traits"]``, written by
:func:`topokit.validation.calibrate` when told the runs' workload); topokit's
own measurement of the models it ships (``"logreg"``, ``"mlp"``; the shipped
``"workload"`` predictor's ``provenance_["probe_rounds"]``); without a
workload, the trait a predictor predicts at (its ``probe_rounds``) or that of
the model it was trained on.  A name alone never decides: a user's model
called ``"mine"`` is judged by its measurement, and topokit's own MLP told
under another name gets the same choices as under ``"mlp"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .workload import Workload

__all__ = ["FASTEST_MIXING_MAX_PROBE_ROUNDS", "SAFE_MIXING", "UNRUN_REWIRING_MARGIN",
           "MeasuredTrait", "measured_probe_rounds", "mixing_for_trait", "has_runs_of"]

#: The largest probe rounds measured of a model for which fastest-mixing weights were never
#: more than 2 % slower than NDLF (logistic regression: 3-10 per seed; module notes).
FASTEST_MIXING_MAX_PROBE_ROUNDS = 10.0
#: The weights of a model that learns more slowly, or whose trait is unknown: those never
#: measurably slower than NDLF for the MLP (with their margin, 1.12).
SAFE_MIXING = "lazy-metropolis"
#: The NDLF margin of a design that adds no DP device but changes the social links (prunes
#: them), for a model the predictor has no run of (:func:`has_runs_of`).  Such a design
#: gains only by mixing the same data better in the rounds it saves, which is what the
#: predictor carries over from other models.  On the unseen-workload benchmark's networks
#: of seeds 300-304 (``python -m analyses.workload_unseen --networks 4``) a 128-unit MLP's
#: pruned social graphs predicted 1.33x faster were 1.02x slower than NDLF, and the
#: 64-32 MLP's predicted up to 1.41x faster trained no faster; the margin is the first
#: tenth above the largest predicted gain of one measured more than 2 % slower.  A
#: calibration on the model's own runs lifts it.
UNRUN_REWIRING_MARGIN = 1.4


class MeasuredTrait(NamedTuple):
    """A model's probe rounds (None: never measured) and where the value comes from."""

    probe_rounds: float | None
    source: str


def measured_probe_rounds(predictor: Any, workload: Workload | None = None) -> MeasuredTrait:
    """The measured probe rounds of the model ``predictor`` judges (module notes).

    Parameters
    ----------
    predictor : TrainingTimePredictor or GlobalIteratePredictor
        A loaded predictor (:func:`~topokit.design.time_predictor.load_predictor`).
    workload : Workload, optional
        What the user trains; None: the model the predictor itself stands for.

    Returns
    -------
    MeasuredTrait

    Examples
    --------
    >>> from topokit import Workload, load_predictor
    >>> measured_probe_rounds(load_predictor("workload"), Workload(model="cnn", probe_rounds=12))
    MeasuredTrait(probe_rounds=12.0, source='the workload')
    >>> measured_probe_rounds(load_predictor("workload"), Workload(model="mlp")).probe_rounds
    34.0
    >>> measured_probe_rounds(load_predictor("workload"), Workload(model="mine")).probe_rounds
    """
    if workload is not None and workload.probe_rounds is not None:
        return MeasuredTrait(float(workload.probe_rounds), "the workload")
    provenance = getattr(predictor, "provenance_", None) or {}
    calibrated = _calibrated_trait(provenance, workload)
    if calibrated is not None:
        return MeasuredTrait(calibrated, "the runs the predictor was calibrated on")
    if workload is None:
        own = getattr(predictor, "probe_rounds", None)
        if own is not None and "probe_rounds" in getattr(predictor, "features", ()):
            return MeasuredTrait(float(own), "the predictor's own setting")
        model = _trained_model(provenance)
    else:
        model = workload.model
    shipped = shipped_probe_rounds().get(model) if model is not None else None
    if shipped is not None:
        return MeasuredTrait(shipped, f"topokit's measurement of {model!r} on digits")
    return MeasuredTrait(None, "never measured")


def has_runs_of(predictor: Any, workload: Workload | None) -> bool:
    """Whether ``predictor`` was fitted or calibrated on runs of the workload's model.

    Its traits may be measured (:func:`measured_probe_rounds`) while no run of it
    ever trained with DP devices: then a design that adds DP devices rests on the
    predictor's reach across models, and :func:`topokit.optimize` asks it to be
    predicted as clearly faster than NDLF as the safe weights' margin.  The runs'
    model is the one a predictor's record names (``trained_models``,
    ``trained_model``, a calibration's ``model_traits``); without a workload, the
    predictor's own.

    >>> from topokit import Workload, load_predictor
    >>> shipped = load_predictor("workload")
    >>> has_runs_of(shipped, Workload(model="mlp")), has_runs_of(shipped, Workload(model="mine"))
    (True, False)
    """
    if workload is None:
        return True
    provenance = getattr(predictor, "provenance_", None) or {}
    models = set(provenance.get("trained_models") or ())
    trained = _trained_model(provenance)
    traits = provenance.get("model_traits")
    if isinstance(traits, Mapping) and isinstance(traits.get("model"), str):
        models.add(traits["model"])
    return workload.model in models | ({trained} if trained else set())


def _calibrated_trait(provenance: Mapping[str, Any], workload: Workload | None) -> float | None:
    """The probe rounds a calibration recorded of its runs' model, where they are the
    workload's model (or no workload is given)."""
    traits = provenance.get("model_traits")
    if not isinstance(traits, Mapping) or not isinstance(traits.get("probe_rounds"),
                                                         (int, float)):
        return None
    if workload is not None and traits.get("model") != workload.model:
        return None
    return float(traits["probe_rounds"])


def _trained_model(provenance: Mapping[str, Any]) -> str | None:
    """The one model a predictor was fitted on, where its record names one."""
    from .time_predictor import _trained_model as recorded

    if provenance.get("trained_models") and "trained_model" not in provenance:
        return None  # fitted on several: its own probe rounds say which it stands for
    return recorded(provenance)


def shipped_probe_rounds() -> dict[str, float]:
    """topokit's measured probe rounds of the models it trains by name (model -> rounds).

    >>> shipped_probe_rounds()
    {'logreg': 4.0, 'mlp': 34.0}
    """
    from .time_predictor import load_predictor

    measured = (load_predictor("workload").provenance_ or {}).get("probe_rounds") or {}
    return {str(model): float(value) for model, value in measured.items()
            if isinstance(value, (int, float))}


def mixing_for_trait(probe_rounds: float | None) -> str:
    """The default mixing weights for a model of these measured probe rounds (module notes).

    >>> mixing_for_trait(4), mixing_for_trait(34), mixing_for_trait(None)
    ('fastest', 'lazy-metropolis', 'lazy-metropolis')
    """
    if probe_rounds is not None and probe_rounds <= FASTEST_MIXING_MAX_PROBE_ROUNDS:
        return "fastest"
    return SAFE_MIXING


def warn_unplaced(workload: Workload) -> None:
    """One :class:`~topokit.errors.TopokitWarning` line: the model's trait is unknown, so the
    design got the safe choices; how to measure it."""
    import warnings

    from ..errors import TopokitWarning

    warnings.warn(
        f"how fast model {workload.model!r} learns was never measured: optimize gave the "
        f"design the choices never slower than NDLF for neural networks ({SAFE_MIXING} "
        "weights and their NDLF margin) and predicted it as the slowest-learning model it "
        "knows; measure it with topokit.training.ceiling.ceiling_probe and pass "
        "Workload(ceiling=..., probe_rounds=...)", TopokitWarning, stacklevel=6)
