"""Analysis: how much predicted gain ``optimize`` should need before it leaves the social graph.

The design issue's goal: ``optimize`` is never measurably slower than NDLF (the social
graph as it is, at most 2 % on the paired median over trials).  In the design benchmark
some settings miss it, nearly all with IID data, where the predictor credits ``optimize``'s
design with a gain of a few per cent that training does not show.  The remedy tested here:
keep NDLF (with the design's mixing weights) unless the design is predicted at least
``margin`` times faster than it (``topokit.optimize``'s ``ndlf_margin``), where NDLF so
weighted is predicted no slower than any reference design (the result must never be
predicted worse than NDLF, DLFDP, ERG or AutoTag).

No training is run.  The benchmark trains NDLF and ``optimize``'s design with the same seed
in every trial, so where the rule keeps NDLF, ``optimize``'s measured time *is* NDLF's in
that trial; the predicted gain is what ``optimize`` itself saw (its
``stats["ndlf_margin"]["predicted_gain"]``, saved in the benchmark's JSON).  The margin is
chosen on one benchmark run (``--tune``, networks of seeds 100-103) and judged on another
whose networks it never saw (``--test``, seeds 200-203): the fewest settings more than 2 %
slower than NDLF, ties to the smaller margin.

    python -m analyses.ndlf_margin    # reads analyses/out/design_benchmark{,_s200}.{json,parquet}
    python -m analyses.ndlf_margin --arm optimize-lazy-metropolis   # mixing="lazy-metropolis"

``--arm`` judges one ``optimize`` arm of the benchmark: ``optimize`` (its default weights
for the model's predictor: fastest-mixing for logistic regression's, the paper's for the
MLP's), ``optimize-fastest``, ``optimize-metropolis`` or ``optimize-lazy-metropolis``.  The
margin compares the searched design and NDLF both with the arm's weights, so where it keeps
NDLF the result is the benchmark's ``ndlf-fastest``, ``ndlf-metropolis`` or ``ndlf`` arm (for
the weighted ones, the same topology: optimize weights NDLF as the benchmark does, and keeps
the weights only when predicted no slower).  The benchmark runs every arm with margin 1.0,
which already keeps NDLF where it is predicted faster; larger margins are simulated here.
``--tune design_benchmark_mlp --test design_benchmark_s200_mlp`` judges the MLP's runs.
Writes analyses/out/ndlf_margin[_ARM][_TUNE].json and .png (the arm and the tuning run
named when they are not the defaults).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np
import pandas as pd

from analyses._common import out_path, write_json
from analyses.design_benchmark import ROUNDS, SETTING, TARGET, method_times, paired_ratios
from topokit.errors import InvalidInputError
from topokit.validation.compare import time_to_target

#: Margins tried on the tuning run.
MARGINS = np.round(np.arange(1.00, 1.151, 0.01), 2)
#: A setting misses the goal when its paired median ratio to NDLF exceeds this.
SLOWER = 1.02
#: Skewness from which data count as skewed (the issue's 1.5x goal).
SKEWED = 0.4


#: Each optimize arm of the benchmark, and the NDLF arm with the same mixing weights: what
#: ``optimize`` gives where the margin keeps NDLF.
FALLBACKS = {"optimize": "ndlf-fastest", "optimize-metropolis": "ndlf-metropolis",
             "optimize-lazy-metropolis": "ndlf", "optimize-fastest": "ndlf-fastest"}
#: The benchmark's NDLF arm of each weighting: what ``optimize`` gives where the margin keeps
#: NDLF with those weights (``stats["ndlf_margin"]["ndlf_weights"]``; the arm's default
#: weighting can depend on its predictor, as ``optimize``'s with ``predictor="mlp"``).
NDLF_ARMS = {"fastest": "ndlf-fastest", "metropolis": "ndlf-metropolis",
             "lazy-metropolis": "ndlf"}


def predicted_gains(benchmark: dict[str, Any], arm: str = "optimize") -> pd.DataFrame:
    """Per (network, skewness, model): NDLF's predicted time (with the arm's weights) over
    the searched design's, as ``optimize`` saw it, for the entries of ``arm``."""
    rows = [{"network": entry["network"], "skewness": float(entry["skewness"]), "model": model,
             "gain": _gain({name: _time(t) for name, t in entry["start_times"].items()},
                           _time(entry["predicted_time"]), entry["ndlf_margin"]),
             "fallback": NDLF_ARMS.get(entry["ndlf_margin"].get("ndlf_weights"),
                                       FALLBACKS[arm])}
            for entry in benchmark["optimize"] if entry["method"] == arm
            # runs before per-model designs: one design for every model
            for model in ([entry["model"]] if "model" in entry else benchmark["models"])]
    return pd.DataFrame(rows)


