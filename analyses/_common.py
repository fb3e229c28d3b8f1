"""Helpers shared by the analysis scripts: output folder, machine description, JSON and table
dumps, the command line, figures and printed tables of design comparisons
(:mod:`topokit.validation.compare`'s results), and the saved runs of the predictor corpus
and the design benchmark (:func:`cached_runs`; a :class:`Setting`'s: :func:`train_setting`).

The saved runs: the runs of each setting live in one Parquet file, each run with a key
(column ``run_key``, :func:`run_key`) digesting everything it depends on: the network,
the topology with its DP devices and weights, its weighting, the skewness, the model,
the trial seeds, the targets, the training settings, the data and what the training code
does (:func:`training_digest`).  A later call reuses a topology's runs only under the key
its inputs give now and trains the rest (through :func:`topokit.validate`'s resumable
pieces, so an interrupted setting resumes); runs of topologies not asked for now stay
saved.  Files written before run keys are read too: while the training code gives the
results it gave them (:data:`LEGACY_TRAINING`), their runs are adopted when every
trial's seed, targets and the topology's structural metrics match
(:func:`adopt_legacy`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from topokit._io import atomic_write_text, dumps_json

OUT = Path(__file__).resolve().parent / "out"


def out_path(name: str) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    return OUT / name


def machine() -> dict[str, Any]:
    """What the figures were measured on.

    Examples
    --------
    >>> sorted(machine())
    ['cpu_count', 'numpy', 'platform', 'processor', 'python']
    """
    import numpy as np

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
    }


def write_json(name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` to out/<name> as strict JSON (non-finite numbers as ``null``)."""
    return atomic_write_text(out_path(name), dumps_json(payload, indent=2))


