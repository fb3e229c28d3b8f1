"""``topokit probe``: the few topologies to train over to calibrate a predictor."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from .._checks import check_output_path, check_real
from ..errors import InvalidInputError
from ._common import (
    ExampleOpt,
    JsonOpt,
    NetworkArg,
    check_outputs_apart,
    check_predictor_option,
    check_seed_option,
    console,
    handles_user_errors,
    naming_options,
    predictor_file,
    print_json,
    resolve_network,
)
from .ceiling import DataLabelOpt, check_data_options, load_data_option

__all__ = ["probe_command", "INDEX_NAME", "NETWORK_NAME"]

#: The index of the probes in the output folder, and the copy of the network beside them.
INDEX_NAME = "index.csv"
NETWORK_NAME = "network.json"


def _check_folder(folder: Path, inputs: list[tuple[str, Path | str | None]],
                  names: tuple[str, ...] = (NETWORK_NAME, INDEX_NAME)) -> None:
    """A folder the probes can be written to (missing folders are created), where none of
    the files ``names`` is a folder or one of the command's ``inputs``."""
    if folder.exists() and not folder.is_dir():
        raise InvalidInputError(
            f"--output: {folder} is a file; give a folder for the probes, e.g. probes/")
    check_output_path(folder / INDEX_NAME, "--output")
    for name in names:
        if (folder / name).is_dir():
            raise InvalidInputError(
                f"--output: {folder} holds a folder {name}, where the file {name} goes; "
                "remove it or give another folder"
            )
    check_outputs_apart([(f"--output {folder}: {{path}}, written there,", folder / name)
                         for name in names], inputs)


#: probe_topologies's parameters as this command names them, in its errors.
_PROBE_OPTIONS = {"k": "-k", "predictor": "--predictor", "seed": "--seed",
                  "settings": "--workload"}


def _write_probes(folder: Path, net, probes: dict, index) -> None:
    """The network, one topology JSON per probe and the index, all or none (atomically)."""
    from .._io import atomic_paths
    from ..network.formats import save_network

    names = list(probes)
    targets = [folder / NETWORK_NAME, folder / INDEX_NAME, *(folder / f"{n}.json" for n in names)]
    with atomic_paths(*targets) as (network_temp, index_temp, *topology_temps):
        save_network(net, network_temp)
        index.to_csv(index_temp, index=False)
        for name, temp in zip(names, topology_temps, strict=True):
            temp.write_text(json.dumps(probes[name].to_dict(), indent=1) + "\n", encoding="utf-8")


def _probe_table(index, folder: Path) -> Table:
    table = Table(title=f"{len(index)} probe topologies in {escape(str(folder))}",
                  caption="predicted: rounds to the target by the predictor being calibrated "
                          "(inf: never reached)")
    for column in ("probe", "file", "links", "DP devices", "predicted"):
        table.add_column(column, justify="left" if column in ("probe", "file") else "right")
    for row in index.itertuples():
        table.add_row(escape(row.name), escape(row.topology), str(row.n_links),
                      str(row.n_dp_devices), f"{row.predicted_rounds:.4g}")
    return table


def _check_data_options(data: Path | None, label: str | None, skewness: float | None) -> None:
    """--data with its --label; --skewness partitions --data, so only with it."""
    check_data_options(data, label)
    if skewness is not None and data is None:
        raise InvalidInputError("--skewness partitions the labels of --data over the devices; "
                                "give --data FILE --label COLUMN too, or drop --skewness")
    if skewness is not None:
        check_real(skewness, "--skewness", low=0, high=1)


