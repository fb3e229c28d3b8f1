"""Field benchmark: ``optimize``'s design against the field's peers, measured on networks no
predictor saw, and four predictors ranking the same runs.

Networks, three classes (none in any corpus a shipped predictor was fitted on):

- ``siot``: hidden SIoT-like networks, ``topokit.network.siot.siot(24, seed=S)`` with seeds
  500-503 (the corpora and the other benchmarks used 0-2, 100-103, 200-203, 300-304),
  alternately with co-location links of 50 m and at the generator's defaults
  (``--siot N`` takes the first N; default 3);
- ``social``: real social graphs read by ``topokit.network.siot.from_networkx(graph,
  seed=500)``, which adds positions, device classes (compute times) and LTE-M / Wi-Fi
  delays: Zachary's karate club (34), the Florentine families (15), Davis' southern women
  (32) and Les Misérables (77) from networkx (``--social N``, default 2);
- ``underlay``: Marfoq et al.'s Internet underlays bundled with topokit (``gaia`` 11,
  ``aws_na`` 22, ``geant`` 40, ``exodus`` 79, ``ebone`` 87 silos; ``--underlays N``,
  default 2).  Their social graph is complete (cross-silo: every silo trusts every other),
  so no topology there has a DP device and the privacy level changes no run.

Settings: every network x skewness K = 0 and 0.8 x epsilon 0.5 and 4 per round (delta 1e-5)
x target 0.85 and 0.92 (``analyses/workload_goals.py``'s told-the-truth grid; digits,
logistic regression, T = 200 rounds, ``topokit.Workload(epsilon=..., target=...)``),
3 trials.  Every topology of a setting is trained by ``topokit.validate`` with the same
seed, so trial t of each has the same partition, initial model and minibatches (a paired
comparison).  Topologies:

- ``optimize``: validate's ``"optimize"`` spec (``topokit.optimize`` told the workload,
  for trial 0's class counts);
- the peers: ``ndlf`` (the social graph), ``exponential`` (Ying et al.'s static
  exponential graph), ``one-peer-exponential`` (Ying et al.), ``base`` (Takezawa et al.'s
  Base-(k+1) graph, ``"base:k"``), ``equistatic`` (Song et al.'s static U-EquiStatic,
  ``"equistatic:M"``) and ``epidemic`` (de Vos et al.'s Epidemic Learning,
  ``"epidemic:s"``), the last three at matched degree: k = s = the mean degree of that
  setting's ``optimize`` design (2 |E| / |V|, rounded, at least 1 and at most the
  smallest number of usable peers of a device), and M = max(1, round(k / 2)) ring offsets
  (each gives a device two peers, so it has at most 2M), so they may talk to about as many
  peers a round as the design does.  EquiStatic's offsets are drawn from the setting's
  seed; a draw whose offsets all share a factor with n (the devices would split into
  groups that never mix) is refused by validate: that setting then has no EquiStatic runs,
  its best peer is chosen among the others, and the refusal is printed and recorded
  (``refusals`` in the JSON, column ``equistatic_refused`` of the runs);
- on underlays, Marfoq et al.'s overlays (``topokit.design.overlays``): ``ring``,
  ``mst`` and ``mbst``, the delta-MBST whose cycle time (= L there) is smallest over
  delta = 2 .. n - 1 (the smallest such delta), chosen before training;
- for the rank correlations only, more static topologies: ``dlfdp`` and ``random:R``
  (R random valid connected topologies; ``--random R``, default 4).

Time to the target: the run's measured time (rounds x L; a time-varying peer's rounds
each take their own L, summed); a run that never reaches the target within T counts as
T + 1 rounds (x L, a schedule's mean L) and is counted apart.  Per setting, the **best
peer** is the peer with the smallest median time over the trials (a tie goes to the first
in the order above); ``optimize``'s ratio to it (and to NDLF, and on underlays to the best
overlay, chosen the same way) is the median over trials of the paired ratio of times, with
a seeded bootstrap 95 % interval (``topokit.validation.compare.ratios_to_reference``).

Goals checked: ``optimize`` never more than 2 % slower than the best peer at K = 0, at least
1.3x faster than it at K = 0.8 (the geometric mean over the settings, and each setting's
worst), where a peer wins (time-varying or static) by how much and how often each peer is
the best; on underlays no slower than the best of ring, MST and delta-MBST.  ``optimize``
is also compared with EquiStatic directly (``vs_equistatic``, the same paired ratio; its
geometric mean at K = 0 and 0.8), wherever EquiStatic was built.

Rank correlations, twice: over the static topologies (EquiStatic, the exponential graph
and NDLF are static and count), and over those and the time-varying ones (predicted from
their features over their rounds, ``topokit.design.features.features_of_schedule``; eq.
(15) from the H and phi of their rounds): in each setting,
Spearman's rho of each predictor's predicted time against the measured time over every run
(a topology twice under two names counts once; never reached = slowest), then the median
over the settings of each class.  No predictor was fitted on these networks (topokit's
shipped ones on the corpus's ``siot``-s0..s2 networks), so each per-network rho is
out-of-sample: a leave-network-out Spearman with nothing refitted.  The four predictors,
each as a time (its round count x L, since the measured time is):

- ``topokit``: ``validate``'s ``pseudo_time``, G' x L of the shipped predictor for the
  workload (``topokit.load_predictor("workload")``) for each trial's class counts;
- ``eq15``: DeepPrivacy's eq. (15), the G' of ``topokit.evaluate(net, topology,
  predictor=topokit.load_predictor("paper"))`` times the run's L;
- ``spectral_gap``: L / (1 - max(|lambda_2|, |lambda_n|)) of the mixing matrix W;
- ``effective_neighbours``: L / n_W(gamma), Vogels et al.'s effective number of
  neighbours (NeurIPS 2022) as topokit computes it
  (``topokit.design.features.topology_features``, gamma = 0.99): the stationary variance of
  the random walk x <- W (sqrt(gamma) x + noise) is
  C = sum_k lambda_k^2 / (1 - gamma lambda_k^2) u_k u_k^T over all eigenpairs of W (the
  consensus mode included), and n_W = 1 / ((1 - gamma) mean_i C_ii), their definition
  (mean over workers, walk started after one averaging step).

Run (from the repository root): ``python -m analyses.field_benchmark`` [--siot 3]
[--social 2] [--underlays 2] [--trials 3] [--epsilons 0.5,4] [--targets 0.85,0.92]
[--skewness 0,0.8] [--random 4] [--peers ndlf,exponential,...] [--n-jobs 1] [--seed 0]
[--quick].  The default grid is 7 networks x 8 settings = 56 settings, 15-60 s each on
one core (a 24-device run of 200 rounds takes 0.2-0.7 s, equistatic about 0.4 s, epidemic
1.5-2.6 s, a design a few seconds; 2,148 runs): 28 min (1,663 s) on this machine while
two other benchmarks ran, 51 min (3,032 s) beside a second benchmark and the test suite.

Between the design and the schedules: per setting, which of ``optimize``'s design and the
time-varying peers topokit's predictions call fastest (median ``pseudo_time``) and the
measured median time of that one over the design's (``schedule_calls``; printed, and
``schedule_calls`` / ``schedule_call_settings`` in the JSON): what ``optimize`` would gain
or lose if it returned the schedule its predictor calls faster.  ``--quick``
(``siot24-s500``, ``gaia``, K = 0 / 0.8, epsilon 0.5, target 0.85, 2 trials, peers NDLF
and epidemic, 2 random topologies) about 1 min.

Writes analyses/out/field_benchmark.{json,parquet,png} (``--quick``:
field_benchmark_quick.*): the JSON holds every setting's ratios, best peers and designs,
the goals and the Spearman tables (the same seed gives the same bytes); the wall-clock
seconds go apart, to field_benchmark_timings.json.  Each setting's runs are kept in
analyses/out/field_benchmark_parts/ under a key of everything they depend on (the
network, the setting, the trials and seed, the topologies asked for, the training code,
the shipped predictors and topokit's source): an interrupted call resumes, a changed
input trains again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from datetime import date
from typing import Any, NamedTuple

import networkx as nx
import numpy as np
import pandas as pd

from analyses._common import (
    OUT,
    digest,
    machine,
    network_digest,
    out_path,
    parse_subset,
    ratio_figure,
    source_digest,
    training_digest,
    write_json,
)
from analyses.workload_goals import GoalNetwork
from analyses.workload_unseen import canonical, predictor_files
from topokit import Topology, Workload, __version__, evaluate, load_predictor, validate
from topokit.design.schedules import matched_degree
from topokit.errors import InvalidInputError
from topokit.validation import compare
from topokit.validation.core import PEER_KINDS
from topokit.validation.stats import censored_spearman

FAMILIES = ("siot", "social", "underlay")
#: Hidden SIoT-like networks: seeds no corpus or benchmark used, alternately with co-location
#: links of 50 m and at the generator's defaults.
SIOT = (GoalNetwork(24, 500, 50.0), GoalNetwork(24, 501), GoalNetwork(24, 502, 50.0),
        GoalNetwork(24, 503))
#: Real social graphs of networkx, read as IoT networks with this seed.
SOCIAL = ("karate", "florentine", "davis", "lesmis")
SOCIAL_SEED = 500
UNDERLAYS = ("gaia", "aws_na", "geant", "exodus", "ebone")
DEFAULT_COUNTS = {"siot": 3, "social": 2, "underlay": 2}
SKEWNESS = (0.0, 0.8)
EPSILONS = (0.5, 4.0)
TARGETS = (0.85, 0.92)
TRIALS = 3
ROUNDS = 200
N_RANDOM = 4
#: The peers, in the order a tie between their median times is broken.
PEERS = ("ndlf", "exponential", "one-peer-exponential", "base", "equistatic", "epidemic")
#: The peers whose topology changes every round (validate trains their schedules).
TIME_VARYING = ("one-peer-exponential", "base", "epidemic")
#: The peers at the degree of the setting's design (validate spec "KIND:COUNT",
#: :func:`matched_spec`).
MATCHED = ("base", "equistatic", "epidemic")
#: The matched peers whose construction may refuse a setting (EquiStatic: a draw of offsets
#: that all share a factor with n); each is trained in a validate call of its own, so a
#: refusal leaves the others, and is recorded (column ``PEER_refused``), never dropped silently.
MAY_REFUSE = ("equistatic",)
#: The peers each setting also compares ``optimize`` with directly (column ``vs_PEER``).
COMPARED = ("equistatic",)
#: Marfoq et al.'s overlays, on underlays only.
OVERLAYS = ("ring", "mst", "mbst")
LEAD = "optimize"
SLOWER_AT_MOST = 1.02
SPEEDUP_AT_SKEW = 1.3
SKEWED = 0.8
BOOTSTRAP_SEED = 0
#: The columns that name a setting.
BY = ["family", "network", "skewness", "epsilon_round", "target"]
QUICK = {"siot": 1, "social": 0, "underlay": 1, "trials": 2, "epsilons": (0.5,),
         "targets": (0.85,), "skewness": SKEWNESS, "random": 2,
         "peers": ("ndlf", "epidemic")}
PARTS = "field_benchmark_parts"


# ---------------------------------------------------------------------------------------------
# Networks and settings
# ---------------------------------------------------------------------------------------------


class FieldNetwork(NamedTuple):
    """One network of the benchmark: its class (:data:`FAMILIES`) and how it is built."""

    family: str
    name: str
    siot: GoalNetwork | None = None

    def build(self):
        if self.family == "siot":
            return self.siot.build()
        if self.family == "social":
            from topokit.network.siot import from_networkx

            return from_networkx(social_graph(self.name), seed=SOCIAL_SEED, name=self.name)
        from topokit import load_example

        return load_example(self.name)


def social_graph(name: str) -> nx.Graph:
    """The networkx social graph ``name`` (:data:`SOCIAL`), plain: no attributes."""
    graphs = {"karate": nx.karate_club_graph, "florentine": nx.florentine_families_graph,
              "davis": nx.davis_southern_women_graph, "lesmis": nx.les_miserables_graph}
    return nx.Graph(graphs[name]().edges)


def networks(counts: dict[str, int]) -> list[FieldNetwork]:
    """The first ``counts[family]`` networks of each class."""
    return ([FieldNetwork("siot", spec.name, spec) for spec in SIOT[:counts["siot"]]]
            + [FieldNetwork("social", name) for name in SOCIAL[:counts["social"]]]
            + [FieldNetwork("underlay", name) for name in UNDERLAYS[:counts["underlay"]]])


class Setting(NamedTuple):
    network: FieldNetwork
    skewness: float
    epsilon: float
    target: float

    def workload(self) -> Workload:
        return Workload(epsilon=self.epsilon, target=self.target, rounds=ROUNDS)

    def seed(self, base: int) -> int:
        """validate's seed: one per (network, skewness), so the privacy levels and targets of
        a network share their trials' partitions too."""
        return int(digest(base, self.network.name, self.skewness)[:8], 16)

    def labels(self) -> dict[str, Any]:
        return {"family": self.network.family, "network": self.network.name,
                "skewness": self.skewness, "epsilon_round": self.epsilon,
                "target": self.target}


