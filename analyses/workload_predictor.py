"""Fit and judge the predictor that knows the workload (``load_predictor("workload")``).

On the runs of ``python -m analyses.workload_corpus`` (SIoT networks of 12-24
devices, epsilon 0.25-8 per round, targets far from and near the ceiling, digits
and a generated data set, logistic regression) and of ``python -m
analyses.workload_corpus --models mlp --data digits`` (the MLP on digits), candidate
:class:`topokit.design.TrainingTimePredictor` s are judged leave-network-out: for
every network a candidate is fitted on the other networks' runs and ranks this
one's topologies, per (data, network, skewness, epsilon, target) cell, by the
Spearman correlation of predicted and measured time-to-target (rounds x L;
never-reached runs slowest).  The candidates: the default features plus
``target_closeness`` (target over the centralised ceiling), with or without the
DP ratio phi, and ``varying``: with phi, the spectral gap and the noise
multiplier, and coefficients that vary with the workload (``varying_with``:
bilinear between the corners of the fitted (closeness, noise multiplier) box,
each corner's coefficients >= 0), each with its noise features taken as
log(1 + x / (s m)) for six noise scales s.  The candidate is chosen on the digits
runs alone (of both models where the MLP's corpus is given; by its worst per-epsilon
median) and judged on every data set and model.  The models enter only through their
ceilings: with the MLP's corpus, one predictor for both.

Two ways of ranking are reported:

- ``pooled``: a cell's runs of both trials ranked together.  The two trials
  differ in data split and seed, which shifts every topology's time alike, so
  even the other trial's measured time of each topology (``other_trial``: a
  predictor that knows every topology's time but not the trial's split) does
  not rank them perfectly: that is this way's practical ceiling.
- ``per_trial``: each trial's runs apart, the topologies a user chooses among
  for one split; its ceiling is the Spearman of one trial's times against the
  other's (``trial_ceiling``).

Beside the chosen predictor: ``fixed_coefficients`` (the form shipped before,
one coefficient per feature: default + closeness + phi at s = 0.03) and the
shipped default predictor (fitted at epsilon = 1, target 0.88 on digits) applied
to each run's features at its own epsilon, as ``optimize`` used it before
workloads.

The predictor fitted on every run is written to ``datasets/predictor_workload.json``
with its provenance: the models and data it saw, the range of noise multipliers, target
closeness and trait fitted on (``optimize`` keeps to it), and the ceiling and trait of
each model on digits (topokit's default data).

The models enter through a measured trait (``--trait probe_rounds``, the default): the
rounds each (data, model)'s ceiling probe takes to 90 % of its own ceiling (median of
three seeds, ``analyses.workload_corpus.with_probe_rounds``), a feature of every
candidate and, for ``varying``, a third coordinate of the box the coefficients vary in,
so that the topology's coefficients can differ between a fast and a slow learner.

Run (from the repository root): python -m analyses.workload_predictor [--quick]
[--corpora workload_corpus,workload_corpus_mlp_digits] [--trait probe_rounds|none]
[--out NAME] (after the corpora).  About nine minutes on 2 cores.  Writes
analyses/out/workload_predictor.{json,png} and datasets/predictor_workload.json; with
other corpora or trait analyses/out/workload_predictor_<corpora>_<trait>.{json,png} and
nothing shipped (with --quick: the quick corpus, nothing shipped); with ``--out NAME``
analyses/out/workload_predictor_NAME.{json,png} and the predictor fitted on every run
as analyses/out/predictor_NAME.json (a candidate, not shipped).
"""

from __future__ import annotations

import argparse
import warnings
from datetime import date
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from analyses._common import OUT, machine, out_path, write_json
from analyses.workload_corpus import (
    DELTA,
    EPSILONS,
    ROUNDS,
    TARGETS,
    noise_multiplier,
    with_probe_rounds,
)
from topokit import __version__
from topokit.design.features import FeatureSettings
from topokit.design.time_predictor import (
    DEFAULT_FEATURES,
    SHIPPED_FOR_MODEL,
    TrainingTimePredictor,
    load_predictor,
)
from topokit.validation.stats import censored_spearman

