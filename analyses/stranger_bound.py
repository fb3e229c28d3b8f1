"""Designs under a bound on what strangers learn, measured in training.

For each network, skewness and stranger bound b, every design below is trained
with the noise multiplier z* that makes it meet the bound under the audit's
gossip model (the least common z of its DP devices under which
:func:`topokit.privacy_audit` finds every stranger pair at mu <= b for one
private value gossiped over ``AUDIT_ROUNDS`` rounds; never less than the base
z_0 = 3.73 of epsilon = 1 per round).  That is the issue's model; it does not
bound what the D-SGD training run itself reveals (``audit_model="dsgd"``):

- ``optimize``: ``topokit.optimize(net, max_stranger_mu=b)`` (links, DP devices
  and z* chosen together), every DP device at z*;
- ``optimize-per-device``: the same design with each DP device at the level
  ``optimize`` chose for it (``stats["stranger_bound"]["noise_multipliers"]``:
  z*, or less where the bound allows and the predicted time falls).  When no
  device was lowered it is the ``optimize`` run itself (the same configuration
  trains bit for bit the same), copied rather than trained again;
- ``everyone-dp``: the social graph with every device DP;
- ``dlfdp``: every pair with a finite delay linked, every device DP.

DeepPrivacy's AutoTag design and NDLF are trained at z_0 for reference: they
leave stranger pairs exposed (mu = inf), so no noise makes them meet any bound.
Reported: measured time to 88 % (never-reached runs count as T + 1 rounds), the
paired ratio optimize / everyone-dp and optimize / dlfdp per setting with a
bootstrap 95 % interval over trials, optimize-per-device / optimize (the
per-device levels against the common z* at the same bound), and each design's
z* and audit.

Networks: SIoT networks generated with seeds 300-301 (never used to fit the
default predictor), 12 and 16 devices; logistic regression on scikit-learn's
digits.  Writes analyses/out/stranger_bound{,_quick}.{json,png,parquet}.
Run: ``python -m analyses.stranger_bound`` (``--quick``: one network, 2 trials).
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
from topokit.audit.stranger_bound import StrangerBound, required_noise
from topokit.design.baselines import dlfdp, ndlf
from topokit.design.features import DEFAULT_NOISE_MULTIPLIER
from topokit.network.siot import siot
from topokit.training import DPConfig, load_digits, partition_class_counts
from topokit.validation import trial_seed
from topokit.validation.compare import paired_ratios, ratio_summary

SIZES = (12, 16)
SEEDS = (300, 301)
SKEWNESS = (0.0, 0.8)
BOUNDS = (0.25, 0.1)
AUDIT_ROUNDS = 50
TRIALS = 5


def designs(net: topokit.Network, counts, bound: float, seed: int) -> dict[str, tuple]:
    """name -> (Topology, noise, exposed stranger pairs, DP devices below z*) of every design
    of the setting; the noise is z* or, for optimize-per-device, a mapping device -> z."""
    base = float(DEFAULT_NOISE_MULTIPLIER)
    limit = StrangerBound(bound, AUDIT_ROUNDS, base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optimize warns when nothing reaches the target
        chosen = topokit.optimize(net, class_counts=counts, seed=seed, max_stranger_mu=bound,
                                  audit_rounds=AUDIT_ROUNDS)
    info = chosen.stats["stranger_bound"]
    result = {"optimize": (chosen.topology, info["noise_multiplier"], 0, 0),
              "optimize-per-device": (chosen.topology, info["noise_multipliers"], 0,
                                      info["devices_lowered"])}
    for name, topology in (("everyone-dp", topokit.Topology(ndlf(net).edges, net.nodes)),
                           ("dlfdp", dlfdp(net))):
        need = required_noise(net, topology, limit)
        result[name] = (topology, need.noise_multiplier, need.exposed_stranger_pairs, 0)
    for name, topology in (("autotag", topokit.autotag(net).topology), ("ndlf", ndlf(net))):
        result[name] = (topology, base, required_noise(net, topology, limit)
                        .exposed_stranger_pairs, 0)
    return result


def trained(net: topokit.Network, name: str, topology, noise, skewness: float, trials: int,
            seed: int) -> pd.DataFrame:
    """validate's runs of one design, every DP device adding ``noise`` (z or device -> z)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        return topokit.validate(net, {name: topology}, targets=(TARGET,), trials=trials,
                                seed=seed, partition=skewness, audit_rounds=0,
                                dp=DPConfig(noise_multiplier=noise), **TRAIN).frame