def _time(value: float | None) -> float:
    """A predicted time of the benchmark's JSON: ``null`` (never reaches the target) is inf."""
    return np.inf if value is None else float(value)


def _gain(start_times: dict[str, float], predicted_time: float,
          decision: dict[str, Any]) -> float:
    """The recorded gain; inf (never kept) where NDLF is no start or, with the arm's weights,
    predicted slower than a reference design.

    ``optimize`` keeps NDLF only where it is predicted no slower than every reference design
    (NDLF, DLFDP, ERG, AutoTag): its result is never predicted worse than any of them.
    ``predicted_time`` is the result's: NDLF's where it was kept already.
    """
    gain = decision["predicted_gain"]
    if gain is None:
        return np.inf
    ndlf = predicted_time if decision["kept_ndlf"] else gain * predicted_time
    if ndlf > min(start_times.values()) * (1 + 1e-12):
        return np.inf
    return gain


def with_margin(times: pd.DataFrame, gains: pd.DataFrame, margin: float,
                arm: str = "optimize") -> pd.DataFrame:
    """The benchmark's times with ``arm`` replaced by its NDLF arm wherever its gain < margin.

    The NDLF arm is that of the weights ``optimize`` gave NDLF (column ``fallback`` of
    ``gains``; :data:`FALLBACKS` where absent).

    The result calls the arm ``optimize`` (and its NDLF arm ``ndlf``), so that
    :func:`judged` compares the two.
    """
    keyed = times.merge(gains, on=["network", "skewness", "model"], how="left")
    keep_ndlf = keyed["gain"].fillna(np.inf) < margin
    fallback = (keyed["fallback"].fillna(FALLBACKS[arm]) if "fallback" in keyed
                else pd.Series(FALLBACKS[arm], index=keyed.index))
    indexed = times.set_index([*SETTING, "trial", "method"])[["time", "censored"]]
    chosen = keyed[(keyed["method"] == arm) & keep_ndlf]
    replaced = indexed.loc[pd.MultiIndex.from_frame(
        chosen[[*SETTING, "trial"]].assign(method=fallback[chosen.index]))].to_numpy()
    out = times.copy()
    out.loc[chosen.index, ["time", "censored"]] = replaced
    out = out[out["method"].isin([arm, "ndlf"])]
    return out.replace({"method": {arm: "optimize"}})


def judged(times: pd.DataFrame) -> dict[str, Any]:
    """``optimize`` against NDLF: settings slower, measurably slower, and the speed-ups."""
    ratios = paired_ratios(times[times["method"].isin(["optimize", "ndlf"])])
    mine = ratios[ratios["method"] == "optimize"]
    skewed = mine["skewness"] >= SKEWED

    def speedup(part: pd.DataFrame) -> float:
        return float(np.exp(-np.log(part["ratio"]).mean()))

    return {"settings": int(len(mine)), "slower": int((mine["ratio"] > SLOWER).sum()),
            "slower_iid": int(((mine["ratio"] > SLOWER) & ~skewed).sum()),
            "ci_above_1": int((mine["ci_low"] > 1).sum()),
            "worst_ratio": float(mine["ratio"].max()),
            "speedup_skewed": speedup(mine[skewed]), "speedup_iid": speedup(mine[~skewed])}


def load(name: str, arm: str = "optimize") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The benchmark run ``name``: per-trial times at the target and ``arm``'s gains."""
    runs = pd.read_parquet(out_path(f"{name}.parquet"))
    benchmark = json.loads(out_path(f"{name}.json").read_text())
    gains = predicted_gains(benchmark, arm)
    if gains.empty:
        raise InvalidInputError(f"--arm {arm}: the benchmark run {name!r} has no such arm; "
                                "run python -m analyses.design_benchmark with it first")
    return method_times(time_to_target(runs, TARGET, horizon=ROUNDS)), gains