FEATURES = (*DEFAULT_FEATURES, "target_closeness")
#: The candidates: the features, with them the DP ratio phi (DP devices clip their
#: gradients, which slows training even where their noise is small), and with phi, the
#: spectral gap and the noise multiplier, coefficients that vary with the workload
#: (``varying_with``: bilinear between the corners of the fitted (closeness, z) range), so
#: that the ranking of one workload's topologies can change with its budget and target.
FEATURE_SETS = {"default+closeness": FEATURES, "default+closeness+phi": (*FEATURES, "phi"),
                "varying": (*FEATURES, "phi", "spectral_gap", "noise_multiplier")}
VARYING = {"varying": ("target_closeness", "noise_multiplier")}
SCALES = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
CELL = ["data", "model", "network", "skewness", "epsilon_run", "target"]
#: The corpora the shipped predictor is fitted on (stems of analyses/out/*.parquet,
#: :func:`corpus_name`): logistic regression on digits and the generated data, and the MLP
#: on digits: one predictor for both models, told apart by their measured trait
#: (:data:`TRAIT`).  Fitted on the MLP's runs with the ceiling alone as the models'
#: difference, its MLP designs were measured up to 1.22x slower than NDLF
#: (``analyses/workload_goals.py``); with the trait, none is.
CORPORA = ("workload_corpus", "workload_corpus_mlp_digits")
#: A cell's runs of one trial: one data split and seed, the topologies a user chooses among.
TRIAL_CELL = [*CELL, "trial"]
SHIPPED = Path(__file__).resolve().parents[1] / "datasets" / "predictor_workload.json"
#: The measured traits of a model (and data) that ``--trait`` can add: name -> how each
#: run's column is measured (the table with it, and the measurements).
TRAITS = {"probe_rounds": with_probe_rounds}
#: The trait of the shipped predictor (``--trait none``: the models differ by their ceilings
#: only).
TRAIT = "probe_rounds"


def load_rows(quick: bool, corpora: tuple[str, ...] = CORPORA) -> pd.DataFrame:
    """The runs of the corpora, below their ceiling, with ``rounds`` (inf: never reached)."""
    names = ["workload_corpus_quick"] if quick else list(corpora)
    missing = [name for name in names if not out_path(f"{name}.parquet").exists()]
    if missing:
        raise SystemExit(f"no corpus {out_path(missing[0] + '.parquet')}: run python -m "
                         "analyses.workload_corpus with its models and data first")
    rows = pd.concat([pd.read_parquet(out_path(f"{name}.parquet")) for name in names],
                     ignore_index=True)
    rows = rows[rows["target_closeness"] < 1.0].reset_index(drop=True)
    return rows.assign(rounds=rows["measured_rounds"].fillna(np.inf))


class Variant(NamedTuple):
    """A candidate predictor: its feature set (a key of :data:`FEATURE_SETS`) and noise
    scale (None: the noise features as they are), and a measured trait of the model (a key
    of :data:`TRAITS`) among its features and, where the set varies, the coordinates."""

    features: str
    scale: float | None
    trait: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (*FEATURE_SETS[self.features], *((self.trait,) if self.trait else ()))

    @property
    def varying(self) -> tuple[str, ...]:
        varying = VARYING.get(self.features, ())
        return (*varying, self.trait) if varying and self.trait else varying

    def unfitted(self) -> TrainingTimePredictor:
        return TrainingTimePredictor(features=self.names, horizon=ROUNDS,
                                     noise_scale=self.scale, varying_with=self.varying)

    def matrix(self, rows: pd.DataFrame) -> np.ndarray:
        return rows[list(self.names)].to_numpy(dtype=np.float64)


def held_out(rows: pd.DataFrame, variant: Variant) -> np.ndarray:
    """Every run's predicted rounds by the predictor fitted without its network."""
    predicted = np.empty(len(rows))
    for network in rows["network"].unique():
        mine = (rows["network"] == network).to_numpy()
        model = variant.unfitted().fit(variant.matrix(rows[~mine]), rows["rounds"][~mine])
        predicted[mine] = model.predict(variant.matrix(rows[mine]))
    return predicted


