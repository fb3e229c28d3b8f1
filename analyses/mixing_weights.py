"""Do fastest-mixing weights train faster?  Measured time-to-target, paired.

For each network and skewness, the same links and DP devices are trained with
Lazy-Metropolis weights and with Boyd, Diaconis and Xiao's fastest-mixing
weights (:func:`topokit.fastest_mixing_topology`, which may drop links its
optimum leaves unused, shortening L): the social graph (NDLF) and
``optimize``'s design.  Every pair trains with the same seeds (same partition,
initial model and minibatches), so the ratio time(fastest) / time(Lazy-
Metropolis) is paired per trial.  Plain (non-lazy) Metropolis-Hastings weights
on the same links are the simple alternative a user would write, so fastest /
Metropolis-Hastings is reported too.  Reported: the median ratio per setting with
a bootstrap 95 % interval over trials, and the geometric mean over settings,
for the measured time to 88 % (runs that never reach it count as T + 1 rounds)
and for the rounds alone (what the weights change before L does).

The networks are SIoT networks generated with seeds 300-303 (never used to
fit the default predictor, seeds 0-2, nor in the design benchmark, 100-103 and
200-203), 16 and 24 devices; logistic regression on scikit-learn's digits.

Writes analyses/out/mixing_weights{,_quick}.{json,png,parquet}.  Run:
``python -m analyses.mixing_weights`` (``--quick``: 2 networks, 2 trials).
"""

from __future__ import annotations

import argparse
import warnings
import zlib

import numpy as np
import pandas as pd

import topokit
from analyses._common import machine, out_path, write_json
from analyses.design_benchmark import BOOTSTRAP_SEED, ROUNDS, TARGET, TRAIN
from topokit._io import atomic_write_bytes
from topokit.design.baselines import ndlf
from topokit.network.siot import siot
from topokit.training import load_digits, partition_class_counts
from topokit.validation import trial_seed
from topokit.validation.compare import paired_ratios, ratio_summary
from topokit.validation.corpus import MIXINGS, weighted_topology

SIZES = (16, 24)
SEEDS = (300, 301, 302, 303)
SKEWNESS = (0.0, 0.8)
TRIALS = 5


def topologies(net: topokit.Network, counts, seed: int) -> dict[str, topokit.Topology]:
    """Lazy-Metropolis, Metropolis-Hastings and fastest-mixing versions of NDLF and of
    optimize's design."""
    designed = topokit.optimize(net, class_counts=counts, seed=seed).topology
    pairs = {"ndlf": ndlf(net), "optimize": designed}
    return {f"{name}/{weighting}": weighted_topology(plain, net, weighting, seed)
            for name, plain in pairs.items() for weighting in MIXINGS}


def trial0_counts(net: topokit.Network, skewness: float, seed: int):
    """The class counts of validate's trial 0 (optimize designs for the data it trains on)."""
    with warnings.catch_warnings():  # training warns about its own partition
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        return partition_class_counts(load_digits()[1], net.n_devices, skewness,
                                      trial_seed(seed, 0), nodes=net.nodes)


def run_setting(size: int, net_seed: int, skewness: float, trials: int) -> pd.DataFrame:
    net = siot(size, seed=net_seed)
    seed = zlib.crc32(f"mixing-{size}-{net_seed}".encode()) % 2**31
    counts = trial0_counts(net, skewness, seed)
    chosen = topologies(net, counts, seed)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        frame = topokit.validate(net, chosen, targets=(TARGET,), trials=trials, seed=seed,
                                 partition=skewness, audit_rounds=0, **TRAIN).frame
    rounds = np.minimum(frame["measured_rounds"].fillna(ROUNDS + 1), ROUNDS + 1)
    return frame.assign(network=f"siot{size}-s{net_seed}", skewness=skewness,
                        rounds=rounds, time=rounds * frame["local_iterate"],
                        design=frame["topology"].str.split("/").str[0],
                        weights=frame["topology"].str.split("/").str[1])[
        ["network", "skewness", "design", "weights", "trial", "rounds", "time",
         "local_iterate", "spectral_gap", "n_links"]]


#: (numerator, denominator) weights of the reported ratios.
COMPARISONS = (("fastest", "lazy-metropolis"), ("fastest", "metropolis"),
               ("metropolis", "lazy-metropolis"))


def paired(runs: pd.DataFrame, value: str) -> pd.DataFrame:
    """Per (network, skewness, design) and comparison: median over trials of the ratio."""
    keys = ["network", "skewness", "design"]
    rows = paired_ratios(runs.rename(columns={"weights": "method"}), COMPARISONS, by=keys,
                         value=value, seed=BOOTSTRAP_SEED, stream=lambda top, bottom: top)
    return rows.assign(value=value).assign(
        comparison=lambda frame: frame["top"] + "/" + frame["bottom"])[
        [*keys, "value", "comparison", "ratio", "ci_low", "ci_high"]]


def plot(ratios: pd.DataFrame, path) -> None:
    import matplotlib.pyplot as plt

    from topokit.plotting._style import save_figure

    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for axis, value in zip(axes, ("time", "rounds"), strict=True):
        part = ratios[(ratios["value"] == value)
                      & (ratios["comparison"] == "fastest/lazy-metropolis")].reset_index(drop=True)
        for design, marker in (("ndlf", "o"), ("optimize", "s")):
            rows = part[part["design"] == design]
            axis.errorbar(rows.index, rows["ratio"],
                          yerr=[rows["ratio"] - rows["ci_low"], rows["ci_high"] - rows["ratio"]],
                          fmt=marker, label=design, capsize=2)
        axis.axhline(1.0, color="grey", lw=0.8)
        axis.set_title(f"{value} to {TARGET:.0%}: fastest-mixing / Lazy-Metropolis")
        axis.set_xlabel("setting (network x skewness)")
        axis.set_yscale("log")
    axes[0].set_ylabel("paired median ratio (95 % bootstrap CI)")
    axes[0].legend()
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 networks, 2 trials")
    args = parser.parse_args()
    sizes, seeds = ((16,), (300, 301)) if args.quick else (SIZES, SEEDS)
    trials = 2 if args.quick else TRIALS
    runs = pd.concat([run_setting(size, seed, skewness, trials)
                      for size in sizes for seed in seeds for skewness in SKEWNESS],
                     ignore_index=True)
    ratios = pd.concat([paired(runs, "time"), paired(runs, "rounds")], ignore_index=True)
    name = "mixing_weights_quick" if args.quick else "mixing_weights"
    atomic_write_bytes(out_path(f"{name}.parquet"), runs.to_parquet(index=False))
    summary = {}
    for (value, design, comparison), group in ratios.groupby(["value", "design", "comparison"]):
        entry = summary[f"{design} {value} {comparison}"] = ratio_summary(group)
        print(f"{design:9s} {value:6s} {comparison:27s}: geometric-mean ratio "
              f"{entry['geometric_mean_ratio']:.3f} over {entry['settings']} settings; CI below "
              f"1 in {entry['ci_below_1']}, above 1 in {entry['ci_above_1']}")
    write_json(f"{name}.json", {"command": f"python -m analyses.mixing_weights"
                                f"{' --quick' if args.quick else ''}",
                                "machine": machine(), "summary": summary,
                                "ratios": ratios.to_dict("records")})
    plot(ratios, out_path(f"{name}.png"))


if __name__ == "__main__":
    main()