def run_setting(size: int, net_seed: int, skewness: float, bound: float,
                trials: int) -> pd.DataFrame:
    net = siot(size, seed=net_seed)
    seed = zlib.crc32(f"stranger-{size}-{net_seed}".encode()) % 2**31
    with warnings.catch_warnings():  # training warns about its own partition
        warnings.filterwarnings("ignore", message="skewness .* needs more rows")
        counts = partition_class_counts(load_digits()[1], net.n_devices, skewness,
                                        trial_seed(seed, 0), nodes=net.nodes)
    frames, built = {}, designs(net, counts, bound, seed)
    for name, (topology, noise, exposed, lowered) in built.items():
        if name == "optimize-per-device" and lowered == 0:  # the optimize run, bit for bit
            frame = frames["optimize"].assign(topology=name)
        else:
            frame = trained(net, name, topology, noise, skewness, trials, seed)
        # A per-device design's column holds its z*; its levels are in the design's stats.
        z = built["optimize"][1] if isinstance(noise, dict) else noise
        frames[name] = frame.assign(noise_multiplier=z, exposed_stranger_pairs=exposed,
                                    devices_lowered=lowered)
    frame = pd.concat(frames.values(), ignore_index=True)
    rounds = np.minimum(frame["measured_rounds"].fillna(ROUNDS + 1), ROUNDS + 1)
    return frame.assign(network=f"siot{size}-s{net_seed}", skewness=skewness, bound=bound,
                        rounds=rounds, time=rounds * frame["local_iterate"])[
        ["network", "skewness", "bound", "topology", "trial", "noise_multiplier",
         "devices_lowered", "exposed_stranger_pairs", "n_links", "n_dp_devices",
         "local_iterate", "rounds", "time", "final_accuracy"]]


def paired(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting: median over trials of optimize's time over each other design's, and
    of optimize-per-device's over optimize's."""
    keys = ["network", "skewness", "bound"]
    comparisons = [("optimize", other) for other in ("everyone-dp", "dlfdp", "autotag", "ndlf")]
    comparisons.append(("optimize-per-device", "optimize"))
    rows = paired_ratios(runs.rename(columns={"topology": "method"}), comparisons, by=keys,
                         value="time", seed=BOOTSTRAP_SEED, stream=lambda top, bottom: bottom)
    return rows.rename(columns={"bottom": "other"})[
        [*keys, "top", "other", "ratio", "ci_low", "ci_high"]]


def comparison(top: str, other: str) -> str:
    """The summary's name of a comparison (the other design's alone against optimize)."""
    return other if top == "optimize" else f"{top} / {other}"


def plot(ratios: pd.DataFrame, path) -> None:
    import matplotlib.pyplot as plt

    from topokit.plotting._style import save_figure

    figure, axis = plt.subplots(figsize=(8, 4))
    arms = (("optimize", "everyone-dp", "o"), ("optimize", "dlfdp", "s"),
            ("optimize-per-device", "optimize", "^"))
    for offset, (top, other, marker) in enumerate(arms):
        rows = ratios[(ratios["top"] == top) & (ratios["other"] == other)].reset_index(drop=True)
        x = rows.index + 0.15 * offset
        axis.errorbar(x, rows["ratio"], yerr=[rows["ratio"] - rows["ci_low"],
                                              rows["ci_high"] - rows["ratio"]],
                      fmt=marker, capsize=2, label=f"{top} / {other}")
    axis.axhline(1.0, color="grey", lw=0.8)
    axis.set_yscale("log")
    axis.set_xlabel("setting (network x skewness x bound)")
    axis.set_ylabel(f"time to {TARGET:.0%}, paired median (95 % CI)")
    axis.set_title("same stranger bound, each design at the noise it needs")
    axis.legend()
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one network, 2 trials")
    args = parser.parse_args()
    sizes, seeds = ((12,), (300,)) if args.quick else (SIZES, SEEDS)
    trials = 2 if args.quick else TRIALS
    runs = pd.concat([run_setting(size, seed, skewness, bound, trials)
                      for size in sizes for seed in seeds for skewness in SKEWNESS
                      for bound in BOUNDS], ignore_index=True)
    ratios = paired(runs)
    name = "stranger_bound_quick" if args.quick else "stranger_bound"
    atomic_write_bytes(out_path(f"{name}.parquet"), runs.to_parquet(index=False))
    summary = {}
    for (top, other), group in ratios.groupby(["top", "other"]):
        entry = summary[comparison(top, other)] = ratio_summary(group)
        print(f"{top} / {other:11s}: geometric-mean time ratio "
              f"{entry['geometric_mean_ratio']:.3f} over {entry['settings']} settings; CI below "
              f"1 in {entry['ci_below_1']}, above 1 in {entry['ci_above_1']}")
    noise = runs.groupby(["bound", "topology"])["noise_multiplier"].median()
    exposed = runs.groupby("topology")["exposed_stranger_pairs"].max()
    lowered = runs[runs["topology"] == "optimize-per-device"].groupby(
        ["network", "skewness", "bound"])["devices_lowered"].first()
    print(f"optimize's DP devices below z*: {int((lowered > 0).sum())} of {len(lowered)} "
          f"settings lowered any (at most {int(lowered.max())} devices)")
    print("median z* by bound and design:\n" + noise.to_string())
    print("most exposed stranger pairs by design:\n" + exposed.to_string())
    write_json(f"{name}.json", {
        "command": f"python -m analyses.stranger_bound{' --quick' if args.quick else ''}",
        "machine": machine(), "summary": summary, "ratios": ratios.to_dict("records"),
        "median_noise_multiplier": {f"{b} {t}": v for (b, t), v in noise.items()},
        "max_exposed_stranger_pairs": exposed.to_dict(),
        "devices_lowered": {" ".join(map(str, key)): int(v) for key, v in lowered.items()}})
    plot(ratios, out_path(f"{name}.png"))


if __name__ == "__main__":
    main()
