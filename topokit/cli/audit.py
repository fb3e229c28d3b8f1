"""``topokit audit``: what every device's view of the gossip reveals of every other's data."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import (
    AUDIT_MODEL_TEXT,
    ExampleOpt,
    JsonOpt,
    NetworkArg,
    check_jobs_option,
    check_outputs_apart,
    check_plot_path,
    console,
    handles_user_errors,
    metrics_table,
    naming_options,
    print_json,
    reporting_progress,
    resolve_network,
)

__all__ = ["audit_command"]

#: privacy_audit's parameters as this command names them, in its errors.
_AUDIT_OPTIONS = {"rounds": "--rounds", "noise_multiplier": "--noise-multiplier",
                  "delta": "--delta", "model": "--model", "n_jobs": "--n-jobs"}


def _topology(net, path: Path | None):
    """The audited topology (or schedule) and where it came from: the file, the stored one,
    or NDLF."""
    from ..network.core import Topology

    if path is not None:
        from .design import _schedule_file, _schedule_for, _topology_for

        if _schedule_file(path):
            return _schedule_for(net, path, "--topology"), "given schedule"
        return _topology_for(net, path), "given topology"
    if net.topology is not None:
        return net.topology, "stored topology"
    return (Topology(net.social.edges),
            "NDLF (the social graph, no DP device): the network stores no topology")


def _noise(net, path: Path | None, topology, noise_multiplier: float | None
           ) -> tuple[object, str]:
    """--noise-multiplier, or the per-device levels of a design file when it is not given."""
    from ..network.schedule import TopologySchedule

    if noise_multiplier is not None:
        return noise_multiplier, f"z = {noise_multiplier:g}"
    if path is not None and not isinstance(topology, TopologySchedule):
        from ..network.formats import load_noise_multipliers

        levels = load_noise_multipliers(path, net)  # _topology has read the file as a topology
        if levels is not None:
            spread = sorted(set(levels.values()))
            if not spread:
                return levels, "no DP device (the design's)"
            return levels, (f"z per DP device from the design ({spread[0]:g}-{spread[-1]:g})"
                            if len(spread) > 1 else f"z = {spread[0]:g} (the design's)")
    return 1.0, "z = 1"


def _check_audit_memory(net, topology, noise, rounds: int, model: str, workers: int) -> None:
    """Refuse an audit of the loaded network that the memory available cannot hold, sized
    by its busiest observer and the devices that add noise."""
    from collections import Counter

    from ._sizes import check_audit_memory

    links = _links_of(topology, rounds)
    degrees = Counter(node for edge in links.edges for node in edge)
    levels = noise.values() if isinstance(noise, dict) else (
        [noise] * len(topology.dp_devices))
    check_audit_memory(net.n_devices, rounds, model=model, workers=workers,
                       degree=max(degrees.values(), default=0),
                       noisy=sum(1 for level in levels if level > 0))


def _links_of(topology, rounds: int):
    """The links a topology uses, or the union of a schedule's over the rounds audited."""
    from ..network.schedule import TopologySchedule

    return topology.union(rounds) if isinstance(topology, TopologySchedule) else topology


def _described(topology, rounds: int) -> str:
    """The links and DP devices of what is audited, in words."""
    from ..network.schedule import TopologySchedule

    links = _links_of(topology, rounds)
    if not isinstance(topology, TopologySchedule):
        return f"{links.n_links} links, {len(topology.dp_devices)} DP devices"
    how = (f"generated, seed {topology.seed}" if topology.is_generated
           else f"period {topology.period}")
    return (f"a schedule ({how}) using {links.n_links} links over {rounds} rounds, "
            f"{len(topology.dp_devices)} DP devices")


def _check_options(rounds: int, noise_multiplier: float | None, delta: float | None,
                   n_jobs: int, plot: Path | None, model: str) -> None:
    """Every option, named as the user wrote it, before any work."""
    from .._checks import check_choice, check_real
    from ..audit import AUDIT_MODELS as MODELS
    from ..audit.core import check_audit_rounds

    check_audit_rounds(rounds, check_choice(model, "--model", MODELS), "--rounds")
    if noise_multiplier is not None:
        check_real(noise_multiplier, "--noise-multiplier", low=0)
    if delta is not None:
        check_real(delta, "--delta", low=0, high=1, closed="neither")
    check_jobs_option(n_jobs)
    check_plot_path(plot)