def write_table(name: str, frame, columns: Sequence[tuple[str, str, str]]) -> str:
    """Write ``frame`` to out/<name>.csv and a Markdown table to out/<name>.md; print the table.

    ``columns`` lists (header, frame column, format spec) of the Markdown table,
    e.g. ``("F", "F", ".3f")``; an empty spec prints the value as it is.
    """
    atomic_write_text(out_path(f"{name}.csv"), frame.to_csv(index=False))
    lines = ["| " + " | ".join(header for header, _, _ in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(format(row[column], spec) for _, column, spec in columns) + " |"
              for row in frame.to_dict("records")]
    text = "\n".join(lines) + "\n"
    atomic_write_text(out_path(f"{name}.md"), text)
    print(text, end="")
    return text


def parse_subset(text: str, choices: Sequence[str], option: str, noun: str,
                 empty: str, required: dict[str, str] | None = None) -> tuple[str, ...]:
    """The names of a comma-separated ``option`` value, in the order of ``choices``.

    An unknown name, or none, ends in one line that lists the choices; a missing
    name of ``required`` (name -> why it is needed) in one line that says why.

    Examples
    --------
    >>> parse_subset("c, a", ("a", "b", "c"), "--letters", "letter", "no letter given")
    ('a', 'c')
    >>> parse_subset("a,z", ("a", "b"), "--abc", "letter", "none")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: --abc: unknown letter 'z'; give a ... subset of a,b
    >>> parse_subset("a", ("a", "b"), "--abc", "letter", "none", {"b": "a needs b"})
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: --abc must include b: a needs b
    """
    from topokit.errors import InvalidInputError

    names = [name.strip() for name in str(text).split(",") if name.strip()]
    unknown = [name for name in names if name not in choices]
    if unknown or not names:
        got = f"unknown {noun} {unknown[0]!r}" if unknown else empty
        raise InvalidInputError(f"{option}: {got}; give a comma-separated subset of "
                                f"{','.join(choices)}")
    for name, why in (required or {}).items():
        if name not in names:
            raise InvalidInputError(f"{option} must include {name}: {why}")
    return tuple(name for name in choices if name in names)


def parse_ints(text: str, option: str, *, at_least: int,
               count: int | None = None) -> tuple[int, ...]:
    """The integers of a comma-separated ``option`` value, in the order given.

    Each must be at least ``at_least``, and with ``count`` there must be exactly that
    many; otherwise one line says what to give.

    Examples
    --------
    >>> parse_ints("200, 201", "--seeds", at_least=3)
    (200, 201)
    >>> parse_ints("1,x", "--seeds", at_least=3, count=2)
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: --seeds: give 2 comma-separated integers >= 3; got '1,x'
    """
    from topokit.errors import InvalidInputError

    try:
        values = tuple(int(part) for part in str(text).split(","))
    except ValueError:
        values = ()
    if not values or min(values) < at_least or count not in (None, len(values)):
        many = "" if count is None else f"{count} "
        raise InvalidInputError(f"{option}: give {many}comma-separated integers >= {at_least}; "
                                f"got {text!r}")
    return values


def repeats_and_quick(description: str, *, repeats_help: str, quick_help: str,
                      default: int = 5) -> tuple[int, bool]:
    """(repeats, quick) from the command line: ``--repeats N`` (at least 1) and ``--quick``
    (which times 2 repeats)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeats", type=int, default=default, help=repeats_help)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    options = parser.parse_args()
    repeats = 2 if options.quick else options.repeats
    if repeats < 1:
        parser.error("--repeats must be >= 1")
    return repeats, options.quick


def run_quick(main: Callable[[bool], Any]) -> None:
    """Call ``main(quick)`` with the script's ``--quick`` flag."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer instances, a shorter run")
    OUT.mkdir(parents=True, exist_ok=True)
    main(parser.parse_args().quick)


def ratio_figure(table, by: Sequence[str], methods: Sequence[str], ylabel: str,
                 slower_at_most: float = 1.02):
    """Each setting's ratio of each method's time to the reference's (column ``ratio``, one
    row per setting of ``by`` and ``method``, as ``paired_ratios`` gives), one marker per
    method, settings in ``by`` order along x, with the lines 1 and ``slower_at_most``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = list(by)
    shown = table.sort_values(by)
    settings = shown.drop_duplicates(by)[by].itertuples(index=False, name=None)
    position = {setting: i for i, setting in enumerate(settings)}
    fig, ax = plt.subplots(figsize=(9, 3.8))
    for method, marker in zip(methods, "ox+^v", strict=False):
        part = shown[shown["method"] == method]
        ax.scatter([position[s] for s in part[by].itertuples(index=False, name=None)],
                   part["ratio"], marker=marker, label=method)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(slower_at_most, color="r", lw=0.8, ls="--",
               label=f"{100 * (slower_at_most - 1):g} % slower than the reference")
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_xlabel("setting (" + ", ".join(by) + ")")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def ratio_panels(ratios, methods: Sequence[str], *, ylabel: str, panel: str = "skewness",
                 colour: str = "model", title: str = "skewness K = {:g}",
                 slower_at_most: float = 1.02):
    """Each method's ratio to the reference (rows of ``ratios_to_reference``), one panel per
    value of ``panel`` (titled ``title.format(value)``): a box over the settings, and each
    setting's ratio with its bootstrap interval, one colour per value of ``colour``; lines
    at 1 and ``slower_at_most``, log scale."""
    import numpy as np

    from topokit.plotting._style import new_figure

    values = sorted(ratios[panel].unique())
    fig = new_figure("scatter", ncols=len(values))
    fig.set_size_inches(max(5.0, 0.6 * len(methods) + 1.0) * len(values), 4.4)
    jitter = np.random.default_rng(0)
    for k, value in enumerate(values):
        axis = fig.add_subplot(1, len(values), k + 1)
        _ratio_panel(axis, ratios[ratios[panel] == value], methods, colour, jitter,
                     slower_at_most)
        axis.set_title(title.format(value))
        if k == 0:
            axis.set_ylabel(ylabel)
            axis.legend(fontsize=7)
    return fig


def _ratio_panel(axis, part, methods: Sequence[str], colour: str, jitter,
                 slower_at_most: float) -> None:
    from matplotlib.ticker import FormatStrFormatter

    axis.boxplot([part.loc[part["method"] == m, "ratio"] for m in methods],
                 positions=range(len(methods)), widths=0.6, showfliers=False)
    for offset, (label, group) in enumerate(part.groupby(colour)):
        for x, method in enumerate(methods):
            sub = group[group["method"] == method]
            xs = x - 0.15 + 0.3 * offset + jitter.uniform(-0.08, 0.08, len(sub))
            axis.errorbar(xs, sub["ratio"], yerr=[sub["ratio"] - sub["ci_low"],
                                                  sub["ci_high"] - sub["ratio"]],
                          fmt="o", ms=3, lw=0.6, alpha=0.6, color=f"C{offset}",
                          label=label if x == 0 else None)
    axis.axhline(1.0, color="grey", lw=0.8)
    axis.axhline(slower_at_most, color="grey", lw=0.5, ls=":")
    axis.set_yscale("log")
    axis.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    axis.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    axis.set_xticks(range(len(methods)), methods, rotation=35, ha="right", fontsize=8)


def print_speedups(speedups: dict, methods: Sequence[str], reference: str = "NDLF",
                   group: str = "skewness") -> None:
    """Print ``geometric_speedups``' table: a row per method of ``methods``, a column per
    group.

    Examples
    --------
    >>> print_speedups({"0": {"mine": 1.25}, "all": {"mine": 1.5}}, ["mine", "other"])
    <BLANKLINE>
    Geometric-mean speed-up over NDLF (NDLF's time / the method's), by skewness:
    method               0      all
    mine             1.250    1.500
    other              nan      nan
    """
    print(f"\nGeometric-mean speed-up over {reference} ({reference}'s time / the method's), "
          f"by {group}:")
    width = max([13, *(len(method) + 1 for method in methods)])
    print(f"{'method':<{width}}" + "".join(f"{k:>9}" for k in speedups))
    for method in methods:
        print(f"{method:<{width}}" + "".join(f"{v.get(method, float('nan')):>9.3f}"
                                            for v in speedups.values()))


def print_ceilings(ceilings: dict, reference: str = "NDLF", label: str = "K") -> None:
    """Print ``hindsight_ceiling``'s speed-ups, one line per model (``ceilings``: model ->
    group label -> speed-up).

    Examples
    --------
    >>> print_ceilings({"logreg": {"0": 1.1, "all": 1.25}})  # doctest: +NORMALIZE_WHITESPACE
    Hindsight ceiling (logreg): the best trained topology of each setting by its measured
    median, geometric-mean speed-up over NDLF: K 0 1.100x, K all 1.250x
    """
    for model, ceiling in ceilings.items():
        print(f"Hindsight ceiling ({model}): the best trained topology of each setting by its "
              f"measured median, geometric-mean speed-up over {reference}: "
              + ", ".join(f"{label} {k} {v:.3f}x" for k, v in ceiling.items()))


def print_win_rates(method: str, wins: dict) -> None:
    """Print ``win_rates``' settings won / tied / lost by ``method`` and its win rates, one
    line per other method.

    Examples
    --------
    >>> print_win_rates("mine", {"ndlf": {"wins": 3, "ties": 0, "losses": 1,
    ...                                   "win_rate": 0.75, "trial_win_rate": 0.7}})
    ... # doctest: +NORMALIZE_WHITESPACE
    <BLANKLINE>
    mine against each method (settings won / tied / lost on the paired median; share of
    paired trials won):
      vs ndlf                   3 /   0 /   1  win rate 0.75  trials 0.70
    """
    print(f"\n{method} against each method (settings won / tied / lost on the paired median; "
          "share of paired trials won):")
    for other, w in wins.items():
        print(f"  vs {other:<20} {w['wins']:>3} / {w['ties']:>3} / {w['losses']:>3}  "
              f"win rate {w['win_rate']:.2f}  trials {w['trial_win_rate']:.2f}")


def print_never(never: dict, target: float) -> None:
    """Print ``never_reached``'s counts, one line per method.

    Examples
    --------
    >>> print_never({"erg": {"settings_never": 1, "settings_any_never": 2, "settings": 9,
    ...                      "runs_never": 4, "runs": 45}}, 0.88)
    <BLANKLINE>
    Never reaching 88% (settings: majority of trials / any trial; runs):
      erg                    1 /   2 of 9 settings; 4 of 45 runs
    """
    print(f"\nNever reaching {target:.0%} (settings: majority of trials / any trial; runs):")
    for method, n in never.items():
        print(f"  {method:<20} {n['settings_never']:>3} / {n['settings_any_never']:>3} of "
              f"{n['settings']} settings; {n['runs_never']} of {n['runs']} runs")


def print_goals(goals: dict) -> None:
    """Print whether each method met its goals (method -> [(goal, passed, numbers)]).

    Examples
    --------
    >>> print_goals({"mine": [("faster than NDLF", True, "1.5x"), ("never slower", False, "2")]})
    <BLANKLINE>
    Goals for mine:
      PASS  faster than NDLF: 1.5x
      FAIL  never slower: 2
    """
    for method, checks in goals.items():
        print(f"\nGoals for {method}:")
        for name, passed, numbers in checks:
            print(f"  {'PASS' if passed else 'FAIL'}  {name}: {numbers}")


def print_ratio_summaries(summaries: dict, title: str, group: str = "skewness",
                          label: str = "K") -> None:
    """Print ``ratio_summaries``' geometric-mean ratio of each pair, overall and by
    ``group`` (each value shown as ``label=value``), and the settings whose interval lies
    below / above 1, under ``title``; nothing without a pair.

    Examples
    --------
    >>> print_ratio_summaries({"fast/lazy": {
    ...     "geometric_mean_ratio": 0.6, "settings": 2, "ci_below_1": 1, "ci_above_1": 0,
    ...     "by_skewness": {"0": {"geometric_mean_ratio": 0.9},
    ...                     "0.8": {"geometric_mean_ratio": 0.4}}}}, "Weights")
    ... # doctest: +NORMALIZE_WHITESPACE
    <BLANKLINE>
    Weights (paired median ratio per setting; geometric mean over settings, by skewness;
    settings with the 95 % interval below / above 1):
      fast/lazy                      0.600 (K=0 0.900, K=0.8 0.400); 1 / 0 of 2
    """
    if not summaries:
        return
    print(f"\n{title} (paired median ratio per setting; geometric mean over settings, by "
          f"{group}; settings with the 95 % interval below / above 1):")
    for comparison, entry in summaries.items():
        by_group = ", ".join(f"{label}={k} {v['geometric_mean_ratio']:.3f}"
                             for k, v in entry[f"by_{group}"].items())
        print(f"  {comparison:<30} {entry['geometric_mean_ratio']:.3f} ({by_group}); "
              f"{entry['ci_below_1']} / {entry['ci_above_1']} of {entry['settings']}")


def print_ratio_table(ratios, by: Sequence[str], lead: str | None, others: Sequence[str], *,
                      reference: str, label: str, header: str,
                      row: Callable[[tuple], str]) -> None:
    """Print ``ratios_to_reference``' rows, one line per setting (``row(key)`` under
    ``header``): the reference's median time (headed ``label``), ``lead``'s ratio with its
    interval (``*``: its design never reached the target in some trial) and the ratio of
    each of ``others``.

    Examples
    --------
    >>> import pandas as pd
    >>> ratios = pd.DataFrame({"network": "a", "method": ["mine", "ndlf", "erg"],
    ...                        "median_time": [90.0, 100.0, 300.0], "ratio": [0.9, 1.0, 3.0],
    ...                        "ci_low": [0.8, 1.0, 2.5], "ci_high": [1.0, 1.0, 3.5],
    ...                        "never_trials": [0, 0, 1]})
    >>> print_ratio_table(ratios, ["network"], "mine", ["erg"], reference="ndlf",
    ...                   label="NDLF s", header="network", row=lambda key: f"{key[0]:<7}")
    network   NDLF s         mine [95% CI]      erg
    a            100    0.900 [0.80-1.00]     3.000
    """
    wide = ratios.pivot_table(index=list(by), columns="method", values="ratio", sort=False)
    reference_time = ratios[ratios["method"] == reference].set_index(list(by))["median_time"]
    widths = [max(9, len(method) + 1) for method in others]
    lead_width = max(21, len(lead) + 10) if lead else 0
    head = f"{lead + ' [95% CI]':>{lead_width}}" if lead else ""
    print(f"{header}{label:>9} {head}"
          + "".join(f"{m:>{w}}" for m, w in zip(others, widths, strict=True)))
    mine = ratios[ratios["method"] == lead].set_index(list(by)) if lead else None
    for key, values in wide.iterrows():
        cell = ""
        if lead:
            own = mine.loc[key]
            flag = "*" if own["never_trials"] else " "
            cell = (f"{values[lead]:>6.3f} [{own['ci_low']:.2f}-{own['ci_high']:.2f}]{flag}"
                    .rjust(lead_width))
        names = key if isinstance(key, tuple) else (key,)
        print(f"{row(names)}{reference_time.loc[key]:>9.0f} {cell}"
              + "".join(f"{values[m]:>{w}.3f}" for m, w in zip(others, widths, strict=True)))


# ---------------------------------------------------------------------------------------------
# Saved runs keyed by their inputs: the resume of the corpus and of the design benchmark
# ---------------------------------------------------------------------------------------------

#: The column of a saved run holding the digest of everything the run depends on.
RUN_KEY = "run_key"

#: Structural metrics of validate's runs table that identify a topology's graph and DP set
#: (the exposure counts depend on which devices are DP, not only how many; the first
#: corpus runs did not record them, so they are compared where recorded): runs saved
#: before run keys are adopted only when they match.
LEGACY_COLUMNS = ("n_links", "n_dp_devices", "phi", "hitting_time", "spectral_gap",
                  "local_iterate")
LEGACY_OPTIONAL = ("stranger_pairs", "exposed_pairs")

#: training_digest() of the training code that the runs saved before run keys (in both
#: scripts' parts) were made with: runs of each retrained now gave the same rounds and
#: accuracies to the bit (NDLF, DLFDP and a random DP topology, with and without skew).
#: Those runs are adopted only while the training code still gives this digest.
LEGACY_TRAINING = "642afd88fb098e882823a5b730cde4c7a5590a79f2ac9c65ea84da5fe093afa1"


def digest(*parts: Any) -> str:
    """SHA-256 hex digest of ``parts``: bytes as they are, anything else as sorted JSON.

    Examples
    --------
    >>> len(digest("toy", [0.9, 0.95], {"trials": 3}))
    64

    Keys are sorted, so the order a dict was built in does not change its digest:

    >>> digest({"lr": 0.1, "rounds": 5}) == digest({"rounds": 5, "lr": 0.1})
    True
    >>> digest(b"toy") == digest("toy")  # the text is hashed as its JSON, '"toy"'
    False
    """
    import hashlib

    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part if isinstance(part, bytes) else
                      json.dumps(part, sort_keys=True, default=str).encode())
    return hasher.hexdigest()


def data_digest(X, y) -> str:
    """The digest of the data a run trains on."""
    import numpy as np

    return digest(np.ascontiguousarray(X).tobytes(), np.ascontiguousarray(y).tobytes())


def run_key(network: str, entry, settings: dict) -> str:
    """The key of a topology's runs: a digest of all they depend on.

    ``network`` is the network's digest (:func:`network_digest`); ``entry`` (a
    :class:`topokit.validation.corpus.CorpusEntry`) gives the weighting and the
    topology (links, DP devices, weights); ``settings`` the rest (skewness,
    validate's seed, targets, training options, the data's digest...).  Trial t
    of a topology depends on these and t only (validate seeds trial t alike
    whatever else it trains), not on how the topology was made: two methods that
    give the same topology share a key.
    """
    return digest(network, entry.weighting, entry.topology.to_dict(), settings)


def topokit_source() -> str:
    """A digest of topokit's Python source: what a design depends on besides its inputs."""
    package = Path(__file__).resolve().parents[1] / "topokit"
    return digest(*[path.read_bytes() for path in sorted(package.rglob("*.py"))])