def _with_data_counts(net, data: Path | None, label: str | None, skewness: float | None,
                      seed: int):
    """``net`` with the class counts of --data's labels partitioned over its devices as
    topokit's training partitions them (seed --seed): what the probes' heterogeneity
    features describe.  A network that records class counts of its own is refused rather
    than overwritten."""
    if data is None:
        return net
    if net.class_counts is not None:
        raise InvalidInputError(
            "the network records class counts per device already; --data would replace "
            "them: drop --data, or give a network file without class_counts")
    from ..training import partition_class_counts
    from ..training.user_data import check_rows_for_devices

    table = load_data_option(data, label)
    check_rows_for_devices(table, net.n_devices, str(data))
    counts = partition_class_counts(table.y, net.n_devices, skewness, seed,
                                    nodes=list(net.nodes))
    return net.with_class_counts(counts)


@handles_user_errors
def probe_command(
    network: Path = NetworkArg,
    example: str = ExampleOpt,
    k: int = typer.Option(8, "-k", help="How many probe topologies (at least 2)."),
    predictor: str = typer.Option(
        "default", "--predictor",
        help="The predictor to calibrate: 'default', 'mlp' or a predictor JSON file."),
    seed: int = typer.Option(0, "--seed", help="Seed of optimize, ERG and random topologies."),
    output: Path = typer.Option(..., "--output", "-o", help="Folder to write the probes to."),
    workload_file: Path = typer.Option(
        None, "--workload", help="A workload JSON file (topokit.Workload.save): the probes are "
                                 "chosen for its noise, clipping, batch size and local steps."),
    data: Path = typer.Option(
        None, "--data", help="Your training data (a CSV, Parquet or NPZ table): the devices' "
                             "class counts are its labels' partition over them (IID, or "
                             "--skewness), which the predictor's features describe."),
    label: str = DataLabelOpt,
    skewness: float = typer.Option(
        None, "--skewness", help="With --data: non-IID skewness K in [0, 1] of that partition "
                                 "(default: IID)."),
    as_json: bool = JsonOpt,
) -> None:
    """Choose k topologies whose training runs calibrate a predictor best.

    NDLF, optimize's design and topologies spread over the predictor's
    features.  Writes one topology JSON per probe, a copy of the network
    (network.json) and index.csv listing them, all at once.  Train over each
    probe with your own stack, add one row per run to a table (columns
    network, topology, target, measured_rounds, horizon; index.csv gives the
    first two) and refit with `topokit calibrate runs.csv --refit default`.
    With --data, the devices get the class counts of your labels' partition
    (network.json records them), so the probes spread over the data's
    heterogeneity too.
    """
    from ..design.workload import load_workload
    from ..validation.probes import FIXED_PROBES, probe_index, probe_topologies
    from ._sizes import check_network_file, design_run

    check_seed_option(seed)
    check_predictor_option(predictor)
    _check_data_options(data, label, skewness)
    inputs = [("the NETWORK file", network), ("the --predictor file", predictor_file(predictor)),
              ("the --workload file", workload_file), ("the --data file", data)]
    # The probes every run writes, now; the others, once chosen, before anything is written.
    _check_folder(output, inputs, (NETWORK_NAME, INDEX_NAME,
                                   *(f"{name}.json" for name in FIXED_PROBES)))
    check_network_file(network, design_run(["optimize"]), example=example)  # before reading
    net = _with_data_counts(resolve_network(network, example, show_loading=not as_json), data,
                            label, skewness, seed)
    settings = None if workload_file is None else load_workload(workload_file)
    with naming_options(_PROBE_OPTIONS):
        probes = probe_topologies(net, k, predictor=predictor, settings=settings, seed=seed)
        index = probe_index(net, probes, predictor=predictor, settings=settings)
    _check_folder(output, inputs, tuple(f"{name}.json" for name in probes))  # nothing written
    index.insert(1, "network", NETWORK_NAME)
    index.insert(2, "topology", [f"{name}.json" for name in probes])
    _write_probes(output, net, probes, index)
    if as_json:
        print_json({"output": str(output), "network": NETWORK_NAME, "index": INDEX_NAME,
                    "probes": index.to_dict(orient="records")})
        return
    console.print(_probe_table(index, output))
    console.print(f"wrote {len(probes)} topologies, {NETWORK_NAME} and {INDEX_NAME} to {output}")
