"""``topokit gfl``: run privatized graph federated learning from the command line.

Mounted by the main CLI as ``topokit gfl``; user errors raise
:class:`~topokit.errors.TopokitError` subclasses, which the main CLI maps to
exit status 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from .._io import atomic_path
from ..errors import InvalidInputError

if TYPE_CHECKING:  # the GFL core (pandas, scipy) loads when a command runs
    from ..gfl.config import GFLConfig
    from ..gfl.core import GFLResult
from ._common import (
    check_output_option,
    check_outputs_apart,
    check_plot_path,
    check_seed_option,
    console,
    naming_options,
    reporting_progress,
)

__all__ = ["app"]

app = typer.Typer(help="Privatized graph federated learning (Rizk, Vlaski and Sayed).",
                  no_args_is_help=True, add_completion=False, rich_markup_mode=None)

_COMPARISONS = {
    "regression": [{"scheme": "none", "name": "none"}, {"scheme": "random", "name": "random"},
                   {"scheme": "homomorphic", "name": "homomorphic"}],
    "models-vs-updates": [{"client_noise": "none", "name": "no noise"},
                          {"share": "models", "name": "share models"},
                          {"share": "updates", "name": "share updates"}],
}
_COMPARISONS["classification"] = _COMPARISONS["regression"]


@app.callback()
def _main() -> None:
    """Privatized graph federated learning."""


def _resolve_config(config_file: Path | None, preset_name: str | None, seed: int | None
                    ) -> GFLConfig:
    from ..gfl.config import load_config, preset

    if config_file is not None:
        config = load_config(config_file, base=preset_name)
    else:
        config = preset(preset_name or "regression")
    return config.replace(seed=seed) if seed is not None else config


def _variants(config: GFLConfig, preset_name: str | None, compare: bool) -> list[dict]:
    if not compare:
        return [{"name": config.scheme if config.n_servers > 1 else config.share}]
    key = preset_name or ("classification" if config.task == "classification"
                          else "models-vs-updates" if config.n_servers == 1 else "regression")
    return _COMPARISONS[key]


def _check_suffix(path: Path | None, allowed: tuple[str, ...], what: str) -> None:
    if path is not None and path.suffix.lower() not in allowed:
        raise InvalidInputError(f"{what} must end in one of {list(allowed)}; got {str(path)!r}")


def _summary(results: list[GFLResult]) -> Table:
    table = Table(title="privatized GFL (steady state = last 25 % of iterations)")
    for column in ("variant", "centroid MSD (dB)", "individual MSD (dB)", "test error",
                   "diverged"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for r in results:
        error = "-" if r.test_error is None else f"{r.test_error[-50:].mean():.3f}"
        table.add_row(r.label, f"{r.steady_state_db():.2f}",
                      f"{r.steady_state_db('individual'):.2f}", error,
                      "no" if r.diverged_at is None else f"at {r.diverged_at}")
    return table


def _write_outputs(results: list[GFLResult], output: Path | None, plot: Path | None) -> None:
    import pandas as pd

    if output is not None:
        frame = pd.concat([r.to_frame() for r in results], ignore_index=True)
        with atomic_path(output) as tmp:
            if output.suffix.lower() == ".csv":
                frame.to_csv(tmp, index=False)
            else:
                frame.to_parquet(tmp, index=False)
    if plot is not None:
        from ..plotting import save_figure
        from ..plotting.gfl import plot_msd, plot_test_error

        config = results[0].config
        fig = (plot_test_error(results) if config.task == "classification"
               else plot_msd(results, title=f"A: {config.weights}, {config.graph} graph"))
        save_figure(fig, plot, dpi=120)


@app.command("run")
def run_command(
    config_file: Annotated[Path | None, typer.Argument(
        metavar="[CONFIG.toml]", help="TOML file with GFLConfig fields (overrides the preset).",
        show_default=False)] = None,
    preset_name: Annotated[str | None, typer.Option(
        "--preset", "-p", help="regression | models-vs-updates | classification")] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the curves (one row per variant and iteration), "
        ".parquet or .csv.")] = None,
    plot: Annotated[Path | None, typer.Option(
        "--plot", help="Save the MSD (or test-error) figure, .png/.pdf/.svg.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Override the seed.")] = None,
    compare: Annotated[bool, typer.Option(
        "--compare/--no-compare", help="Run the preset's comparison (schemes, or models vs "
        "updates) in one batched pass instead of the configured variant only.")] = True,
) -> None:
    """Run privatized GFL from a preset or a TOML configuration."""
    from ..gfl.core import run_many

    _check_suffix(output, (".parquet", ".csv"), "--output")
    check_output_option(output)
    check_plot_path(plot)
    check_outputs_apart([("--output", output), ("--plot", plot)],
                        [("the CONFIG.toml file", config_file)])
    check_seed_option(seed)
    with naming_options({"preset": "--preset", "base": "--preset", "seed": "--seed"}):
        config = _resolve_config(config_file, preset_name, seed)
    variants = _variants(config, preset_name, compare)
    with reporting_progress(f"GFL {config.name}", total=config.iterations) as report:
        results = run_many(config, variants, progress=report)
    _write_outputs(results, output, plot)
    console.print(_summary(results))
    for path, what in ((output, "curves"), (plot, "figure")):
        if path is not None:
            console.print(f"{what} written to {path}")
