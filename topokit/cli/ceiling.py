"""``topokit ceiling``: the accuracy a model reaches on the user's data, for a Workload;
and the ``--data FILE --label COLUMN`` pair that ``ceiling``, ``validate`` and ``probe``
share (a table of the user's own, read by :func:`topokit.training.load_table_data`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..errors import InvalidInputError
from ._common import JsonOpt, check_seed_option, handles_user_errors, naming_options, print_json

if TYPE_CHECKING:
    from ..training.user_data import TableData

__all__ = ["ceiling_command"]

#: The help of --label, the same in every command that reads --data.
DataLabelOpt = typer.Option(
    None, "--label", help="With --data: the column that holds the labels (any type: sorted "
                          "values become classes 0..C-1); every other column is a feature.")
#: The devices of the ceiling probe's complete graph (ceiling_probe's default).
PROBE_DEVICES = 8
#: load_table_data's phrases as the command line says them.
_DATA_PHRASES = {"name the one that holds the labels": "give it as --label",
                 "label must be the name of a column": "--label must name a column"}


def check_data_options(data: Path | None, label: str | None) -> None:
    """--data and --label come together: one without the other is one line.

    Examples
    --------
    >>> check_data_options(None, "kind")
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: --label names the label column of --data; give --data ...
    """
    if data is None and label is not None:
        raise InvalidInputError("--label names the label column of --data; give --data FILE "
                                "too, or drop --label")
    if data is not None and label is None:
        raise InvalidInputError(f"--data {data}: give --label COLUMN, the column of {data.name} "
                                "that holds the labels")


def load_data_option(data: Path, label: str) -> TableData:
    """The --data table, standardised, its labels coded 0..C-1; errors name the file."""
    from ..training.user_data import load_table_data

    with naming_options({}, _DATA_PHRASES):
        return load_table_data(data, label)


def _data_text(data: Path | None, label: str | None, table: TableData) -> str:
    """How the output names the data: the file, its label column and its size."""
    where = "digits (bundled)" if data is None else f"{data.name} (label {label!r})"
    return f"{where}, {table.X.shape[0]} rows, {table.classes.size} classes"


def _design_options(model: str, ceiling: float, probe_rounds: int | None) -> str:
    """The options of ``topokit design`` that tell optimize (its default method) this
    workload's traits."""
    options = f"--model {model} --ceiling {ceiling:.3g}"
    return options if probe_rounds is None else f"{options} --probe-rounds {probe_rounds}"


def _workload_fields(model: str, ceiling: float, probe_rounds: int | None,
                     rounds: int) -> dict[str, Any]:
    """The fields of ``topokit.Workload`` the probe measured (probe rounds when reached)."""
    fields: dict[str, Any] = {"model": model, "ceiling": ceiling}
    if probe_rounds is not None:
        fields["probe_rounds"] = probe_rounds
    return {**fields, "rounds": rounds}


def _workload_text(fields: dict[str, Any]) -> str:
    shown = {**fields, "ceiling": float(f"{fields['ceiling']:.3g}")}
    return "Workload(" + ", ".join(f"{name}={value!r}" for name, value in shown.items()) + ")"


@handles_user_errors
def ceiling_command(
    data: Path = typer.Option(
        None, "--data", help="Your training data: a CSV, Parquet or NPZ table, one row per "
                             "example [default: scikit-learn's digits, bundled]."),
    label: str = DataLabelOpt,
    model: str = typer.Option("logreg", "--model", help="The model topokit trains: logreg or "
                                                        "mlp."),
    rounds: int = typer.Option(200, "--rounds", help="The workload's horizon T (at least 3)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the test split and the minibatches."),
    as_json: bool = JsonOpt,
) -> None:
    """Measure the accuracy your model reaches on your data without DP noise.

    One run of topokit's training core with exact averaging (8 devices,
    W = J, a quarter of the rows held out for testing), IID data and no
    noise: its ceiling (the best accuracy, smoothed over 5 rounds) and probe
    rounds (rounds to 90 % of the ceiling) are the traits a Workload
    describes the model and data by.  Prints the options
    to paste into `topokit design` and the Workload(...) fields.  The
    features are standardised over the whole table; the labels' sorted
    values are the classes.
    """
    from .._checks import check_choice
    from ..design.workload import TOPOKIT_MODELS

    check_data_options(data, label)
    check_choice(model, "--model", TOPOKIT_MODELS)
    check_seed_option(seed)
    table = _table(data, label)
    probe = _measure(table, model, rounds, seed)
    fields = _workload_fields(model, probe.ceiling, probe.probe_rounds, rounds)
    options = _design_options(model, probe.ceiling, probe.probe_rounds)
    if as_json:
        print_json({"data": None if data is None else str(data), "label": label,
                    "rows": int(table.X.shape[0]), "classes": table.classes.tolist(),
                    "model": model, "rounds": rounds, "seed": seed, "ceiling": probe.ceiling,
                    "probe_rounds": probe.probe_rounds, "design_options": options,
                    "workload": fields})
        return
    reached = "never" if probe.probe_rounds is None else str(probe.probe_rounds)
    typer.echo(f"{model} on {_data_text(data, label, table)}; {rounds} rounds, seed {seed}")
    typer.echo(f"ceiling       {probe.ceiling:<7.4g} best accuracy, exact averaging, no noise")
    typer.echo(f"probe rounds  {reached:<7} rounds to 90 % of the ceiling")
    typer.echo(f"topokit design NETWORK {options}")
    typer.echo(_workload_text(fields))


def _table(data: Path | None, label: str | None) -> TableData:
    """The --data table, or the bundled digits without it."""
    if data is not None:
        from ..training.user_data import check_rows_for_devices

        table = load_data_option(data, label)
        check_rows_for_devices(table, PROBE_DEVICES, str(data), whose="the ceiling probe's")
        return table
    import numpy as np

    from ..training import load_digits
    from ..training.user_data import TableData

    X, y = load_digits()
    return TableData(X, y, np.unique(y))


def _measure(table: TableData, model: str, rounds: int, seed: int):
    """The ceiling probe on ``table``, its errors naming the options."""
    from ..training.ceiling import ceiling_probe

    with naming_options({"rounds": "--rounds"}):
        return ceiling_probe(table.X, table.y, model=model, rounds=rounds, seed=seed,
                             n_devices=PROBE_DEVICES)
