"""``topokit validate`` and ``topokit calibrate``: predicted against measured training time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from .._checks import check_real
from ..design import DEFAULT_AUDIT_ROUNDS
from ..errors import InvalidInputError, TopokitError
from ._common import (
    DesignPredictorOpt,
    ExampleOpt,
    JsonOpt,
    NetworkArg,
    check_jobs_option,
    check_output_option,
    check_outputs_apart,
    check_plot_path,
    check_predictor_option,
    check_seed_option,
    console,
    handles_user_errors,
    naming_options,
    predictor_file,
    print_json,
    reporting_progress,
    resolve_network,
)
from .ceiling import DataLabelOpt, check_data_options, load_data_option

if TYPE_CHECKING:
    from ..training.user_data import TableData

__all__ = ["validate_command", "calibrate_command", "parse_targets"]

HOUR = 3600.0


def parse_targets(text: str) -> list[float]:
    """``"0.85,0.9"`` -> [0.85, 0.9]; the range (0, 1] is checked by :func:`topokit.validate`."""
    values = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            values.append(float(part))
        except ValueError:
            raise InvalidInputError(
                f"cannot read target {part!r}; expected accuracies in (0, 1] such as 0.85,0.9"
            ) from None
    if not values:
        raise InvalidInputError("give at least one target accuracy, e.g. --targets 0.85,0.9")
    return values


def _number(value: float, digits: int = 3) -> str:
    """Compact: whole numbers from 100 on, else ``digits`` significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "inf"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.{digits}g}"


def _spread(mean: float, std: float) -> str:
    if mean is None or math.isnan(mean):
        return "-"
    if std is None or math.isnan(std):
        return _number(mean)
    return f"{_number(mean)}±{_number(std, 2)}"


class _Noted(NamedTuple):
    """A table and what its columns mean, printed under it as a paragraph that wraps at
    the terminal's width rather than the table's."""

    table: Table
    note: str


def _compact_table(title: str) -> Table:
    """A table without vertical rules, two spaces between columns: it reads at 80 columns."""
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
                 pad_edge=False, collapse_padding=True)


def _print_tables(*tables: _Noted) -> None:
    for table, note in tables:
        console.print(table)
        console.print(escape(note))


def _summary_tables(result, title: str, max_rows: int = 40) -> tuple[_Noted, _Noted]:
    """What each topology is predicted to do, and what it measured at each target (one row
    per topology and target, so any number of targets fits the width)."""
    summary = result.summary()
    by_topology = list(summary.groupby("topology", sort=False))
    shown, hidden = by_topology[:max_rows], len(by_topology) - max_rows
    more = f"; {hidden} more topologies in the runs table" if hidden > 0 else ""
    predictor = result.config.get("predictor_name", "paper")
    return (_predicted_table(shown, title, summary, more, predictor),
            _measured_table(shown, more))


def _predicted_table(by_topology, title: str, summary, more: str,
                     predictor: str = "paper") -> _Noted:
    table = _compact_table(title)
    note = (f"L: local iterate (s); G': global iterate (rounds) predicted by {predictor} (a "
            "design file by its own predictor); G'L: pseudo time "
            f"(h); exposed: stranger pairs (of {int(summary['stranger_pairs'].iloc[0])}) the "
            "privacy audit finds exposed (mu = inf); mu: the worst finite stranger mu" + more)
    table.add_column("topology", no_wrap=True)
    for column in ("H", "phi", "L", "G'", "G'L", "exposed", "mu"):
        table.add_column(column, justify="right", no_wrap=True)
    for name, group in by_topology:
        first = group.iloc[0]
        table.add_row(escape(str(name)), _number(first["hitting_time"]),
                      _number(first["phi"], 2), _number(first["local_iterate"]),
                      _number(first["predicted_global_iterate"]),
                      _number(first["pseudo_time"] / HOUR),
                      _number(first["exposed_stranger_pairs"]),
                      _number(first["stranger_mu_max"]))
    return _Noted(table, note)


def _measured_table(by_topology, more: str) -> _Noted:
    table = _compact_table("measured")
    note = ("G@a: rounds to accuracy a, mean±std over the trials that reached it "
            "[reached/trials if not all]; T@a: their mean physical time G x L (h; the sum "
            "of the rounds' times for a time-varying topology)" + more)
    for column, justify in (("topology", "left"), ("target a", "right"), ("G@a", "right"),
                            ("T@a (h)", "right")):
        table.add_column(column, justify=justify, no_wrap=True)
    for name, group in by_topology:
        for row in group.sort_values("target").itertuples():
            rounds = _spread(row.rounds_mean, row.rounds_std)
            if row.reached < row.trials:
                rounds += escape(f" [{int(row.reached)}/{int(row.trials)}]")
            table.add_row(escape(str(name)), f"{row.target:g}", rounds,
                          _number(row.time_mean / HOUR))
    return _Noted(table, note)


