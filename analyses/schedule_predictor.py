"""May a predictor that has seen schedules train choose one?  The workload predictor refitted
on the workload corpus's static runs and on schedule runs of the same networks, judged on the
field benchmark's held-out runs.

The shipped workload predictor was fitted on static topologies only, and its predictions for
the field's time-varying peers are an extrapolation: on the field benchmark's networks they
called a schedule 1.32x slower than the design (``analyses/schedule_corpus.py``, where a
per-kind correction made the calls worse).  This analysis asks whether fitting on schedules'
runs too fixes that.

Corpus (fit): ``analyses/workload_corpus.py``'s logistic-regression runs (its networks, SIoT
of 12, 16 and 24 devices, seeds 0-2; its cells: skewness 0 and 0.8, digits and the
generated data, epsilon 0.25-8 per round, two trials, T = 200 rounds; run it first) and, on
the same networks and cells, the field's time-varying peers: Ying et al.'s one-peer
exponential graph, Takezawa et al.'s Base-(k+1) graph and de Vos et al.'s epidemic learning
with k peers a round (``topokit.design.schedules.field_schedules``), at two degrees k: the
mean degree of AutoTag's design and of NDLF (``matched_degree``), so that the schedules span
sparse and dense rounds.  Every schedule run has the features of its rounds
(``topokit.design.features.features_of_schedule``) at its own epsilon and class counts.

Fits, both in the shipped predictor's form (``analyses.workload_predictor.Variant("varying",
3.0)``: the default features with target closeness, phi, the spectral gap and the noise
multiplier, coefficients varying with the workload) less the model's trait (probe rounds),
which takes one value among logistic-regression runs:

- ``static``: the workload corpus's static runs alone (the shipped predictor's runs less the
  MLP's, so that the two fits differ only by the schedules);
- ``joint``: those and the schedule runs.

Check (held out): the field benchmark's runs (``analyses/out/field_benchmark.parquet``: SIoT
seeds 500-502, karate, Florentine, Gaia, AWS North America; none in the corpus; run ``python
-m analyses.field_benchmark`` first), every run re-predicted by each fit from its recorded
features at its setting's workload (target closeness, noise multiplier, probe rounds), and
``shipped``: the recorded ``pseudo_time`` of the shipped predictor; and, where ``python -m
analyses.schedule_corpus`` has run, its corpus's runs on networks the fit did not see
(Davis' southern women, Marfoq's GEANT, SIoT seed 0 with co-location links of 50 m), a
second held-out set in the same format.  For each: per setting,
which of ``optimize``'s design and the schedules the predictions call fastest and the
measured time of that over the design's (``analyses.field_benchmark.schedule_calls``), and
the median over networks of the per-network median Spearman of predicted against measured
time, over the static topologies and over all (``spearman_cells``).  A fit may let
``optimize`` choose a schedule only if what it calls is never more than 2 % slower than the
design, without ranking the static topologies worse; the calls are also made with margins
(:data:`MARGINS`: a schedule called only if predicted that many times faster), since one
round more or less decides a near tie that no prediction resolves.

Run (from the repository root): ``python -m analyses.schedule_predictor [--n-jobs 2]
[--saved]`` after ``python -m analyses.workload_corpus`` and ``python -m
analyses.field_benchmark``.  The schedule runs (2,160 of them: 9 networks x 2 skewness x 2
data sets x 6 budgets x 2 trials x 5 schedules, every one with DP devices) are kept in
analyses/out/workload_schedules_parts/ under run keys, so an interrupted call resumes and a
changed input trains again; ``--saved`` fits and checks on
analyses/out/workload_corpus_schedules.parquet without training.  Training took 79 min on
2 cores (the workload corpus ran beside it for its first 23 min), the schedules' features
6 min more; ``--saved`` about 20 s.  Writes analyses/out/schedule_predictor.{json,png}
(the same inputs give the same bytes; the date, machine and seconds go apart, to
schedule_predictor_timings.json) and the joint fit as analyses/out/predictor_schedules.json
(a candidate, not shipped).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from analyses._common import OUT, machine, out_path, write_json
from analyses.field_benchmark import (
    schedule_call_summary,
    schedule_calls,
    spearman_cells,
    spearman_summary,
    times,
)
from analyses.predictor_corpus import corpus_seed
from analyses.schedule_corpus import calls_panel
from analyses.workload_corpus import (
    DATA,
    SKEWNESS,
    TRIALS,
    Cell,
    measure_ceilings,
    network_specs,
    noise_multiplier,
    run_cell,
    workload_rows,
)
from analyses.workload_predictor import Variant, load_rows
from topokit import __version__
from topokit._io import read_json_file
from topokit._jobs import run_resumable
from topokit.design.time_predictor import _shipped_path
from topokit.validation.corpus import CorpusEntry, NetworkSpec

#: The shipped workload predictor's form (``datasets/predictor_workload.json``) less the
#: model's trait, which takes one value among logistic-regression runs (its coefficients
#: cannot vary with it).
SHIPPED_FORM = Variant("varying", 3.0)
MODEL = "logreg"
PARTS = "workload_schedules_parts"
SCHEDULES = "workload_corpus_schedules"
#: The held-out runs: name -> their table under analyses/out/ (``schedule_corpus``: optional).
HELD_OUT = {"field": "field_benchmark.parquet", "schedule_corpus": "schedule_corpus.parquet"}


def schedule_entries(spec: NetworkSpec) -> dict[str, CorpusEntry]:
    """The field's schedules over the network at the mean degree of AutoTag's design and of
    NDLF: name (``"base:2"``, ...) -> entry of kind ``"base"`` ... with their own weights.

    A schedule the network cannot carry (a link it lacks) is left out.

    Examples
    --------
    >>> sorted(schedule_entries(NetworkSpec(12, 0)))
    ['base:3', 'base:7', 'epidemic:3', 'epidemic:7', 'one-peer-exponential']
    """
    from topokit.design import autotag
    from topokit.design.baselines import ndlf
    from topokit.design.schedules import field_schedules, matched_degree

    net = spec.build()
    degrees = sorted({matched_degree(net, autotag(net).topology),
                      matched_degree(net, ndlf(net))})
    entries = {}
    for degree in degrees:
        built, _ = field_schedules(net, degree, seed=corpus_seed(spec))
        entries.update({name: CorpusEntry(name.split(":")[0], "own", schedule)
                        for name, schedule in built.items()})
    return entries


def schedule_runs(n_jobs: int) -> tuple[pd.DataFrame, dict[str, dict[str, CorpusEntry]]]:
    """Every schedule run of the corpus's cells, and the schedules of every network."""
    specs = network_specs(quick=False)
    built = {spec.name: schedule_entries(spec) for spec in specs}
    cells = [(Cell(spec, k, d, MODEL), built[spec.name])
             for spec in specs for k in SKEWNESS for d in DATA]
    job = run_resumable(cells, partial(_run, trials=TRIALS), n_jobs=n_jobs)
    return job.tables["part"], built


