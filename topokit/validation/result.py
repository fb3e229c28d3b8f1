"""What :func:`~topokit.validation.validate` returns: the runs table and what it says."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_choice
from .stats import censored_spearman, correlation

__all__ = ["ValidationResult", "RUN_COLUMNS", "FEATURE_COLUMNS", "TIMING_COLUMNS"]

#: Columns of the runs table, one row per (topology, trial, target).
RUN_COLUMNS = (
    "network", "topology", "kind", "trial", "seed", "target",
    "hitting_time", "spectral_gap", "phi", "n_links", "n_dp_devices", "noise_variance",
    "local_iterate", "predicted_global_iterate", "pseudo_time",
    "measured_rounds", "measured_time", "final_accuracy", "rounds_run", "stop_rule",
    "epsilon", "dp_formal", "stranger_pairs", "exposed_pairs",
    "exposed_stranger_pairs", "stranger_mu_max",
    "effective_neighbours", "noise_average", "noise_disagreement", "noise_felt",
    "heterogeneity_local", "heterogeneity_neighbourhood", "heterogeneity_disagreement",
)

#: The columns of :data:`RUN_COLUMNS` that are features of
#: :func:`~topokit.design.features.topology_features` beyond H, the gap and phi:
#: computed for each run's own settings (noise multiplier, clip, batch size, local
#: steps) and partition, so that :func:`calibrate` can refit a
#: :class:`~topokit.design.TrainingTimePredictor` on the runs.
FEATURE_COLUMNS = RUN_COLUMNS[RUN_COLUMNS.index("effective_neighbours"):]

#: Columns of the timings table, one row per training run.  Wall-clock times
#: live apart from the results, so that the same seed writes the same bytes.
TIMING_COLUMNS = ("topology", "kind", "trial", "seed", "wall_clock")


def _ranked_units(group: pd.DataFrame, by: str) -> pd.DataFrame:
    """The runs (or topologies) of one target, never-reached measurements made infinite."""
    columns = ["pseudo_time", "predicted_global_iterate", "measured_time", "measured_rounds"]
    units = group[["topology", *columns]].copy()
    units[["measured_time", "measured_rounds"]] = units[
        ["measured_time", "measured_rounds"]].fillna(np.inf)
    if by == "topology":
        units = units.groupby("topology", sort=False)[columns].median()
    return units


@dataclass(frozen=True, eq=False)
class ValidationResult:
    """What :func:`validate` measured.

    Attributes
    ----------
    frame : DataFrame
        One row per (topology, trial, target); columns :data:`RUN_COLUMNS`
        (``measured_rounds`` / ``measured_time`` NaN where the target was
        never reached).
    curves : DataFrame
        Averaged accuracy at every checkpoint: ``topology``, ``kind``,
        ``trial``, ``round``, ``time`` (round x L, seconds; the sum of the
        rounds' times for a time-varying topology), ``mean_accuracy``.
    topologies : dict
        Name -> Topology (or :class:`~topokit.network.TopologySchedule`) that
        was trained over.
    config : dict
        The settings of the run (JSON-able);
        ``config["schedules_extrapolated"]`` names the time-varying
        topologies, whose predictions extrapolate a fit on static ones, and
        says how they are made (absent when there are none; results written
        before they were predicted have ``config["not_predicted"]``);
        ``config["unmeasured_model"]`` says
        that the runs train a model of the user's that no workload measured,
        so that its predictions are the shipped fit's (absent otherwise).
    timings : DataFrame or None
        Wall-clock seconds of every training run (:data:`TIMING_COLUMNS`), kept
        apart from ``frame`` so that the same seed gives the same results table.
    """

    frame: pd.DataFrame
    curves: pd.DataFrame
    topologies: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    timings: pd.DataFrame | None = None

    def __repr__(self) -> str:
        """One line: how many training runs, of how many topologies, targets and trials;
        the tables are :attr:`frame` and :attr:`curves`.

        >>> frame = pd.DataFrame({"topology": ["a", "a", "b", "b"], "trial": [0, 0, 0, 0],
        ...                       "target": [0.8, 0.9, 0.8, 0.9]})
        >>> ValidationResult(frame, pd.DataFrame())
        ValidationResult(runs=2, topologies=2, targets=2, trials=1)
        """
        counts = {column: int(self.frame[column].nunique()) if column in self.frame else 0
                  for column in ("topology", "target", "trial")}
        # A run trains one topology once; the table has a row per target it was read at.
        keys = [column for column in ("topology", "trial") if column in self.frame]
        runs = len(self.frame[keys].drop_duplicates()) if keys else len(self.frame)
        return (f"ValidationResult(runs={runs}, topologies={counts['topology']}, "
                f"targets={counts['target']}, trials={counts['trial']})")

    def to_frame(self) -> pd.DataFrame:
        """The runs table (a copy)."""
        return self.frame.copy()

    def correlations(self, by: str = "run") -> pd.DataFrame:
        """Spearman and Pearson correlations of predicted against measured, per target.

        Spearman ranks *every* run: one that never reached the target counts as
        slower than any that did (its measured time is infinite), because those
        are the runs where a prediction is most wrong if it calls them fast.
        A prediction of ``inf`` (a predictor that says "never") ranks slowest
        too.  The figures over the runs that reached the target alone, what
        this method reported before, stand beside them.  Time-varying
        topologies are ranked with the others; the runs of those a result
        written before they were predicted names (``config["not_predicted"]``)
        are left out.

        Parameters
        ----------
        by : {"run", "topology"}
            Correlate every run (default), or each topology's median over its
            trials (never reached = infinite).

        Returns
        -------
        DataFrame
            One row per target: ``n`` (runs or topologies ranked),
            ``never_reached``, ``spearman_time`` (pseudo time G' x L against
            measured physical time) and ``spearman_rounds`` (G' against
            measured rounds) over all of them; ``n_reached``,
            ``spearman_time_reached``, ``spearman_rounds_reached``,
            ``pearson_time`` and ``pearson_rounds`` over those that reached
            the target.  NaN where fewer than 3 pairs or one side is constant.
        """
        check_choice(by, "by", ("run", "topology"))
        unjudged = (self.config.get("not_predicted") or {}).get("topologies", [])
        judged = self.frame[~self.frame["topology"].isin(unjudged)] if unjudged else self.frame
        records = []
        for target, group in judged.groupby("target", sort=True):
            ranked = _ranked_units(group, by)
            reached = ranked[np.isfinite(ranked["measured_time"])]
            record = {"target": float(target), "n": int(len(ranked)),
                      "never_reached": int(group["measured_rounds"].isna().sum()),
                      "n_reached": int(len(reached))}
            for what, predicted, measured in (("time", "pseudo_time", "measured_time"),
                                              ("rounds", "predicted_global_iterate",
                                               "measured_rounds")):
                record[f"spearman_{what}"] = censored_spearman(
                    ranked[predicted].to_numpy(float), ranked[measured].to_numpy(float))
                x, y = reached[predicted].to_numpy(float), reached[measured].to_numpy(float)
                record[f"spearman_{what}_reached"] = correlation(x, y, "spearman")
                record[f"pearson_{what}"] = correlation(x, y, "pearson")
            records.append(record)
        return pd.DataFrame(records)

    def summary(self) -> pd.DataFrame:
        """One row per (topology, target): the prediction and the measured mean and spread.

        ``reached`` counts the trials that reached the target; ``rounds_mean``,
        ``rounds_std``, ``time_mean``, ``time_std`` are over those trials;
        ``exposed_stranger_pairs`` and ``stranger_mu_max`` are the worst over
        the trials (NaN if no trial has a finite stranger mu).
        """
        grouped = self.frame.groupby(["topology", "target"], sort=False)
        first = grouped[["kind", "hitting_time", "phi", "local_iterate",
                         "predicted_global_iterate", "pseudo_time", "stranger_pairs"]].first()
        stats = grouped.agg(
            trials=("trial", "size"),
            reached=("measured_rounds", "count"),
            rounds_mean=("measured_rounds", "mean"),
            rounds_std=("measured_rounds", "std"),
            time_mean=("measured_time", "mean"),
            time_std=("measured_time", "std"),
            final_accuracy=("final_accuracy", "mean"),
            exposed_stranger_pairs=("exposed_stranger_pairs", "max"),
            stranger_mu_max=("stranger_mu_max", "max"),
        )
        return first.join(stats).reset_index()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: settings, topologies, summary and correlations (not every row)."""
        def records(frame: pd.DataFrame) -> list[dict]:
            return [{k: (None if isinstance(v, float) and not np.isfinite(v) else
                         v.item() if isinstance(v, np.generic) else v)
                     for k, v in row.items()} for row in frame.to_dict(orient="records")]

        return {
            "config": self.config,
            "topologies": {name: t.to_dict() for name, t in self.topologies.items()},
            "n_runs": int(len(self.frame)),
            "summary": records(self.summary()),
            "correlations": records(self.correlations()),
            "correlations_by_topology": records(self.correlations(by="topology")),
        }

    def plot(self, path: str | Path) -> Path:
        """Scatter predicted against measured (rounds and physical time), saved atomically."""
        from ..plotting.design import save_figure, validation_figure

        save_figure(validation_figure(self.frame), path)
        return Path(path)
