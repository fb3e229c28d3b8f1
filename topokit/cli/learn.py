"""Typer commands ``topokit learn`` and ``topokit learn-federated``.

The main app registers :func:`learn_command` and :func:`learn_federated_command`;
``app`` here holds both for testing.  Errors the user can cause raise
:class:`~topokit.errors.TopokitError` subclasses (exit status 2 in the main CLI).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .._checks import check_choice, check_output_path
from .._io import atomic_paths, dumps_json, write_json
from ..errors import InvalidInputError
from ._common import (
    check_output_option,
    check_outputs_apart,
    check_plot_path,
    check_seed_option,
)

if TYPE_CHECKING:  # networkx loads when a command runs, not for topokit --help
    import networkx as nx

__all__ = ["app", "learn_command", "learn_federated_command"]

app = typer.Typer(help="Learn graphs from smooth signals.", no_args_is_help=True,
                  rich_markup_mode=None)


def _graph_file_data(graph: nx.Graph, name: str, *, seed: int | None) -> dict:
    """A learned graph as topokit network node-link data, keeping its edge weights.

    The learned graph becomes the social graph; devices get positions and
    classes from :func:`topokit.datasets.from_networkx`'s seeded rule, so the
    file feeds ``topokit design`` directly.  Each edge keeps its learned
    ``weight`` (ignored by :func:`topokit.load_network`, read by networkx).
    """
    from ..network.formats import network_to_graph
    from ..network.siot import from_networkx

    net = from_networkx(graph, seed=seed, require_connected=False, name=name)
    annotated = network_to_graph(net)
    for u, v, weight in graph.edges(data="weight"):
        annotated[u][v]["weight"] = float(weight)
    import networkx as nx

    return nx.node_link_data(annotated, edges="edges")


def _write_graph_json(graph: nx.Graph, path: str | Path, *, seed: int | None = 0) -> Path:
    """Write a learned graph as a topokit network file, atomically (:func:`_graph_file_data`)."""
    return write_json(path, _graph_file_data(graph, Path(path).stem, seed=seed))


def _federated_files(client_files: list[Path], output: Path) -> list[Path]:
    """The files learn-federated writes into ``output``: consensus.json, one
    local_<name>.json per client and summary.json."""
    return [output / "consensus.json",
            *(output / f"local_{path.stem}.json" for path in client_files),
            output / "summary.json"]


def _write_federated(result, client_files: list[Path], output: Path, seed: int | None) -> None:
    """consensus.json, one local_<name>.json per client and summary.json, replaced together.

    A run never leaves new graphs beside an old summary: every file is written
    to a temporary file first and all are renamed at the end.
    """
    consensus, *local, summary = _federated_files(client_files, output)
    files = {consensus: _graph_file_data(result.consensus.graph, "consensus", seed=seed)}
    for path, graph in zip(local, result.local, strict=True):
        files[path] = _graph_file_data(graph.graph, path.stem, seed=seed)
    files[summary] = {
        k: v for k, v in result.to_dict().items() if k not in ("local", "consensus")
    }
    with atomic_paths(*files) as temps:
        for temp, data in zip(temps, files.values(), strict=True):
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(dumps_json(data))
                handle.flush()
                os.fsync(handle.fileno())


def _save_plot(graph: nx.Graph, path: Path, title: str) -> None:
    from ..plotting import save_figure
    from ..plotting.learn import plot_graph

    save_figure(plot_graph(graph, title=title), path, dpi=120)


def learn_command(
    signals: Path = typer.Argument(
        ..., help="Signals file (.npy or .csv), shape (n_signals, n_nodes)."
    ),
    alpha: float | None = typer.Option(None, "--alpha", help="Log-degree weight (> 0)."),
    beta: float | None = typer.Option(None, "--beta", help="Weight of 2||w||^2 (>= 0)."),
    degree: float | None = typer.Option(
        None, "--degree", help="Target average degree (instead of --alpha/--beta)."
    ),
    output: Path = typer.Option(
        Path("graph.json"), "-o", "--output",
        help="Learned graph as a topokit network file (feeds `topokit design`).",
    ),
    plot: Path | None = typer.Option(None, "--plot", help="Also draw the graph to this PNG."),
    solver: str = typer.Option("auto", "--solver", help="auto, dual-newton, pdhg, fbf or cvxpy."),
    tol: float | None = typer.Option(
        None, "--tol",
        help="Solver tolerance (default: 1e-16 duality gap for dual-newton and pdhg, 1e-8 "
             "residual for fbf).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the device positions and classes written."),
) -> None:
    """Learn one weighted graph from smooth signals (log-degree model)."""
    from ..learn.data import load_signals
    from ..learn.solvers import learn_graph, params_for_degree

    check_plot_path(plot)
    check_output_option(output)
    check_outputs_apart([("--output", output), ("--plot", plot)],
                        [("the SIGNALS file", signals)])
    check_seed_option(seed)
    X = load_signals(signals)
    if degree is not None:
        if alpha is not None or beta is not None:
            raise InvalidInputError("give either --degree or --alpha/--beta, not both")
        alpha, beta = params_for_degree(X, degree)
    elif alpha is None or beta is None:
        raise InvalidInputError("give --alpha and --beta, or --degree K")
    result = learn_graph(X, alpha, beta, solver=solver, tol=tol)  # type: ignore[arg-type]
    _write_graph_json(result.graph, output, seed=seed)
    if plot is not None:
        _save_plot(result.graph, plot, f"learned graph ({signals.name})")
    typer.echo(
        f"learned {result.graph.number_of_nodes()} nodes, {result.graph.number_of_edges()} edges "
        f"(alpha={alpha:.4g}, beta={beta:.4g}, objective={result.objective:.6g}, "
        f"{result.solver}, {result.n_iter} iterations) -> {output}"
    )


def learn_federated_command(
    client_files: list[Path] = typer.Argument(..., help="One signals file (.npy/.csv) per client."),
    alpha: float = typer.Option(1.0, "--alpha"),
    beta: float = typer.Option(0.1, "--beta"),
    rho: float = typer.Option(0.5, "--rho", help="Coupling to the consensus graph."),
    lam: float = typer.Option(0.01, "--lam", help="l1 weight of the consensus graph."),
    rounds: int = typer.Option(50, "--rounds", help="Communication rounds T."),
    tol: float | None = typer.Option(
        None, "--tol", help="Stop early at this fixed-point residual."
    ),
    epsilon: float | None = typer.Option(
        None, "--epsilon",
        help="Per-client DP epsilon: of each round (--dp-release gradients), of the run "
             "(distances).",
    ),
    delta: float = typer.Option(1e-5, "--delta", help="DP delta of each release."),
    dp_release: str = typer.Option(
        "gradients", "--dp-release",
        help="gradients: noise every round's gradient (the paper); distances: privatize the "
             "mean distances once.",
    ),
    clip: float = typer.Option(
        20.0, "--clip",
        help="Clipping norm C of each signal-difference vector (used with --epsilon).",
    ),
    coupling: str = typer.Option(
        "implicit", "--coupling",
        help="Client step of the coupling to the consensus graph: implicit (a proximal step, "
             "stable) or explicit (the paper's gradient step; diverges when clients' graphs "
             "are alike).",
    ),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the DP noise."),
    output: Path = typer.Option(Path("learned"), "-o", "--output", help="Output folder."),
) -> None:
    """Learn client graphs and a consensus graph without sharing signals (PPGL, optional DP).

    A run whose objective ends above where it started (or at inf/NaN) is
    reported as diverged (exit status 2) and writes nothing.
    """
    _check_client_files(client_files)
    check_choice(dp_release, "--dp-release", ("gradients", "distances"))
    check_choice(coupling, "--coupling", ("implicit", "explicit"))
    check_seed_option(seed)
    check_output_path(output / "summary.json", "--output")
    check_outputs_apart(
        [(f"--output {output}: {{path}}, written there,", path)
         for path in _federated_files(client_files, output)],
        [(f"the signals file of client {index}", path)
         for index, path in enumerate(client_files, start=1)])
    from ..learn.data import load_signals
    from ..learn.federated import learn_federated

    signals = [load_signals(path) for path in client_files]
    clip_norm = clip if epsilon is not None else None
    result = learn_federated(
        signals, alpha, beta, rho, lam, rounds=rounds, tol=tol, epsilon=epsilon, delta=delta,
        clip=clip_norm, seed=seed, dp_release=dp_release, coupling=coupling,
    )
    _check_not_diverged(result, signals, clip=clip_norm, noisy=epsilon is not None,
                        coupling=coupling)
    _write_federated(result, client_files, output, seed)
    typer.echo(
        f"{len(signals)} clients, {result.n_rounds} rounds: consensus has "
        f"{result.consensus.graph.number_of_edges()} edges -> {output}"
    )
    if result.privacy is not None:
        p = result.privacy
        per = "per round" if p.release == "gradients" else "in one release of the distances"
        typer.echo(
            f"privacy per client: ({p.epsilon:g}, {p.delta:g}) {per}; over {p.rounds} releases "
            f"epsilon={p.epsilon_pld:.3g} (PLD) / {p.epsilon_rdp:.3g} (RDP) "
            f"at delta={p.total_delta:g}, "
            f"basic composition ({p.basic_epsilon:g}, {p.basic_delta:g})"
        )


def _check_client_files(client_files: list[Path]) -> None:
    """One file per client, each once: ``local_<name>.json`` must not be shared by two clients."""
    seen: dict[Path, Path] = {}
    stems: dict[str, Path] = {}
    for path in client_files:
        resolved = path.resolve()
        if resolved in seen:
            spellings = "" if seen[resolved] == path else f" (as {seen[resolved]} and {path})"
            raise InvalidInputError(
                f"{path} is given twice{spellings}; give each client's signals once"
            )
        if path.stem in stems:
            raise InvalidInputError(
                f"two clients are named {path.stem!r} ({stems[path.stem]} and {path}): both "
                f"would write local_{path.stem}.json; rename one of the files"
            )
        seen[resolved], stems[path.stem] = path, path


#: With gradient noise the objective moves randomly; only this many times the
#: starting objective's size (or a non-finite value) is called a divergence.
_NOISY_BLOWUP = 1e3


def _check_not_diverged(result, signals, *, clip: float | None, noisy: bool,
                        coupling: str) -> None:
    """Refuse a run whose objective ended non-finite or above the objective it started from.

    PPGL starts from every weight at W0; a run that converges ends well below
    that objective.  Ending above it (or at inf/NaN) means the iterates
    oscillated away, and the learned graphs mean nothing.
    """
    import numpy as np

    from ..learn.federated import W0, client_means, federated_objective

    params = result.params
    Z = np.stack([client_means(X, clip) for X in signals])
    start = np.full(Z.shape, W0)
    initial = federated_objective(start, start[0], Z, params["alpha"], params["beta"],
                                  params["rho"], params["lam"], params["zeta"])
    weights_finite = all(np.all(np.isfinite(g.weights)) for g in result.local)
    limit = initial + (_NOISY_BLOWUP * max(1.0, abs(initial)) if noisy else 0.0)
    if weights_finite and np.isfinite(result.objective) and result.objective <= limit:
        return
    advice = ("use --coupling implicit (the default), or a smaller --rho" if coupling == "explicit"
              else "use a smaller --rho or --alpha, or fewer --rounds")
    raise InvalidInputError(
        f"learn-federated diverged: the objective went from {initial:.4g} (the starting "
        f"graphs) to {result.objective:.4g} after {result.n_rounds} rounds, so the learned "
        f"graphs mean nothing; {advice}"
    )


app.command("learn")(learn_command)
app.command("learn-federated")(learn_federated_command)
