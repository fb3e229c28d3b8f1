"""``topokit export``: a design written for a training runtime (decentralizepy, Opacus, ...)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from ..errors import InvalidInputError
from ._common import (
    ExampleOpt,
    check_output_option,
    check_outputs_apart,
    console,
    handles_user_errors,
    naming_options,
    print_json,
    resolve_network,
)

__all__ = ["export_command"]

#: The formats, as --help lists them (kept in step with topokit.export.EXPORT_FORMATS).
FORMAT_HELP = (
    "mixing-csv (the mixing matrix W, header row of node ids), mixing-npy (W as .npy and "
    "<name>.nodes.json), decentralizepy (its edge file, <name>.nodes.json and the predicted "
    "time under its Metropolis-Hastings weights in <name>.prediction.json), networkx-json "
    "(node-link JSON with weights, DP flags and noise multipliers) or dp-plan (each device's "
    "DP-SGD settings for an Opacus-style trainer)."
)


@handles_user_errors
def export_command(
    design: Path = typer.Argument(..., help="Design JSON written by `topokit design -o`.",
                                  show_default=False),
    format: str = typer.Option(..., "--format", "-f", help=FORMAT_HELP),
    output: Path = typer.Option(
        ..., "--output", "-o",
        help="File to write; sidecar files go beside it (graph.edges: graph.nodes.json)."),
    network: Path = typer.Option(
        None, "--network",
        help="The network file the design was made for (default: the bundled example the "
             "design names)."),
    example: str = ExampleOpt,
    as_json: bool = typer.Option(
        False, "--json",
        help="Print the files written (and decentralizepy's prediction) as one JSON object."),
) -> None:
    """Write a design for a training runtime: mixing matrix, graph or per-device DP plan.

    Rows and indices follow the network's node order.  The files of one export
    are written together: on an error none is written.
    """
    from .._checks import check_choice
    from ..export import EXPORT_FORMATS, export_design

    check_choice(format, "--format", EXPORT_FORMATS)
    if design.is_dir():
        raise InvalidInputError(f"DESIGN: {design} is a directory; give the design JSON file "
                                "written by topokit design -o")
    _check_outputs(output, format, design, network)
    net = _network(network, example, show_loading=not as_json)
    with naming_options({"path": "--output", "format": "--format", "design": "DESIGN",
                         "net": "--network"}):
        paths = export_design(design, output, format, net=net)
    prediction = (json.loads(paths[2].read_text(encoding="utf-8"))
                  if format == "decentralizepy" else None)
    if as_json:
        print_json({"format": format, "files": [str(path) for path in paths],
                    **({"prediction": prediction} if prediction else {})})
        return
    console.print(f"wrote {format} export of {design}:", soft_wrap=True)
    for path in paths:
        console.print(f"  {path}", soft_wrap=True, highlight=False)
    if prediction is not None:
        console.print(_prediction_line(prediction))


def _check_outputs(output: Path, format: str, design: Path, network: Path | None) -> None:
    """--output and the files the format writes beside it: none of them a folder, the
    DESIGN file or the --network file."""
    from ..export import export_files

    check_output_option(output)
    sidecars = export_files(output, format)[1:]
    for sidecar in sidecars:
        if sidecar.is_dir():
            raise InvalidInputError(
                f"--output: {sidecar}, which {format} writes beside {output.name}, is a "
                "directory; remove it or choose another --output"
            )
    check_outputs_apart(
        [("--output", output),
         *((f"--output {output}: {{path}}, which {format} writes beside it,", sidecar)
           for sidecar in sidecars)],
        [("the DESIGN file", design), ("the --network file", network)])


def _network(network: Path | None, example: str | None, *, show_loading: bool):
    """--network or --example (at most one); None: the example the design file names.

    ``show_loading``: report the loading of a large file (:func:`resolve_network`).
    """
    from ._sizes import check_network_file

    if network is None and example is None:
        return None
    if network is not None and example is not None:
        raise InvalidInputError("give --network FILE or --example NAME, not both")
    check_network_file(network, example=example)  # too large to load: refused before reading
    return resolve_network(network, example, show_loading=show_loading)


def _prediction_line(prediction: dict[str, Any]) -> str:
    """What decentralizepy's own weights do to the design's predicted training time."""
    design, runtime = prediction["design"], prediction["decentralizepy"]
    head = (f"decentralizepy mixes with Metropolis-Hastings weights, not the design's "
            f"({design['weights']}): spectral gap {design['spectral_gap']:.4g} -> "
            f"{runtime['spectral_gap']:.4g}; predicted time ")
    before, after = design["predicted_time"], runtime["predicted_time"]
    if before is None or after is None:
        shown = "inf" if before is None else f"{before:.4g} s"
        return head + (f"{shown} -> {'inf' if after is None else f'{after:.4g} s'} "
                       f"(inf: the target is never reached; predictor "
                       f"{prediction['predictor']})")
    return head + (f"{before:.4g} s -> {after:.4g} s ({prediction['time_ratio']:.3f}x, "
                   f"predictor {prediction['predictor']})")
