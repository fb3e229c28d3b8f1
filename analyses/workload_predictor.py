"""Fit and judge the predictor that knows the workload (``load_predictor("workload")``).

On the runs of ``python -m analyses.workload_corpus`` (SIoT networks of 12-24
devices, epsilon 0.25-8 per round, targets far from and near the ceiling, digits
and a generated data set, logistic regression), a
:class:`topokit.design.TrainingTimePredictor` with the default features plus
``target_closeness`` (target over the centralised ceiling), and its noise
features taken as log(1 + x / (s m)) (``noise_scale`` s), is judged
leave-network-out: for every network it is fitted on the other networks' runs
and ranks this one's topologies, per (data, network, skewness, epsilon, target):
the Spearman correlation of predicted and measured time-to-target (rounds x L;
never-reached runs slowest).  Beside it: the same refit with the noise features
as they are (``noise_scale=None``), and the shipped default predictor (fitted at
epsilon = 1, target 0.88 on digits) applied to each run's features at its own
epsilon, as ``optimize`` used it before workloads.  ``s`` is chosen on the
digits runs alone and judged on the generated ones (data it was not chosen on).
The trial ceiling (Spearman of one trial's measured times against the other's)
says how much of the ranking the run-to-run noise leaves to predict.

The predictor fitted on every run is written to ``datasets/predictor_workload.json``
with its provenance: the models and data it saw, the range of noise multipliers and
target closeness fitted on (``optimize`` keeps to it), and the ceiling of each
model on digits (topokit's default data).

Run (from the repository root): python -m analyses.workload_predictor [--quick]
(after the corpus).  About a minute.  Writes analyses/out/workload_predictor.{json,png}
and datasets/predictor_workload.json (with --quick: the quick corpus, nothing
shipped).
"""

from __future__ import annotations

import warnings
from datetime import date
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from analyses._common import machine, out_path, run_quick, write_json
from analyses.workload_corpus import DELTA, EPSILONS, ROUNDS, TARGETS, noise_multiplier
from topokit import __version__
from topokit.design.features import FeatureSettings
from topokit.design.time_predictor import DEFAULT_FEATURES, TrainingTimePredictor, load_predictor
from topokit.validation.stats import censored_spearman

FEATURES = (*DEFAULT_FEATURES, "target_closeness")
#: The candidates: the features, and with them the DP ratio phi (DP devices clip their
#: gradients, which slows training even where their noise is small).
FEATURE_SETS = {"default+closeness": FEATURES, "default+closeness+phi": (*FEATURES, "phi")}
SCALES = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
CELL = ["data", "network", "skewness", "epsilon_run", "target"]
SHIPPED = Path(__file__).resolve().parents[1] / "datasets" / "predictor_workload.json"


def load_rows(quick: bool) -> pd.DataFrame:
    name = "workload_corpus_quick" if quick else "workload_corpus"
    rows = pd.read_parquet(out_path(f"{name}.parquet"))
    rows = rows[rows["target_closeness"] < 1.0].reset_index(drop=True)
    return rows.assign(rounds=rows["measured_rounds"].fillna(np.inf))


class Variant(NamedTuple):
    """A candidate predictor: its feature set (a key of :data:`FEATURE_SETS`) and noise
    scale (None: the noise features as they are)."""

    features: str
    scale: float | None

    def unfitted(self) -> TrainingTimePredictor:
        return TrainingTimePredictor(features=FEATURE_SETS[self.features], horizon=ROUNDS,
                                     noise_scale=self.scale)

    def matrix(self, rows: pd.DataFrame) -> np.ndarray:
        return rows[list(FEATURE_SETS[self.features])].to_numpy(dtype=np.float64)


def held_out(rows: pd.DataFrame, variant: Variant) -> np.ndarray:
    """Every run's predicted rounds by the predictor fitted without its network."""
    predicted = np.empty(len(rows))
    for network in rows["network"].unique():
        mine = (rows["network"] == network).to_numpy()
        model = variant.unfitted().fit(variant.matrix(rows[~mine]), rows["rounds"][~mine])
        predicted[mine] = model.predict(variant.matrix(rows[mine]))
    return predicted


def shipped_default(rows: pd.DataFrame) -> np.ndarray:
    """The shipped default's rounds of every run, from its features at the run's epsilon."""
    model = load_predictor("default")
    return model.predict(rows[list(model.features)].to_numpy(dtype=np.float64))


def cell_spearman(rows: pd.DataFrame, predicted: np.ndarray) -> pd.Series:
    """Spearman of predicted and measured time-to-target in every cell."""
    frame = rows.assign(p=predicted * rows["local_iterate"],
                        m=rows["rounds"] * rows["local_iterate"])
    return frame.groupby(CELL).apply(
        lambda g: censored_spearman(g["p"].to_numpy(), g["m"].to_numpy()), include_groups=False)


def trial_ceiling(rows: pd.DataFrame) -> pd.Series:
    """Per cell: Spearman of trial 0's measured times against trial 1's, same topologies."""
    frame = rows.assign(m=rows["rounds"] * rows["local_iterate"])
    wide = frame.pivot_table(index=[*CELL, "topology"], columns="trial", values="m",
                             aggfunc="first")
    return wide.groupby(level=CELL).apply(
        lambda g: censored_spearman(g.iloc[:, 0].to_numpy(), g.iloc[:, 1].to_numpy()))


