"""``topokit batch``: metrics of many networks, resumable, on local workers or Dask."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..errors import InvalidInputError
from ._common import (
    check_jobs_option,
    check_output_option,
    check_outputs_apart,
    console,
    handles_user_errors,
    reporting_progress,
)

if TYPE_CHECKING:  # pandas loads when the command runs, not when the CLI starts
    import pandas as pd

__all__ = ["batch"]


@handles_user_errors
def batch(
    directory: Path = typer.Argument(None, help="Directory of network files.", show_default=False),
    random: str = typer.Option(
        None, "--random",
        help="Random ensemble instead of files, e.g. n=16,m=32,count=10000,seed=0.",
    ),
    output: Path = typer.Option(..., "--output", "-o", help="Parquet file to write."),
    n_jobs: int = typer.Option(1, "--n-jobs", "-j", help="Parallel workers (-1: all cores)."),
    scheduler: str = typer.Option(
        None, "--scheduler",
        help="Dask scheduler address: the chunks run on its workers (which must see DIRECTORY "
             "at its absolute path); the output and the chunks stay here."),
    chunk_size: int = typer.Option(500, "--chunk-size", help="Items per resumable chunk."),
    restart: bool = typer.Option(False, "--restart", help="Discard an interrupted run's chunks."),
) -> None:
    """Metrics for many networks (or a random ensemble) in parallel, into one Parquet table.

    An interrupted run resumes where it stopped when called again with the same
    arguments; the output appears only when complete.  Files that cannot be
    analysed get a row saying why (their names are listed); a batch in which
    none can be analysed exits 2.
    """
    from .._checks import check_int
    from ..design.batch import batch_analyze, parse_ensemble

    if (directory is None) == (random is None):
        raise InvalidInputError("give either a DIRECTORY of network files or --random SPEC")
    check_jobs_option(n_jobs)
    check_int(chunk_size, "--chunk-size", low=1)
    check_output_option(output)
    _check_output_apart(output, directory)
    source = parse_ensemble(random) if random else directory
    with reporting_progress("chunks") as report:
        table = batch_analyze(
            source, output, n_jobs=n_jobs, scheduler=scheduler, chunk_size=chunk_size,
            resume=not restart, progress=report,
        )
        # Inside the bar's block: an error there erases the bar, leaving the one line.
        _refuse_if_all_failed(table, output, scheduler)
    console.print(f"wrote {len(table)} rows to {output}")
    _report_failed_files(table)


def _check_output_apart(output: Path, directory: Path | None) -> None:
    """--output is none of the network files of DIRECTORY (batch reads them all)."""
    from ..network.core import network_suffix

    if directory is None or network_suffix(output) is None:
        return  # batch reads only the network files of the folder, those present
    check_outputs_apart([("--output", output)],
                        [(f"a network file of the DIRECTORY {directory}",
                          directory / output.name)])


def _refuse_if_all_failed(table: pd.DataFrame, output: Path, scheduler: str | None) -> None:
    """A directory batch in which no file could be analysed is an error, not a result.

    The table is written all the same: its ``error`` column says why for each file.
    """
    if "error" not in table.columns or table.empty or table["error"].isna().any():
        return
    first = " ".join(str(table["error"].iloc[0]).split())  # one line, whatever it holds
    hint = ""
    if scheduler and "no such file" in first.lower():
        # The files exist here (they were listed here): the workers do not see them.
        hint = (" (the Dask workers read the files at these absolute paths: run them where "
                "they see DIRECTORY, e.g. on a shared filesystem)")
    raise InvalidInputError(f"all {len(table)} networks failed: first error: {first}{hint}; "
                            f"see the table's error column in {output}")


def _report_failed_files(table, shown: int = 10) -> None:
    """Name the files that could not be analysed (their rows hold the reason in 'error')."""
    if "error" not in table.columns:
        return
    failed = table[table["error"].notna()]
    if failed.empty:
        return
    console.print(f"{len(failed)} of {len(table)} files could not be analysed "
                  "(column 'error' holds why):", highlight=False)
    for row in failed.head(shown).itertuples():
        console.print(f"  {row.file}: {row.error}", highlight=False, markup=False, soft_wrap=True)
    if len(failed) > shown:
        console.print(f"  ... and {len(failed) - shown} more", highlight=False)
