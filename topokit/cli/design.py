"""``topokit design``, ``analyze``, ``generate siot`` and ``examples``: the design journey."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from .._io import write_json
from ..design import DEFAULT_AUDIT_ROUNDS
from ..errors import InvalidInputError, TopokitError
from ._sizes import siot_devices_help

if TYPE_CHECKING:  # the report imports the predictors (scikit-learn): loaded per command
    from ..design.report import StrangerAudit
from ._common import (
    AUDIT_MODEL_TEXT,
    ExampleOpt,
    JsonOpt,
    NetworkArg,
    PaperPredictorOpt,
    check_jobs_option,
    check_output_option,
    check_outputs_apart,
    check_plot_path,
    check_predictor_option,
    check_seed_option,
    console,
    error_console,
    handles_user_errors,
    metrics_table,
    naming_options,
    predictor_file,
    print_json,
    reporting_phase,
    reporting_progress,
    resolve_network,
)

__all__ = ["analyze", "design", "generate_app", "generate_siot", "list_examples_command"]

def audit_caption(audit: StrangerAudit) -> str:
    """One line under the table saying what the audit rows are."""
    if audit.rounds == 0:
        return "stranger audit skipped (--audit-rounds 0)"
    return (f"stranger rows: privacy audit of {AUDIT_MODEL_TEXT[audit.model]} over T = "
            f"{audit.rounds} rounds, z = "
            f"{audit.noise_multiplier:.4g} on every DP device (mu-GDP; an exposed pair has "
            "mu = inf); every pair: topokit audit")


def _audit_memory_phrases() -> dict[str, str]:
    """The stranger audit's way out of a memory refusal, as this command's options."""
    from ..audit.core import MEMORY_FIX

    return {MEMORY_FIX: "use fewer --audit-rounds (0: no audit) or a smaller network"}


#: From this many devices design, analyze and generate siot report the phases that have
#: no progress of their own in the library's loops (the stranger audits' observers, writing
#: the outputs, generating a network): on smaller networks they end within a second, and a
#: report would only add lines; on 500 devices one audit takes minutes.
REPORTED_FROM_DEVICES = 64


def _audited_columns(net, topologies: dict, model, audit: StrangerAudit, *, chosen=None,
                     quiet: bool = False, noise: dict | None = None,
                     into: dict | None = None) -> dict:
    """The report's columns (metrics and stranger audit of every topology), with a bar of
    the audits' observers on large networks, named by the topology being audited; each
    column also lands in ``into`` as soon as it is done (what an interrupt leaves).
    Without an audit a large network's metrics are a phase of their own per topology
    (``metrics (name)``): at thousands of devices they take tens of seconds."""
    from ..design.report import _metric_columns_in_turn

    total = len(topologies) * net.n_devices
    large = net.n_devices >= REPORTED_FROM_DEVICES and not quiet
    shown = audit.rounds > 0 and large
    names = list(topologies)

    def audited(done: int) -> str:
        # metric_columns counts the observers of the topologies in order, n_devices each.
        return f"stranger audits ({names[min(done // net.n_devices, len(names) - 1)]})"

    with naming_options({}, _audit_memory_phrases()), \
            reporting_progress("stranger audits", total=total, quiet=not shown,
                               describe=audited) as report:
        if report is not None:  # the bar from the start: one observer can take seconds
            report(0, total)
        columns = {} if into is None else into
        in_turn = _metric_columns_in_turn(net, topologies, model, audit=audit, chosen=chosen,
                                          progress=report, noise=noise)
        for name in names:
            with reporting_phase(f"metrics ({name})", quiet=shown or not large):
                done, column = next(in_turn)
            columns[done] = column
        return columns


def _stranger_audit(rounds: int, noise_multiplier: float | None,
                    model: str = "gossip", workload: Any = None) -> StrangerAudit:
    """The audit options, checked and named as the user wrote them; z defaults to the noise
    multiplier of the workload, else of epsilon = 1 per round, what DP devices train with
    by default (and what the fitted predictor assumes)."""
    from .._checks import check_choice, check_real
    from ..audit import AUDIT_MODELS as MODELS
    from ..audit.core import check_audit_rounds
    from ..design.features import DEFAULT_NOISE_MULTIPLIER
    from ..design.report import StrangerAudit

    if noise_multiplier is None and workload is not None:  # the noise it trains with
        noise_multiplier = workload.resolved_noise_multiplier
    z = DEFAULT_NOISE_MULTIPLIER if noise_multiplier is None else noise_multiplier
    model = check_choice(model, "--audit-model", MODELS)
    return StrangerAudit(check_audit_rounds(rounds, model, "--audit-rounds", low=0),
                         float(check_real(z, "--noise-multiplier", low=0)), model)


AuditRoundsOpt = typer.Option(
    DEFAULT_AUDIT_ROUNDS, "--audit-rounds",
    help="Rounds of gossip the stranger audit watches (0: no audit). mu grows with T and "
         "levels off once the gossip has mixed.")
NoiseMultiplierOpt = typer.Option(
    None, "--noise-multiplier", "-z",
    help="Noise multiplier z of every DP device in the audit (default 3.73: epsilon = 1 per "
         "round, what training uses by default).")
# The user's workload (topokit.Workload), told to --method optimize.
EpsilonOpt = typer.Option(
    None, "--epsilon", help="--method optimize: the epsilon of each round you train with "
                            "(delta 1e-5; a workload file sets both).")
TargetOpt = typer.Option(
    None, "--target", help="--method optimize: the test accuracy you train to.")
ModelOpt = typer.Option(
    None, "--model", help="--method optimize: the model you train (logreg, mlp or your own "
                          "model's name).")
CeilingOpt = typer.Option(
    None, "--ceiling", help="--method optimize: the accuracy your model reaches without noise "
                            "(ceiling_probe measures it; known for logreg on digits).")
ProbeRoundsOpt = typer.Option(
    None, "--probe-rounds", help="--method optimize: how fast your model learns without noise, "
                                 "the rounds its ceiling probe takes to 90 % of the ceiling "
                                 "(ceiling_probe(...).probe_rounds; known for logreg and mlp).")


def _workload_field_option(flag: str, text: str):
    """The option of one more Workload field, for --method optimize."""
    return typer.Option(None, flag, help=f"--method optimize: {text}.")


RoundsOpt = _workload_field_option("--rounds", "the horizon T you train for (rounds; default "
                                               "200): a run not at the target by then counts "
                                               "as never")
DeltaOpt = _workload_field_option("--delta", "the delta of each round (default 1e-5)")
MaxGradNormOpt = _workload_field_option("--max-grad-norm", "the clipping norm C (default 1)")
BatchSizeOpt = _workload_field_option("--batch-size", "the expected minibatch size B "
                                                      "(default 64)")
LocalStepsOpt = _workload_field_option("--local-steps", "local SGD steps K per round "
                                                        "(default 1)")
SamplesOpt = _workload_field_option("--n-samples", "training rows in all, where known")
ClassesOpt = _workload_field_option("--n-classes", "classes of the data, where known")
WorkloadOpt = typer.Option(
    None, "--workload", help="--method optimize: a workload JSON file (topokit.Workload.save), "
                             "instead of the workload's options (--epsilon to --n-classes).")
AuditModelOpt = typer.Option(
    "gossip", "--audit-model",
    help="gossip (one private value, exact) or dsgd (a contribution every round, as in "
         "training; an upper bound).")


@handles_user_errors
def analyze(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    topology: Path = typer.Option(None, "--topology", "-t", help="Topology JSON to analyse."),
    predictor: Path = PaperPredictorOpt,
    audit_rounds: int = AuditRoundsOpt,
    noise_multiplier: float = NoiseMultiplierOpt,
    audit_model: str = AuditModelOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Metrics of a topology: hitting time, spectral gap, DP ratio, local iterate, predicted time.

    Without --topology it analyses the topology stored with the network (the toy
    example stores the paper's Fig. 2(b)), else the social graph itself.  A
    schedule file (a time-varying topology) is judged by its rounds, as
    ``topokit.evaluate`` judges it.  The stranger rows come from the exact
    privacy audit (see ``topokit audit``).
    """
    from ..design.baselines import ndlf
    from ..design.time_predictor import load_predictor
    from ._sizes import audit_run, check_network_file

    audit = _stranger_audit(audit_rounds, noise_multiplier, audit_model)
    check_predictor_option(predictor)
    _check_topology_path(topology)
    check_network_file(network, audit_run(audit.rounds, model=audit.model,
                                          rounds_option="--audit-rounds"), example=example)
    net = resolve_network(network, example, show_loading=not as_json)
    if topology is not None and _schedule_file(topology):
        chosen, design = _schedule_for(net, topology, "--topology"), None
    else:
        chosen = _topology_for(net, topology) if topology else net.topology
        design = _recorded_design(topology) if topology else None
    if predictor:
        model, judged = load_predictor(str(predictor)), str(predictor)
    elif design is not None:  # the design's own predictor, at the settings it judged at
        model = design.judge()
        judged = f"the design's ({(design.predictor or {}).get('name', 'paper')})"
    else:
        model, judged = None, "paper (eq. 15)"
    label = _analyzed_label(topology, chosen, design)
    levels = ({label: design.noise_multipliers}
              if design is not None and design.noise is not None and noise_multiplier is None
              else None)
    columns = _audited_columns(net, {label: chosen or ndlf(net)}, model, audit,
                               quiet=as_json, noise=levels)
    if as_json:
        print_json({"network": net.name, "topology": label, **columns[label],
                    "predictor": judged, "stranger_audit": audit.settings()})
        return
    title = f"{net.name or network}: {net.n_devices} devices, {label}"
    console.print(metrics_table(title, columns))
    console.print(f"predicted_global_iterate (rounds) and pseudo_time (s) by predictor {judged}")
    console.print(audit_caption(audit) if levels is None else
                  audit_caption(audit).replace(f"z = {audit.noise_multiplier:.4g} on every DP "
                                               "device", "each DP device at the design's noise"))