def shipped_default(rows: pd.DataFrame) -> np.ndarray:
    """The rounds of every run by the predictor shipped for its model ("default" for logistic
    regression, "mlp" for the MLP), from its features at the run's epsilon."""
    predicted = np.empty(len(rows))
    for name, part in rows.groupby("model"):
        model = load_predictor(SHIPPED_FOR_MODEL.get(name, "default"))
        predicted[(rows["model"] == name).to_numpy()] = model.predict(
            part[list(model.features)].to_numpy(dtype=np.float64))
    return predicted


def cell_spearman(rows: pd.DataFrame, predicted: np.ndarray, cell=CELL) -> pd.Series:
    """Spearman of predicted and measured time-to-target in every cell (both trials' runs
    pooled; ``cell=TRIAL_CELL``: each trial's apart)."""
    frame = rows.assign(p=predicted * rows["local_iterate"],
                        m=rows["rounds"] * rows["local_iterate"])
    return frame.groupby(cell).apply(
        lambda g: censored_spearman(g["p"].to_numpy(), g["m"].to_numpy()), include_groups=False)


def trial_ceiling(rows: pd.DataFrame) -> pd.Series:
    """Per cell: Spearman of trial 0's measured times against trial 1's, same topologies."""
    frame = rows.assign(m=rows["rounds"] * rows["local_iterate"])
    wide = frame.pivot_table(index=[*CELL, "topology"], columns="trial", values="m",
                             aggfunc="first")
    return wide.groupby(level=CELL).apply(
        lambda g: censored_spearman(g.iloc[:, 0].to_numpy(), g.iloc[:, 1].to_numpy()))


def other_trial(rows: pd.DataFrame) -> np.ndarray:
    """Each run "predicted" by the measured time of the same topology's other trial: what a
    predictor knowing every topology's time exactly, but not the trial's own data split
    and seed, would rank; the pooled cells' practical ceiling."""
    # Each topology has one run per trial: reversing its runs gives each the other's rounds.
    return rows.groupby([*CELL, "topology"])["rounds"].transform(
        lambda runs: runs.to_numpy()[::-1]).to_numpy()


def choose(rows: pd.DataFrame, trait: str | None = None) -> tuple[Variant, pd.DataFrame]:
    """The variant whose worst epsilon ranks best on the digits runs, and every variant's
    scores there: the median leave-network-out Spearman at each epsilon, its lowest
    (``worst_epsilon``, the criterion: a design is made at one budget) and overall median."""
    digits = rows[rows["data"] == "digits"].reset_index(drop=True)
    scores = {}
    for name in FEATURE_SETS:
        for scale in SCALES:
            variant = Variant(name, scale, trait)
            cells = cell_spearman(digits, held_out(digits, variant))
            by_epsilon = cells.groupby(level="epsilon_run").median()
            scores[name, scale] = {**{f"eps {e:g}": v for e, v in by_epsilon.items()},
                               "worst_epsilon": by_epsilon.min(), "median": cells.median()}
    table = pd.DataFrame(scores).T
    return Variant(*table["worst_epsilon"].idxmax(), trait), table


#: What the chosen predictor is compared with: the last shipped fit's form (one coefficient
#: per feature; without a trait, also with ``--trait``), and the default predictor applied
#: at each epsilon.
FIXED = Variant("default+closeness+phi", 0.03)


def judge(rows: pd.DataFrame, variant: Variant) -> dict[str, pd.DataFrame]:
    """Every cell's Spearman for each predictor with its ceiling, two ways: ``pooled``
    (both trials' runs of a cell ranked together; ceiling: the other trial's measured time)
    and ``per_trial`` (each trial's runs apart; ceiling: Spearman of the two trials)."""
    predicted = {"workload": held_out(rows, variant),
                 "fixed_coefficients": held_out(rows, FIXED),
                 "default_at_epsilon": shipped_default(rows)}
    pooled = {name: cell_spearman(rows, p) for name, p in predicted.items()}
    per_trial = {name: cell_spearman(rows, p, TRIAL_CELL) for name, p in predicted.items()}
    pooled["other_trial"] = cell_spearman(rows, other_trial(rows))
    ceiling = trial_ceiling(rows)
    per_trial = pd.DataFrame(per_trial)
    per_trial["trial_ceiling"] = ceiling.reindex(per_trial.index.droplevel("trial")).to_numpy()
    return {"pooled": pd.DataFrame(pooled), "per_trial": per_trial}