def choose_margin(table: pd.DataFrame) -> float:
    """The fewest settings slower than NDLF, ties to the smaller margin."""
    best = table.sort_values(["slower", "margin"]).iloc[0]
    return float(best["margin"])


def _figure(test_times: pd.DataFrame, gains: pd.DataFrame, margin: float):
    from topokit.plotting._style import new_panels

    figure, axes = new_panels("curve")
    axis = axes[0, 0]
    ratios = paired_ratios(test_times[test_times["method"].isin(["optimize", "ndlf"])])
    mine = ratios[ratios["method"] == "optimize"].merge(gains, on=["network", "skewness",
                                                                   "model"])
    for skewness, marker in zip((0.0, 0.4, 0.8), ("o", "s", "^"), strict=True):
        part = mine[np.isclose(mine["skewness"], skewness)]
        axis.errorbar(part["gain"], part["ratio"],
                      yerr=[part["ratio"] - part["ci_low"], part["ci_high"] - part["ratio"]],
                      fmt=marker, mfc="none", label=f"skewness {skewness}")
    axis.axvline(margin, color="k", ls=":", label=f"margin {margin:.2f} (tuned elsewhere)")
    axis.axhline(SLOWER, color="grey", ls="--", lw=0.8)
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("predicted gain of optimize's design over NDLF")
    axis.set_ylabel("measured time / NDLF's (median over trials, 95 % CI)")
    axis.set_title("held-out networks: settings left of the line keep NDLF")
    axis.legend()
    return figure


def output_stem(arm: str, tune: str) -> str:
    """``ndlf_margin[_ARM][_TUNE]``: the arm and the tuning run when they are not the defaults.

    >>> output_stem("optimize", "design_benchmark"), output_stem("optimize", "design_benchmark_mlp")
    ('ndlf_margin', 'ndlf_margin_design_benchmark_mlp')
    """
    return ("ndlf_margin" + ("" if arm == "optimize" else f"_{arm}")
            + ("" if tune == "design_benchmark" else f"_{tune}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", default="design_benchmark",
                        help="benchmark run the margin is chosen on")
    parser.add_argument("--test", default="design_benchmark_s200",
                        help="benchmark run (other networks) it is judged on")
    parser.add_argument("--arm", choices=tuple(FALLBACKS), default="optimize",
                        help="the optimize arm (mixing) the margin is judged for")
    args = parser.parse_args()
    try:
        tune_times, tune_gains = load(args.tune, args.arm)
        test_times, test_gains = load(args.test, args.arm)
    except InvalidInputError as error:
        parser.error(str(error))
    table = pd.DataFrame([{"margin": float(m), **judged(with_margin(tune_times, tune_gains, m,
                                                                   args.arm))}
                          for m in MARGINS])
    margin = choose_margin(table)
    before = judged(with_margin(test_times, test_gains, 0.0, args.arm))
    after = judged(with_margin(test_times, test_gains, margin, args.arm))
    print(table.to_string(index=False, float_format="%.3f"))
    print(f"{args.arm}: chosen on {args.tune}: margin {margin:.2f}")
    for label, result in (("without the margin", before), ("with it", after)):
        print(f"{args.test}, {label}: {result['slower']} of {result['settings']} settings more "
              f"than 2 % slower than NDLF ({result['slower_iid']} IID, {result['ci_above_1']} "
              f"with the CI above 1, worst {result['worst_ratio']:.3f}); speed-up "
              f"{result['speedup_skewed']:.3f}x skewed, {result['speedup_iid']:.3f}x IID")
    stem = output_stem(args.arm, args.tune)
    write_json(f"{stem}.json", {"tune": args.tune, "test": args.test, "arm": args.arm,
                                "margin": margin, "tuning": table.to_dict("records"),
                                "test_without": before, "test_with": after})
    from topokit.plotting._style import save_figure

    save_figure(_figure(with_margin(test_times, test_gains, margin, args.arm), test_gains,
                        margin), out_path(f"{stem}.png"))
    print(f"wrote {out_path(stem + '.json')} and {out_path(stem + '.png')}")


if __name__ == "__main__":
    main()