def source_digest() -> str:
    """:func:`topokit_source` as this process found it first: the code it runs (an edit
    after the import changes the files, not the code running).  Part of the key of every
    saved run that a design made inside the run depends on."""
    if not _SOURCE:  # a list, not functools.cache, as training_digest
        _SOURCE.append(topokit_source())
    return _SOURCE[0]


_SOURCE: list[str] = []


def training_digest() -> str:
    """What the training code does now: a digest of two tiny seeded runs.

    Logistic regression and the MLP on the toy network, two DP devices,
    Metropolis-Hastings weights, skewness 0.5, 5 rounds; the final models and
    accuracies to 9 decimals.  It is part of every run key, so a change of the
    training code that changes results makes every saved run stale.  Computed
    once per process.
    """
    if not _TRAINING_DIGEST:  # a list, not functools.cache: joblib pickles __main__'s globals
        _TRAINING_DIGEST.append(_reference_runs_digest())
    return _TRAINING_DIGEST[0]


_TRAINING_DIGEST: list[str] = []


def _reference_runs_digest() -> str:
    import numpy as np

    import topokit
    from topokit.design.baselines import ndlf
    from topokit.training import load_digits, train

    net = topokit.load_example("toy")
    plain = topokit.Topology(ndlf(net).edges, net.nodes[:2])
    topology = topokit.design.metropolis_hastings_topology(plain, net)
    X, y = load_digits()
    parts = []
    for model in ("logreg", "mlp"):
        run = train(net, topology, X, y, rounds=5, partition=0.5, seed=0, model=model)
        parts += [np.round(run.final_params, 9).tobytes(), np.round(run.accuracy, 9).tobytes()]
    return digest(*parts)