#: How the provenance describes each model.
MODEL_TEXT = {"logreg": "multinomial logistic regression (topokit.training, model='logreg')",
              "mlp": "MLP of one hidden layer (topokit.training, model='mlp')"}


def fit_shipped(rows: pd.DataFrame, variant: Variant, measured: dict | None = None):
    """The predictor fitted on every run, at the default workload's settings, and its
    provenance: the models fitted on and each one's ceiling on digits (topokit's data), and
    with a trait each one's value on digits (``measured``: (data, model) -> (value, per
    seed))."""
    model = variant.unfitted().fit(variant.matrix(rows), rows["rounds"])
    z = rows["noise_multiplier"]
    closeness = rows["target_closeness"]
    ceilings = (rows[rows["data"] == "digits"].drop_duplicates("model")
                .set_index("model")["ceiling"].astype(float).to_dict())
    models = sorted(rows["model"].unique())
    n_train = int(round(0.75 * 1797))
    model.set_params(settings=FeatureSettings(noise_multiplier=noise_multiplier(1.0),
                                              n_samples=n_train),
                     target_closeness=0.88 / ceilings["logreg"])
    traits = {}
    if variant.trait:
        values = rows[variant.trait]
        digits = {m: measured[d, m] for d, m in measured if d == "digits"}
        model.set_params(**{variant.trait: digits["logreg"][0]})
        traits = {variant.trait: {m: value for m, (value, _) in digits.items()},
                  f"{variant.trait}_note": "median over seeds 0-2 of the rounds ceiling_probe "
                  "takes to 90 % of its own ceiling on digits (per seed: "
                  + "; ".join(f"{d}/{m} {seeds}" for (d, m), (_, seeds) in measured.items())
                  + ")"}
    provenance = {
        "script": "analyses/workload_predictor.py (runs: analyses/workload_corpus.py)",
        # One model: optimize's default weights follow it (default_mixing); several: the
        # workload's model says.
        **({"trained_model": models[0]} if len(models) == 1 else {}),
        "trained_models": models,
        "model": "; ".join(MODEL_TEXT[name] for name in models),
        "data": "scikit-learn digits and analyses.workload_corpus.generated_data "
                "(make_classification, 10 classes, centralised accuracy about 0.62)",
        **({"data_by_model": {name: sorted(rows.loc[rows["model"] == name, "data"].unique())
                              for name in models}} if len(models) > 1 else {}),
        "dp": {"epsilon": list(EPSILONS), "delta": DELTA, "per": "round",
               "sensitivity": "clipped", "max_grad_norm": 1.0},
        "targets": {name: list(values) for name, values in TARGETS.items()},
        "fitted_ranges": {"noise_multiplier": [float(z.min()), float(z.max())],
                          "target_closeness": [float(closeness.min()),
                                               float(closeness.max())],
                          **({variant.trait: [float(values.min()), float(values.max())]}
                             if variant.trait else {})},
        "ceilings": ceilings,
        "ceilings_note": "accuracy of ceiling_probe (no noise, exact averaging) on digits",
        **traits,
        "corpus_runs": int(len(rows)),
        "networks": sorted(rows["network"].unique()),
        "note": "predicts rounds to the workload's target within T = 200 rounds at its "
                "noise multiplier and target closeness; inf: not reached within T",
    }
    return model, provenance


CEILINGS = {"pooled": "other_trial", "per_trial": "trial_ceiling"}


def figure(scores: dict[str, pd.DataFrame]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharey=True)
    for row, (way, table) in zip(axes, scores.items(), strict=True):
        for ax, level in zip(row, ("epsilon_run", "target"), strict=True):
            by = table.groupby(level=["data", "model", level]).median()
            sets = by.index.droplevel(level).unique()
            for column, style in (("workload", "o-"), ("fixed_coefficients", "s--"),
                                  ("default_at_epsilon", "^:"), (CEILINGS[way], "k-")):
                for (data, name), fill in zip(sets, ("full", "none", "left", "right"),
                                              strict=False):
                    part = by.loc[(data, name)][column]
                    ax.plot(part.index, part.to_numpy(), style, fillstyle=fill,
                            label=f"{column} ({data}, {name})")
            ax.set_xlabel("epsilon per round" if level == "epsilon_run" else "target accuracy")
            if level == "epsilon_run":
                ax.set_xscale("log")
        row[0].set_ylabel(f"median Spearman, {way.replace('_', ' ')}")
        row[1].legend(fontsize=6, ncol=2)
    fig.suptitle("Leave-network-out Spearman of the workload predictor")
    fig.tight_layout()
    return fig