def _run(task, trials: int):
    cell, entries = task
    return run_cell(cell, entries, trials, parts=PARTS)


def fit_rows(schedule_rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The rows of each fit: ``static`` and ``joint``."""
    static = load_rows(False, ("workload_corpus",))
    static = static[static["model"] == MODEL]
    schedules = schedule_rows[schedule_rows["target_closeness"] < 1.0]
    joint = pd.concat([static, schedules.assign(
        rounds=schedules["measured_rounds"].fillna(np.inf))], ignore_index=True)
    return {"static": static, "joint": joint}


def fitted(rows: pd.DataFrame):
    """:data:`SHIPPED_FORM` fitted on ``rows``."""
    return SHIPPED_FORM.unfitted().fit(SHIPPED_FORM.matrix(rows), rows["rounds"])


def shipped_workload() -> tuple[float, float]:
    """The ceiling and probe rounds of logistic regression on digits (the held-out runs'
    model and data) as the shipped workload predictor records them."""
    provenance = read_json_file(_shipped_path("workload"), "predictor")["provenance"]
    return provenance["ceilings"][MODEL], provenance["probe_rounds"][MODEL]


def with_workload(field: pd.DataFrame, ceiling: float, probe_rounds: float) -> pd.DataFrame:
    """The field runs with their workload's features: target over the ceiling (digits,
    logistic regression), the noise multiplier of their budget per round, probe rounds."""
    return field.assign(target_closeness=field["target"] / ceiling,
                        noise_multiplier=field["epsilon_round"].map(noise_multiplier),
                        probe_rounds=probe_rounds)


def predicted_times(field: pd.DataFrame, model) -> pd.Series:
    """Every run's predicted time by ``model`` (from its own features' columns): rounds x
    the run's (mean) round time L."""
    rounds = model.predict(field[list(model.features)].to_numpy(dtype=np.float64))
    return pd.Series(rounds * field["local_iterate"].to_numpy(float), index=field.index)


#: The margins the calls are also made with: a schedule is called only if predicted that
#: many times faster than the design (``consider_schedules(margin=...)``).
MARGINS = (1.0, 1.05, 1.1, 1.2, 1.5)


