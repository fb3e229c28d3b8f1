"""May ``optimize`` return a schedule?  The shipped predictor's times for the field's
time-varying topologies, corrected on a corpus of their runs and checked on held-out
networks.

The shipped predictors were fitted on static topologies; a schedule is predicted from its
features over its rounds (``topokit.design.features.features_of_schedule``), an
extrapolation.  Before ``optimize`` may return a schedule instead of its static design,
the predictions must call the faster of the two on networks they were not fitted on.

Corpus (fit): ``analyses/field_benchmark.py``'s settings on networks it does not use --
SIoT seeds 0 (co-location links of 50 m) and 1 (the generator's defaults), the networks
the shipped predictors were fitted on; Davis' southern women (32, a real social graph);
Marfoq's GEANT underlay (40 silos) -- at skewness 0 and 0.8, epsilon 0.5 and 4 per round,
targets 0.85 and 0.92, 2 trials: ``optimize``'s design, NDLF, DLFDP and the time-varying
peers (one-peer exponential, Base-(k+1) and Epidemic Learning at the design's degree),
trained by ``topokit.validate`` with paired seeds.

Correction: for each time-varying kind, the median over the corpus settings of

    log(measured rounds / predicted rounds) of the kind  -  the same of the design

(medians over trials; a run that never reached the target, or a prediction of never or
beyond the horizon, counts T + 1 rounds, and a run that did neither within the horizon
is left out: it says nothing of scale): how much more the predictor over- or
under-states a schedule's rounds than its own design's, so that multiplying a schedule's
predicted time by exp(correction) puts it on the design's footing.

Check (held out): on the field benchmark's runs (``analyses/out/field_benchmark.parquet``:
hidden SIoT seeds 500-502, karate, Florentine, Gaia, AWS North America; run
``python -m analyses.field_benchmark`` first), which of the design and the schedules the
predictions call fastest per setting, before and after the correction, and the measured
time of what they call over the design's
(``analyses.field_benchmark.schedule_calls``).  ``optimize`` may consider schedules
only if what is called is never more than 2 % slower than the design.

Run (from the repository root): ``python -m analyses.schedule_corpus`` (about 25 min on
one core; the runs are kept in analyses/out/field_benchmark_parts/ under the field
benchmark's keys, so an interrupted call resumes).  Writes
analyses/out/schedule_corpus.{json,parquet,png} (the parquet: every corpus run;
``--saved`` fits and checks on it again without training).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
import pandas as pd

from analyses._common import OUT, out_path, write_json
from analyses.field_benchmark import (
    LEAD,
    ROUNDS,
    SLOWER_AT_MOST,
    TIME_VARYING,
    FieldNetwork,
    Options,
    Setting,
    run_setting,
    schedule_call_summary,
    schedule_calls,
    times,
)
from analyses.workload_goals import GoalNetwork
from topokit import __version__

CORPUS = (FieldNetwork("siot", GoalNetwork(24, 0, 50.0).name, GoalNetwork(24, 0, 50.0)),
          FieldNetwork("siot", GoalNetwork(24, 1).name, GoalNetwork(24, 1)),
          FieldNetwork("social", "davis"),
          FieldNetwork("underlay", "geant"))
PEERS = ("ndlf", "one-peer-exponential", "base", "epidemic")
SKEWNESS = (0.0, 0.8)
EPSILONS = (0.5, 4.0)
TARGETS = (0.85, 0.92)
TRIALS = 2
BY = ["family", "network", "skewness", "epsilon_round", "target"]
HELD_OUT = "field_benchmark.parquet"


def corpus_runs(networks=CORPUS, trials: int = TRIALS) -> pd.DataFrame:
    """Every corpus setting's runs (kept under the field benchmark's keys)."""
    options = Options(trials, 0, PEERS, 0)
    frames = []
    settings = [Setting(net, k, eps, target) for net in networks for k in SKEWNESS
                for eps in EPSILONS for target in TARGETS]
    for i, setting in enumerate(settings, 1):
        frames.append(run_setting(setting, options)[0])
        print(f"[{i}/{len(settings)}] {setting.network.name} K={setting.skewness:g} "
              f"eps={setting.epsilon:g} target={setting.target:g}", flush=True)
    return pd.concat(frames, ignore_index=True)


def log_excess(runs: pd.DataFrame, by: list[str] = BY) -> pd.DataFrame:
    """Per setting and time-varying kind: log(measured / predicted rounds) of the kind less
    the design's (medians over trials; never reached = T + 1 rounds).

    Examples
    --------
    The design takes twice the rounds predicted, the schedule half (once, and never
    reached, 201 rounds, against 402 predicted): the schedule is over-predicted 4x more.

    >>> runs = pd.DataFrame({"network": "a", "kind": ["optimize", "epidemic", "epidemic"],
    ...                      "measured_rounds": [20.0, 30.0, None],
    ...                      "predicted_global_iterate": [10.0, 60.0, 402.0]})
    >>> round(float(log_excess(runs, by=["network"])["log_excess"].iloc[0]), 6)  # ln(1/4)
    -1.386294
    """
    never = ROUNDS + 1.0
    rounds = runs["measured_rounds"].astype(float).fillna(never)
    # A prediction of never (inf) or past the horizon is T + 1 rounds, as a run is.
    predicted = runs["predicted_global_iterate"].astype(float).clip(upper=never)
    # A run that never reached what was predicted never to be reached says nothing of scale.
    informative = (rounds < never) | (predicted < never)
    medians = (runs.assign(log_ratio=np.log(rounds / predicted))[informative]
               .groupby([*by, "kind"], sort=False)["log_ratio"].median().reset_index())
    design = medians[medians["kind"] == LEAD][[*by, "log_ratio"]].rename(
        columns={"log_ratio": "design"})
    varying = medians[medians["kind"].isin(TIME_VARYING)].merge(design, on=by)
    return varying.assign(log_excess=varying["log_ratio"] - varying["design"])[
        [*by, "kind", "log_excess"]]


def corrections(excess: pd.DataFrame) -> dict[str, float]:
    """Each time-varying kind's median log excess over the settings."""
    return {kind: float(part["log_excess"].median())
            for kind, part in excess.groupby("kind", sort=True)}


