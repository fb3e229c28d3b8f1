"""Comparing designs on measured runs: paired ratios, bootstrap intervals, win rates,
geometric speed-ups and the hindsight ceiling.

Every function reads a *times table*: one row per (setting, trial, method), where
the columns ``by`` name the setting (a network, a skewness, a model...), ``trial``
numbers the trials, ``method`` names the design, and a time column (``value``,
default ``"censored"``) holds the time to the target accuracy.
:func:`time_to_target` makes one from the runs table of :func:`topokit.validate`.

Trial t of every method of a setting should train with the same seed (as
:func:`~topokit.validate` trains them: common random numbers), so two methods are
compared trial by trial: the ratio of their times in each trial, then the median
of those ratios over the trials of the setting, with a bootstrap interval over
trials.  Speed-ups over settings are geometric means of those medians.

A run that never reaches the target within T rounds counts as T + 1 rounds
(``censored``): the ratio is then a lower bound when the method never reaches it,
an upper bound when the reference never does.

=================================  =====================================================
function                           what it gives
=================================  =====================================================
:func:`time_to_target`             the times table of a runs table at one target
:func:`best_per_trial`             an oracle: the fastest of several topologies, each trial
:func:`bootstrap_median_interval`  percentile interval of a median, resampled
:func:`ratios_to_reference`        every method's paired median ratio to a reference
:func:`paired_ratios`              paired median ratios of chosen pairs of methods
:func:`ratio_summary`              geometric mean of the ratios, intervals off 1
:func:`ratio_summaries`            :func:`ratio_summary` of each pair, overall and by group
:func:`win_rates`                  settings won / tied / lost against every other method
:func:`geometric_speedups`         geometric-mean speed-up over the reference by group
:func:`hindsight_ceiling`          the speed-up of the best topology, chosen afterwards
:func:`never_reached`              settings and runs that never reach the target
=================================  =====================================================
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._checks import check_int_at_least, check_real
from .._random import SeedLike, check_random_state, int_seed, keyed_seed
from ..errors import InvalidInputError

__all__ = [
    "time_to_target",
    "best_per_trial",
    "bootstrap_median_interval",
    "ratios_to_reference",
    "paired_ratios",
    "ratio_summary",
    "ratio_summaries",
    "win_rates",
    "geometric_speedups",
    "hindsight_ceiling",
    "never_reached",
]

#: The generator of one bootstrap interval, for a setting's key and a (top, bottom) pair.
_Streams = Callable[[Any, str, str], np.random.Generator]


def _check_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise InvalidInputError(f"{what} must be a pandas DataFrame; got {type(frame).__name__}")
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise InvalidInputError(
            f"{what} lacks column(s) {', '.join(map(repr, missing))}; it has "
            f"{', '.join(map(repr, frame.columns))}"
        )


def _check_by(by: Sequence[str] | str) -> list[str]:
    """``by`` as a list of column names (one name may be given as a string)."""
    names = [by] if isinstance(by, str) else list(by)
    if not names or not all(isinstance(name, str) for name in names):
        raise InvalidInputError(f"by must name the setting's columns; got {by!r}")
    return names


def _wide(times: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """One row per (setting, trial), one column per method (duplicates averaged)."""
    _check_columns(times, [*by, "trial", "method", value], "the times table")
    return times.pivot_table(index=[*by, "trial"], columns="method", values=value)


def _check_methods(wide: pd.DataFrame, methods: Sequence[str]) -> None:
    absent = [method for method in dict.fromkeys(methods) if method not in wide.columns]
    if absent:
        raise InvalidInputError(
            f"no run of method(s) {', '.join(map(repr, absent))} in the times table; it has "
            f"{', '.join(map(repr, wide.columns))}"
        )


def time_to_target(runs: pd.DataFrame, target: float, *, horizon: int) -> pd.DataFrame:
    """The runs at ``target``, with their time to it, plain and censored.

    Parameters
    ----------
    runs : DataFrame
        Runs of :func:`topokit.validate` (one row per run and target): columns
        ``target``, ``measured_rounds`` (NaN: never reached) and
        ``local_iterate`` (L, seconds a round), and, where given,
        ``measured_time`` (the run's seconds to the target: rounds x L, or for a
        time-varying topology the sum of its rounds' times).
    target : float
        The target accuracy whose rows are kept (compared with a tolerance).
    horizon : int
        T, the rounds every run was given.

    Returns
    -------
    DataFrame
        The rows of ``target`` (index reset) with ``time`` (``measured_time``,
        else rounds x L; ``inf`` when never reached) and ``censored`` (the time,
        or (T + 1) x L when not reached within T; L is a schedule's mean round time).

    Examples
    --------
    >>> runs = pd.DataFrame({"target": [0.9, 0.9, 0.8], "measured_rounds": [10, None, 5],
    ...                      "local_iterate": [2.0, 2.0, 2.0]})
    >>> time_to_target(runs, 0.9, horizon=100)[["time", "censored"]]
       time  censored
    0  20.0      20.0
    1   inf     202.0
    """
    _check_columns(runs, ["target", "measured_rounds", "local_iterate"], "the runs table")
    target = check_real(target, "target", low=0, high=1, closed="right")
    horizon = check_int_at_least(horizon, "horizon", 1)
    rows = runs[np.isclose(runs["target"], target)].reset_index(drop=True)
    rounds = rows["measured_rounds"].fillna(np.inf).to_numpy(float)
    L = rows["local_iterate"].to_numpy(float)
    time = rounds * L
    if "measured_time" in rows:  # a schedule's rounds each take their own time
        measured = rows["measured_time"].to_numpy(float)
        time = np.where(np.isfinite(rounds) & np.isfinite(measured), measured, time)
    return rows.assign(time=time, censored=np.where(rounds <= horizon, time, (horizon + 1) * L))


def best_per_trial(times: pd.DataFrame, candidates: str, *,
                   by: Sequence[str] | str = ("network",), name: str | None = None,
                   value: str = "censored") -> pd.DataFrame:
    """The times table with the runs of ``candidates`` replaced by the fastest of them in
    each trial.

    Where several topologies of one method ran in every trial (random topologies, say),
    the one with the smallest ``value`` in each (setting, trial) stays, as the method
    ``name``.  The choice is made on the measured times: an oracle no design method
    is, which shows what picking the best of those topologies could give at most.

    Parameters
    ----------
    times : DataFrame
        The times table (columns ``by``, ``trial``, ``method``, ``value``).
    candidates : str
        The method whose runs compete.
    by : sequence of str, default ("network",)
        The columns that name a setting.
    name : str, optional
        The method of the chosen runs (default ``f"{candidates}-best"``).
    value : str, default "censored"
        The time compared.

    Returns
    -------
    DataFrame
        The rows of the other methods, in their order, then one row per (setting,
        trial) of the fastest candidate (index reset).  Without a run of
        ``candidates``: the other rows.

    Examples
    --------
    >>> times = pd.DataFrame({"network": "a", "trial": [0, 0, 0, 1, 1, 1],
    ...                       "method": ["ndlf", "random", "random"] * 2,
    ...                       "censored": [10.0, 12.0, 9.0, 11.0, 8.0, 14.0]})
    >>> best_per_trial(times, "random")
      network  trial       method  censored
    0       a      0         ndlf      10.0
    1       a      1         ndlf      11.0
    2       a      0  random-best       9.0
    3       a      1  random-best       8.0
    """
    by = _check_by(by)
    _check_columns(times, [*by, "trial", "method", value], "the times table")
    others = times[times["method"] != candidates]
    pool = times[times["method"] == candidates]
    if pool.empty:
        return others.reset_index(drop=True)
    best = pool.loc[pool.groupby([*by, "trial"])[value].idxmin()]
    label = f"{candidates}-best" if name is None else str(name)
    return pd.concat([others, best.assign(method=label)], ignore_index=True)


def bootstrap_median_interval(values: ArrayLike, *, n_resamples: int = 2000,
                              confidence: float = 0.95,
                              seed: SeedLike = None) -> tuple[float, float]:
    """Percentile bootstrap interval of the median of ``values``.

    ``n_resamples`` samples of ``len(values)`` values are drawn with
    replacement; the interval runs between the (1 - confidence) / 2 and
    (1 + confidence) / 2 quantiles of their medians.

    Parameters
    ----------
    values : array-like of shape (n,)
        One value per trial (NaN propagates to the interval).
    n_resamples : int, default 2000
    confidence : float in (0, 1), default 0.95
    seed : int, Generator or None
        A Generator is drawn from (and advances).

    Returns
    -------
    (float, float)
        The interval's low and high ends.

    Examples
    --------
    >>> low, high = bootstrap_median_interval([0.9, 1.0, 1.1, 1.2], seed=0)
    >>> 0.9 <= low <= 1.05 <= high <= 1.2
    True
    """
    values = np.asarray(values, dtype=float).ravel()
    if values.size == 0:
        raise InvalidInputError("bootstrap_median_interval needs at least one value; got none")
    n_resamples = check_int_at_least(n_resamples, "n_resamples", 1)
    half = 50.0 * check_real(confidence, "confidence", low=0, high=1, closed="neither")
    draws = check_random_state(seed).integers(0, values.size, size=(n_resamples, values.size))
    medians = np.median(values[draws], axis=1)
    low, high = np.percentile(medians, [50.0 - half, 50.0 + half])
    return float(low), float(high)


def _median_ratio_rows(wide: pd.DataFrame, by: list[str], pairs: Sequence[tuple[str, str]],
                       streams: _Streams, n_resamples: int, confidence: float,
                       extra: Callable[[Any, pd.DataFrame, str], dict] | None = None
                       ) -> list[dict]:
    """Per setting and pair: the median over trials of top / bottom, with its interval
    (and ``extra(key, group, top)``'s columns)."""
    rows = []
    for key, group in wide.groupby(level=by, sort=False):
        for top, bottom in pairs:
            ratio = (group[top] / group[bottom]).to_numpy(float)
            low, high = bootstrap_median_interval(ratio, n_resamples=n_resamples,
                                                  confidence=confidence,
                                                  seed=streams(key, top, bottom))
            rows.append({**dict(zip(by, key, strict=True)), "top": top, "bottom": bottom,
                         "ratio": float(np.median(ratio)), "ci_low": low, "ci_high": high,
                         "trials": int(ratio.size),
                         **(extra(key, group, top) if extra else {})})
    return rows


def _stream(seed: int, label: Hashable) -> np.random.Generator:
    """The bootstrap generator of ``label`` (a setting's key, or with a comparison's name)."""
    return np.random.default_rng(keyed_seed(seed, zlib.crc32(repr(label).encode())))


def ratios_to_reference(times: pd.DataFrame, reference: str, *,
                        by: Sequence[str] | str = ("network",), value: str = "censored",
                        n_resamples: int = 2000, confidence: float = 0.95,
                        seed: SeedLike = 0) -> pd.DataFrame:
    """Every method's time over the reference's, paired by trial, per setting.

    Parameters
    ----------
    times : DataFrame
        The times table: columns ``by``, ``trial``, ``method``, ``value`` and,
        to count the trials that never reached the target, ``time`` (``inf``:
        never; :func:`time_to_target`).
    reference : str
        The method every ratio is to (its own ratio is 1).
    by : sequence of str, default ("network",)
        The columns that name a setting.
    value : str, default "censored"
        The time compared.
    n_resamples, confidence
        Of the bootstrap interval (:func:`bootstrap_median_interval`).
    seed : int, Generator or None, default 0
        Each setting's intervals are drawn from one stream keyed by ``seed``
        and the setting (its methods in column order), so adding a setting
        changes no other setting's interval.

    Returns
    -------
    DataFrame
        One row per (setting, method): the ``by`` columns, ``method``,
        ``median_time`` (median over trials of ``value``), ``ratio`` (median
        over trials of the paired ratio), ``ci_low``, ``ci_high``,
        ``never_trials`` (trials whose ``time`` is not finite; 0 without a
        ``time`` column) and ``trials``.

    Examples
    --------
    >>> times = pd.DataFrame({"network": "a", "trial": [0, 0, 1, 1],
    ...                       "method": ["ndlf", "mine", "ndlf", "mine"],
    ...                       "censored": [10.0, 8.0, 20.0, 18.0]})
    >>> table = ratios_to_reference(times, "ndlf")
    >>> table[["method", "median_time", "ratio", "trials"]]
      method  median_time  ratio  trials
    0   mine         13.0   0.85       2
    1   ndlf         15.0   1.00       2
    """
    by = _check_by(by)
    wide = _wide(times, by, value)
    _check_methods(wide, [reference])
    seed = int_seed(seed)
    streams: dict[Any, np.random.Generator] = {}

    def per_setting(key: Any, top: str, bottom: str) -> np.random.Generator:
        return streams.setdefault(key, _stream(seed, key))

    never = _never_wide(times, by)

    def per_method(key: Any, group: pd.DataFrame, method: str) -> dict[str, Any]:
        return {"median_time": float(np.median(group[method])),
                "never_trials": 0 if never is None else int(never.loc[key, method].sum())}

    pairs = [(method, reference) for method in wide.columns]
    rows = _median_ratio_rows(wide, by, pairs, per_setting, n_resamples, confidence, per_method)
    return pd.DataFrame(rows).rename(columns={"top": "method"})[
        [*by, "method", "median_time", "ratio", "ci_low", "ci_high", "never_trials", "trials"]]


def _never_wide(times: pd.DataFrame, by: list[str]) -> pd.DataFrame | None:
    """1 where a (setting, trial)'s run of a method never reached the target (its ``time``
    is not finite), one column per method; None without a ``time`` column."""
    if "time" not in times.columns:
        return None
    flagged = times.assign(never=~np.isfinite(times["time"].to_numpy(float)))
    return flagged.pivot_table(index=[*by, "trial"], columns="method", values="never",
                               aggfunc="max")


def paired_ratios(times: pd.DataFrame, pairs: Sequence[tuple[str, str]], *,
                  by: Sequence[str] | str = ("network",), value: str = "censored",
                  n_resamples: int = 2000, confidence: float = 0.95, seed: SeedLike = 0,
                  stream: Callable[[str, str], Hashable] | None = None) -> pd.DataFrame:
    """Chosen pairs of methods, paired by trial: the median ratio per setting.

    Parameters
    ----------
    times : DataFrame
        The times table (columns ``by``, ``trial``, ``method``, ``value``).
    pairs : sequence of (str, str)
        (top, bottom): each ratio is top's time over bottom's in the same trial.
    by : sequence of str, default ("network",)
        The columns that name a setting.
    value : str, default "censored"
    n_resamples, confidence
        Of the bootstrap interval (:func:`bootstrap_median_interval`).
    seed : int, Generator or None, default 0
        The interval of each (setting, pair) has its own stream, keyed by
        ``seed``, the setting and the pair's label, so adding a pair or a
        setting changes no other interval.
    stream : callable, optional
        ``stream(top, bottom)``: the label of a pair's stream (default
        ``"top/bottom"``); pairs given one label share their stream.

    Returns
    -------
    DataFrame
        One row per (setting, pair): the ``by`` columns, ``top``, ``bottom``,
        ``ratio`` (median over trials), ``ci_low``, ``ci_high`` and ``trials``.

    Examples
    --------
    >>> times = pd.DataFrame({"network": "a", "trial": [0, 0, 1, 1],
    ...                       "method": ["lazy", "fast", "lazy", "fast"],
    ...                       "censored": [10.0, 5.0, 20.0, 16.0]})
    >>> paired_ratios(times, [("fast", "lazy")])[["top", "bottom", "ratio"]]
        top bottom  ratio
    0  fast   lazy   0.65
    """
    by = _check_by(by)
    pairs = [(str(top), str(bottom)) for top, bottom in pairs]
    if not pairs:
        raise InvalidInputError("pairs must list at least one (top, bottom) pair of methods")
    wide = _wide(times, by, value)
    _check_methods(wide, [method for pair in pairs for method in pair])
    seed, label = int_seed(seed), stream or (lambda top, bottom: f"{top}/{bottom}")

    def per_pair(key: Any, top: str, bottom: str) -> np.random.Generator:
        return _stream(seed, (key, label(top, bottom)))

    return pd.DataFrame(_median_ratio_rows(wide, by, pairs, per_pair, n_resamples, confidence))


def ratio_summary(ratios: pd.DataFrame) -> dict[str, Any]:
    """Over settings: the geometric mean of the median ratios, and the settings whose
    interval lies below / above 1.

    Parameters
    ----------
    ratios : DataFrame
        Rows of :func:`paired_ratios` or :func:`ratios_to_reference` (columns
        ``ratio``, ``ci_low``, ``ci_high``), usually of one comparison.

    Returns
    -------
    dict
        ``geometric_mean_ratio``, ``settings``, ``ci_below_1``, ``ci_above_1``.

    Examples
    --------
    >>> ratios = pd.DataFrame({"ratio": [0.5, 2.0, 0.25], "ci_low": [0.4, 0.9, 0.2],
    ...                        "ci_high": [0.6, 3.0, 0.3]})
    >>> ratio_summary(ratios)
    {'geometric_mean_ratio': 0.6299605249474366, 'settings': 3, 'ci_below_1': 2, 'ci_above_1': 0}
    """
    _check_columns(ratios, ["ratio", "ci_low", "ci_high"], "the ratios table")
    return {"geometric_mean_ratio": float(np.exp(np.log(ratios["ratio"]).mean())),
            "settings": int(len(ratios)),
            "ci_below_1": int((ratios["ci_high"] < 1).sum()),
            "ci_above_1": int((ratios["ci_low"] > 1).sum())}


def ratio_summaries(ratios: pd.DataFrame, *,
                    group: str | None = None) -> dict[str, dict[str, Any]]:
    """:func:`ratio_summary` of each pair of :func:`paired_ratios`, over every setting and,
    with ``group``, over the settings of each value of that column.

    Parameters
    ----------
    ratios : DataFrame
        Rows of :func:`paired_ratios` (columns ``top``, ``bottom``, ``ratio``,
        ``ci_low``, ``ci_high`` and ``group``).
    group : str, optional
        A column of the settings, such as ``"skewness"``.

    Returns
    -------
    dict
        ``"top/bottom"`` (in the order the pairs first appear) -> the entries of
        :func:`ratio_summary` and, with ``group``, ``f"by_{group}"``: value ->
        the summary of that value's settings (values sorted; numbers labelled
        ``f"{value:g}"``, as :func:`geometric_speedups` does).

    Examples
    --------
    >>> ratios = pd.DataFrame({"top": "fast", "bottom": "lazy", "skewness": [0.0, 0.8],
    ...                        "ratio": [0.9, 0.4], "ci_low": [0.8, 0.3],
    ...                        "ci_high": [1.1, 0.5]})
    >>> summary = ratio_summaries(ratios, group="skewness")["fast/lazy"]
    >>> round(summary["geometric_mean_ratio"], 3), summary["ci_below_1"]
    (0.6, 1)
    >>> {k: v["geometric_mean_ratio"] for k, v in summary["by_skewness"].items()}
    {'0': 0.9, '0.8': 0.4}
    """
    _check_columns(ratios, ["top", "bottom", *([group] if group else [])], "the ratios table")
    result = {}
    for (top, bottom), rows in ratios.groupby(["top", "bottom"], sort=False):
        entry = ratio_summary(rows)
        if group is not None:
            entry[f"by_{group}"] = {_label(value): ratio_summary(part)
                                    for value, part in rows.groupby(group)}
        result[f"{top}/{bottom}"] = entry
    return result


def _label(value: Any) -> str:
    """A group's label: ``f"{value:g}"`` for a number, else its text."""
    is_number = isinstance(value, (int, float, np.integer, np.floating))
    return f"{value:g}" if is_number and not isinstance(value, bool) else str(value)


def win_rates(times: pd.DataFrame, method: str, *, by: Sequence[str] | str = ("network",),
              value: str = "censored") -> dict[str, dict[str, Any]]:
    """``method`` against every other method: settings won, tied and lost.

    A setting is won when the median over its trials of the paired ratio
    time(method) / time(other) is below 1, lost when above.

    Parameters
    ----------
    times : DataFrame
        The times table (columns ``by``, ``trial``, ``method``, ``value``).
    method : str
    by : sequence of str, default ("network",)
    value : str, default "censored"

    Returns
    -------
    dict
        other method -> ``settings``, ``wins``, ``ties``, ``losses``,
        ``win_rate`` (share of settings won) and ``trial_win_rate`` (share of
        the paired trials won).

    Examples
    --------
    >>> times = pd.DataFrame({"network": ["a", "a", "b", "b"], "trial": 0,
    ...                       "method": ["mine", "ndlf", "mine", "ndlf"],
    ...                       "censored": [8.0, 10.0, 12.0, 10.0]})
    >>> win_rates(times, "mine")["ndlf"]["wins"], win_rates(times, "mine")["ndlf"]["losses"]
    (1, 1)
    """
    by = _check_by(by)
    wide = _wide(times, by, value)
    _check_methods(wide, [method])
    result = {}
    for other in wide.columns.drop(method):
        per_trial = wide[method] / wide[other]
        medians = per_trial.groupby(level=by).median()
        result[other] = {"settings": int(medians.size), "wins": int((medians < 1).sum()),
                         "ties": int((medians == 1).sum()), "losses": int((medians > 1).sum()),
                         "win_rate": float((medians < 1).mean()),
                         "trial_win_rate": float((per_trial < 1).mean())}
    return result


def geometric_speedups(ratios: pd.DataFrame, *, by: str | None = None,
                       at_least: Sequence[float] = ()) -> dict[str, dict[str, float]]:
    """Geometric mean over settings of the reference's time over each method's.

    Parameters
    ----------
    ratios : DataFrame
        Rows of :func:`ratios_to_reference` (columns ``method``, ``ratio``
        and ``by``).
    by : str, optional
        A numeric column to group the settings by, such as ``"skewness"``.
    at_least : sequence of float, default ()
        Thresholds of ``by``: a group of the settings at or above each.

    Returns
    -------
    dict
        Group label -> method -> speed-up: one label per value of ``by``
        (``f"{value:g}"``), ``">=T"`` per threshold, and ``"all"``.

    Examples
    --------
    >>> ratios = pd.DataFrame({"method": "mine", "ratio": [0.5, 0.8, 0.5],
    ...                        "skewness": [0.0, 0.8, 0.8]})
    >>> speedups = geometric_speedups(ratios, by="skewness", at_least=[0.4])
    >>> sorted(speedups), speedups["0"]["mine"]
    (['0', '0.8', '>=0.4', 'all'], 2.0)
    """
    _check_columns(ratios, ["method", "ratio", *([by] if by else [])], "the ratios table")

    def speedup(frame: pd.DataFrame) -> dict[str, float]:
        return {m: float(np.exp(-np.log(g["ratio"]).mean())) for m, g in frame.groupby("method")}

    if by is None and len(at_least):
        raise InvalidInputError(f"at_least={list(at_least)!r} needs by: the column it bounds")
    result = {} if by is None else {f"{k:g}": speedup(g) for k, g in ratios.groupby(by)}
    for threshold in at_least:
        result[f">={threshold:g}"] = speedup(ratios[ratios[by] >= threshold])
    result["all"] = speedup(ratios)
    return result


def hindsight_ceiling(runs: pd.DataFrame, reference: str, *,
                      by: Sequence[str] | str = ("network",), over: str = "topology",
                      value: str = "censored", group: str | None = None,
                      at_least: Sequence[float] = ()) -> dict[str, float]:
    """The geometric-mean speed-up over the reference of the best topology of each
    setting, chosen with hindsight.

    Every topology trained in a setting has its median over trials of the
    paired ratio of its time to the reference's; the setting's ceiling is the
    smallest.  No design method has this choice (it is made on the measured
    times, and the smallest of many noisy medians is biased low), so it bounds
    from above what choosing among these topologies can give: a speed-up goal
    above it is out of their reach.

    Parameters
    ----------
    runs : DataFrame
        One row per (setting, trial, topology): columns ``by``, ``trial``,
        ``over`` and ``value``.
    reference : str
        The value of ``over`` every ratio is to.
    by : sequence of str, default ("network",)
        The columns that name a setting.
    over : str, default "topology"
        The column whose values are the candidates (every topology, not only
        every method: each random topology counts).
    value : str, default "censored"
    group, at_least
        As :func:`geometric_speedups`'s ``by`` and ``at_least``; ``group``
        must be one of ``by``.

    Returns
    -------
    dict
        Group label -> speed-up, as :func:`geometric_speedups`.

    Examples
    --------
    >>> runs = pd.DataFrame({"network": "a", "skewness": 0.8, "trial": [0, 0, 0],
    ...                      "topology": ["ndlf", "x", "y"], "censored": [10.0, 5.0, 8.0]})
    >>> hindsight_ceiling(runs, "ndlf", by=["network", "skewness"], group="skewness",
    ...                   at_least=[0.4])
    {'0.8': 2.0, '>=0.4': 2.0, 'all': 2.0}
    """
    by = _check_by(by)
    _check_columns(runs, [*by, "trial", over, value], "the runs table")
    if group is not None and group not in by:
        raise InvalidInputError(f"group must be one of by {by!r}; got {group!r}")
    wide = runs.pivot_table(index=[*by, "trial"], columns=over, values=value)
    _check_methods(wide, [reference])
    medians = wide.div(wide[reference], axis=0).groupby(level=by).median()
    best = medians.min(axis=1).rename("ratio").reset_index().assign(method="hindsight")
    return {key: speedups["hindsight"]
            for key, speedups in geometric_speedups(best, by=group, at_least=at_least).items()}


def never_reached(times: pd.DataFrame, *,
                  by: Sequence[str] | str = ("network",)) -> dict[str, dict[str, int]]:
    """Per method: the settings and runs that never reach the target.

    Parameters
    ----------
    times : DataFrame
        The times table with ``time`` (``inf``: never reached; columns
        ``by``, ``trial``, ``method``, ``time``).
    by : sequence of str, default ("network",)

    Returns
    -------
    dict
        method -> ``settings_never`` (settings where most trials never reach
        it), ``settings_any_never`` (some trial never does), ``settings``,
        ``runs_never`` and ``runs``.

    Examples
    --------
    >>> times = pd.DataFrame({"network": "a", "trial": [0, 1, 2], "method": "mine",
    ...                       "time": [5.0, float("inf"), float("inf")]})
    >>> never_reached(times)["mine"]
    {'settings_never': 1, 'settings_any_never': 1, 'settings': 1, 'runs_never': 2, 'runs': 3}
    """
    by = _check_by(by)
    _check_columns(times, [*by, "trial", "method", "time"], "the times table")
    wide = _never_wide(times, by)
    settings = wide.groupby(level=by, sort=False)
    never_trials, trials = settings.sum(), settings.size()
    result = {}
    never = ~np.isfinite(times["time"].to_numpy(float))
    for method, runs in pd.Series(never).groupby(times["method"].to_numpy()):
        majority = 2 * never_trials[method] > trials
        result[method] = {"settings_never": int(majority.sum()),
                          "settings_any_never": int((never_trials[method] > 0).sum()),
                          "settings": int(len(trials)),
                          "runs_never": int(runs.sum()), "runs": int(len(runs))}
    return result
