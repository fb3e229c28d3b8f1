"""The ``topokit`` command line: parses, calls the API, prints rich tables or JSON.

Every user mistake surfaces as a :class:`~topokit.errors.TopokitError` (or an
``OSError`` on a path), which the CLI prints as one line and exits with
status 2, no traceback.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from .errors import InvalidInputError, TopokitError

__all__ = ["app", "main"]

app = typer.Typer(
    name="topokit",
    help="Design and check communication topologies for private decentralized learning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
error_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


def handles_user_errors(command: F) -> F:
    """Turn user mistakes into one clear line on stderr and exit status 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except TopokitError as exc:
            error_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False,
                                soft_wrap=True)
            raise typer.Exit(2) from None
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            message = escape(str(exc.strerror or exc)) + escape(where)
            error_console.print(f"[bold red]error:[/] {message}", highlight=False)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def json_ready(value: Any) -> Any:
    """Strict JSON: ``inf`` and NaN become ``null`` (a disconnected topology has H = inf)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return json_ready(value.item())
    return value


def print_json(payload: Any) -> None:
    typer.echo(json.dumps(json_ready(payload), indent=2, allow_nan=False))


def resolve_network(network: Path | None, example: str | None):
    """The network named on the command line: a file or a bundled example (exactly one)."""
    from .examples import load_example
    from .network import load_network

    if (network is None) == (example is None):
        raise InvalidInputError("give either a NETWORK file or --example NAME (not both)")
    return load_example(example) if example else load_network(network)


def progress_bar(description: str) -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=error_console,
        transient=False,
    )


def _format(value: Any) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.6g}"
    return str(value)


def metrics_table(title: str, columns: dict[str, dict[str, Any]]) -> Table:
    """A rich table with one row per metric and one column per topology."""
    table = Table(title=title)
    table.add_column("metric")
    for name in columns:
        table.add_column(name, justify="right")
    keys = list(next(iter(columns.values())))
    for key in keys:
        table.add_row(key, *(_format(column.get(key)) for column in columns.values()))
    return table


NetworkArg = typer.Argument(None, help="Network file (.json node-link or .graphml).",
                            show_default=False)
ExampleOpt = typer.Option(None, "--example", "-e", help="Use a bundled example instead of a file.")
JsonOpt = typer.Option(False, "--json", help="Print one JSON object instead of a table.")


@app.command()
@handles_user_errors
def analyze(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    topology: Path = typer.Option(None, "--topology", "-t", help="Topology JSON to analyse."),
    predictor: Path = typer.Option(None, "--predictor", help="Calibrated predictor JSON."),
    as_json: bool = JsonOpt,
) -> None:
    """Metrics of a topology: hitting time, spectral gap, DP ratio, local iterate, predicted time.

    Without --topology it analyses the topology stored with the network (the toy
    example stores the paper's Fig. 2(b)), else the social graph itself.
    """
    from .metrics import evaluate
    from .network import load_topology
    from .predictor import GlobalIteratePredictor

    net = resolve_network(network, example)
    chosen = load_topology(topology) if topology else net.topology
    model = GlobalIteratePredictor.load(predictor) if predictor else None
    metrics = evaluate(net, chosen, model)
    label = "given topology" if topology else ("stored topology" if chosen else "social graph")
    if as_json:
        print_json({"network": net.name, "topology": label, **metrics.to_dict()})
        return
    title = f"{net.name or network}: {net.n_devices} devices, {label}"
    console.print(metrics_table(title, {label: metrics.to_dict()}))


@app.command()
@handles_user_errors
def batch(
    directory: Path = typer.Argument(None, help="Directory of network files.", show_default=False),
    random: str = typer.Option(
        None, "--random",
        help="Random ensemble instead of files, e.g. n=16,m=32,count=10000,seed=0.",
    ),
    output: Path = typer.Option(..., "--output", "-o", help="Parquet file to write."),
    n_jobs: int = typer.Option(1, "--n-jobs", "-j", help="Parallel workers (-1: all cores)."),
    scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler address."),
    chunk_size: int = typer.Option(500, "--chunk-size", help="Items per resumable chunk."),
    restart: bool = typer.Option(False, "--restart", help="Discard an interrupted run's chunks."),
) -> None:
    """Metrics for many networks (or a random ensemble) in parallel, into one Parquet table.

    An interrupted run resumes where it stopped when called again with the same
    arguments; the output appears only when complete.
    """
    from .batch import batch_analyze, parse_ensemble

    if (directory is None) == (random is None):
        raise InvalidInputError("give either a DIRECTORY of network files or --random SPEC")
    source = parse_ensemble(random) if random else directory
    with progress_bar("batch") as bar:
        task = bar.add_task("chunks", total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        table = batch_analyze(
            source, output, n_jobs=n_jobs, scheduler=scheduler, chunk_size=chunk_size,
            resume=not restart, progress=report,
        )
    console.print(f"wrote {len(table)} rows to {output}")


def _design_with_progress(net, predictor, *, n_jobs: int, trace: bool, nep_patience: int | None,
                          quiet: bool):
    from .autotag import autotag

    if quiet:
        return autotag(net, predictor, n_jobs=n_jobs, trace=trace, nep_patience=nep_patience)
    with progress_bar("AutoTag") as bar:
        task = bar.add_task("DP budgets", total=net.n_devices + 1)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return autotag(net, predictor, n_jobs=n_jobs, progress=report, trace=trace,
                       nep_patience=nep_patience)


def baseline_metrics(net, design, predictor, *, seed: int) -> dict[str, dict[str, Any]]:
    """Metrics of the baselines next to a design: NDLF, DLFDP and DeepPrivacy-ERG."""
    from .baselines import dlfdp, erg, ndlf
    from .metrics import evaluate

    topologies = {"NDLF": ndlf(net), "DLFDP": dlfdp(net)}
    try:
        topologies["ERG"] = erg(net, seed=seed, reference=design)
    except InvalidInputError:
        pass  # no connected random graph with AutoTag's link count: nothing to compare
    return {name: evaluate(net, topology, predictor).to_dict()
            for name, topology in topologies.items()}


@app.command()
@handles_user_errors
def design(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    predictor: Path = typer.Option(None, "--predictor", help="Calibrated predictor JSON."),
    output: Path = typer.Option(None, "--output", "-o", help="Write the design as JSON."),
    plot: Path = typer.Option(None, "--plot", help="Draw the topology and trade-off (PNG)."),
    n_jobs: int = typer.Option(
        1, "--n-jobs", "-j", help="Threads over DP budgets (-1: all cores)."
    ),
    nep_patience: int = typer.Option(
        None, "--nep-patience", help="Stop NEP after this many snapshots without improvement."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the ERG baseline."),
    as_json: bool = JsonOpt,
) -> None:
    """Design a topology with AutoTag and compare it with NDLF, DLFDP and ERG.

    Prints the chosen links, the DP devices and the metrics of every framework;
    --output writes the design (accepted by `analyze --topology`), --plot draws it.
    """
    from .predictor import GlobalIteratePredictor

    net = resolve_network(network, example)
    model = GlobalIteratePredictor.load(predictor) if predictor else None
    chosen = _design_with_progress(net, model, n_jobs=n_jobs, trace=plot is not None,
                                   nep_patience=nep_patience, quiet=as_json)
    columns = {"AutoTag": chosen.metrics.to_dict(),
               **baseline_metrics(net, chosen, model, seed=seed)}
    payload = {"network": net.name, **chosen.to_dict(), "baselines": columns}
    if output is not None:
        from ._io import atomic_write_text

        atomic_write_text(output, json.dumps(json_ready(payload), indent=1, allow_nan=False) + "\n")
    if plot is not None:
        from .plotting import design_figure, save_figure

        save_figure(design_figure(net, chosen), plot)
    if as_json:
        print_json(payload)
        return
    social = {frozenset(edge) for edge in net.social.edges}
    links = ", ".join(
        f"{u}-{v}" + ("" if frozenset((u, v)) in social else "*") for u, v in chosen.topology.edges
    )
    dp = ", ".join(str(node) for node in sorted(chosen.topology.dp_devices, key=str)) or "none"
    console.print(f"[bold]{net.name or network}[/]: {net.n_devices} devices; AutoTag chose budget "
                  f"n = {chosen.n}")
    if chosen.topology.n_links <= 40:
        console.print(f"links (* non-social): {links}", soft_wrap=True)
    else:
        non_social = [f"{u}-{v}" for u, v in chosen.topology.non_social_edges(net)]
        console.print(f"{chosen.topology.n_links} links; "
                      f"non-social: {', '.join(non_social) or 'none'}"
                      " (all links: --output or --json)", soft_wrap=True)
    console.print(f"DP devices: {dp}")
    console.print(metrics_table("AutoTag against the baselines", columns))
    for path, what in ((output, "design"), (plot, "plot")):
        if path is not None:
            console.print(f"wrote {what} to {path}")


generate_app = typer.Typer(help="Generate networks.", no_args_is_help=True)
app.add_typer(generate_app, name="generate")


@generate_app.command("siot")
@handles_user_errors
def generate_siot(
    devices: int = typer.Option(..., "--devices", "-n", help="Number of devices."),
    seed: int = typer.Option(None, "--seed", help="Seed (same seed, same network)."),
    output: Path = typer.Option(..., "--output", "-o", help="Network file (.json or .graphml)."),
    metres_per_unit: float = typer.Option(
        None, "--metres-per-unit", help="Scale of the data set's coordinates (default: topokit's)."
    ),
) -> None:
    """A synthetic Social-IoT network with the Santander data set's structure."""
    from .datasets import DEFAULT_METRES_PER_UNIT, siot
    from .network import save_network

    if metres_per_unit is None:
        metres_per_unit = DEFAULT_METRES_PER_UNIT
    net = siot(devices, seed=seed, metres_per_unit=metres_per_unit)
    save_network(net, output)
    console.print(f"wrote {output}: {net.n_devices} devices, {net.social.number_of_edges()} "
                  "social links")


@app.command("examples")
@handles_user_errors
def list_examples_command() -> None:
    """List the bundled example networks."""
    from .examples import list_examples, load_example

    table = Table(title="bundled examples")
    for column in ("name", "devices", "social links", "stored topology"):
        table.add_column(column)
    for name in list_examples():
        net = load_example(name)
        table.add_row(name, str(net.n_devices), str(net.social.number_of_edges()),
                      "yes" if net.topology else "no")
    console.print(table)


def _mount_subcommands() -> None:
    """The gfl and learn command groups, with the same user-error handling as the rest."""
    from .gfl import cli as gfl_cli
    from .learn import cli as learn_cli

    # Wrap copies: the gfl app itself stays usable on its own, raising its errors.
    gfl_app = copy.copy(gfl_cli.app)
    gfl_app.registered_commands = []
    for info in gfl_cli.app.registered_commands:
        wrapped = copy.copy(info)
        wrapped.callback = handles_user_errors(info.callback)
        gfl_app.registered_commands.append(wrapped)
    app.add_typer(gfl_app, name="gfl")
    app.command("learn")(handles_user_errors(learn_cli.learn_command))
    app.command("learn-federated")(handles_user_errors(learn_cli.learn_federated_command))


_mount_subcommands()

from . import _cli_validation  # noqa: E402

app.command("validate")(_cli_validation.validate_command)
app.command("calibrate")(_cli_validation.calibrate_command)


def main() -> None:
    """Entry point of the ``topokit`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
