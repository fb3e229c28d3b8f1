"""Statistics for comparing predicted with measured training: rank correlations
that treat a run that never reached its target as the slowest."""

from __future__ import annotations

import numpy as np

__all__ = ["correlation", "censored_spearman"]


def correlation(x: np.ndarray, y: np.ndarray, method: str) -> float:
    """Spearman or Pearson correlation over the finite pairs; NaN where undefined."""
    from scipy.stats import pearsonr, spearmanr

    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")  # undefined for fewer than 3 points or a constant side
    function = spearmanr if method == "spearman" else pearsonr
    return float(function(x, y).statistic)


def censored_spearman(predicted: np.ndarray, measured: np.ndarray) -> float:
    """Spearman's rho with ``inf`` ranked last (ties share their mean rank); NaN if undefined."""
    from scipy.stats import rankdata

    if predicted.size < 3 or np.isnan(predicted).any() or np.isnan(measured).any():
        return float("nan")
    x, y = rankdata(predicted), rankdata(measured)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