def _analyzed_label(path: Path | None, chosen, design) -> str:
    """What analyze reports on: the given design, schedule or topology, the network's
    stored topology, or its social graph."""
    from ..network.schedule import TopologySchedule

    if path is not None:
        return ("given design" if design is not None else
                "given schedule" if isinstance(chosen, TopologySchedule) else "given topology")
    return "stored topology" if chosen else "social graph"


def _check_topology_path(path: Path | None, name: str = "--topology") -> None:
    """Refuse a folder given where a topology or design file is read, naming the option."""
    if path is not None and Path(path).is_dir():
        raise InvalidInputError(
            f"{name}: {path} is a directory; give a topology JSON file, or a design JSON "
            "written by topokit design -o"
        )


def _recorded_design(path: Path):
    """The design a --topology file holds (None for a plain topology file); errors name it."""
    import json

    from ..design.result import load_design

    data = json.loads(Path(path).read_text(encoding="utf-8"))  # _topology_for has checked it
    return load_design(path) if isinstance(data, dict) and "topology" in data else None


def _schedule_file(path: Path) -> bool:
    """Whether ``path`` is a schedule file (:meth:`topokit.TopologySchedule.save`): a JSON
    object with the key ``"topokit_schedule"``.  A file that cannot be read as JSON is not
    (its reader says why)."""
    import json

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "topokit_schedule" in data