def choose(rows: pd.DataFrame) -> tuple[Variant, pd.DataFrame]:
    """The variant whose worst epsilon ranks best on the digits runs, and every variant's
    scores there: the median leave-network-out Spearman at each epsilon, its lowest
    (``worst_epsilon``, the criterion: a design is made at one budget) and overall median."""
    digits = rows[rows["data"] == "digits"].reset_index(drop=True)
    scores = {}
    for name in FEATURE_SETS:
        for scale in SCALES:
            variant = Variant(name, scale)
            cells = cell_spearman(digits, held_out(digits, variant))
            by_epsilon = cells.groupby(level="epsilon_run").median()
            scores[variant] = {**{f"eps {e:g}": v for e, v in by_epsilon.items()},
                               "worst_epsilon": by_epsilon.min(), "median": cells.median()}
    table = pd.DataFrame(scores).T
    return Variant(*table["worst_epsilon"].idxmax()), table


def judge(rows: pd.DataFrame, variant: Variant) -> pd.DataFrame:
    """The cells' Spearman for each predictor, and the trial ceiling."""
    linear = variant._replace(scale=None)
    return pd.DataFrame({"workload": cell_spearman(rows, held_out(rows, variant)),
                         "workload_linear_noise": cell_spearman(rows, held_out(rows, linear)),
                         "default_at_epsilon": cell_spearman(rows, shipped_default(rows)),
                         "trial_ceiling": trial_ceiling(rows)})


def fit_shipped(rows: pd.DataFrame, variant: Variant, ceilings: dict[str, float]):
    """The predictor fitted on every run, at the default workload's settings."""
    model = variant.unfitted().fit(variant.matrix(rows), rows["rounds"])
    z = rows["noise_multiplier"]
    closeness = rows["target_closeness"]
    n_train = int(round(0.75 * 1797))
    model.set_params(settings=FeatureSettings(noise_multiplier=noise_multiplier(1.0),
                                              n_samples=n_train),
                     target_closeness=0.88 / ceilings["logreg"])
    provenance = {
        "script": "analyses/workload_predictor.py (runs: analyses/workload_corpus.py)",
        "trained_model": "logreg", "trained_models": ["logreg"],
        "model": "multinomial logistic regression (topokit.training, model='logreg')",
        "data": "scikit-learn digits and analyses.workload_corpus.generated_data "
                "(make_classification, 10 classes, centralised accuracy about 0.62)",
        "dp": {"epsilon": list(EPSILONS), "delta": DELTA, "per": "round",
               "sensitivity": "clipped", "max_grad_norm": 1.0},
        "targets": {name: list(values) for name, values in TARGETS.items()},
        "fitted_ranges": {"noise_multiplier": [float(z.min()), float(z.max())],
                          "target_closeness": [float(closeness.min()),
                                               float(closeness.max())]},
        "ceilings": {"logreg": ceilings["logreg"]},
        "ceilings_note": "accuracy of ceiling_probe (no noise, exact averaging) on digits",
        "corpus_runs": int(len(rows)),
        "networks": sorted(rows["network"].unique()),
        "note": "predicts rounds to the workload's target within T = 200 rounds at its "
                "noise multiplier and target closeness; inf: not reached within T",
    }
    return model, provenance


def figure(scores: pd.DataFrame):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, level in zip(axes, ("epsilon_run", "target"), strict=True):
        by = scores.groupby(level=["data", level]).median()
        for column, style in (("workload", "o-"), ("workload_linear_noise", "s--"),
                              ("default_at_epsilon", "^:"), ("trial_ceiling", "k-")):
            for data, marker_fill in (("digits", "full"), ("generated", "none")):
                if data not in by.index.get_level_values("data"):
                    continue
                part = by.loc[data][column]
                ax.plot(part.index, part.to_numpy(), style, fillstyle=marker_fill,
                        label=f"{column} ({data})")
        ax.set_xlabel("epsilon per round" if level == "epsilon_run" else "target accuracy")
        if level == "epsilon_run":
            ax.set_xscale("log")
    axes[0].set_ylabel("median leave-network-out Spearman")
    axes[1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return fig


def main(quick: bool) -> None:
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    rows = load_rows(quick)
    variant, tried = choose(rows)
    scores = judge(rows, variant)
    ceilings = (rows.drop_duplicates("data").set_index("data")["ceiling"].to_dict())
    by_data = scores.groupby(level="data").median().round(3)
    pd.set_option("display.width", 120)
    print("candidates on digits (median leave-network-out Spearman):")
    print(tried.round(3).to_string())
    print(f"chosen: {variant.features}, noise_scale {variant.scale}")
    print("median leave-network-out Spearman per data set:")
    print(by_data.to_string())
    print("by epsilon:")
    print(scores.groupby(level=["data", "epsilon_run"]).median().round(3).to_string())
    print("by target:")
    print(scores.groupby(level=["data", "target"]).median().round(3).to_string())
    stem = "workload_predictor_quick" if quick else "workload_predictor"
    figure(scores).savefig(out_path(f"{stem}.png"), dpi=120)
    model, provenance = fit_shipped(rows, variant, {"logreg": ceilings.get("digits")})
    command = "python -m analyses.workload_predictor" + (" --quick" if quick else "")
    summary = {"command": command,
               "topokit_version": __version__, "date": date.today().isoformat(),
               "machine": machine(), "features": list(FEATURE_SETS[variant.features]),
               "noise_scale": variant.scale,
               "candidates_on_digits": [{"features": name, "noise_scale": scale, **row}
                                        for (name, scale), row in
                                        tried.round(4).to_dict(orient="index").items()],
               "median_spearman": scores.median().round(4).to_dict(),
               "median_spearman_by_data": by_data.to_dict(orient="index"),
               "leave_network_out_spearman_median": float(scores["workload"].median())}
    write_json(f"{stem}.json", summary)
    if not quick:
        provenance["leave_network_out_spearman_median"] = summary[
            "leave_network_out_spearman_median"]
        model.save(SHIPPED, provenance)
        print(f"wrote {SHIPPED}")


if __name__ == "__main__":
    run_quick(main)