class Options(NamedTuple):
    """What every setting trains: trials, validate's base seed, peers, random topologies."""

    trials: int
    seed: int
    peers: tuple[str, ...]
    n_random: int
    n_jobs: int = 1


# ---------------------------------------------------------------------------------------------
# Topologies
# ---------------------------------------------------------------------------------------------


def best_mbst(net) -> tuple[int, Topology]:
    """(delta, tree) of the delta-MBST with the smallest cycle time; the smallest delta of a
    tie."""
    from topokit.design.overlays import cycle_time, mbst_overlay

    trees = {delta: mbst_overlay(net, delta) for delta in range(2, net.n_devices)}
    delta = min(trees, key=lambda d: (cycle_time(net, trees[d]), d))
    return delta, trees[delta]


def overlays(net) -> tuple[dict[str, Topology], int]:
    """Marfoq et al.'s ring, MST and best delta-MBST of ``net``, and that delta."""
    from topokit.design.overlays import mst_overlay, ring_overlay

    delta, tree = best_mbst(net)
    return {"ring": ring_overlay(net), "mst": mst_overlay(net), "mbst": tree}, delta


def matched_spec(peer: str, degree: int) -> str:
    """validate's spec of a :data:`MATCHED` peer at the matched degree k: ``base:k``,
    ``epidemic:k``, and ``equistatic:M`` with M = max(1, round(k / 2)) (each offset gives a
    device two peers, so it has at most 2M).

    Examples
    --------
    >>> matched_spec("base", 3), matched_spec("equistatic", 1), matched_spec("equistatic", 4)
    ('base:3', 'equistatic:1', 'equistatic:2')
    """
    if peer == "equistatic":
        return f"equistatic:{max(1, round(degree / 2))}"
    return f"{peer}:{degree}"