def _schedule_for(net, path: Path, label: str):
    """The schedule file ``path`` (:meth:`topokit.TopologySchedule.save`), a generated one
    rebuilt over ``net``, checked against ``net``; errors start with ``label``."""
    from ..network.schedule import load_schedule

    try:
        schedule = load_schedule(path, network=net)
    except TopokitError as exc:
        raise type(exc)(f"{label}: {exc}") from None
    try:
        return schedule.validate(net)
    except TopokitError as exc:
        raise type(exc)(
            f"{label}: {path} does not fit this network ({exc}); give a schedule made for it"
        ) from None


def _topology_for(net, path: Path):
    """The topology file ``path``, checked against ``net``; errors name the file."""
    from ..network.formats import load_topology

    _check_topology_path(path)
    topology = load_topology(path)
    try:
        return topology.validate(net)
    except TopokitError as exc:
        raise type(exc)(f"{path}: {exc}") from None


def _design_with_progress(net, predictor, *, n_jobs: int, trace: bool, nep_patience: int | None,
                          quiet: bool):
    from ..design import autotag

    with reporting_progress("DP budgets", total=net.n_devices + 1, quiet=quiet) as report:
        return autotag(net, predictor, n_jobs=n_jobs, progress=report, trace=trace,
                       nep_patience=nep_patience)


METHODS = ("optimize", "autotag")