def _correlation_table(result) -> _Noted:
    table = _compact_table("predicted against measured")
    note = ("rho: Spearman correlation of predicted and measured time or rounds over every "
            "run, never reached ranked slowest (in brackets: over the runs that reached the "
            "target); r: Pearson's, over those that did; never: runs that never reached the "
            "target")
    for column in ("target", "runs", "never", "rho time", "rho rounds", "r time", "r rounds"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in result.correlations().itertuples():
        table.add_row(
            f"{row.target:g}", str(row.n), str(row.never_reached),
            f"{_number(row.spearman_time, 3)} ({_number(row.spearman_time_reached, 3)})",
            f"{_number(row.spearman_rounds, 3)} ({_number(row.spearman_rounds_reached, 3)})",
            _number(row.pearson_time, 3), _number(row.pearson_rounds, 3))
    return _Noted(table, note)


#: validate's parameters as this command names them, in its errors.
_VALIDATE_OPTIONS = {"trials": "--trials", "rounds": "--rounds", "target": "--targets",
                     "targets": "--targets", "seed": "--seed", "n_jobs": "--n-jobs",
                     "audit_rounds": "--audit-rounds", "partition": "--skewness",
                     "output": "--output", "scheduler": "--scheduler", "dataset": "--dataset",
                     "predictor": "--predictor", "topologies": "--topologies"}
_VALIDATE_PHRASES = {"unknown topology spec": "--topologies: unknown topology spec",
                     ", or a Topology": ""}


def _check_runs_output(output: Path | None) -> None:
    """--output, and the files validate writes beside it (curves, timings), before any work:
    a folder in their place used to fail only when the runs were done."""
    from ..validation.core import curves_path, timings_path

    check_output_option(output)
    if output is None:
        return
    for path, what in ((curves_path(output), "accuracy curves"),
                       (timings_path(output), "wall-clock times")):
        if path.is_dir():
            raise InvalidInputError(
                f"--output: {path}, where the {what} go beside {output.name}, is a directory; "
                "remove it or choose another --output"
            )


def _dataset_files(dataset: str) -> list[Path]:
    """The files --dataset FORMAT:DIR reads (the training files of
    :func:`topokit.training.load_fashion_mnist` and :func:`~topokit.training.load_cifar10`,
    under every name they are looked for); none for the bundled digits."""
    name, _, directory = dataset.partition(":")
    if not directory:
        return []
    if name.strip().lower() == "cifar10":
        names = [f"data_batch_{k}" for k in range(1, 6)]
    else:
        stems = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
        names = [variant for stem in stems
                 for variant in (stem, f"{stem}.gz", stem.replace("-idx", ".idx"))]
    return [Path(directory) / file for file in names]


def _check_outputs_apart(output: Path | None, plot: Path | None, *, network: Path | None,
                         predictor: Path | None, workload_file: Path | None,
                         dataset: str, data: Path | None = None,
                         topology_files: Sequence[Path] = ()) -> None:
    """--output, the files beside it and --plot are none of validate's inputs (and not one
    another)."""
    from ..validation.core import curves_path, timings_path

    beside = [] if output is None else [
        (f"--output {output}: {{path}}, where the {what} go beside it,", path)
        for path, what in ((curves_path(output), "accuracy curves"),
                           (timings_path(output), "wall-clock times"))]
    check_outputs_apart(
        [("--output", output), *beside, ("--plot", plot)],
        [("the NETWORK file", network), ("the --predictor file", predictor_file(predictor)),
         ("the --workload file", workload_file), ("the --data file", data),
         *(("a file of --dataset", path) for path in _dataset_files(dataset)),
         *(("a design file of --topologies", path) for path in topology_files)])


class _FileEntry(NamedTuple):
    """A ``NAME=FILE`` (or ``FILE.json``) entry of --topologies: a saved design, topology or
    schedule to train as it is."""

    name: str
    path: Path


def _topology_entries(topologies: str) -> list[str | _FileEntry]:
    """The comma-separated --topologies: spec strings (validate parses them) and design
    files, in the order given.

    Examples
    --------
    >>> entries = _topology_entries("ndlf, mine=out/design.json, random:2, b.json")
    >>> [e if isinstance(e, str) else (e.name, e.path.as_posix()) for e in entries]
    ['ndlf', ('mine', 'out/design.json'), 'random:2', ('b', 'b.json')]
    """
    entries: list[str | _FileEntry] = []
    for part in filter(None, (p.strip() for p in topologies.split(","))):
        name, equals, file = (text.strip() for text in part.partition("="))
        if equals and not (name and file):
            raise InvalidInputError(f"--topologies: {part!r} needs a name and a file, as in "
                                    "mine=design.json")
        if equals:
            entries.append(_FileEntry(name, Path(file)))
        elif part.lower().endswith(".json"):
            entries.append(_FileEntry(Path(part).stem, Path(part)))
        else:
            entries.append(part)
    return entries


def _spec_strings(entries: Sequence[str | _FileEntry]) -> list[str]:
    return [entry for entry in entries if isinstance(entry, str)]


def _file_topology(net, entry: _FileEntry):
    """The design (with its noise and predictor), topology or schedule of a file, checked
    against ``net``; errors name the entry (and, for one the network cannot carry, say so)."""
    from ..network.formats import load_topology
    from .design import _check_topology_path, _recorded_design, _schedule_file, _schedule_for

    _check_topology_path(entry.path, "--topologies")
    if _schedule_file(entry.path):
        return _schedule_for(net, entry.path, f"--topologies {entry.name}")
    try:
        topology = load_topology(entry.path)
        design = _recorded_design(entry.path)
    except TopokitError as exc:
        raise type(exc)(f"--topologies {entry.name}: {exc}") from None
    try:
        topology.validate(net)
        return topology if design is None else design
    except TopokitError as exc:
        raise type(exc)(
            f"--topologies {entry.name}: {entry.path} does not fit this network ({exc}); give "
            "a design or topology made for it (topokit design NETWORK -o design.json)"
        ) from None


def _topologies_to_train(net, topologies: str, entries: Sequence[str | _FileEntry]):
    """What validate trains over: --topologies as given, or, with design files among its
    entries, a dict name -> spec string, the file's Design (trained with the noise it
    decided, predicted by its own predictor), its Topology or its TopologySchedule (in the
    order given)."""
    if not any(isinstance(entry, _FileEntry) for entry in entries):
        return topologies
    names = [entry.name if isinstance(entry, _FileEntry) else entry for entry in entries]
    twice = next((name for k, name in enumerate(names) if name in names[:k]), None)
    if twice is not None:  # a dict would keep the last silently
        raise InvalidInputError(f"--topologies: topology names must be unique; {twice!r} "
                                "appears twice (name a file as NAME=FILE)")
    return {name: _file_topology(net, entry) if isinstance(entry, _FileEntry) else entry
            for name, entry in zip(names, entries, strict=True)}


def _check_network_size(network: Path | None, example: str | None, specs: list[str],
                        audit_rounds: int) -> None:
    """Refuse, before it is read, a network file too large to load, design the
    --topologies ``specs`` on (AutoTag for autotag and erg, optimize) and audit, in the
    memory available."""
    from ..validation.core import parse_topology_specs
    from ._sizes import check_network_file, design_run

    with naming_options(_VALIDATE_OPTIONS, _VALIDATE_PHRASES):
        kinds = {spec.kind for spec in parse_topology_specs(specs)} if specs else set()
    methods = [method for method, asking in (("autotag", {"autotag", "erg"}),
                                             ("optimize", {"optimize"})) if kinds & asking]
    check_network_file(network, design_run(methods, audit_rounds=audit_rounds),
                       example=example)


def _check_data_source(data: Path | None, label: str | None, dataset: str | None) -> None:
    """--data with its --label, or --dataset: one source of training data."""
    check_data_options(data, label)
    if data is not None and dataset is not None:
        raise InvalidInputError(f"give --data {data} (your own table) or --dataset {dataset}, "
                                "not both")


def _user_data(data: Path | None, label: str | None, net):
    """The --data table (None without it), with rows enough for the network's devices."""
    if data is None:
        return None
    from ..training.user_data import check_rows_for_devices

    table = load_data_option(data, label)
    check_rows_for_devices(table, net.n_devices, str(data))
    return table


@handles_user_errors
def validate_command(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    topologies: str = typer.Option(
        "autotag,ndlf,dlfdp,erg", "--topologies", "-t",
        help="Comma-separated: optimize, autotag, ndlf, dlfdp, erg, exponential (Ying et al.'s "
             "exponential graph), the time-varying one-peer-exponential (Ying et al.), base:K "
             "(Takezawa et al.'s Base-(K+1) graph, max degree K) and epidemic:S (de Vos et "
             "al., S random peers a round), equistatic or equistatic:M (Song et al.'s "
             "U-EquiStatic, M ring offsets), random:K (K random valid topologies), NAME=FILE "
             "or FILE.json (a design, topology or schedule file, trained as it is, named NAME or "
             "the file's stem).",
    ),
    dataset: str = typer.Option(
        None, "--dataset", help="digits, fashion-mnist:DIR or cifar10:DIR [default: digits]."
    ),
    data: Path = typer.Option(
        None, "--data", help="Your own training data instead of --dataset: a CSV, Parquet or "
                             "NPZ table, one row per example (features standardised)."),
    label: str = DataLabelOpt,
    targets: str = typer.Option(
        None, "--targets",
        help="Target accuracies in (0, 1] [default: 0.85,0.9, or the workload's target]."),
    trials: int = typer.Option(5, "--trials", help="Training runs per topology."),
    seed: int = typer.Option(0, "--seed", help="Seed of trials, ERG and random topologies."),
    rounds: int = typer.Option(
        None, "--rounds", help="Target round T of every run [default: 200, or the workload's]."),
    skewness: float = typer.Option(
        None, "--skewness", help="Non-IID skewness K in [0, 1] (default: IID)."
    ),
    predictor: Path = DesignPredictorOpt,
    n_jobs: int = typer.Option(1, "--n-jobs", "-j", help="Parallel workers (-1: all cores)."),
    scheduler: str = typer.Option(
        None, "--scheduler", help="Dask scheduler address: train on that cluster."),
    audit_rounds: int = typer.Option(
        DEFAULT_AUDIT_ROUNDS, "--audit-rounds",
        help="Rounds of gossip of the stranger privacy audit of every run (0: no audit)."),
    output: Path = typer.Option(
        None, "--output", "-o", help="Parquet file of the runs (and resume from it)."),
    workload_file: Path = typer.Option(
        None, "--workload", help="A workload JSON file (topokit.Workload.save): its model, DP "
                                 "budget, rounds, batch size and target train every run."),
    plot: Path = typer.Option(None, "--plot", help="Scatter of predicted against measured (PNG)."),
    restart: bool = typer.Option(False, "--restart", help="Discard an interrupted run's pieces."),
    as_json: bool = JsonOpt,
) -> None:
    """Train over AutoTag's topology and the baselines; compare predicted and measured time.

    One row per topology, trial and target goes to the Parquet output: H, phi,
    L, predicted global iterate and pseudo time next to the measured rounds
    and physical time to each target (NaN if never reached).  Prints the mean
    and spread over trials and the Spearman / Pearson correlations.  An
    interrupted run resumes when called again with the same arguments.
    """
    from .._jobs import check_scheduler
    from ..audit.core import check_audit_rounds
    from ..design.time_predictor import load_predictor
    from ..design.workload import load_workload
    from ..validation.core import validate

    check_plot_path(plot)
    _check_runs_output(output)
    _check_data_source(data, label, dataset)
    dataset = "digits" if dataset is None else dataset
    entries = _topology_entries(topologies)
    _check_outputs_apart(output, plot, network=network, predictor=predictor,
                         workload_file=workload_file, dataset=dataset, data=data,
                         topology_files=[e.path for e in entries if isinstance(e, _FileEntry)])
    check_predictor_option(predictor)
    check_seed_option(seed)
    check_jobs_option(n_jobs)
    check_scheduler(scheduler)
    check_audit_rounds(audit_rounds, "gossip", "--audit-rounds", low=0)
    if skewness is not None:
        check_real(skewness, "--skewness", low=0, high=1)
    given = [name for name, value in (("--targets", targets), ("--rounds", rounds))
             if value is not None]
    if workload_file is not None and given:
        raise InvalidInputError(f"{' and '.join(given)} come from --workload; drop them (set "
                                "them in the workload file)")
    _check_network_size(network, example, _spec_strings(entries), audit_rounds)
    net = resolve_network(network, example, show_loading=not as_json)
    table = _user_data(data, label, net)
    model = load_predictor(str(predictor)) if predictor else None
    train_kwargs = {} if rounds is None else {"rounds": rounds}
    if skewness is not None:
        train_kwargs["partition"] = skewness
    arguments = dict(topologies=_topologies_to_train(net, topologies, entries), dataset=dataset,
                     X=None if table is None else table.X, y=None if table is None else table.y,
                     targets=None if targets is None else parse_targets(targets),
                     trials=trials, seed=seed, predictor=model, n_jobs=n_jobs, output=output,
                     scheduler=scheduler, audit_rounds=audit_rounds, resume=not restart,
                     workload=None if workload_file is None else load_workload(workload_file),
                     **train_kwargs)
    phrases = _VALIDATE_PHRASES if workload_file is None else {
        **_VALIDATE_PHRASES, "the workload's rounds": f"the rounds of {workload_file}"}
    with naming_options(_VALIDATE_OPTIONS, phrases), \
            reporting_progress("training runs", quiet=as_json) as report:
        result = validate(net, progress=report, **arguments)
    if plot is not None:
        result.plot(plot)
    used = None if table is None else _DataUsed(data, label, table)
    if as_json:
        _print_validation_json(result, used, output, plot)
    else:
        _print_validation(result, net.name or network, net.n_devices, trials, used, output,
                          plot)


class _DataUsed(NamedTuple):
    """The --data table validate trained on, for the report."""

    path: Path
    label: str
    table: TableData


def _print_validation_json(result, used: _DataUsed | None, output: Path | None,
                           plot: Path | None) -> None:
    record = result.to_dict()
    if used is not None:  # validate names data given as arrays "custom"; here it has a file
        record["config"] = {**record["config"], "dataset": str(used.path), "label": used.label}
    print_json({**record, "output": str(output), "plot": None if plot is None else str(plot)})


def _print_validation(result, name, n_devices: int, trials: int, used: _DataUsed | None,
                      output: Path | None, plot: Path | None) -> None:
    """The tables of what validate measured, and the files it wrote."""
    from ..validation.core import NOMINAL_EPSILON_NOTE, curves_path, timings_path

    if used is not None:  # above the tables, whose titles wrap at their own width
        X, classes = used.table.X, used.table.classes
        console.print(escape(f"trained on {used.path} (label {used.label!r}): {X.shape[0]} "
                             f"rows, {X.shape[1]} features, {classes.size} classes"),
                      highlight=False)
    _print_tables(*_summary_tables(result, f"{name}: {n_devices} devices, {trials} "
                                            "trial(s) per topology"), _correlation_table(result))
    if not result.frame["dp_formal"].astype(bool).all():
        console.print(f"[bold]Note[/]: {NOMINAL_EPSILON_NOTE}")
    unjudged = result.config.get("schedules_extrapolated") or result.config.get("not_predicted")
    if unjudged:
        console.print(escape(f"Note: {', '.join(unjudged['topologies'])}: {unjudged['why']}"),
                      highlight=False)
    if output is not None:
        console.print(f"wrote {len(result.frame)} rows to {output} "
                      f"(accuracy curves: {curves_path(output)}, wall-clock times: "
                      f"{timings_path(output)})")
    if plot is not None:
        console.print(f"wrote plot to {plot}")


#: calibrate's parameters as this command names them, in its errors.
_CALIBRATE_OPTIONS = {"cv": "--cv", "target": "--target", "prior_strength": "--prior-strength",
                      "seed": "--seed", "use_noise_variance": "--noise-variance",
                      "positive": "--positive", "predictor": "--refit", "settings": "--workload"}
_CALIBRATE_PHRASES = {
    "varying_with names ": "--refit: the predictor's coefficients vary with ",
    "; fit on runs at several of its values or leave it out":
        "; give runs at several of its values, or refit 'default' (fixed coefficients)",
}


def _check_refit(refit: str | None) -> None:
    """--refit: a TrainingTimePredictor to refit, named as the option (loaded once here)."""
    from ..design.time_predictor import TrainingTimePredictor, load_predictor

    if refit is None:
        return
    check_predictor_option(refit, "--refit")
    try:
        model = load_predictor(refit)
    except TopokitError as exc:
        raise type(exc)(f"--refit: {exc}") from None
    if not isinstance(model, TrainingTimePredictor):
        raise InvalidInputError(
            f"--refit refits a TrainingTimePredictor ('default', 'mlp', 'workload' or its "
            f"JSON file); {refit!r} is eq. (15)'s form: fit that one without --refit"
        )


@handles_user_errors
def calibrate_command(
    runs: Path = typer.Argument(
        ..., help="Runs table: the Parquet file of topokit validate, or your own runs as CSV or "
                  "Parquet (columns network, topology, target, measured_rounds, horizon)."),
    output: Path = typer.Option(..., "--output", "-o", help="Predictor JSON to write."),
    noise_variance: bool = typer.Option(
        False, "--noise-variance", help="Also fit the cumulative noise variance U."
    ),
    target: float = typer.Option(
        None, "--target", help="Which target's rounds to fit (default: the highest)."
    ),
    cv: int = typer.Option(5, "--cv", help="Cross-validation folds (over topologies)."),
    positive: bool = typer.Option(False, "--positive", help="Coefficients >= 0."),
    seed: int = typer.Option(0, "--seed", help="Seed of the fold split."),
    refit: str = typer.Option(
        None, "--refit",
        help="Refit a TrainingTimePredictor instead of eq. (15)'s form: 'default' (topokit's), "
             "'mlp' (topokit's for the MLP) or its JSON file; every run counts, never-reached "
             "ones censored."),
    prior_strength: float = typer.Option(
        0.0, "--prior-strength",
        help="With --refit: keep the coefficients near the refitted predictor's (lambda of a "
             "Gaussian prior on them; 0: none; e.g. 10)."),
    workload_file: Path = typer.Option(
        None, "--workload", help="A workload JSON file (topokit.Workload.save): the settings "
                                 "your own runs trained with (their features are computed "
                                 "with them)."),
    as_json: bool = JsonOpt,
) -> None:
    """Fit the global-iterate predictor on measured runs and write it as JSON.

    Reports R^2, the cross-validated error (folds over topologies) and the
    Spearman correlation of predicted and measured physical time with the
    paper's eq. (15) and with the fitted coefficients.  `topokit analyze
    --predictor` and `topokit design --predictor` take the file.  The runs
    may be your own (any training stack): a CSV or Parquet table with one row
    per run and target (network file, topology or design file, target,
    rounds to reach it or empty, rounds run; see `topokit probe`).
    """
    from ..design.workload import load_workload
    from ..validation.calibration import runs_table_files
    from ..validation.core import calibrate

    check_output_option(output)
    check_outputs_apart([("--output", output)],
                        [("the RUNS table", runs), ("the --refit file", predictor_file(refit)),
                         ("the --workload file", workload_file), *runs_table_files(runs)])
    check_seed_option(seed)
    _check_refit(refit)
    if refit is not None and (noise_variance or positive):
        raise InvalidInputError("--noise-variance and --positive fit eq. (15)'s form; drop them "
                                "with --refit")
    if refit is None and prior_strength != 0:
        raise InvalidInputError("--prior-strength keeps a refit predictor near its own "
                                "coefficients; add --refit default (or mlp, or its file)")
    settings = None if workload_file is None else load_workload(workload_file)
    with naming_options(_CALIBRATE_OPTIONS, _CALIBRATE_PHRASES):
        result = calibrate(runs, use_noise_variance=noise_variance, target=target, cv=cv,
                           positive=positive, seed=seed, predictor=refit,
                           prior_strength=prior_strength, settings=settings)
    result.save(output)
    if as_json:
        print_json({**result.to_dict(), "output": str(output)})
        return
    from ..design.predictor import PAPER_COEFFICIENTS, PAPER_INTERCEPT

    paper = {**PAPER_COEFFICIENTS, "intercept": PAPER_INTERCEPT}
    table = Table(title=f"global iterate to accuracy {result.target:g}: {result.n_runs} runs of "
                        f"{result.n_topologies} topologies ({result.n_censored} never reached it)")
    for column in ("coefficient", "fitted", "eq. (15)"):
        table.add_column(column, justify="right")
    for key, value in result.coefficients.items():
        table.add_row(key, f"{value:.6g}", f"{paper[key]:.6g}" if key in paper else "-")
    console.print(table)
    console.print(f"R^2 (in sample) {_number(result.r2, 3)}; cross-validated RMSE "
                  f"{_number(result.cv_rmse, 3)} ± {_number(result.cv_rmse_std, 2)} rounds "
                  f"({result.cv_folds} folds over topologies)")
    console.print(
        f"Spearman(predicted, measured physical time): eq. (15) {_number(result.spearman_paper, 3)}"
        f" -> fitted {_number(result.spearman_fitted, 3)} (out of fold "
        f"{_number(result.spearman_fitted_cv, 3)})"
    )
    if result.prior_strength:
        console.print(f"coefficients kept near {escape(refit)}'s by a prior of strength "
                      f"{result.prior_strength:g}")
    console.print(f"wrote predictor to {output}")