def report(scores: dict[str, pd.DataFrame]) -> None:
    """Print each way's medians per data set, epsilon and target."""
    pd.set_option("display.width", 120)
    for way, table in scores.items():
        print(f"== {way.replace('_', ' ')} (median leave-network-out Spearman) ==")
        for level in (["data", "model"], ["data", "model", "epsilon_run"],
                      ["data", "model", "target"]):
            print(table.groupby(level=level).median().round(3).to_string())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default=",".join(CORPORA),
                        help="stems of analyses/out/*.parquet to fit on, comma-separated")
    parser.add_argument("--trait", choices=[*sorted(TRAITS), "none"], default=TRAIT,
                        help="a measured trait of the model as a feature and varying coordinate")
    parser.add_argument("--out", help="name the outputs workload_predictor_NAME.{json,png} and "
                                      "write the fitted predictor as predictor_NAME.json")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    quick = args.quick
    OUT.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    corpora = tuple(filter(None, args.corpora.split(",")))
    if args.trait == "none":
        args.trait = None
    rows = load_rows(quick, corpora)
    measured = None
    if args.trait:
        rows, measured = TRAITS[args.trait](rows)
        print(f"{args.trait}: " + ", ".join(f"{d}/{m} {value:g} (seeds {seeds})"
                                            for (d, m), (value, seeds) in measured.items()))
    variant, tried = choose(rows, args.trait)
    scores = judge(rows, variant)
    pd.set_option("display.width", 120)
    print("candidates on digits (median leave-network-out Spearman, pooled):")
    print(tried.round(3).to_string())
    print(f"chosen: {variant.features}, noise_scale {variant.scale}, trait {variant.trait}")
    report(scores)
    shipping = not quick and corpora == CORPORA and args.trait == TRAIT and not args.out
    stem = "workload_predictor_quick" if quick else "workload_predictor" + (
        "" if shipping else "_" + "+".join(name.removeprefix("workload_corpus_")
                                           for name in corpora if name != "workload_corpus"))
    if args.out:
        stem = f"workload_predictor_{args.out}"
    elif not shipping and not quick:
        stem = f"{stem}_{args.trait or 'no_trait'}"
    figure(scores).savefig(out_path(f"{stem}.png"), dpi=120)
    model, provenance = fit_shipped(rows, variant, measured)
    command = "python -m analyses.workload_predictor" + (
        " --quick" if quick else f" --corpora {args.corpora}") + (
        f" --trait {args.trait}" if args.trait else "") + (
        f" --out {args.out}" if args.out else "")
    medians = {way: float(table["workload"].median()) for way, table in scores.items()}
    summary = {"command": command,
               "topokit_version": __version__, "date": date.today().isoformat(),
               "machine": machine(), "features": list(variant.names),
               "varying_with": list(variant.varying),
               **({"trait": variant.trait, variant.trait: {
                   f"{d}/{m}": {"median": value, "per_seed": seeds}
                   for (d, m), (value, seeds) in measured.items()}} if variant.trait else {}),
               "noise_scale": variant.scale,
               "candidates_on_digits": [{"features": name, "noise_scale": scale, **row}
                                        for (name, scale), row in
                                        tried.round(4).to_dict(orient="index").items()],
               **{f"median_spearman_{way}": table.median().round(4).to_dict()
                  for way, table in scores.items()},
               **{f"median_spearman_{way}_by_data_and_model":
                  {f"{data}/{name}": row for (data, name), row in
                   table.groupby(level=["data", "model"]).median().round(4)
                   .to_dict(orient="index").items()}
                  for way, table in scores.items()},
               "leave_network_out_spearman_median": medians}
    write_json(f"{stem}.json", summary)
    provenance["leave_network_out_spearman_median"] = medians
    if shipping:
        model.save(SHIPPED, provenance)
        print(f"wrote {SHIPPED}")
    elif args.out:
        print(f"wrote {model.save(out_path(f'predictor_{args.out}.json'), provenance)}")


if __name__ == "__main__":
    main()