def network_digest(net) -> str:
    """What of a network decides its training runs: devices, social links, compute, delays.

    Examples
    --------
    >>> from topokit import load_example
    >>> network_digest(load_example("toy")) == network_digest(load_example("toy"))
    True
    """
    import numpy as np

    edges = sorted((repr(u), repr(v)) for u, v in net.social.edges)
    return digest([repr(node) for node in net.nodes], edges,
                  np.ascontiguousarray(net.compute_time).tobytes(),
                  np.ascontiguousarray(net.delay).tobytes())


def read_runs(path: Path):
    """The runs saved at ``path`` (an empty table if there is no file).

    Runs of a file written before run keys get ``run_key`` None: nothing vouches for
    their inputs until :func:`adopt_legacy` checks them.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "runs.parquet"
    ...     before = read_runs(path)
    ...     _ = write_runs(path, pd.DataFrame({"topology": ["ring"], "trial": [0]}))
    ...     legacy = read_runs(path)
    >>> list(before.columns), len(before)
    (['topology', 'trial', 'run_key'], 0)
    >>> legacy["run_key"].tolist()
    [None]
    """
    import pandas as pd

    frame = (pd.read_parquet(path) if path.exists()
             else pd.DataFrame({"topology": [], "trial": [], RUN_KEY: []}))
    if RUN_KEY not in frame.columns:
        frame[RUN_KEY] = None
    return frame.astype({RUN_KEY: object})