def corrected(runs: pd.DataFrame, correction: dict[str, float]) -> pd.DataFrame:
    """The runs with each time-varying kind's ``pseudo_time`` times exp(its correction)."""
    factor = runs["kind"].map({k: np.exp(c) for k, c in correction.items()}).fillna(1.0)
    return runs.assign(pseudo_time=runs["pseudo_time"].astype(float) * factor)


def held_out_check(field_runs: pd.DataFrame, correction: dict[str, float]) -> dict[str, Any]:
    """What the predictions call on the held-out runs, as predicted and corrected."""
    out = {}
    for label, runs in (("as_predicted", field_runs),
                        ("corrected", corrected(field_runs, correction))):
        calls = schedule_calls(times(runs))
        summary = schedule_call_summary(calls)
        worst = summary.get("called_vs_design_worst")
        summary["never_more_than_2pct_slower"] = bool(worst is not None
                                                      and worst <= SLOWER_AT_MOST)
        out[label] = {"summary": summary, "settings": calls}
    return out


def calls_panel(ax, calls: pd.DataFrame, title: str, **title_options) -> None:
    """One panel: per held-out setting, the measured time over the design's of the measured
    fastest (circles) and of what the predictions call (crosses); lines at 1 and 1.02."""
    ax.scatter(range(len(calls)), calls["fastest_vs_design"], marker="o",
               label="measured fastest / design")
    ax.scatter(range(len(calls)), calls["called_vs_design"], marker="x",
               label="called by the predictions / design")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(SLOWER_AT_MOST, color="grey", lw=0.8, ls="--")
    ax.set_title(title, **title_options)
    ax.set_xlabel("held-out setting")


def figure(check: dict[str, Any]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, (label, part) in zip(axes, check.items(), strict=True):
        calls_panel(ax, part["settings"], label.replace("_", " "))
    axes[0].set_ylabel("measured time over the design's")
    axes[0].legend(fontsize=8)
    fig.suptitle("The design or a schedule, as topokit's predictions call it "
                 "(python -m analyses.schedule_corpus)", fontsize=9)
    fig.tight_layout()
    return fig


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saved", action="store_true",
                        help="fit and check on the corpus runs saved by the last call "
                             "(analyses/out/schedule_corpus.parquet) instead of training")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    saved = out_path("schedule_corpus.parquet")
    if args.saved:
        runs = pd.read_parquet(saved)
    else:
        runs = corpus_runs()
        runs.to_parquet(saved, index=False)
    excess = log_excess(runs)
    correction = corrections(excess)
    print("\nCorrections (median log excess over the design, corpus settings):",
          {k: round(v, 3) for k, v in correction.items()},
          "as factors:", {k: round(float(np.exp(v)), 3) for k, v in correction.items()})
    held = out_path(HELD_OUT)
    if not held.exists():
        sys.exit(f"no {held}: run python -m analyses.field_benchmark first")
    check = held_out_check(pd.read_parquet(held), correction)
    for label, part in check.items():
        print(f"held out, {label}: {part['summary']}")
    figure(check).savefig(out_path("schedule_corpus.png"), dpi=120)
    write_json("schedule_corpus.json", {
        "command": " ".join(["python -m analyses.schedule_corpus", *sys.argv[1:]]),
        "topokit_version": __version__,
        "corpus": [n.name for n in CORPUS], "peers": list(PEERS), "trials": TRIALS,
        "corrections": correction,
        "correction_factors": {k: float(np.exp(v)) for k, v in correction.items()},
        "log_excess": excess.to_dict(orient="records"),
        "held_out": {label: {"summary": part["summary"],
                             "settings": part["settings"].to_dict(orient="records")}
                     for label, part in check.items()}})


if __name__ == "__main__":
    main()