def static_specs(setting: Setting, options: Options, net) -> tuple[dict, dict[str, Any]]:
    """validate's specs of the first call (everything whose degree is not matched) and what
    the setting records of them (the delta-MBST's delta)."""
    specs: dict[str, Any] = {LEAD: "optimize"}
    specs.update({peer: peer for peer in options.peers if peer not in MATCHED})
    specs["dlfdp"] = "dlfdp"
    if options.n_random:
        specs["random"] = f"random:{options.n_random}"
    record: dict[str, Any] = {}
    if setting.network.family == "underlay":
        tops, record["mbst_delta"] = overlays(net)
        specs.update(tops)
    return specs, record


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


def setting_key(setting: Setting, options: Options, net) -> str:
    """Everything a setting's runs depend on."""
    return digest(network_digest(net), setting.labels(), options._replace(n_jobs=1)._asdict(),
                  setting.seed(options.seed), setting.workload().to_dict(), ROUNDS,
                  training_digest(), predictor_files(), source_digest(), "field benchmark")


def _parts():
    folder = out_path(PARTS)
    folder.mkdir(exist_ok=True)
    return folder


def run_setting(setting: Setting, options: Options) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, timings) of a setting: saved under its key, trained when not saved."""
    net = setting.network.build()
    key = setting_key(setting, options, net)[:24]
    path, timing_path = _parts() / f"{key}.parquet", _parts() / f"{key}.timings.parquet"
    if path.exists() and timing_path.exists():
        return pd.read_parquet(path), pd.read_parquet(timing_path)
    runs, timings = train_setting(setting, options, net)
    runs.to_parquet(path, index=False)
    timings.to_parquet(timing_path, index=False)
    return runs, timings


def train_setting(setting: Setting, options: Options, net) -> tuple[pd.DataFrame, pd.DataFrame]:
    """validate calls with one seed (so the trials pair up): the design and the peers whose
    degree is not matched, then base:k and epidemic:s at the design's degree, then each
    :data:`MAY_REFUSE` peer alone (``equistatic:M``); a refusal is recorded in the runs'
    column ``PEER_refused`` (validate's message, which names the spec)."""
    seed = setting.seed(options.seed)
    specs, record = static_specs(setting, options, net)
    first = _validate(net, specs, setting, options, seed)
    results = [first]
    record["matched_degree"] = degree = matched_degree(net, first.topologies[LEAD])
    matched = {peer: matched_spec(peer, degree) for peer in MATCHED
               if peer in options.peers and peer not in MAY_REFUSE}
    if matched:
        results.append(_validate(net, matched, setting, options, seed))
    for peer in MAY_REFUSE:
        if peer not in options.peers:
            continue
        try:
            results.append(_validate(net, {peer: matched_spec(peer, degree)}, setting,
                                     options, seed))
        except InvalidInputError as error:
            message = str(error)
            if not message.startswith(f"topology {peer!r}: "):
                raise  # not the peer's construction: a real error
            record[f"{peer}_refused"] = message.split(": ", 1)[1]  # it names the spec
    runs = pd.concat([_with_eq15(net, r) for r in results], ignore_index=True)
    timings = pd.concat([r.timings for r in results], ignore_index=True)
    labels = setting.labels()
    return runs.assign(**labels, **record), timings.assign(**labels)


def _validate(net, specs: dict, setting: Setting, options: Options, seed: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return validate(net, specs, workload=setting.workload(), trials=options.trials,
                        seed=seed, partition=setting.skewness, n_jobs=options.n_jobs)


def _with_eq15(net, result) -> pd.DataFrame:
    """The runs with eq. (15)'s predicted time (``paper_time``: its G' from H and phi, a
    schedule's those of its rounds (:func:`topokit.evaluate`), times the run's L) and a
    digest of each static topology (``topology_key``: two names of one topology share
    it)."""
    paper = load_predictor("paper")
    eq15, keys = {}, {}
    for name, topology in result.topologies.items():
        eq15[name] = evaluate(net, topology, predictor=paper).predicted_global_iterate
        keys[name] = (canonical(topology) if isinstance(topology, Topology)
                      else f"schedule:{name}")
    frame = result.frame
    paper_time = frame["topology"].map(eq15).astype(float) * frame["local_iterate"]
    return frame.assign(paper_time=paper_time, topology_key=frame["topology"].map(keys))


# ---------------------------------------------------------------------------------------------
# Times and ratios (pure: tested on hand-made frames)
# ---------------------------------------------------------------------------------------------


def times(runs: pd.DataFrame, horizon: int = ROUNDS) -> pd.DataFrame:
    """The times table: one row per run, ``method`` its topology, ``time`` its measured
    time (``inf`` when never reached) and ``censored`` (never reached: (T + 1) x L, L a
    schedule's mean round time).

    Examples
    --------
    >>> runs = pd.DataFrame({"topology": ["a", "b"], "measured_rounds": [3.0, None],
    ...                      "measured_time": [6.5, None], "local_iterate": [2.0, 1.0]})
    >>> times(runs, horizon=9)[["method", "time", "censored", "never"]]
      method  time  censored  never
    0      a   6.5       6.5  False
    1      b   inf      10.0   True
    """
    never = runs["measured_rounds"].isna()
    measured = runs["measured_time"].astype(float)
    censored = measured.where(~never, (horizon + 1) * runs["local_iterate"].astype(float))
    return runs.assign(method=runs["topology"], time=measured.where(~never, np.inf),
                       censored=censored, never=never)


def best_of(table: pd.DataFrame, candidates: tuple[str, ...], name: str,
            by: list[str] = BY) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The times table with the runs of each setting's fastest candidate added as ``name``,
    and which that was.

    Fastest: the smallest median ``censored`` time over the trials; a tie goes to the
    first of ``candidates``.  Candidates without runs in a setting are left out.

    Returns
    -------
    (DataFrame, DataFrame)
        The times with the copies, and one row per setting: ``by``, ``best`` and
        ``best_time`` (its median).

    Examples
    --------
    >>> table = pd.DataFrame({"network": "a", "trial": [0, 1, 0, 1, 0, 1],
    ...                       "method": ["p", "p", "q", "q", "r", "r"],
    ...                       "censored": [4.0, 6.0, 5.0, 5.0, 1.0, 1.0]})
    >>> added, chosen = best_of(table, ("p", "q"), "best", by=["network"])
    >>> chosen.to_dict("records")
    [{'network': 'a', 'best': 'p', 'best_time': 5.0}]
    >>> added[added["method"] == "best"]["censored"].tolist()
    [4.0, 6.0]
    """
    medians = (table[table["method"].isin(candidates)]
               .groupby([*by, "method"], sort=False)["censored"].median().reset_index())
    medians["order"] = medians["method"].map({m: i for i, m in enumerate(candidates)})
    chosen = (medians.sort_values([*by, "censored", "order"], kind="stable")
              .drop_duplicates(by).rename(columns={"method": "best", "censored": "best_time"})
              [[*by, "best", "best_time"]].reset_index(drop=True))
    picked = table.merge(chosen[[*by, "best"]], on=by)
    copies = picked[picked["method"] == picked["best"]].drop(columns="best").assign(method=name)
    return pd.concat([table, copies], ignore_index=True), chosen


def lead_ratios(table: pd.DataFrame, reference: str, by: list[str] = BY,
                lead: str = LEAD) -> pd.DataFrame:
    """Per setting: ``lead``'s paired median ratio of censored times to ``reference``'s with
    its bootstrap interval (:func:`topokit.validation.compare.ratios_to_reference`,
    seeded), and its trials never reaching the target."""
    mine = table[table["method"].isin([lead, reference])]
    ratios = compare.ratios_to_reference(mine, reference, by=by, seed=BOOTSTRAP_SEED)
    return ratios[ratios["method"] == lead].drop(columns="method").reset_index(drop=True)


def setting_table(table: pd.DataFrame, by: list[str] = BY,
                  peers: tuple[str, ...] = PEERS) -> pd.DataFrame:
    """One row per setting: NDLF's and ``optimize``'s median times, ``optimize`` / NDLF,
    the best peer and ``optimize`` / best peer (with its interval and never-reached
    trials), where a :data:`COMPARED` peer ran its median time and ``optimize`` / it
    (``equistatic_time``, ``vs_equistatic``), and where overlays ran the best overlay and
    ``optimize`` / best overlay.

    Examples
    --------
    >>> table = pd.DataFrame({"network": "a", "trial": [0, 1] * 3,
    ...                       "method": ["optimize"] * 2 + ["ndlf"] * 2 + ["epidemic"] * 2,
    ...                       "censored": [8.0, 10.0, 10.0, 10.0, 9.0, 8.0]})
    >>> row = setting_table(table, by=["network"]).iloc[0]
    >>> row["best_peer"], bool(row["best_peer_varies"])
    ('epidemic', True)
    >>> round(float(row["vs_best_peer"]), 4), float(row["vs_ndlf"])  # (8/9 + 10/8) / 2, 0.9
    (1.0694, 0.9)
    """
    with_best, chosen = best_of(table, peers, "best-peer", by)
    rows = chosen.rename(columns={"best": "best_peer", "best_time": "best_peer_time"})
    rows["best_peer_varies"] = rows["best_peer"].isin(TIME_VARYING)
    vs_best = lead_ratios(with_best, "best-peer", by)
    vs_ndlf = lead_ratios(table, "ndlf", by)
    rows = (rows.merge(_renamed(vs_ndlf, "ndlf", "optimize_time"), on=by)
            .merge(_renamed(vs_best, "best_peer"), on=by))
    ndlf_time = (table[table["method"] == "ndlf"].groupby(by, sort=False)["censored"]
                 .median().rename("ndlf_time").reset_index())
    rows = rows.merge(ndlf_time, on=by)
    for peer in COMPARED:
        ran = table[table["method"] == peer][by].drop_duplicates()
        if len(ran):
            vs_peer = lead_ratios(table.merge(ran, on=by), peer, by)
            rows = rows.merge(_renamed(vs_peer, peer), on=by, how="left")
            peer_time = (table[table["method"] == peer].groupby(by, sort=False)["censored"]
                         .median().rename(f"{peer}_time").reset_index())
            rows = rows.merge(peer_time, on=by, how="left")
    underlay = table[table["method"].isin(OVERLAYS)]
    if len(underlay):
        settings = underlay[by].drop_duplicates()
        sub = table.merge(settings, on=by)
        with_overlay, best_overlay = best_of(sub, OVERLAYS, "best-overlay", by)
        overlay = best_overlay.rename(columns={"best": "best_overlay",
                                               "best_time": "best_overlay_time"}).merge(
            _renamed(lead_ratios(with_overlay, "best-overlay", by), "best_overlay"), on=by)
        rows = rows.merge(overlay, on=by, how="left")
    return rows


def _renamed(ratios: pd.DataFrame, suffix: str, median: str | None = None) -> pd.DataFrame:
    """A :func:`lead_ratios` table with its columns named for the reference."""
    names = {"ratio": f"vs_{suffix}", "ci_low": f"vs_{suffix}_low",
             "ci_high": f"vs_{suffix}_high", "never_trials": "optimize_never"}
    kept = ratios.drop(columns=["trials"]).rename(columns=names)
    if median is None:
        return kept.drop(columns=["median_time", "optimize_never"])
    return kept.rename(columns={"median_time": median})


def goal_summary(rows: pd.DataFrame) -> dict[str, Any]:
    """The goals over the :func:`setting_table` rows, per class and for all of them.

    Examples
    --------
    >>> rows = pd.DataFrame({"family": "siot", "network": "a", "skewness": [0.0, 0.8],
    ...                      "epsilon_round": 1.0, "target": 0.85,
    ...                      "vs_best_peer": [1.05, 0.5], "best_peer": ["base", "ndlf"],
    ...                      "best_peer_varies": [True, False]})
    >>> summary = goal_summary(rows)["all"]
    >>> summary["slower_than_2pct_at_K0"], summary["geometric_speedup_at_K0.8"]
    (1, 2.0)
    >>> summary["time_varying_wins"][0]["optimize_slower_by"]
    0.05
    """
    out = {family: _goals(rows[rows["family"] == family]) for family in FAMILIES
           if (rows["family"] == family).any()}
    out["all"] = _goals(rows)
    return out


def _wins(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """The settings whose best peer is faster than ``optimize``: which, and by how much."""
    return [{**{k: _plain(row[k]) for k in BY if k in row}, "peer": row["best_peer"],
             "optimize_slower_by": round(float(row["vs_best_peer"]) - 1.0, 6)}
            for _, row in rows[rows["vs_best_peer"] > 1.0].iterrows()]


def _against(rows: pd.DataFrame, peer: str) -> dict[str, Any]:
    """``optimize`` against a :data:`COMPARED` peer over the settings it ran in."""
    column = f"vs_{peer}"
    ran = (rows.dropna(subset=[column]) if column in rows
           else rows.assign(**{column: np.nan}).iloc[:0])
    out: dict[str, Any] = {"settings": int(len(ran)),
                           "best_peer_in": int((rows["best_peer"] == peer).sum()),
                           "optimize_slower_in": int((ran[column] > 1.0).sum())}
    for skew in (0.0, SKEWED):
        part = ran[np.isclose(ran["skewness"], skew)]
        out[f"geometric_ratio_at_K{skew:g}"] = (
            _plain(np.exp(np.log(part[column]).mean())) if len(part) else None)
    return out


def _goals(rows: pd.DataFrame) -> dict[str, Any]:
    even = rows[rows["skewness"] == 0.0]
    skewed = rows[np.isclose(rows["skewness"], SKEWED)]
    speedups = 1.0 / skewed["vs_best_peer"]
    out = {"settings": int(len(rows)),
           "settings_at_K0": int(len(even)),
           "slower_than_2pct_at_K0": int((even["vs_best_peer"] > SLOWER_AT_MOST).sum()),
           "slower_than_2pct": int((rows["vs_best_peer"] > SLOWER_AT_MOST).sum()),
           "worst_ratio_at_K0": _plain(even["vs_best_peer"].max()) if len(even) else None,
           f"geometric_speedup_at_K{SKEWED:g}": (
               _plain(np.exp(np.log(speedups).mean())) if len(skewed) else None),
           f"least_speedup_at_K{SKEWED:g}": _plain(speedups.min()) if len(skewed) else None,
           f"settings_at_least_{SPEEDUP_AT_SKEW:g}x_at_K{SKEWED:g}": int(
               (speedups >= SPEEDUP_AT_SKEW).sum()),
           f"settings_at_K{SKEWED:g}": int(len(skewed)),
           "best_peer_counts": {peer: int(count) for peer, count
                                in rows["best_peer"].value_counts(sort=False).items()},
           "time_varying_wins": _wins(rows[rows["best_peer_varies"]]),
           "static_peer_wins": _wins(rows[~rows["best_peer_varies"].astype(bool)]),
           **{f"optimize_vs_{peer}": _against(rows, peer) for peer in COMPARED}}
    out["met_never_2pct_slower_at_K0"] = bool(out["slower_than_2pct_at_K0"] == 0)
    speed = out[f"geometric_speedup_at_K{SKEWED:g}"]
    out[f"met_{SPEEDUP_AT_SKEW:g}x_at_K{SKEWED:g}"] = bool(speed is not None
                                                          and speed >= SPEEDUP_AT_SKEW)
    if "vs_best_overlay" in rows and rows["vs_best_overlay"].notna().any():
        overlay = rows["vs_best_overlay"].dropna()
        out["overlay_settings"] = int(len(overlay))
        out["slower_than_best_overlay"] = int((overlay > 1.0).sum())
        out["worst_ratio_to_best_overlay"] = _plain(overlay.max())
        out["met_no_worse_than_overlays"] = bool((overlay <= 1.0).all())
    return out


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


# ---------------------------------------------------------------------------------------------
# Rank correlations (pure)
# ---------------------------------------------------------------------------------------------


def _ratio(top: pd.Series, bottom: pd.Series) -> pd.Series:
    """top / bottom with x / 0 = inf (a disconnected topology's gap)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (top.astype(float) / bottom.astype(float)).replace(-np.inf, np.inf)


#: Each predictor's predicted time from a runs table's columns.
PREDICTORS = {
    "topokit": lambda runs: runs["pseudo_time"].astype(float),
    "eq15": lambda runs: runs["paper_time"].astype(float),
    "spectral_gap": lambda runs: _ratio(runs["local_iterate"], runs["spectral_gap"]),
    "effective_neighbours": lambda runs: _ratio(runs["local_iterate"],
                                                runs["effective_neighbours"]),
}


def spearman_cells(runs: pd.DataFrame, by: list[str] = BY, *,
                   schedules: bool = False) -> pd.DataFrame:
    """Per setting: Spearman's rho of each predictor's predicted time (:data:`PREDICTORS`)
    against the measured time, over every run of its static topologies, and of its
    time-varying ones too with ``schedules`` (never reached: slowest; a topology under two
    names once).

    Examples
    --------
    >>> runs = pd.DataFrame({"network": "a", "kind": "custom", "trial": 0,
    ...                      "topology": ["x", "y", "z", "w"], "topology_key": list("xyzw"),
    ...                      "measured_rounds": [1.0, 2.0, 3.0, None],
    ...                      "measured_time": [1.0, 2.0, 3.0, None],
    ...                      "local_iterate": 1.0, "pseudo_time": [1.0, 2.0, 3.0, 4.0],
    ...                      "paper_time": [4.0, 3.0, 2.0, 1.0],
    ...                      "spectral_gap": [0.4, 0.3, 0.2, 0.1],
    ...                      "effective_neighbours": [4.0, 3.0, 2.0, 1.0]})
    >>> cell = spearman_cells(runs, by=["network"]).iloc[0]
    >>> [float(cell[p]) for p in PREDICTORS], int(cell["runs"])
    ([1.0, -1.0, 1.0, 1.0], 4)
    """
    ranked = runs if schedules else runs[~runs["kind"].isin(PEER_KINDS)]
    rows = []
    for key, cell in ranked.groupby(by, sort=False):
        cell = cell.drop_duplicates(["topology_key", "trial"])
        measured = cell["measured_time"].astype(float).fillna(np.inf).to_numpy()
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        row.update({name: censored_spearman(predict(cell).to_numpy(float), measured)
                    for name, predict in PREDICTORS.items()})
        rows.append({**row, "runs": int(len(cell)),
                     "never_reached": int(np.isinf(measured).sum())})
    return pd.DataFrame(rows)


def schedule_calls(table: pd.DataFrame, by: list[str] = BY, *,
                   margin: float = 1.0) -> pd.DataFrame:
    """Per setting: which of ``optimize``'s design and the time-varying peers topokit's
    predictions call fastest (smallest median ``pseudo_time`` over the trials), which was
    measured fastest (smallest median ``censored`` time), and the measured median time of
    each over the design's: what ``optimize`` would gain or lose if it returned the
    schedule its predictor calls faster than its design.  With a ``margin`` the fastest
    predicted schedule is called only if predicted ``margin`` times faster than the design
    (as :func:`topokit.design.consider_schedules` chooses).

    Examples
    --------
    >>> table = pd.DataFrame({"network": "a", "trial": [0, 1] * 3,
    ...                       "method": ["optimize"] * 2 + ["base"] * 2 + ["epidemic"] * 2,
    ...                       "pseudo_time": [5.0, 5.0, 6.0, 6.0, 4.0, 4.0],
    ...                       "censored": [8.0, 10.0, 12.0, 12.0, 8.0, 8.0]})
    >>> row = schedule_calls(table, by=["network"]).iloc[0]
    >>> row["called"], row["fastest"], float(row["called_vs_design"])
    ('epidemic', 'epidemic', 0.8888888888888888)
    >>> schedule_calls(table, by=["network"], margin=1.5).iloc[0]["called"]  # 4 x 1.5 > 5
    'optimize'
    """
    part = table[table["method"].isin((LEAD, *TIME_VARYING))]
    medians = (part.groupby([*by, "method"], sort=False)
               .agg(predicted=("pseudo_time", "median"), measured=("censored", "median"))
               .reset_index())
    rows = []
    for key, cell in medians.groupby(by, sort=False):
        lead = cell.loc[cell["method"] == LEAD].iloc[0]
        design = float(lead["measured"])
        schedules = cell[cell["method"] != LEAD]
        best = schedules.loc[schedules["predicted"].idxmin()] if len(schedules) else lead
        called = best if best["predicted"] * margin < lead["predicted"] else lead
        fastest = cell.loc[cell["measured"].idxmin()]
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
                     "called": called["method"], "fastest": fastest["method"],
                     "called_vs_design": float(called["measured"]) / design,
                     "fastest_vs_design": float(fastest["measured"]) / design})
    return pd.DataFrame(rows)


def schedule_call_summary(calls: pd.DataFrame) -> dict[str, Any]:
    """How often the predictions call a schedule faster than the design, how often they
    call the measured fastest, and the measured ratio to the design of what they call
    (geometric mean and worst) against that of the measured fastest."""
    if calls.empty:
        return {"settings": 0}
    return {"settings": int(len(calls)),
            "called_a_schedule": int((calls["called"] != LEAD).sum()),
            "measured_a_schedule_fastest": int((calls["fastest"] != LEAD).sum()),
            "called_the_fastest": int((calls["called"] == calls["fastest"]).sum()),
            "called_vs_design_geometric": _plain(np.exp(np.log(calls["called_vs_design"])
                                                        .mean())),
            "called_vs_design_worst": _plain(calls["called_vs_design"].max()),
            "fastest_vs_design_geometric": _plain(np.exp(np.log(calls["fastest_vs_design"])
                                                         .mean()))}


def spearman_summary(cells: pd.DataFrame) -> dict[str, Any]:
    """Each predictor's median rho over the settings of each class and of all; the median
    over networks of each network's median; whether topokit's beats each other's.

    Examples
    --------
    >>> cells = pd.DataFrame({"family": ["siot", "siot", "underlay"], "network": list("aab"),
    ...                       "topokit": [0.9, 0.7, 0.5], "eq15": [0.1, 0.2, 0.6],
    ...                       "spectral_gap": 0.0, "effective_neighbours": 0.3})
    >>> summary = spearman_summary(cells)
    >>> summary["median"]["siot"]["topokit"], summary["median"]["all"]["eq15"]
    (0.8, 0.2)
    >>> summary["topokit_beats"]["all"]
    {'eq15': True, 'spectral_gap': True, 'effective_neighbours': True}
    """
    groups = {family: cells[cells["family"] == family] for family in FAMILIES
              if (cells["family"] == family).any()}
    groups["all"] = cells
    names = list(PREDICTORS)
    median = {group: {p: _plain(part[p].median()) for p in names}
              for group, part in groups.items()}
    per_network = cells.groupby("network", sort=False)[names].median()
    return {"median": median,
            "settings": {group: int(len(part)) for group, part in groups.items()},
            "median_of_network_medians": {p: _plain(per_network[p].median()) for p in names},
            "topokit_beats": {group: {p: bool(values["topokit"] > values[p])
                                      for p in names if p != "topokit"}
                              for group, values in median.items()}}


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def figure_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The ratios of :func:`setting_table` in long form for :func:`ratio_figure`."""
    shown = {"vs_best_peer": "optimize / best peer", "vs_ndlf": "optimize / NDLF",
             "vs_best_overlay": "optimize / best overlay"}
    parts = [rows[BY].assign(method=label, ratio=rows[column])
             for column, label in shown.items() if column in rows]
    return pd.concat(parts, ignore_index=True).dropna(subset=["ratio"])


def figure(rows: pd.DataFrame):
    """:func:`ratio_figure` of the ratios, each setting named under its position."""
    long = figure_table(rows)
    fig = ratio_figure(long, BY, ("optimize / best peer", "optimize / NDLF",
                                  "optimize / best overlay"),
                       "time / reference's (median over paired trials)", SLOWER_AT_MOST)
    settings = long.sort_values(BY).drop_duplicates(BY)
    labels = [f"{row.network} K{row.skewness:g} e{row.epsilon_round:g} t{row.target:g}"
              for row in settings.itertuples(index=False)]
    axis = fig.axes[0]
    axis.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
    axis.set_xlabel("setting (network, skewness K, epsilon per round, target)")
    fig.set_size_inches(max(9.0, 0.16 * len(labels) + 2.0), 5.5)
    fig.tight_layout()
    return fig


def print_settings(rows: pd.DataFrame) -> None:
    print("\nTime to the target, median over paired trials (never reached: T + 1 rounds; "
          "* optimize never reached it in some trial):")
    overlays_ran = "best_overlay" in rows
    print(f"{'network':<22}{'K':>4}{'eps':>5}{'target':>7}{'NDLF s':>11}{'/NDLF':>7}  "
          f"{'best peer':<21}{'/best [95% CI]':>22}"
          + "".join(f"{'/' + peer[:4]:>8}" for peer in COMPARED)
          + (f"  {'best overlay':<12}{'/overlay':>9}" if overlays_ran else ""))
    for _, row in rows.iterrows():
        flag = "*" if row["optimize_never"] else " "
        cell = (f"{row['vs_best_peer']:.3f} [{row['vs_best_peer_low']:.2f}-"
                f"{row['vs_best_peer_high']:.2f}]{flag}")
        line = (f"{row['network']:<22}{row['skewness']:>4g}{row['epsilon_round']:>5g}"
                f"{row['target']:>7g}{row['ndlf_time']:>11.4g}{row['vs_ndlf']:>7.3f}  "
                f"{row['best_peer']:<21}{cell:>22}"
                + "".join(f"{_fmt(row.get(f'vs_{peer}')):>8}" for peer in COMPARED))
        if overlays_ran and isinstance(row.get("best_overlay"), str):
            line += f"  {row['best_overlay']:<12}{row['vs_best_overlay']:>9.3f}"
        print(line)


def print_goals(goals: dict[str, Any]) -> None:
    print(f"\nGoals (optimize / best peer; > {SLOWER_AT_MOST} is more than 2 % slower):")
    for group, g in goals.items():
        speed = g[f"geometric_speedup_at_K{SKEWED:g}"]
        least = g[f"least_speedup_at_K{SKEWED:g}"]
        text = (f"  {group:<9} settings {g['settings']}: more than 2 % slower at K=0 "
                f"{g['slower_than_2pct_at_K0']} of {g['settings_at_K0']} (worst "
                f"{_fmt(g['worst_ratio_at_K0'])}); at K={SKEWED:g} speed-up {_fmt(speed)}x "
                f"geometric mean, least {_fmt(least)}x, "
                f"{g[f'settings_at_least_{SPEEDUP_AT_SKEW:g}x_at_K{SKEWED:g}']} of "
                f"{g[f'settings_at_K{SKEWED:g}']} at >= {SPEEDUP_AT_SKEW:g}x")
        if "overlay_settings" in g:
            text += (f"; vs best overlay: slower in {g['slower_than_best_overlay']} of "
                     f"{g['overlay_settings']} (worst {_fmt(g['worst_ratio_to_best_overlay'])})")
        print(text)
    for kind in ("time_varying", "static_peer"):
        for win in goals["all"][f"{kind}_wins"]:
            print(f"  a {kind.replace('_', '-').replace('-peer', '')} peer wins: "
                  f"{win['network']} K={win['skewness']:g} eps={win['epsilon_round']:g} "
                  f"target={win['target']:g}: {win['peer']}, "
                  f"optimize {100 * win['optimize_slower_by']:.1f} % slower")
    print(f"  best peer counts: {goals['all']['best_peer_counts']}")
    for peer in COMPARED:
        for group, g in goals.items():
            a = g[f"optimize_vs_{peer}"]
            print(f"  optimize / {peer} {group:<9} in {a['settings']} settings: slower in "
                  f"{a['optimize_slower_in']}; geometric mean at K=0 "
                  f"{_fmt(a['geometric_ratio_at_K0'])}, at K={SKEWED:g} "
                  f"{_fmt(a[f'geometric_ratio_at_K{SKEWED:g}'])}; best peer in "
                  f"{a['best_peer_in']}")


def print_refusals(refused: list[dict]) -> None:
    print(f"\nPeers that could not be built ({len(refused)} settings; no runs there):")
    for r in refused:
        print(f"  {r['network']} K={r['skewness']:g} eps={r['epsilon_round']:g} "
              f"target={r['target']:g}: {r['reason']}")


def _fmt(value: Any) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"


def print_calls(summary: dict[str, Any]) -> None:
    if not summary["settings"]:
        return
    print(f"\nThe design or a schedule, as topokit's predictions call it, in "
          f"{summary['settings']} settings: a schedule called faster in "
          f"{summary['called_a_schedule']} (measured faster in "
          f"{summary['measured_a_schedule_fastest']}); the measured fastest called in "
          f"{summary['called_the_fastest']}; measured time of what is called / the design's: "
          f"geometric mean {_fmt(summary['called_vs_design_geometric'])}, worst "
          f"{_fmt(summary['called_vs_design_worst'])} (of the measured fastest: "
          f"{_fmt(summary['fastest_vs_design_geometric'])})")


def print_spearman(summary: dict[str, Any], ranked: str = "static topologies") -> None:
    print(f"\nSpearman of predicted vs measured time, {ranked}, per setting "
          "(never = slowest); median over the settings of each class (no predictor saw "
          "these networks: leave-network-out):")
    names = list(PREDICTORS)
    print(f"{'class':<10}{'settings':>9}" + "".join(f"{p:>22}" for p in names))
    for group, values in summary["median"].items():
        print(f"{group:<10}{summary['settings'][group]:>9}"
              + "".join(f"{_fmt(values[p]):>22}" for p in names))
    print(f"{'networks':<10}{'':>9}" + "".join(
        f"{_fmt(summary['median_of_network_medians'][p]):>22}" for p in names)
          + "  (median over networks of each network's median)")


def payload(args: argparse.Namespace, nets: list[FieldNetwork], rows: pd.DataFrame,
            goals: dict, cells: pd.DataFrame, spearman: dict, designs: list[dict],
            refused: list[dict]) -> dict:
    def records(frame: pd.DataFrame) -> list[dict]:
        return json.loads(frame.to_json(orient="records"))

    return {
        "command": command(), "topokit_version": __version__,
        "settings": {"networks": [network_record(n) for n in nets],
                     "skewness": list(args.skewness), "epsilons_per_round": list(args.epsilons),
                     "targets": list(args.targets), "trials": args.trials, "rounds": ROUNDS,
                     "peers": list(args.peers), "n_random": args.random, "seed": args.seed,
                     "model": "logreg", "data": "digits"},
        "definitions": {
            "time": "measured time to the target (rounds x L; a schedule's rounds summed); "
                    "never reached: (T + 1) x L",
            "best_peer": "the peer with the smallest median time over the trials (ties: the "
                         "first of " + ", ".join(PEERS) + ")",
            "ratio": "median over trials of the paired ratio of times; 95 % bootstrap "
                     "interval over trials",
            "matched_degree": "base:k and epidemic:s with k = s = round(2|E|/|V|) of the "
                              "setting's optimize design, clipped to [1, fewest usable peers]; "
                              "equistatic:M with M = max(1, round(k / 2)) ring offsets (at "
                              "most 2M peers a device)",
            "refusals": "a matched peer whose construction refused the setting (EquiStatic: "
                        "offsets that all share a factor with n) has no runs there; the best "
                        "peer is chosen among the others",
            "vs_equistatic": "optimize / equistatic, paired by trial, where it was built",
            "mbst": "the delta-MBST with the smallest cycle time, delta 2..n-1",
            "spearman": "per setting over every run of its static topologies (never = "
                        "slowest), each predictor's time: topokit pseudo_time, eq. (15) "
                        "G' x L, L / spectral gap, L / effective neighbours (gamma 0.99); "
                        "spearman_summary_with_schedules: over its time-varying ones too",
            "schedule_calls": "per setting, the fastest of optimize and the time-varying "
                              "peers by median predicted time, and by median measured "
                              "time; the measured median time of each over optimize's"},
        "goals": goals, "refusals": refused, "spearman_summary": spearman,
        "settings_table": records(rows),
        "spearman_cells": records(cells), "designs": designs}


def network_record(spec: FieldNetwork) -> dict[str, Any]:
    net = spec.build()
    return {"family": spec.family, "name": spec.name, "n_devices": net.n_devices,
            "social_links": net.social.number_of_edges(),
            "diameter": nx.diameter(net.social)}


def refusals(runs: pd.DataFrame) -> list[dict]:
    """The settings where a :data:`MAY_REFUSE` peer could not be built: the peer and
    validate's reason (it names the spec).

    Examples
    --------
    >>> runs = pd.DataFrame({"family": "siot", "network": "a", "skewness": [0.0, 0.8],
    ...                      "epsilon_round": 0.5, "target": 0.85, "trial": 0,
    ...                      "topology": "optimize",
    ...                      "equistatic_refused": [None, "equistatic:1 drew [14]"]})
    >>> [(r["skewness"], r["peer"], r["reason"]) for r in refusals(runs)]
    [(0.8, 'equistatic', 'equistatic:1 drew [14]')]
    """
    out = []
    for peer in MAY_REFUSE:
        column = f"{peer}_refused"
        if column not in runs:
            continue
        mine = runs[(runs["topology"] == LEAD) & (runs["trial"] == 0) & runs[column].notna()]
        out.extend({**{k: _plain(row[k]) for k in BY}, "peer": peer, "reason": row[column]}
                   for _, row in mine.iterrows())
    return out


def design_records(runs: pd.DataFrame) -> list[dict]:
    """Per setting: optimize's links and DP devices, the matched degree, the MBST's delta."""
    mine = runs[(runs["topology"] == LEAD) & (runs["trial"] == 0)]
    columns = [c for c in ("matched_degree", "mbst_delta") if c in mine]
    out = []
    for _, row in mine.iterrows():
        extra = {c: _plain(row[c]) for c in columns
                 if not (isinstance(row[c], float) and np.isnan(row[c]))}
        out.append({**{k: _plain(row[k]) for k in BY}, "n_links": int(row["n_links"]),
                    "n_dp_devices": int(row["n_dp_devices"]), **extra})
    return out


def command() -> str:
    return " ".join(["python -m analyses.field_benchmark", *sys.argv[1:]])


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------


def _floats(text: str, option: str, parser: argparse.ArgumentParser) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        parser.error(f"{option}: give comma-separated numbers; got {text!r}")
    return values


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--siot", type=int, help=f"hidden SIoT networks, 0-{len(SIOT)} "
                                                 f"(default {DEFAULT_COUNTS['siot']})")
    parser.add_argument("--social", type=int, help=f"real social graphs, 0-{len(SOCIAL)} "
                                                   f"(default {DEFAULT_COUNTS['social']})")
    parser.add_argument("--underlays", type=int,
                        help=f"Marfoq's underlays, 0-{len(UNDERLAYS)} "
                             f"(default {DEFAULT_COUNTS['underlay']})")
    parser.add_argument("--trials", type=int, help=f"trials per setting (default {TRIALS})")
    parser.add_argument("--epsilons", help="epsilon per round, comma-separated (default 0.5,4)")
    parser.add_argument("--targets", help="target accuracies (default 0.85,0.92)")
    parser.add_argument("--skewness", help="skewness values K (default 0,0.8)")
    parser.add_argument("--random", type=int,
                        help=f"random valid topologies per setting for the rank correlations "
                             f"(default {N_RANDOM})")
    parser.add_argument("--peers", help=f"comma-separated subset of {','.join(PEERS)} "
                                        "(ndlf required; default all)")
    parser.add_argument("--n-jobs", type=int, default=1, help="validate's workers")
    parser.add_argument("--seed", type=int, default=0, help="the base of every setting's seed")
    parser.add_argument("--quick", action="store_true",
                        help="one SIoT network and gaia, epsilon 0.5, target 0.85, 2 trials, "
                             "peers ndlf and epidemic")
    args = parser.parse_args(argv)
    base = QUICK if args.quick else {**DEFAULT_COUNTS, "trials": TRIALS, "epsilons": EPSILONS,
                                     "targets": TARGETS, "skewness": SKEWNESS,
                                     "random": N_RANDOM, "peers": PEERS}
    args.counts = {}
    for family, option, given, available in (("siot", "--siot", args.siot, SIOT),
                                             ("social", "--social", args.social, SOCIAL),
                                             ("underlay", "--underlays", args.underlays,
                                              UNDERLAYS)):
        args.counts[family] = base[family] if given is None else given
        if not 0 <= args.counts[family] <= len(available):
            parser.error(f"{option} must be 0 to {len(available)}")
    if not sum(args.counts.values()):
        parser.error("no network to run")
    args.trials = base["trials"] if args.trials is None else args.trials
    args.random = base["random"] if args.random is None else args.random
    if args.trials < 1 or args.random < 0:
        parser.error("--trials must be >= 1 and --random >= 0")
    args.epsilons = _floats(args.epsilons, "--epsilons", parser) if args.epsilons \
        else base["epsilons"]
    args.targets = _floats(args.targets, "--targets", parser) if args.targets \
        else base["targets"]
    args.skewness = _floats(args.skewness, "--skewness", parser) if args.skewness \
        else base["skewness"]
    try:
        args.peers = (parse_subset(args.peers, PEERS, "--peers", "peer", "no peer given",
                                   {"ndlf": "every ratio to NDLF needs it"})
                      if args.peers else base["peers"])
    except InvalidInputError as error:
        parser.error(str(error))
    return args


def measure(args: argparse.Namespace) -> tuple[list[FieldNetwork], pd.DataFrame, pd.DataFrame,
                                                 float]:
    """Every setting's runs and timings (saved or trained now) and the seconds taken."""
    nets = networks(args.counts)
    options = Options(args.trials, args.seed, args.peers, args.random, args.n_jobs)
    settings = [Setting(net, k, eps, target) for net in nets for k in args.skewness
                for eps in args.epsilons for target in args.targets]
    started = time.perf_counter()
    runs, timings = [], []
    for i, setting in enumerate(settings, 1):
        frame, timing = run_setting(setting, options)
        runs.append(frame)
        timings.append(timing)
        print(f"[{i}/{len(settings)}] {setting.network.name} K={setting.skewness:g} "
              f"eps={setting.epsilon:g} target={setting.target:g}: "
              f"{time.perf_counter() - started:.0f} s so far", flush=True)
    return (nets, pd.concat(runs, ignore_index=True), pd.concat(timings, ignore_index=True),
            time.perf_counter() - started)


def main(argv=None) -> None:
    args = parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    nets, runs, timings, seconds = measure(args)
    table = times(runs)
    rows = setting_table(table)
    goals = goal_summary(rows)
    cells = spearman_cells(runs)
    spearman = spearman_summary(cells)
    spearman_all = spearman_summary(spearman_cells(runs, schedules=True))
    calls = schedule_calls(table)
    call_summary = schedule_call_summary(calls)
    stem = "field_benchmark_quick" if args.quick else "field_benchmark"
    runs.to_parquet(out_path(f"{stem}.parquet"), index=False)
    figure(rows).savefig(out_path(f"{stem}.png"), dpi=120)
    print_settings(rows)
    print_goals(goals)
    print_spearman(spearman)
    print_spearman(spearman_all, "static and time-varying topologies")
    print_calls(call_summary)
    refused = refusals(runs)
    print_refusals(refused)
    record = payload(args, nets, rows, goals, cells, spearman, design_records(runs), refused)
    record.update({"spearman_summary_with_schedules": spearman_all,
                   "schedule_calls": call_summary,
                   "schedule_call_settings": json.loads(calls.to_json(orient="records"))})
    write_json(f"{stem}.json", record)
    per_run = timings.drop_duplicates(["network", "skewness", "epsilon_round", "target",
                                       "topology", "trial"])
    write_json(f"{stem}_timings.json", {
        "command": command(), "date": date.today().isoformat(), "machine": machine(),
        "seconds": round(seconds), "runs": int(len(per_run)),
        "training_seconds": round(float(per_run["wall_clock"].sum()), 1),
        "training_seconds_per_run_by_kind": per_run.groupby("kind")["wall_clock"].mean()
        .round(3).to_dict()})
    print(f"\n{seconds:.0f} s; wrote analyses/out/{stem}.{{json,parquet,png}} and "
          f"{stem}_timings.json")


if __name__ == "__main__":
    main()