def reusable_runs(saved, keys: dict[str, str], trials: int):
    """(saved runs to reuse, names to train) for the topologies ``keys`` (name -> run key).

    A topology's runs are reused only if every trial 0 .. ``trials`` - 1 was saved
    under its key, i.e. from identical inputs (under its name or another's: two
    names of one topology share their runs); otherwise all its trials are trained
    again (validate trains every trial of a topology it is given).

    Examples
    --------
    "ring" has both trials saved, "star" only one, "grid" none:

    >>> import pandas as pd
    >>> saved = pd.DataFrame({"topology": ["ring", "ring", "star"], "trial": [0, 1, 0],
    ...                       "run_key": ["k1", "k1", "k2"]})
    >>> keys = {"ring": "k1", "ring-copy": "k1", "star": "k2", "grid": "k3"}
    >>> reused, missing = reusable_runs(saved, keys, trials=2)
    >>> reused[["topology", "trial"]].values.tolist()
    [['ring', 0], ['ring', 1], ['ring-copy', 0], ['ring-copy', 1]]
    >>> missing
    ['star', 'grid']
    """
    import pandas as pd

    current = saved[saved[RUN_KEY].isin(set(keys.values())) & (saved["trial"] < trials)]
    sources = {}  # run key -> the runs of one saved name with every trial under it
    for (_, key), rows in current.groupby(["topology", RUN_KEY], sort=False):
        if set(rows["trial"]) == set(range(trials)):
            sources.setdefault(key, rows)
    reused = [sources[key].assign(topology=name) for name, key in keys.items() if key in sources]
    missing = [name for name, key in keys.items() if key not in sources]
    return (pd.concat(reused, ignore_index=True) if reused else saved.iloc[:0]), missing