def judged(field: pd.DataFrame) -> dict[str, Any]:
    """The calls (at every margin of :data:`MARGINS`; ``calls``: at 1) and the Spearman
    summaries of the runs' ``pseudo_time``."""
    table = times(field)
    calls = schedule_calls(table)
    return {"calls": schedule_call_summary(calls), "call_settings": calls,
            "calls_by_margin": {f"{margin:g}": schedule_call_summary(
                schedule_calls(table, margin=margin)) for margin in MARGINS},
            "spearman_static": spearman_summary(spearman_cells(field)),
            "spearman_all": spearman_summary(spearman_cells(field, schedules=True))}


def check(field: pd.DataFrame, models: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """:func:`judged` of the recorded (``shipped``) and of each fit's predictions."""
    out = {"shipped": judged(field)}
    for name, model in models.items():
        out[name] = judged(field.assign(pseudo_time=predicted_times(field, model)))
    return out


def figure(results: dict[str, dict[str, dict[str, Any]]]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fits = list(next(iter(results.values())))
    fig, axes = plt.subplots(len(results), len(fits), figsize=(4 * len(fits),
                             3.5 * len(results)), sharey=True, squeeze=False)
    for row, (held, by_fit) in zip(axes, results.items(), strict=True):
        for ax, (name, result) in zip(row, by_fit.items(), strict=True):
            worst = result["calls"]["called_vs_design_worst"]
            calls_panel(ax, result["call_settings"], f"{held}, {name}: worst call {worst:.3g}x",
                        fontsize=9)
        row[0].set_ylabel("measured time over the design's")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("The design or a schedule, as each predictor calls it "
                 "(python -m analyses.schedule_predictor)", fontsize=9)
    fig.tight_layout()
    return fig


def summary_line(name: str, result: dict[str, Any]) -> str:
    calls = result["calls"]
    static = result["spearman_static"]["median_of_network_medians"]["topokit"]
    everything = result["spearman_all"]["median_of_network_medians"]["topokit"]
    return (f"{name:8s} calls a schedule {calls['called_a_schedule']:2d} of "
            f"{calls['settings']} (measured fastest: {calls['measured_a_schedule_fastest']}), "
            f"called the fastest {calls['called_the_fastest']}, called/design geometric "
            f"{calls['called_vs_design_geometric']:.3f} worst "
            f"{calls['called_vs_design_worst']:.3f}; Spearman static {static:.3f}, "
            f"with schedules {everything:.3f}\n" + "".join(
                f"         margin {margin}: calls {part['called_a_schedule']:2d}, geometric "
                f"{part['called_vs_design_geometric']:.3f}, worst "
                f"{part['called_vs_design_worst']:.3f}\n"
                for margin, part in result["calls_by_margin"].items()))


def _plain_result(result: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in result.items() if k != "call_settings"},
            "call_settings": result["call_settings"].to_dict(orient="records")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--saved", action="store_true",
                        help="fit and check on the saved schedule rows without training")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    saved = out_path(f"{SCHEDULES}.parquet")
    if args.saved:
        schedule_rows = pd.read_parquet(saved)
    else:
        runs, built = schedule_runs(args.n_jobs)
        schedule_rows = workload_rows(runs, measure_ceilings(DATA, (MODEL,)), built)
        schedule_rows.to_parquet(saved, index=False)
    field = out_path(HELD_OUT["field"])
    if not field.exists():
        sys.exit(f"no {field}: run python -m analyses.field_benchmark first")
    rows = fit_rows(schedule_rows)
    models = {name: fitted(part) for name, part in rows.items()}
    workload = shipped_workload()
    results = {}
    for held, name in HELD_OUT.items():
        if not out_path(name).exists():
            continue
        runs = pd.read_parquet(out_path(name))
        unseen = runs[~runs["network"].isin(rows["joint"]["network"].unique())]
        results[held] = check(with_workload(unseen, *workload), models)
        print(f"== held out: {held} ({', '.join(unseen['network'].unique())}) ==")
        for fit, result in results[held].items():
            print(summary_line(fit, result))
    figure(results).savefig(out_path("schedule_predictor.png"), dpi=120)
    models["joint"].save(out_path("predictor_schedules.json"))
    command = " ".join(["python -m analyses.schedule_predictor", *sys.argv[1:]])
    write_json("schedule_predictor.json", {
        "command": command, "topokit_version": __version__, "form": SHIPPED_FORM._asdict(),
        "fitted_rows": {name: int(len(part)) for name, part in rows.items()},
        "schedule_kinds": sorted(schedule_rows["kind"].unique()),
        "results": {held: {fit: _plain_result(result) for fit, result in by_fit.items()}
                    for held, by_fit in results.items()}})
    seconds = time.perf_counter() - started
    write_json("schedule_predictor_timings.json", {
        "command": command, "date": date.today().isoformat(), "machine": machine(),
        "seconds": round(seconds)})
    print(f"{seconds:.0f} s")


if __name__ == "__main__":
    main()