@handles_user_errors
def design(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    method: str = typer.Option(
        "optimize", "--method",
        help="optimize (default): what topokit's fitted predictor says trains fastest; NDLF "
             "unless it or DLFDP, ERG, AutoTag is predicted faster by the NDLF margin. autotag: "
             "the paper's Algorithm 2 (with --predictor paper, its default, it is the paper's)."),
    predictor: Path = typer.Option(
        None, "--predictor",
        help="'default' (topokit's fitted TrainingTimePredictor, fitted on logistic "
             "regression; the default of --method optimize), 'workload' (fitted across "
             "epsilon and targets; the default with --epsilon/--target/--workload), 'mlp' "
             "(fitted on MLP runs: for neural networks), 'paper' (eq. 15; the default of "
             "--method autotag) or a predictor JSON file (topokit calibrate)."),
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
    max_stranger_mu: float = typer.Option(
        None, "--max-stranger-mu",
        help="--method optimize: no stranger pair may have mu above this in the privacy audit "
             "over --audit-rounds rounds; DP devices add the noise that needs."),
    mixing: str = typer.Option(
        None, "--mixing",
        help="--method optimize: lazy-metropolis (the paper's weights), metropolis "
             "(Metropolis-Hastings) or fastest (Boyd-Diaconis-Xiao fastest-mixing weights), "
             "on the chosen links when predicted no slower [default: fastest; "
             "lazy-metropolis with --predictor mlp or paper]."),
    audit_rounds: int = AuditRoundsOpt,
    noise_multiplier: float = NoiseMultiplierOpt,
    audit_model: str = AuditModelOpt,
    ndlf_margin: float = typer.Option(
        None, "--ndlf-margin",
        help="--method optimize: keep NDLF (the social graph, with the design's mixing "
             "weights) when it is predicted no slower than every reference and the searched "
             "design is predicted less than this many times faster (default with a fitted "
             "predictor: 1 for fastest, 1.02 for metropolis, 1.12 for lazy-metropolis "
             "weights; 1 with --predictor paper; 1 keeps any faster design)."),
    schedules: bool = typer.Option(
        False, "--schedules",
        help="--method optimize: judge the field's time-varying topologies (one-peer "
             "exponential, Base-(k+1), epidemic learning at the design's degree) beside the "
             "design with its own predictor, and say which is predicted faster "
             "(stats['schedules'] in --output and --json)."),
    uniform_noise: bool = typer.Option(
        False, "--uniform-noise",
        help="--max-stranger-mu: every DP device adds the common z*; by default single "
             "devices add less where the bound allows and the predicted time falls."),
    epsilon: float = EpsilonOpt,
    target: float = TargetOpt,
    model_name: str = ModelOpt,
    ceiling: float = CeilingOpt,
    probe_rounds: float = ProbeRoundsOpt,
    rounds: int = RoundsOpt,
    delta: float = DeltaOpt,
    max_grad_norm: float = MaxGradNormOpt,
    batch_size: int = BatchSizeOpt,
    local_steps: int = LocalStepsOpt,
    n_samples: int = SamplesOpt,
    n_classes: int = ClassesOpt,
    workload_file: Path = WorkloadOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Design a topology and compare it with NDLF, DLFDP, ERG (and AutoTag).

    Prints the chosen links, the DP devices and the metrics of every framework
    under the same predictor; --output writes the design (accepted by
    `analyze --topology`), --plot draws it.
    """
    from .._checks import check_choice
    from ..design.report import baseline_topologies

    # Every option is checked before the design runs: a typo must not cost the whole design.
    method = check_choice(method, "--method", METHODS)
    _check_run_options(plot, output, n_jobs, seed, inputs=(network, predictor, workload_file))
    workload = _workload_option(method, {
        "epsilon": epsilon, "target": target, "model": model_name, "ceiling": ceiling,
        "probe_rounds": probe_rounds, "rounds": rounds, "delta": delta,
        "max_grad_norm": max_grad_norm, "batch_size": batch_size, "local_steps": local_steps,
        "n_samples": n_samples, "n_classes": n_classes}, workload_file)
    audit = _stranger_audit(audit_rounds, noise_multiplier, audit_model, workload)
    _check_stranger_bound(method, max_stranger_mu, audit)
    _check_method_options(method, max_stranger_mu, uniform_noise, mixing, nep_patience,
                          schedules)
    ndlf_margin = _checked_ndlf_margin(method, ndlf_margin)
    check_predictor_option(predictor)
    net = _sized_network(network, example, as_json, {
        "method": method, "n_jobs": n_jobs, "plot": plot, "nep_patience": nep_patience})
    model = _design_predictor(method, predictor)
    if method == "autotag":
        chosen = _design_with_progress(net, model, n_jobs=n_jobs, trace=plot is not None,
                                       nep_patience=nep_patience, quiet=as_json)
        topologies = {"AutoTag": chosen.topology, **baseline_topologies(net, chosen, seed=seed)}
    else:
        chosen, topologies, model = _optimized_and_judge(
            net, model, audit, n_jobs=n_jobs, seed=seed, quiet=as_json,
            max_stranger_mu=max_stranger_mu, mixing=mixing, per_device_noise=not uniform_noise,
            ndlf_margin=ndlf_margin, workload=workload, schedules=schedules)
    columns, unaudited = _design_columns(net, topologies, model, audit, chosen, quiet=as_json)
    _report_design(net, network, method, chosen, columns, audit,
                   output=output, plot=plot, as_json=as_json, unaudited=unaudited)


#: The exit status of a design interrupted (Ctrl-C) during its report's audits: 128 + SIGINT,
#: what a shell reports for a command the interrupt stopped.
INTERRUPTED_EXIT = 130


def _design_columns(net, topologies: dict, model, audit: StrangerAudit, chosen, *,
                    quiet: bool) -> tuple[dict, list[str]]:
    """The report's columns, and the labels an interrupt (Ctrl-C) left without a column.

    The design is made by then: an interrupt during the reference designs' audits
    keeps it, with the columns audited so far (the design's own as optimize or
    AutoTag measured it, without its audit if that was cut short), so that the
    report is still written.  A second interrupt stops at once.
    """
    columns: dict = {}
    try:
        _audited_columns(net, topologies, model, audit, chosen=chosen, quiet=quiet,
                         into=columns)
    except KeyboardInterrupt:
        unaudited = [name for name in topologies if name not in columns]
        label = next(iter(topologies))  # the design's own column comes first
        if label not in columns:
            columns = {label: chosen.metrics.to_dict(), **columns}
        return columns, unaudited
    return columns, []


def _exit_if_interrupted(unaudited: list[str], output: Path | None) -> None:
    """After a report an interrupt cut short (``unaudited`` not empty): one line on stderr,
    what it holds and what it lacks, and the exit status :data:`INTERRUPTED_EXIT`."""
    if not unaudited:
        return
    kept = f"wrote the design to {output}" if output is not None else "the design is above"
    error_console.print(escape(
        f"interrupted while auditing the designs: {kept} without the audits of "
        f"{', '.join(unaudited)}; topokit analyze NETWORK --topology DESIGN.json audits the "
        "design alone"), highlight=False, soft_wrap=True)  # one line, as errors are
    raise typer.Exit(INTERRUPTED_EXIT)


def _report_design(net, network: Path | None, method: str, chosen, columns: dict, audit, *,
                   output: Path | None, plot: Path | None, as_json: bool,
                   unaudited: Sequence[str] = ()) -> None:
    """Write, draw and print the design: the file of -o, the figure of --plot, the table;
    then, if an interrupt left the designs ``unaudited``, say so and exit."""
    from ..design.report import design_record

    payload = design_record(net, method, chosen, columns, audit)
    written = " and ".join(str(path) for path in (output, plot) if path is not None)
    with reporting_phase(f"writing {written}", quiet=as_json or not written
                         or net.n_devices < REPORTED_FROM_DEVICES):
        if output is not None:
            write_json(output, payload)
        if plot is not None:
            from ..plotting.design import design_figure, save_figure

            save_figure(design_figure(net, chosen), plot)
    if as_json:
        print_json(payload)
        _exit_if_interrupted(list(unaudited), output)
        return
    _print_design(net, network, method, chosen, columns)
    judged = "paper (eq. 15)" if chosen.predictor is None else chosen.predictor["name"]
    console.print(f"predicted_global_iterate (rounds) and pseudo_time (s) by predictor {judged}")
    console.print(audit_caption(audit))
    bound = chosen.stats.get("stranger_bound")
    if bound is not None:
        console.print(_bound_caption(bound))
    for path, what in ((output, "design"), (plot, "plot")):
        if path is not None:
            console.print(f"wrote {what} to {path}")
    _exit_if_interrupted(list(unaudited), output)


#: optimize's parameters as the design command names them, in its errors.
_OPTIMIZE_OPTIONS = {"max_stranger_mu": "--max-stranger-mu", "audit_rounds": "--audit-rounds",
                     "ndlf_margin": "--ndlf-margin", "n_jobs": "--n-jobs"}
_OPTIMIZE_PHRASES = {"topokit.privacy_audit": "topokit audit"}


def _check_design_memory(*, method: str, n_jobs: int, plot: Path | None,
                         nep_patience: int | None, network_file: Path | None = None,
                         net=None) -> None:
    """Refuse a design the memory available cannot hold: from the network file before it
    is read (``network_file``), or from the loaded network (``net``)."""
    import numpy as np

    from .._jobs import worker_count
    from ._sizes import check_design_memory, network_file_size

    options = {"method": method, "workers": worker_count(n_jobs),
               "trace": method == "autotag" and plot is not None, "nep_patience": nep_patience}
    if net is not None:
        n = net.n_devices
        pairs = (int(np.count_nonzero(np.isfinite(net.delay))) - n) // 2
        check_design_memory(n, pairs, **options)
        return
    size = None if network_file is None else network_file_size(network_file)
    if size is not None:  # else the reader says what is wrong with the file
        check_design_memory(size.n_devices, size.min_pairs, loading_bytes=size.loading_bytes,
                            **options)


def _check_run_options(plot: Path | None, output: Path | None, n_jobs: int, seed: int, *,
                       inputs: tuple[Path | None, Path | None, Path | None]) -> None:
    """--plot, --output, --n-jobs and --seed, each named as written, and the outputs apart
    from ``inputs``: the NETWORK, --predictor and --workload files."""
    check_plot_path(plot)
    check_output_option(output)
    check_jobs_option(n_jobs)
    check_seed_option(seed)
    network, predictor, workload_file = inputs
    check_outputs_apart([("--output", output), ("--plot", plot)],
                        [("the NETWORK file", network),
                         ("the --predictor file", predictor_file(predictor)),
                         ("the --workload file", workload_file)])


def _sized_network(network: Path | None, example: str | None, as_json: bool,
                   sizing: dict[str, Any]):
    """The network to design for, refused in one line when the design would not fit in
    memory: a file too large before it is read, then the network read."""
    if example is None:
        _check_design_memory(network_file=network, **sizing)
    net = resolve_network(network, example, show_loading=not as_json)
    _check_design_memory(net=net, **sizing)
    return net


def _bound_caption(bound: dict[str, Any]) -> str:
    """The line under the table that says what noise optimize's bounded design adds."""
    head = f"stranger bound mu <= {bound['max_stranger_mu']:g}: "
    lowered = bound.get("devices_lowered", 0)
    if not lowered:
        return (head + f"every DP device of optimize's design adds z* = "
                f"{bound['noise_multiplier']:.4g} (its column is audited and predicted at z*)")
    levels = bound["noise_multipliers"].values()
    return (head + f"optimize's design adds z* = {bound['noise_multiplier']:.4g} on "
            f"{len(levels) - lowered} of its {len(levels)} DP devices and less on {lowered} "
            f"(down to {min(levels):.4g}; every level in the JSON output); its column is "
            "audited and predicted at those levels")


def start_words(name: str) -> str:
    """optimize's start (``stats["start"]``) in words.

    >>> start_words("ndlf<=26.2625s+dp")
    "NDLF's links of at most 26.26 s, every device DP"
    >>> start_words("autotag-n3")
    "AutoTag's candidate of DP budget 3"
    """
    base, dp = name.removesuffix("+dp"), name.endswith("+dp")
    if base.startswith("ndlf<="):
        words = f"NDLF's links of at most {float(base[6:].rstrip('s')):.4g} s"
    elif base.startswith("autotag-n"):
        words = f"AutoTag's candidate of DP budget {base[9:]}"
    else:
        words = {"ndlf": "NDLF", "dlfdp": "DLFDP", "erg": "ERG", "autotag": "AutoTag"}.get(
            base, base)
    return words + (", every device DP" if dp else "")


def noise_line(noise) -> str:
    """One line saying what noise the DP devices add and what it guarantees (a
    :class:`~topokit.design.noise.DesignNoise`)."""
    levels = sorted(set(noise.noise_multipliers.values()))
    epsilons = noise.epsilons.values()
    z = f"z = {levels[0]:.4g}" if len(levels) == 1 else \
        f"z from {levels[0]:.4g} to {levels[-1]:.4g}"
    spent = max(epsilons)
    return (f"noise: every DP device adds {z}: epsilon <= {spent:.4g} per round at delta "
            f"{noise.delta:g} ({noise.source})")


def _design_predictor(method: str, predictor: Path | None):
    """The predictor of a design run (optimize: its name or path, recorded in the design).

    AutoTag's scores need eq. (15)'s form.
    """
    from ..design.predictor import GlobalIteratePredictor
    from ..design.time_predictor import load_predictor

    if predictor is None:  # optimize's own default: the shipped predictor for the workload
        return None
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


def _check_stranger_bound(method: str, max_stranger_mu: float | None,
                          audit: StrangerAudit) -> None:
    """--max-stranger-mu: optimize only, a positive number, an audit to bound."""
    from .._checks import check_real

    if max_stranger_mu is None:
        return
    if method != "optimize":
        raise InvalidInputError("--max-stranger-mu applies to --method optimize only; drop it")
    check_real(max_stranger_mu, "--max-stranger-mu", low=0, closed="neither")
    if audit.rounds == 0:
        raise InvalidInputError("--max-stranger-mu needs the audit: give --audit-rounds >= 1")


def _check_mixing(method: str, mixing: str | None) -> None:
    """--mixing: a known weighting, and only where optimize chooses it (None: its default)."""
    from .._checks import check_choice
    from ..design import MIXING

    if mixing is None:
        return
    check_choice(mixing, "--mixing", MIXING)
    if mixing != "lazy-metropolis" and method != "optimize":
        raise InvalidInputError("--mixing applies to --method optimize only; drop it")


def _checked_ndlf_margin(method: str, margin: float | None) -> float | None:
    """--ndlf-margin: a real >= 1, and only where optimize uses it (None: optimize's default)."""
    from ..design import check_ndlf_margin

    if margin is None:
        return None
    if method != "optimize":
        raise InvalidInputError("--ndlf-margin applies to --method optimize only; drop it")
    return check_ndlf_margin(margin, "--ndlf-margin")


def _check_method_options(method: str, max_stranger_mu: float | None, uniform_noise: bool,
                          mixing: str | None, nep_patience: int | None,
                          schedules: bool = False) -> None:
    """Options that apply to one method or with another option only."""
    from .._checks import check_int

    _check_schedules_option(method, schedules, max_stranger_mu)
    if uniform_noise and max_stranger_mu is None:
        raise InvalidInputError("--uniform-noise applies with --max-stranger-mu only; drop it")
    _check_mixing(method, mixing)
    if nep_patience is not None:
        if method != "autotag":
            raise InvalidInputError("--nep-patience applies to --method autotag only; drop it")
        check_int(nep_patience, "--nep-patience", low=1)


def _check_schedules_option(method: str, schedules: bool,
                            max_stranger_mu: float | None) -> None:
    if not schedules:
        return
    if method != "optimize":
        raise InvalidInputError("--schedules applies to --method optimize only; drop it")
    if max_stranger_mu is not None:
        raise InvalidInputError(
            "--schedules cannot be judged under --max-stranger-mu (the schedules' rounds are "
            "not audited against the bound); drop one of them")


def _consider_schedules(net, chosen, *, seed: int) -> None:
    """The field's schedules beside the design, recorded in its stats (``"schedules"``)."""
    from ..design.schedules import consider_schedules

    chosen.stats["schedules"] = consider_schedules(net, chosen, seed=seed).to_dict()


def _schedules_line(comparison: dict) -> str:
    """One line: each schedule's predicted time beside the design's, and what decided."""
    times = ", ".join(f"{name} {_seconds(time)}" for name, time in comparison["times"].items())
    refused = ("; not carried by the network: " + ", ".join(comparison["refused"])
               if comparison["refused"] else "")
    return (f"schedules (predicted, an extrapolation of a fit on static topologies): "
            f"{times or 'none'}; the design {_seconds(comparison['design_time'])}{refused}. "
            f"{comparison['why'][0].upper()}{comparison['why'][1:]}")


def _seconds(value: float | None) -> str:
    return "never" if value is None or not math.isfinite(value) else f"{value:.5g} s"


def _workload_option(method: str, flags: dict[str, Any], workload_file: Path | None):
    """The Workload of --epsilon, --target, --model, --ceiling, --probe-rounds (``flags``:
    field -> value) or --workload (None if none is given)."""
    from ..design.workload import Workload, load_workload

    options = {name: "--" + name.replace("_", "-") for name in flags}
    given = [options[name] for name, value in flags.items() if value is not None]
    if workload_file is not None:
        given.append("--workload")
    if not given:
        return None
    if method != "optimize":
        verb, them = ("applies", "it") if len(given) == 1 else ("apply", "them")
        raise InvalidInputError(f"{', '.join(given)} {verb} to --method optimize only; drop "
                                f"{them} or use --method optimize")
    if workload_file is not None:
        if len(given) > 1:
            raise InvalidInputError(f"give --workload or {given[0]}, not both: set the values "
                                    "in the workload file")
        return load_workload(workload_file)
    with naming_options(options,
                        {", or None for the one the predictor knows":
                         ", or leave the option out for the one the predictor knows"}):
        return Workload(**{name: value for name, value in flags.items() if value is not None})


def _optimized_and_judge(net, model, audit: StrangerAudit, *, schedules: bool = False,
                         **options):
    """optimize's design, the reference designs by column label, and the predictor that
    judges them all (the design's own, at its workload); with ``schedules``, the field's
    schedules judged beside the design (its ``stats["schedules"]``)."""
    from ..design.report import reference_judge

    with naming_options(_OPTIMIZE_OPTIONS, _OPTIMIZE_PHRASES):
        chosen, topologies = _optimized(
            net, model, audit_rounds=audit.rounds or DEFAULT_AUDIT_ROUNDS,
            audit_model=audit.model, **options)
    if schedules:
        _consider_schedules(net, chosen, seed=options["seed"])
    return chosen, topologies, reference_judge(chosen, model)


def _optimized(net, model, *, n_jobs: int, seed: int, quiet: bool,
               max_stranger_mu: float | None = None, audit_rounds: int = DEFAULT_AUDIT_ROUNDS,
               audit_model: str = "gossip", mixing: str | None = None,
               per_device_noise: bool = True, ndlf_margin: float | None = None,
               workload=None):
    """optimize's design, and it and the reference designs by column label."""
    from ..design import optimize_with_references

    # After its searches optimize weighs the links (fastest-mixing weights: a first-order
    # solve that takes minutes at hundreds of devices): the phase's lines then say so.
    def phase(done: int) -> str:
        return "local searches" if done < 3 else "local searches done, choosing mixing weights"

    with reporting_progress("local searches", total=3, quiet=quiet, describe=phase) as report:
        chosen, references = optimize_with_references(
            net, predictor=model, seed=seed, n_jobs=n_jobs, progress=report,
            max_stranger_mu=max_stranger_mu, audit_rounds=audit_rounds,
            audit_model=audit_model, mixing=mixing, per_device_noise=per_device_noise,
            ndlf_margin=ndlf_margin, workload=workload)
    labels = {"ndlf": "NDLF", "dlfdp": "DLFDP", "erg": "ERG", "autotag": "AutoTag"}
    return chosen, {"optimize": chosen.topology,
                    **{labels[name]: topology for name, topology in references.items()}}


def _kept_ndlf(margin: dict) -> str:
    """Why optimize's result is NDLF (``stats["ndlf_margin"]`` with ``kept_ndlf``)."""
    gain, weights = margin["predicted_gain"], margin["ndlf_weights"]
    if gain < 1.0:
        return (f"kept NDLF ({weights} weights): predicted {1 / gain:.4f}x faster than the "
                "searched design with them")
    return (f"kept NDLF ({weights} weights): the searched design was predicted only "
            f"{gain:.4f}x faster, below --ndlf-margin {margin['margin']:g}")


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
                      f"{start_words(chosen.stats['start'])} and took "
                      f"{chosen.stats['moves_taken']} moves")
    if chosen.topology.n_links <= 40:
        console.print(f"links (* non-social): {links}")
    else:
        non_social = [f"{u}-{v}" for u, v in chosen.topology.non_social_edges(net)]
        console.print(f"{chosen.topology.n_links} links; "
                      f"non-social: {', '.join(non_social) or 'none'}"
                      " (all links: --output or --json)", soft_wrap=True)
    console.print(f"DP devices: {dp}")
    if chosen.noise is not None and chosen.noise.noise_multipliers:
        console.print(noise_line(chosen.noise))
    margin = chosen.stats.get("ndlf_margin")
    if margin is not None and margin["kept_ndlf"]:
        console.print(_kept_ndlf(margin))
    mixing = chosen.stats.get("mixing")
    if mixing is not None:
        kept = mixing["weights"] != "lazy-metropolis"
        console.print("mixing weights: " + (
            f"{mixing['weights']} ({mixing['links_dropped']} unused links dropped){_won(mixing)}"
            if kept else "lazy-metropolis (the other weights were predicted slower or left "
                         "the trust region)"), highlight=False)
    title = "AutoTag" if method == "autotag" else "optimize"
    console.print(metrics_table(f"{title} against the baselines", columns))
    if "schedules" in chosen.stats:
        console.print(escape(_schedules_line(chosen.stats["schedules"])), highlight=False)


