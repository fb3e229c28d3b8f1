"""Design x training: predicted against measured training time.

=======================  ===============================================================
module                   what it holds
=======================  ===============================================================
:mod:`.core`             :func:`validate` -> :class:`ValidationResult`: topologies trained
                         over a network, measured against the prediction
:mod:`.calibration`      :func:`calibrate` and :func:`leave_network_out`: predictors
                         refitted on measured runs, and judged on networks they never saw
:mod:`.probes`           :func:`probe_topologies`: the topologies whose runs teach a
                         calibration most
:mod:`.stats`            rank correlations that rank never-reached runs slowest
:mod:`.compare`          designs compared on measured runs: paired ratios, bootstrap
                         intervals, win rates, speed-ups, the hindsight ceiling
:mod:`.corpus`           the corpus behind the shipped predictors: its topologies, runs,
                         features, fit and leave-network-out judgement
=======================  ===============================================================

This package sits above :mod:`topokit.design` and :mod:`topokit.training`; neither
imports it.
"""

from __future__ import annotations

from .calibration import CALIBRATION_COLUMNS, CalibrationResult, calibrate, leave_network_out
from .compare import (
    bootstrap_median_interval,
    geometric_speedups,
    hindsight_ceiling,
    never_reached,
    paired_ratios,
    ratio_summary,
    ratios_to_reference,
    time_to_target,
    win_rates,
)
from .core import (
    DEFAULT_TARGETS,
    DEFAULT_TOPOLOGIES,
    FEATURE_COLUMNS,
    RUN_COLUMNS,
    TIMING_COLUMNS,
    TOPOLOGY_KINDS,
    TopologySpec,
    ValidationResult,
    curves_path,
    noise_variance,
    parse_topology_specs,
    timings_path,
    trial_seed,
    validate,
)
from .corpus import (
    CorpusEntry,
    CorpusJudgement,
    NetworkSpec,
    cell_scores,
    corpus_rows,
    corpus_topologies,
    fit_corpus_predictor,
    held_out_predictions,
    judge_corpus,
    trial_predictions,
)
from .probes import probe_topologies
from .stats import censored_spearman, correlation

__all__ = [
    "validate",
    "calibrate",
    "leave_network_out",
    "probe_topologies",
    "ValidationResult",
    "CalibrationResult",
    "TopologySpec",
    "parse_topology_specs",
    "noise_variance",
    "curves_path",
    "timings_path",
    "TIMING_COLUMNS",
    "TOPOLOGY_KINDS",
    "DEFAULT_TOPOLOGIES",
    "DEFAULT_TARGETS",
    "RUN_COLUMNS",
    "FEATURE_COLUMNS",
    "CALIBRATION_COLUMNS",
    "censored_spearman",
    "correlation",
    "time_to_target",
    "bootstrap_median_interval",
    "ratios_to_reference",
    "paired_ratios",
    "ratio_summary",
    "win_rates",
    "geometric_speedups",
    "hindsight_ceiling",
    "never_reached",
    "NetworkSpec",
    "CorpusEntry",
    "CorpusJudgement",
    "corpus_topologies",
    "corpus_rows",
    "trial_seed",
    "trial_predictions",
    "fit_corpus_predictor",
    "held_out_predictions",
    "cell_scores",
    "judge_corpus",
]
