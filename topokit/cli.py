"""The ``topokit`` command line: parses, calls the API, prints rich tables or JSON.

Every user mistake surfaces as a :class:`~topokit.errors.TopokitError` (or an
``OSError`` on a path), which the CLI prints as one line and exits with
status 2, no traceback.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn
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
            error_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            error_console.print(f"[bold red]error:[/] {exc.strerror or exc}{where}", highlight=False)
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


NetworkArg = typer.Argument(None, help="Network file (.json node-link or .graphml).", show_default=False)
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
        None, "--random", help="Random ensemble instead of files, e.g. n=16,m=32,count=10000,seed=0."
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


def main() -> None:
    """Entry point of the ``topokit`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
