"""Helpers shared by the analysis scripts: output folder, machine description, JSON and table
dumps, the ``--quick`` command line, and the saved runs of the predictor corpus and the
design benchmark (:func:`cached_runs`).

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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
                 empty: str) -> tuple[str, ...]:
    """The names of a comma-separated ``option`` value, in the order of ``choices``.

    An unknown name, or none, ends in one line that lists the choices.

    Examples
    --------
    >>> parse_subset("c, a", ("a", "b", "c"), "--letters", "letter", "no letter given")
    ('a', 'c')
    >>> parse_subset("a,z", ("a", "b"), "--abc", "letter", "none")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: --abc: unknown letter 'z'; give a ... subset of a,b
    """
    from topokit.errors import InvalidInputError

    names = [name.strip() for name in str(text).split(",") if name.strip()]
    unknown = [name for name in names if name not in choices]
    if unknown or not names:
        got = f"unknown {noun} {unknown[0]!r}" if unknown else empty
        raise InvalidInputError(f"{option}: {got}; give a comma-separated subset of "
                                f"{','.join(choices)}")
    return tuple(name for name in choices if name in names)


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