@handles_user_errors
def audit_command(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    topology: Path = typer.Option(
        None, "--topology", "-t",
        help="Topology JSON, a design JSON written by `topokit design -o`, or a schedule "
             "JSON (TopologySchedule.save; round t audited with its own links) "
             "(default: the topology stored with the network, else NDLF)."),
    rounds: int = typer.Option(..., "--rounds", "-T", help="Rounds of gossip the observers watch."),
    noise_multiplier: float = typer.Option(
        None, "--noise-multiplier", "-z",
        help="Noise multiplier z of every DP device [default: each DP device's own level "
             "as the --topology design file records it, else 1]."),
    delta: float = typer.Option(None, "--delta", help="Also report epsilon at this delta."),
    knows_own_noise: bool = typer.Option(
        True, "--observer-knows-own-noise/--eavesdropper",
        help="The observer uses its own noise draws (the participating device, the stronger "
             "adversary: the default), or does not (--eavesdropper: one listening on the "
             "links into it)."),
    model: str = typer.Option(
        "gossip", "--model", "-m",
        help="gossip: the private value is the starting point (exact mu); dsgd: a private "
             "contribution (a clipped gradient) enters every round (mu: an upper bound)."),
    plot: Path = typer.Option(None, "--plot", help="Draw the heat map of mu (PNG, PDF, SVG)."),
    n_jobs: int = typer.Option(1, "--n-jobs", "-j", help="Threads over observers (-1: all cores)."),
    as_json: bool = JsonOpt,
) -> None:
    """Network-privacy audit: mu-GDP of every device's value against every other device.

    Under partial DP a device's value reaches strangers through its neighbours'
    messages.  For every ordered pair (owner, observer) this computes exactly,
    for linear gossip over the topology's Lazy-Metropolis matrix, how much the
    observer's view of T rounds reveals: mu (Gaussian DP; inf: the observer
    reads the value exactly) and, with --delta, epsilon.  Prints a summary over
    stranger and social pairs; --json prints every pair.  By default the
    observer is the participating device (it knows its own noise draws);
    --eavesdropper audits one listening on the links into it.  --model dsgd
    audits decentralized SGD, where a device's contribution enters every round.
    """
    from .._jobs import worker_count
    from ..audit.core import MEMORY_FIX, privacy_audit
    from ._sizes import audit_run, check_network_file
    from .design import _check_topology_path

    _check_options(rounds, noise_multiplier, delta, n_jobs, plot, model)
    _check_topology_path(topology)
    check_outputs_apart([("--plot", plot)], [("the NETWORK file", network),
                                             ("the --topology file", topology)])
    workers = worker_count(n_jobs)
    check_network_file(network, audit_run(rounds, model=model, workers=workers),
                       example=example)
    net = resolve_network(network, example, show_loading=not as_json)
    chosen, source = _topology(net, topology)
    noise, noise_text = _noise(net, topology, chosen, noise_multiplier)
    _check_audit_memory(net, chosen, noise, rounds, model, workers)
    with naming_options(_AUDIT_OPTIONS, {MEMORY_FIX: "audit fewer --rounds, or use fewer "
                                                     "--n-jobs (threads)"}), \
            reporting_progress("observers", total=net.n_devices, quiet=as_json) as report:
        if report is not None:  # the bar from the start: an observer can take minutes
            report(0, net.n_devices)
        audit = privacy_audit(net, chosen, rounds=rounds, noise_multiplier=noise,
                              delta=delta, observer_knows_own_noise=knows_own_noise,
                              model=model, n_jobs=n_jobs, progress=report)
    if plot is not None:
        from ..plotting import save_figure
        from ..plotting.audit import audit_figure

        save_figure(audit_figure(audit), plot)
    if as_json:
        print_json({"network": net.name, "topology_source": source, **audit.to_dict()})
        return
    observer = ("the devices (they know their own noise draws)" if knows_own_noise
                else "eavesdroppers on the links into each device")
    console.print(f"[bold]{net.name or network}[/]: {net.n_devices} devices, {source}; "
                  f"{_described(chosen, rounds)}; "
                  f"{AUDIT_MODEL_TEXT[model]}, T = {rounds} rounds, {noise_text}; "
                  f"observers: {observer}")
    console.print(metrics_table("privacy audit", {"audit": audit.summary()}))
    if plot is not None:
        console.print(f"wrote plot to {plot}")