def adopt_legacy(saved, expected, keys: dict[str, str], targets, columns, optional=()):
    """``saved`` with its unkeyed runs given the key of the topology they are shown to be.

    ``expected`` has one row per (topology, trial) to train now: its ``seed`` and
    ``columns`` (structural metrics such as ``n_links``, ``hitting_time``) as the
    current topology gives them, and the ``optional`` ones, compared only where
    the saved runs recorded them (not NaN).  A topology's unkeyed runs are adopted
    only if, for every trial, there is exactly one row per target in ``targets``,
    with that seed and those metrics (relative 1e-9): the same graph, DP set and
    trial seeds.

    Examples
    --------
    Two unkeyed runs; only the ring's seed and link count match what it trains now:

    >>> import pandas as pd
    >>> saved = pd.DataFrame({"topology": ["ring", "star"], "trial": [0, 0],
    ...                       "target": [0.9, 0.9], "seed": [7, 7], "n_links": [4, 3],
    ...                       "run_key": [None, None]})
    >>> expected = pd.DataFrame({"topology": ["ring", "star"], "trial": [0, 0],
    ...                          "seed": [7, 8], "n_links": [4, 3]})
    >>> adopted = adopt_legacy(saved, expected, {"ring": "k1", "star": "k2"},
    ...                        targets=[0.9], columns=("n_links",))
    >>> adopted["run_key"].tolist()
    ['k1', None]
    """
    saved = saved.copy()
    legacy = saved[RUN_KEY].isna()
    for name, want in expected.groupby("topology"):
        if name not in keys:
            continue
        mine = legacy & (saved["topology"] == name) & saved["trial"].isin(want["trial"])
        rows = saved[mine]
        recorded = [c for c in optional if c in rows.columns and rows[c].notna().all()]
        if len(rows) != len(want) * len(targets) or not all(
                _legacy_trial_matches(rows[rows["trial"] == trial], trial_want, targets,
                                      (*columns, *recorded))
                for trial, trial_want in want.groupby("trial")):
            continue
        saved.loc[mine, RUN_KEY] = keys[name]
    return saved


def adopt_from(saved, sources, expected, keys: dict[str, str], trials: int, targets):
    """``saved`` with runs adopted from ``sources`` (tables written before run keys, the
    first preferred) for the topologies whose runs are not saved under their key.

    ``expected``: :func:`legacy_metrics` of the topologies; a source's runs of a
    topology are adopted only when they match it (:func:`adopt_legacy`).  A source
    may be ``saved`` itself (a file that holds runs of both kinds).
    """
    import pandas as pd

    for source in sources:
        open_names = reusable_runs(saved, keys, trials)[1]
        if not open_names:
            break
        adopted = adopt_legacy(source, expected[expected["topology"].isin(open_names)], keys,
                               targets, LEGACY_COLUMNS, LEGACY_OPTIONAL)
        adopted = adopted[adopted[RUN_KEY].notna() & adopted["topology"].isin(open_names)]
        if len(adopted):
            saved = pd.concat([saved[~saved["topology"].isin(adopted["topology"])], adopted],
                              ignore_index=True)
    return saved


#: A part saved before run keys: ``STEM_<16 hex digits>.parquet``, one per set of topologies.
_LEGACY_PART = re.compile(r"_[0-9a-f]{16}\.parquet$")


def legacy_parts(folder: Path, stem: str) -> list[Path]:
    """The parts of ``stem`` in ``folder`` written before run keys, newest first.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     for name in ("toy_K0.runs.parquet", "toy_K0_0123456789abcdef.parquet",
    ...                  "toy_K0_mlp_0123456789abcdef.parquet"):
    ...         _ = (Path(folder) / name).write_bytes(b"")
    ...     [path.name for path in legacy_parts(Path(folder), "toy_K0")]
    ['toy_K0_0123456789abcdef.parquet']
    """
    found = [path for path in folder.glob(f"{stem}_*.parquet")
             if _LEGACY_PART.search(path.name) and path.name[:-len(_HEX_TAIL)] == stem]
    return sorted(found, key=lambda path: path.stat().st_mtime, reverse=True)


_HEX_TAIL = "_0123456789abcdef.parquet"


def _legacy_trial_matches(rows, want, targets, columns) -> bool:
    import numpy as np

    if sorted(np.round(rows["target"], 6)) != sorted(np.round(targets, 6)):
        return False
    if not (rows["seed"] == want["seed"].iloc[0]).all():
        return False
    return all(c in rows.columns and np.allclose(rows[c].to_numpy(float), float(want[c].iloc[0]),
                                                 rtol=1e-9, atol=0.0, equal_nan=True)
               for c in columns)