def _won(mixing: dict) -> str:
    """Which of the candidates weighed the design is (optimize's ``stats["mixing"]``)."""
    if "from" not in mixing:  # a design file written before the candidates were recorded
        return ""
    return f"; {mixing['from']}, the fastest of {mixing['candidates_weighed']} candidates weighed"


generate_app = typer.Typer(help="Generate networks.", no_args_is_help=True, rich_markup_mode=None)


@generate_app.command("siot")
@handles_user_errors
def generate_siot(
    devices: int = typer.Option(
        ..., "--devices", "-n",
        help=siot_devices_help()),
    seed: int = typer.Option(None, "--seed", help="Seed (same seed, same network)."),
    output: Path = typer.Option(
        ..., "--output", "-o",
        help="Network file: .json or .graphml, or gzip-compressed as .json.gz or .graphml.gz "
             "(about a tenth of the size, loaded as the uncompressed file is)."),
    metres_per_unit: float = typer.Option(
        None, "--metres-per-unit", help="Scale of the data set's coordinates (default: topokit's)."
    ),
) -> None:
    """A synthetic Social-IoT network with the Santander data set's structure.

    The network file holds the devices, their positions and social links (the
    radio model gives the delays).  Generating it holds its social graph but
    no pair's delay; loading its file later to design or analyze also holds
    every pair's delay: a network that cannot be generated and written here,
    or whose file could not be loaded here, is refused before it is
    generated, with the estimate.
    """
    from .._checks import check_int, check_positive
    from ..network.core import NETWORK_SUFFIXES, network_suffix
    from ..network.formats import save_network
    from ..network.siot import DEFAULT_METRES_PER_UNIT, NO_COMPONENT_FIX, siot
    from ._sizes import check_siot_size

    check_int(devices, "--devices", low=1)
    check_seed_option(seed)
    check_output_option(output)
    if network_suffix(output) is None:
        raise InvalidInputError(
            f"--output must end in {', '.join(NETWORK_SUFFIXES[:-1])} or "
            f"{NETWORK_SUFFIXES[-1]}; got {str(output)!r}"
        )
    if metres_per_unit is None:
        metres_per_unit = DEFAULT_METRES_PER_UNIT
    check_positive(metres_per_unit, "--metres-per-unit")
    check_siot_size(devices, output, closer=DEFAULT_METRES_PER_UNIT / metres_per_unit)
    # Both grow with the social links (no pair's delay is computed): a minute at 20,000.
    small = devices < REPORTED_FROM_DEVICES
    with naming_options({"n_devices": "--devices", "metres_per_unit": "--metres-per-unit"},
                        {NO_COMPONENT_FIX: "Ask for fewer --devices, or a smaller "
                                           "--metres-per-unit (devices closer together link "
                                           "to more others)."}), \
            reporting_phase(f"generating a SIoT network of {devices} devices", quiet=small):
        net = siot(devices, seed=seed, metres_per_unit=metres_per_unit)
    with reporting_phase(f"writing {output}", quiet=small):
        save_network(net, output)
    console.print(f"wrote {output}: {net.n_devices} devices, {net.social.number_of_edges()} "
                  f"social links{_compression_hint(output)}")


#: A plain network file at least this large is written with a hint to compress it.
COMPRESSION_HINT_BYTES = 10_000_000


def _compression_hint(output: Path) -> str:
    """'' or, for a large uncompressed file, its size and the compressed suffix to ask for."""
    size = output.stat().st_size
    if output.suffix.lower() == ".gz" or size < COMPRESSION_HINT_BYTES:
        return ""
    return (f" ({size / 1e6:.1f} MB; as {output.name}.gz it would be about a tenth of that, "
            "read the same way)")


@handles_user_errors
def list_examples_command() -> None:
    """List the bundled example networks."""
    from ..network.examples import list_examples, load_example

    table = Table(title="bundled examples")
    for column in ("name", "devices", "social links", "stored topology"):
        table.add_column(column)
    for name in list_examples():
        net = load_example(name)
        table.add_row(name, str(net.n_devices), str(net.social.number_of_edges()),
                      "yes" if net.topology else "no")
    console.print(table)


