"""``topokit design``, ``analyze``, ``generate siot`` and ``examples``: the design journey."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from .._io import write_json
from ..errors import InvalidInputError, TopokitError
from ._common import (
    ExampleOpt,
    JsonOpt,
    NetworkArg,
    check_jobs_option,
    check_output_option,
    check_plot_path,
    check_seed_option,
    console,
    handles_user_errors,
    metrics_table,
    print_json,
    reporting_progress,
    resolve_network,
)

__all__ = ["analyze", "design", "generate_app", "generate_siot", "list_examples_command"]


@handles_user_errors
def analyze(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    topology: Path = typer.Option(None, "--topology", "-t", help="Topology JSON to analyse."),
    predictor: Path = typer.Option(
        None, "--predictor",
        help="'paper' (eq. 15, the default), 'default' (topokit's fitted TrainingTimePredictor; "
             "not for AutoTag) or a predictor JSON file (topokit calibrate)."),
    as_json: bool = JsonOpt,
) -> None:
    """Metrics of a topology: hitting time, spectral gap, DP ratio, local iterate, predicted time.

    Without --topology it analyses the topology stored with the network (the toy
    example stores the paper's Fig. 2(b)), else the social graph itself.
    """
    from ..design.metrics import evaluate
    from ..design.time_predictor import load_predictor

    net = resolve_network(network, example)
    chosen = _topology_for(net, topology) if topology else net.topology
    model = load_predictor(str(predictor)) if predictor else None
    metrics = evaluate(net, chosen, model)
    label = "given topology" if topology else ("stored topology" if chosen else "social graph")
    if as_json:
        print_json({"network": net.name, "topology": label, **metrics.to_dict()})
        return
    title = f"{net.name or network}: {net.n_devices} devices, {label}"
    console.print(metrics_table(title, {label: metrics.to_dict()}))


def _topology_for(net, path: Path):
    """The topology file ``path``, checked against ``net``; errors name the file."""
    from ..design.network import load_topology

    topology = load_topology(path)
    try:
        return topology.validate(net)
    except TopokitError as exc:
        raise type(exc)(f"{path}: {exc}") from None


def _design_with_progress(net, predictor, *, n_jobs: int, trace: bool, nep_patience: int | None,
                          quiet: bool):
    from ..design._autotag import autotag

    with reporting_progress("DP budgets", total=net.n_devices + 1, quiet=quiet) as report:
        return autotag(net, predictor, n_jobs=n_jobs, progress=report, trace=trace,
                       nep_patience=nep_patience)


def baseline_metrics(net, design, predictor, *, seed: int) -> dict[str, dict[str, Any]]:
    """Metrics of the baselines next to a design: NDLF, DLFDP and DeepPrivacy-ERG."""
    from ..design.baselines import dlfdp, erg, ndlf
    from ..design.metrics import evaluate

    topologies = {"NDLF": ndlf(net), "DLFDP": dlfdp(net)}
    try:
        topologies["ERG"] = erg(net, seed=seed, reference=design)
    except InvalidInputError:
        pass  # no connected random graph with AutoTag's link count: nothing to compare
    return {name: evaluate(net, topology, predictor).to_dict()
            for name, topology in topologies.items()}


METHODS = ("optimize", "autotag")


@handles_user_errors
def design(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    method: str = typer.Option(
        "optimize", "--method",
        help="optimize (default): the design topokit's fitted predictor says trains fastest, "
             "never predicted slower than NDLF, DLFDP, ERG or AutoTag; autotag: the paper's "
             "Algorithm 2 (with --predictor paper, its default, it reproduces the paper)."),
    predictor: Path = typer.Option(
        None, "--predictor",
        help="'default' (topokit's fitted TrainingTimePredictor; the default of --method "
             "optimize), 'paper' (eq. 15; the default of --method autotag) or a predictor "
             "JSON file (topokit calibrate)."),
    output: Path = typer.Option(None, "--output", "-o", help="Write the design as JSON."),
    plot: Path = typer.Option(None, "--plot", help="Draw the topology and trade-off (PNG)."),
    n_jobs: int = typer.Option(
        1, "--n-jobs", "-j", help="Threads (over DP budgets, over searches) (-1: all cores)."
    ),
    nep_patience: int = typer.Option(
        None, "--nep-patience",
        help="--method autotag: stop NEP after this many snapshots without improvement."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the ERG baseline and of optimize."),
    as_json: bool = JsonOpt,
) -> None:
    """Design a topology and compare it with NDLF, DLFDP, ERG (and AutoTag).

    Prints the chosen links, the DP devices and the metrics of every framework
    under the same predictor; --output writes the design (accepted by
    `analyze --topology`), --plot draws it.
    """
    from .._checks import check_choice, check_int

    # Every option is checked before the design runs: a typo must not cost the whole design.
    method = check_choice(method, "--method", METHODS)
    check_plot_path(plot)
    check_output_option(output)
    check_jobs_option(n_jobs)
    check_seed_option(seed)
    if nep_patience is not None:
        if method != "autotag":
            raise InvalidInputError("--nep-patience applies to --method autotag only; drop it")
        check_int(nep_patience, "--nep-patience", low=1)
    net = resolve_network(network, example)
    model = _design_predictor(method, predictor)
    if method == "autotag":
        chosen = _design_with_progress(net, model, n_jobs=n_jobs, trace=plot is not None,
                                       nep_patience=nep_patience, quiet=as_json)
        columns = {"AutoTag": chosen.metrics.to_dict(),
                   **baseline_metrics(net, chosen, model, seed=seed)}
    else:
        chosen, columns = _optimized(net, model, n_jobs=n_jobs, seed=seed, quiet=as_json)
    payload = {"network": net.name, "method": method, **chosen.to_dict(), "baselines": columns}
    if output is not None:
        write_json(output, payload)
    if plot is not None:
        from ..plotting.design import design_figure, save_figure

        save_figure(design_figure(net, chosen), plot)
    if as_json:
        print_json(payload)
        return
    _print_design(net, network, method, chosen, columns)
    for path, what in ((output, "design"), (plot, "plot")):
        if path is not None:
            console.print(f"wrote {what} to {path}")


def _design_predictor(method: str, predictor: Path | None):
    """The predictor of a design run (optimize: its name or path, recorded in the design).

    AutoTag's scores need eq. (15)'s form.
    """
    from ..design.predictor import GlobalIteratePredictor
    from ..design.time_predictor import load_predictor

    if predictor is None:
        return "default" if method == "optimize" else None
    if method == "optimize":
        load_predictor(str(predictor))  # fails now on a bad name or file, before any work
        return str(predictor)
    model = load_predictor(str(predictor))
    if method == "autotag" and not isinstance(model, GlobalIteratePredictor):
        raise InvalidInputError(
            "--method autotag: AutoTag builds its snapshots with eq. (15)'s scores, so it needs "
            f"an eq. (15) predictor; {str(predictor)!r} is a TrainingTimePredictor: use --method "
            "optimize with it, or --predictor paper"
        )
    return model


def _optimized(net, model, *, n_jobs: int, seed: int, quiet: bool):
    """optimize's design and the metrics of it and the reference designs under ``model``."""
    from ..design._optimize import optimize_with_references
    from ..design.metrics import evaluate
    from ..design.time_predictor import load_predictor

    with reporting_progress("local searches", total=3, quiet=quiet) as report:
        chosen, references = optimize_with_references(net, predictor=model, seed=seed,
                                                      n_jobs=n_jobs, progress=report)
    labels = {"ndlf": "NDLF", "dlfdp": "DLFDP", "erg": "ERG", "autotag": "AutoTag"}
    model = load_predictor(model)
    columns = {"optimize": chosen.metrics.to_dict()}
    columns.update({labels[name]: evaluate(net, topology, model).to_dict()
                    for name, topology in references.items()})
    return chosen, columns


def _print_design(net, network, method: str, chosen, columns: dict) -> None:
    social = {frozenset(edge) for edge in net.social.edges}
    links = ", ".join(
        f"{u}-{v}" + ("" if frozenset((u, v)) in social else "*") for u, v in chosen.topology.edges
    )
    dp = ", ".join(str(node) for node in sorted(chosen.topology.dp_devices, key=str)) or "none"
    if method == "autotag":
        console.print(f"[bold]{net.name or network}[/]: {net.n_devices} devices; AutoTag chose "
                      f"budget n = {chosen.n}")
    else:
        console.print(f"[bold]{net.name or network}[/]: {net.n_devices} devices; optimize "
                      f"(predictor {chosen.predictor['name']}) started from "
                      f"{chosen.stats['start']} and took {chosen.stats['moves_taken']} moves")
    if chosen.topology.n_links <= 40:
        console.print(f"links (* non-social): {links}", soft_wrap=True)
    else:
        non_social = [f"{u}-{v}" for u, v in chosen.topology.non_social_edges(net)]
        console.print(f"{chosen.topology.n_links} links; "
                      f"non-social: {', '.join(non_social) or 'none'}"
                      " (all links: --output or --json)", soft_wrap=True)
    console.print(f"DP devices: {dp}")
    title = "AutoTag" if method == "autotag" else "optimize"
    console.print(metrics_table(f"{title} against the baselines", columns))


generate_app = typer.Typer(help="Generate networks.", no_args_is_help=True)


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
    from .._checks import check_int, check_positive
    from ..design.network import NETWORK_SUFFIXES, save_network
    from ..design.siot import DEFAULT_METRES_PER_UNIT, siot

    check_int(devices, "--devices", low=1)
    check_seed_option(seed)
    check_output_option(output)
    if output.suffix.lower() not in NETWORK_SUFFIXES:
        raise InvalidInputError(
            f"--output must end in {' or '.join(NETWORK_SUFFIXES)}; got {str(output)!r}"
        )
    if metres_per_unit is None:
        metres_per_unit = DEFAULT_METRES_PER_UNIT
    check_positive(metres_per_unit, "--metres-per-unit")
    net = siot(devices, seed=seed, metres_per_unit=metres_per_unit)
    save_network(net, output)
    console.print(f"wrote {output}: {net.n_devices} devices, {net.social.number_of_edges()} "
                  "social links")


@handles_user_errors
def list_examples_command() -> None:
    """List the bundled example networks."""
    from ..design.examples import list_examples, load_example

    table = Table(title="bundled examples")
    for column in ("name", "devices", "social links", "stored topology"):
        table.add_column(column)
    for name in list_examples():
        net = load_example(name)
        table.add_row(name, str(net.n_devices), str(net.social.number_of_edges()),
                      "yes" if net.topology else "no")
    console.print(table)