def legacy_metrics(net, entries: dict, seed: int, trials: int):
    """One row per (topology, trial): its seed and :data:`LEGACY_COLUMNS` (and
    :data:`LEGACY_OPTIONAL`), what a run saved before run keys must show to be adopted."""
    import pandas as pd

    import topokit
    from topokit.validation import trial_seed

    rows = []
    for name, entry in entries.items():
        metrics = topokit.evaluate(net, entry.topology)
        values = {column: float(getattr(metrics, column))
                  for column in (*LEGACY_COLUMNS, *LEGACY_OPTIONAL)}
        rows += [{"topology": name, "trial": t, "seed": trial_seed(seed, t), **values}
                 for t in range(trials)]
    return pd.DataFrame(rows, columns=["topology", "trial", "seed", *LEGACY_COLUMNS,
                                       *LEGACY_OPTIONAL])


def merge_runs(saved, trained, keys: dict[str, str]):
    """What a runs file keeps: saved runs but the stale ones, and the runs trained now.

    Stale: runs of a topology in ``keys`` under another key (its inputs changed) or
    that it was trained again.  Runs of topologies not asked for now (another
    weighting, another method) are kept for a later call.  ``trained`` gets the
    key of its topology.

    Examples
    --------
    "ring" was trained again, "star" is stale (its key changed), "grid" was not
    asked for:

    >>> import pandas as pd
    >>> saved = pd.DataFrame({"topology": ["ring", "star", "grid"], "trial": [0, 0, 0],
    ...                       "run_key": ["k1", "k2", "k3"]})
    >>> trained = pd.DataFrame({"topology": ["ring"], "trial": [0]})
    >>> merged = merge_runs(saved, trained, {"ring": "k1", "star": "k2-new"})
    >>> merged[["topology", "run_key"]].values.tolist()
    [['grid', 'k3'], ['ring', 'k1']]
    """
    import pandas as pd

    trained = trained.assign(**{RUN_KEY: trained["topology"].map(keys).astype(object)})
    redone = saved["topology"].isin(trained["topology"].unique())
    stale = saved["topology"].map(keys).ne(saved[RUN_KEY]) & saved["topology"].isin(keys)
    kept = saved[~redone & ~stale]
    parts = [frame for frame in (kept, trained) if len(frame)]
    merged = pd.concat(parts, ignore_index=True) if parts else trained
    return merged.astype({RUN_KEY: object})


def write_runs(path: Path, frame) -> Path:
    """Write a runs table atomically (an interrupted write leaves the old file)."""
    from topokit._io import atomic_write_bytes

    return atomic_write_bytes(path, frame.to_parquet(index=False))


def cached_runs(path: Path, keys: dict[str, str], trials: int,
                train: Callable[[list[str], Path], Any], *, saved=None, fresh: bool = False):
    """(runs reused, runs trained now) of every topology of ``keys`` (name -> run key).

    The runs saved at ``path`` (or ``saved``, e.g. with legacy runs adopted) are
    reused where :func:`reusable_runs` allows; ``train(missing, scratch)`` trains
    the others, its :func:`topokit.validate` writing its resumable pieces beside
    ``path`` at ``scratch`` (named for the job, so an interrupted call resumes).
    The file then keeps :func:`merge_runs`'s runs and the scratch files are
    removed.  ``fresh`` trains every topology again.  The trained runs get their
    run key.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> def train(missing, scratch):
    ...     return pd.DataFrame({"topology": missing, "trial": 0})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "cell.runs.parquet"
    ...     _, first = cached_runs(path, {"ring": "k1"}, 1, train)
    ...     reused, again = cached_runs(path, {"ring": "k1", "star": "k2"}, 1, train)
    >>> first["topology"].tolist(), reused["topology"].tolist(), again["run_key"].tolist()
    (['ring'], ['ring'], ['k2'])
    """
    from topokit.validation import curves_path, timings_path

    saved = read_runs(path) if saved is None else saved
    reused, missing = reusable_runs(saved, keys, trials)
    if fresh:
        reused, missing = reused.iloc[:0], list(keys)
    if not missing:
        return reused, reused.iloc[:0]
    stem = path.name.removesuffix(".parquet").removesuffix(".runs")
    scratch = path.with_name(f"{stem}.training-{digest(sorted(keys[n] for n in missing))[:16]}"
                             ".parquet")
    trained = train(missing, scratch)
    write_runs(path, merge_runs(saved, trained, keys))
    for leftover in (scratch, curves_path(scratch), timings_path(scratch)):
        leftover.unlink(missing_ok=True)
    return reused, trained.assign(**{RUN_KEY: trained["topology"].map(keys).astype(object)})


# ---------------------------------------------------------------------------------------------
# Settings: the topologies of one network at one skewness with one model, trained under keys
# ---------------------------------------------------------------------------------------------


