"""The ``topokit`` command line: one typer app, one module per journey.

=====================  ==========================================================
module                 commands
=====================  ==========================================================
:mod:`.design`         ``design``, ``analyze``, ``generate siot``, ``examples``
:mod:`.batch`          ``batch``
:mod:`.validate`       ``validate``, ``calibrate``
:mod:`.probe`          ``probe`` (topologies to train over for a calibration)
:mod:`.ceiling`        ``ceiling`` (a model's accuracy on the user's data, no noise)
:mod:`.gfl`            ``gfl run`` (privatized graph federated learning)
:mod:`.learn`          ``learn``, ``learn-federated`` (graph learning)
=====================  ==========================================================

Shared options, consoles, progress bars and the user-error handler live in
:mod:`._common`.  Every user mistake is printed as one line and exits with
status 2, no traceback.
"""

from __future__ import annotations

import copy
import sys

import typer

from . import audit as _audit
from . import batch as _batch
from . import ceiling as _ceiling
from . import design as _design
from . import export as _export
from . import gfl as _gfl
from . import learn as _learn
from . import probe as _probe
from . import serve as _serve
from . import validate as _validate
from ._common import handles_user_errors

__all__ = ["app", "main"]

app = typer.Typer(
    name="topokit",
    help="Design and check communication topologies for private decentralized learning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Help texts are plain: "[default: ...]" and "[0, 1]" are text, not Rich markup tags.
    rich_markup_mode=None,
)


def _with_user_errors(sub_app: typer.Typer) -> typer.Typer:
    """A copy of ``sub_app`` whose commands exit 2 on user errors.

    The original stays usable on its own, raising its errors to the caller.
    """
    wrapped_app = copy.copy(sub_app)
    wrapped_app.registered_commands = []
    for info in sub_app.registered_commands:
        wrapped = copy.copy(info)
        wrapped.callback = handles_user_errors(info.callback)
        wrapped_app.registered_commands.append(wrapped)
    return wrapped_app


def _print_version(asked: bool) -> None:
    if asked:
        from .._version import __version__

        typer.echo(f"topokit {__version__}")
        raise typer.Exit()


@app.callback()
def _topokit(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print topokit's version and exit."),
) -> None:
    """Design and check communication topologies for private decentralized learning."""


app.command("analyze")(_design.analyze)
app.command("design")(_design.design)
app.add_typer(_design.generate_app, name="generate")
app.command("examples")(_design.list_examples_command)
app.command("export")(_export.export_command)
app.command("batch")(_batch.batch)
app.command("audit")(_audit.audit_command)
app.command("validate")(_validate.validate_command)
app.command("calibrate")(_validate.calibrate_command)
app.command("probe")(_probe.probe_command)
app.command("ceiling")(_ceiling.ceiling_command)
app.command("serve")(_serve.serve_command)
app.add_typer(_with_user_errors(_gfl.app), name="gfl")
app.command("learn")(handles_user_errors(_learn.learn_command))
app.command("learn-federated")(handles_user_errors(_learn.learn_federated_command))


def main() -> None:
    """Entry point of the ``topokit`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