class Setting(NamedTuple):
    """The runs of one network at one skewness with one model: every topology, every trial.

    ``spec`` is a :class:`topokit.validation.corpus.NetworkSpec`, ``topologies`` name ->
    :class:`topokit.validation.corpus.CorpusEntry`; ``stem`` names its saved runs.

    Examples
    --------
    >>> from topokit.validation.corpus import NetworkSpec
    >>> Setting(NetworkSpec(6, example="toy"), 0.4, "logreg", {}).stem
    'toy_K0.4_logreg'
    """

    spec: Any
    skewness: float
    model: str
    topologies: dict

    @property
    def stem(self) -> str:
        return f"{self.spec.name}_K{self.skewness:g}_{self.model}"


def setting_keys(setting: Setting, net, settings: dict[str, Any]) -> dict[str, str]:
    """name -> run key (:func:`run_key`) of every topology of ``setting`` on ``net``.

    The settings of each key are ``settings`` (targets, training options, seed,
    data...) with the setting's skewness and model and :func:`training_digest`.
    """
    settings = {"skewness": setting.skewness, "model": setting.model, **settings,
                "training": training_digest()}
    network = network_digest(net)
    return {name: run_key(network, entry, settings) for name, entry in setting.topologies.items()}


def saved_setting_runs(setting: Setting, parts: Path, keys: dict[str, str], trials: int,
                       targets, legacy: Callable[[], Any] | None = None):
    """The saved runs of ``setting`` (``parts``/STEM.runs.parquet).

    With ``legacy``, the runs of its parts written before run keys (:func:`legacy_parts`,
    the newest preferred) are adopted for the topologies not saved under their key
    (:func:`adopt_from`), while the training code is the one that made them
    (:data:`LEGACY_TRAINING`); ``legacy()`` gives the topologies' :func:`legacy_metrics`,
    computed only when a part may be adopted.
    """
    saved = read_runs(parts / f"{setting.stem}.runs.parquet")
    old = legacy_parts(parts, setting.stem)
    if (legacy is None or not old or not reusable_runs(saved, keys, trials)[1]
            or training_digest() != LEGACY_TRAINING):
        return saved
    return adopt_from(saved, (read_runs(path) for path in old), legacy(), keys, trials, targets)


def train_setting(setting: Setting, net, parts: Path, keys: dict[str, str], trials: int,
                  seed: int, *, targets, legacy: Callable[[], Any] | None = None, **options):
    """(runs reused, runs trained now) of every topology of ``setting`` on ``net``.

    :func:`cached_runs` of ``parts``/STEM.runs.parquet (:func:`saved_setting_runs`, with
    ``legacy``); the topologies whose runs are not saved train through
    :func:`topokit.validation.corpus.train_runs` (validate seeded ``seed``, at the
    setting's skewness, with its model and ``targets``; ``options`` such as ``rounds``,
    ``X``, ``y`` and ``predictor`` go to validate).
    """
    from topokit.validation.corpus import train_runs

    def train(missing: list[str], scratch: Path):
        return train_runs(net, {name: setting.topologies[name].topology for name in missing},
                          trials, seed, setting.skewness, keys, targets=targets,
                          output=scratch, model=setting.model, **options)

    saved = saved_setting_runs(setting, parts, keys, trials, targets, legacy)
    return cached_runs(parts / f"{setting.stem}.runs.parquet", keys, trials, train, saved=saved)


def trained_cost(trained, model: str):
    """One row of what was trained now: ``model``, ``n_runs`` (a copy of a run under
    another name is no run) and their ``wall_clock`` seconds (NaN when none).

    Examples
    --------
    >>> import pandas as pd
    >>> trained = pd.DataFrame({"run_key": ["k1", "k1", "k2"], "trial": 0,
    ...                         "wall_clock": [2.0, 2.0, 3.0]})
    >>> trained_cost(trained, "logreg").to_dict("records")
    [{'model': 'logreg', 'n_runs': 2, 'wall_clock': 5.0}]
    """
    import numpy as np
    import pandas as pd

    runs = trained.drop_duplicates([RUN_KEY, "trial"])
    return pd.DataFrame({"model": [model], "n_runs": [len(runs)],
                         "wall_clock": [runs["wall_clock"].sum() if len(runs) else np.nan]})


def cost_summary(cost) -> dict[str, Any]:
    """The runs trained now and the mean training seconds of a run, per model, of the
    :func:`trained_cost` rows of every setting.

    Examples
    --------
    >>> import pandas as pd
    >>> cost_summary(pd.DataFrame({"model": ["mlp", "mlp", "logreg"], "n_runs": [2, 4, 0],
    ...                            "wall_clock": [3.0, 4.0, float("nan")]}))
    {'runs_trained': 6, 'wall_clock': {'mlp': 1.25}}
    """
    per_run = (cost["wall_clock"] / cost["n_runs"]).groupby(cost["model"]).mean().dropna()
    return {"runs_trained": int(cost["n_runs"].sum()), "wall_clock": per_run.to_dict()}
