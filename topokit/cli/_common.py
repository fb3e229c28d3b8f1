"""What every ``topokit`` command shares: consoles, the user-error handler, JSON output,
the network argument, progress bars and metric tables.

Every user mistake surfaces as a :class:`~topokit.errors.TopokitError` (or an
``OSError`` on a path), which :func:`handles_user_errors` prints as one line
before exiting with status 2, no traceback.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from .._checks import check_int, check_output_path
from .._io import dumps_json
from ..errors import InvalidInputError, TopokitError

#: How the CLI names each privacy-audit model (topokit.audit), and what its mu is.
AUDIT_MODEL_TEXT = {"gossip": "gossip of the private values (mu exact)",
                    "dsgd": "D-SGD, a contribution every round (mu an upper bound)"}

console = Console()
error_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


def _print_error(message: str) -> None:
    """One line on stderr, never wrapped (a long path stays on the line it belongs to)."""
    error_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False,
                        soft_wrap=True)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A library warning on stderr as a user reads it: ``warning:`` and the message, wrapped
    at the terminal's width (not a source location and the code line under it)."""
    error_console.print(f"[bold yellow]warning:[/] {escape(str(message))}", highlight=False)


def handles_user_errors(command: F) -> F:
    """Turn user mistakes into one clear line on stderr and exit status 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _show_warning
                return command(*args, **kwargs)
        except TopokitError as exc:
            _print_error(str(exc))
            raise typer.Exit(2) from None
        except OSError as exc:
            _print_error(os_error_text(exc))
            raise typer.Exit(2) from None
        except MemoryError:
            # The checks refuse sizes that cannot fit before allocating; this is the
            # safety net for a machine that is merely busy.
            _print_error("not enough memory for this run; make it smaller (fewer devices, "
                         "clients, rounds or a smaller chunk size) or free memory")
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def os_error_text(exc: OSError) -> str:
    """An ``OSError`` as one line that names the user's path and says what to do.

    A rename's destination (``filename2``) is the user's path: the source is the
    hidden temporary file an atomic write renames over it.
    """
    path = exc.filename2 if exc.filename2 is not None else exc.filename
    if path is None:
        return str(exc.strerror or exc)
    if exc.errno == errno.EISDIR:
        return (f"{path} is a directory where topokit writes or reads a file; give a file "
                "path (or remove that folder)")
    if exc.errno == errno.EEXIST:
        return (f"{path} already exists where topokit needs to create a folder or file; "
                "remove it or choose another path")
    if exc.errno == errno.ENOTDIR:
        return f"{path}: part of this path is a file, not a folder; choose another path"
    return f"{exc.strerror or exc}: {path}"


def _same_kind(exc: TopokitError, message: str) -> TopokitError:
    """An error of ``exc``'s class saying ``message``."""
    try:
        return type(exc)(message)
    except TypeError:  # a class whose constructor takes other arguments
        return InvalidInputError(message)


def _renamed(message: str, options: Mapping[str, str], phrases: Mapping[str, str]) -> str:
    """``message`` with each parameter of ``options`` named as its option: at the start
    ("noise_multiplier must be ...") or as ``name=value`` ("n_devices=10 devices")."""
    for phrase, replacement in phrases.items():
        message = message.replace(phrase, replacement)
    for name, option in options.items():
        bare = re.escape(name)
        message = re.sub(rf"^{bare}(?=[\s:])", option, message)
        message = re.sub(rf"(?<![\w-]){bare}='([\w.:-]+)'", rf"{option} \1", message)
        message = re.sub(rf"(?<![\w-]){bare}=(?=[^\s.,;)])", f"{option} ", message)
        message = re.sub(rf"(?<![\w-]){bare}=\.\.\.", f"{option} ...", message)
    return message


@contextlib.contextmanager
def naming_options(options: Mapping[str, str],
                   phrases: Mapping[str, str] | None = None) -> Iterator[None]:
    """Name the command's options in the library's errors raised inside the block.

    The library's messages name its Python parameters (``noise_multiplier``,
    ``trials``); a user of the command line knows them as options
    (``--noise-multiplier``, ``--trials``).  ``options`` maps a parameter to its
    option, renamed where a message starts with it or writes ``name=value``;
    ``phrases`` replaces whole phrases (a Python call the user never made, say).

    Examples
    --------
    >>> from topokit.errors import InvalidInputError
    >>> try:
    ...     with naming_options({"trials": "--trials"}):
    ...         raise InvalidInputError("trials must be an integer >= 1; got 0")
    ... except InvalidInputError as exc:
    ...     print(exc)
    --trials must be an integer >= 1; got 0
    """
    try:
        yield
    except TopokitError as exc:
        message = str(exc)
        renamed = _renamed(message, options, phrases or {})
        if renamed == message:
            raise
        raise _same_kind(exc, renamed) from None


def print_json(payload: Any) -> None:
    """Print ``payload`` as strict JSON (non-finite numbers as ``null``, see :mod:`topokit._io`)."""
    typer.echo(dumps_json(payload, indent=2), nl=False)


def check_plot_path(plot: Path | None) -> None:
    """Refuse a ``--plot`` path of an unsupported format or place before any work is done."""
    if plot is not None:
        from ..plotting import check_figure_path

        check_output_path(plot, "--plot")
        try:
            check_figure_path(plot)
        except InvalidInputError as exc:
            raise InvalidInputError(f"--plot: {exc}") from None


def check_output_option(path: Path | None, name: str = "--output") -> None:
    """Refuse an output path that cannot be written (a file as folder, a folder) up front."""
    if path is not None:
        check_output_path(path, name)


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file: the same existing file (through links, or
    spelled differently), or the same resolved path."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a loop of symbolic links: the writer says so
        return False


def check_outputs_apart(outputs: Iterable[tuple[str, Path | None]],
                        inputs: Iterable[tuple[str, str | Path | None]]) -> None:
    """Refuse, before any work, an output that is one of the command's inputs (writing it
    would replace the input) or the file of another output.

    ``outputs`` pairs how the command names each file it writes with the file:
    the option (``"--output"``), or for a file written beside it a phrase
    starting with the option in which ``{path}`` stands for the file
    (``"--output g.edges: {path}, written beside it,"``).  ``inputs`` pairs
    what each input is (``"the NETWORK file"``) with its path.  None, an input
    that is not a path (a predictor's name) and one that does not exist (its
    reader refuses it) are skipped.  Paths are the same file when they resolve
    to one (:func:`os.path.samefile` for existing files: a link to the input
    counts).

    Examples
    --------
    >>> check_outputs_apart([("--output", Path("a.png")), ("--plot", Path("./a.png"))], [])
    Traceback (most recent call last):
    ...
    topokit.errors.InvalidInputError: --output and --plot write the same file a.png; give ...
    """
    written = [(name, Path(path)) for name, path in outputs if path is not None]
    # An input that does not exist is its reader's to refuse.
    sources = [(what, Path(path)) for what, path in inputs
               if isinstance(path, (str, Path)) and Path(path).exists()]
    for index, (name, path) in enumerate(written):
        option = name.split()[0]
        for what, source in sources:
            if _same_file(path, source):
                text = name.replace("{path}", str(path)) if "{path}" in name else \
                    f"{name} {path}"
                spelled = "" if str(source) == str(path) else f" ({source})"
                raise InvalidInputError(
                    f"{text} is {what}{spelled}, an input of this command: writing it would "
                    f"replace the input; choose another {option}")
        for other, earlier in written[:index]:
            if _same_file(path, earlier):
                raise InvalidInputError(f"{other.split()[0]} and {option} write the same file "
                                        f"{path}; give {option} another path")


def predictor_file(predictor: str | Path | None) -> Path | None:
    """The file of a --predictor / --refit option, None for a predictor's name."""
    if predictor is None:
        return None
    from ..design.time_predictor import PREDICTOR_NAMES

    return None if str(predictor).strip().lower() in PREDICTOR_NAMES else Path(predictor)


def check_predictor_option(predictor: str | Path | None, name: str = "--predictor") -> None:
    """Refuse a folder given as a predictor file (a name such as 'default' wins, as in
    :func:`topokit.load_predictor`), naming the option."""
    if predictor is None:
        return
    from ..design.time_predictor import PREDICTOR_NAMES

    if str(predictor).strip().lower() not in PREDICTOR_NAMES and Path(predictor).is_dir():
        raise InvalidInputError(
            f"{name}: {predictor} is a directory; give a predictor name "
            f"({', '.join(map(repr, PREDICTOR_NAMES))}) or a predictor JSON file (topokit "
            "calibrate -o writes one)"
        )


def check_seed_option(seed: int | None, name: str = "--seed") -> None:
    """Refuse a negative seed, naming the option (None: fresh entropy, allowed)."""
    if seed is not None:
        check_int(seed, name, low=0)


def check_jobs_option(n_jobs: int, name: str = "--n-jobs") -> None:
    """Refuse ``--n-jobs 0`` (joblib's -1 is all cores, -2 all but one)."""
    if n_jobs == 0:
        raise InvalidInputError(f"{name} must be a non-zero integer (-1: all cores); got 0")


#: Files from this size (bytes) are loaded with a phase report: a smaller one loads within
#: a second or two.
LOADING_REPORT_BYTES = 1_000_000
#: A gzip-compressed network file (.gz) holds about this many times its size of text (10.3
#: to 10.7 for generated SIoT networks of 1,000 to 5,000 devices; fewer counts it large
#: sooner): its loading is reported from LOADING_REPORT_BYTES / this.
GZIP_TEXT_RATIO = 8


def resolve_network(network: Path | None, example: str | None, *,
                    show_loading: bool = False):
    """The network named on the command line: a file or a bundled example (exactly one).

    With ``show_loading`` a file of :data:`LOADING_REPORT_BYTES` or more (a
    ``.gz`` file of a :data:`GZIP_TEXT_RATIO`-th of that: it holds about that
    many times its size of text) is read as a phase on stderr
    (:func:`reporting_phase`), named with its size.
    """
    from ..network.examples import load_example
    from ..network.formats import load_network

    if (network is None) == (example is None):
        raise InvalidInputError("give either a NETWORK file or --example NAME (not both)")
    if example:
        return load_example(example)
    try:
        size = Path(network).stat().st_size
    except OSError:  # the reader says what is wrong with the path
        size = 0
    compressed = str(network).lower().endswith(".gz")
    large = show_loading and size * (GZIP_TEXT_RATIO if compressed else 1) >= LOADING_REPORT_BYTES
    shown = f"{size / 1e6:.1f} MB{' compressed' if compressed else ''}"
    with reporting_phase(f"loading {network} ({shown})", quiet=not large):
        return load_network(network)


def progress_bar(description: str) -> Progress:
    """A rich progress bar on stderr (so ``--json`` output on stdout stays clean)."""
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=error_console,
        transient=False,
    )


ProgressCallback = Callable[[int, int], None]

#: Seconds between two lines of a phase in a log (stderr not a terminal): at most one line
#: per interval from the reports, and one at least every interval while the phase runs
#: (a report can be minutes away: one local search, one observer).  0: every report a line.
LOG_INTERVAL = 10.0


def _plain_stderr() -> bool:
    """Whether stderr takes plain lines (a file, a pipe: a batch job's log, CI) rather
    than a live bar redrawn in place (rich's terminal, as its TTY_COMPATIBLE and
    FORCE_COLOR decide)."""
    return not error_console.is_terminal or error_console.is_dumb_terminal


def _clock(seconds: float) -> str:
    """``h:mm:ss``, as the terminal's bar writes a time."""
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class _LogLines:
    """The plain lines of one phase on stderr, for a log read later or with ``tail -f``.

    The clock and a heartbeat thread start with the phase: while it runs, a line
    comes at least every :data:`LOG_INTERVAL` seconds (the reports decide nothing
    about silence), and reports write at most one line per interval.  Lines are
    flushed at once; no escape codes, no carriage returns.
    """

    def __init__(self, what: str, total: int | None = None,
                 describe: Callable[[int], str] | None = None, *, counted: bool = True) -> None:
        self.what, self.total, self.describe, self.counted = what, total, describe, counted
        self.done = 0
        self.reported = False  # whether any report arrived (a phase of counts)
        self.shown = False  # whether a line of this phase has been written
        self.stream = error_console.file  # the stream of this run, for the heartbeat too
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.interval = LOG_INTERVAL
        self.begun = self.last = time.monotonic()
        self.beat: threading.Thread | None = None
        if self.interval > 0:
            self.beat = threading.Thread(target=self._heartbeat, daemon=True,
                                         name=f"topokit progress: {what}")
            self.beat.start()

    def _write(self, text: str) -> None:
        """One line, flushed now (the caller holds the lock)."""
        self.stream.write(text + "\n")
        self.stream.flush()
        self.last, self.shown = time.monotonic(), True

    def _status(self) -> str:
        """Where the phase is: counts, share, elapsed time and the time left."""
        elapsed = time.monotonic() - self.begun
        if not self.counted:
            return f"{self.what}: elapsed {_clock(elapsed)}"
        label = self.describe(self.done) if self.describe is not None else self.what
        if not self.total:
            return f"{label}: {self.done} done, elapsed {_clock(elapsed)}"
        share = f"{self.done}/{self.total} ({100 * self.done / self.total:.0f} %)"
        if self.done >= self.total:  # counted, but the phase has work after its loop
            return f"{label}: {share}, elapsed {_clock(elapsed)}, finishing"
        # The time left at the pace so far, counted from the phase's start.
        left = "-" if self.done <= 0 else _clock(elapsed / self.done * (self.total - self.done))
        return f"{label}: {share}, elapsed {_clock(elapsed)}, ETA {left}"

    def _heartbeat(self) -> None:
        """The status every interval without a line, until the phase stops."""
        wait = self.interval
        while not self.stopping.wait(wait):
            with self.lock:
                quiet_for = time.monotonic() - self.last
                if quiet_for >= self.interval:
                    self._write(self._status())
                    quiet_for = 0.0
            wait = self.interval - quiet_for

    def start_line(self, text: str) -> None:
        """Write a phase's first line now (a phase without reports)."""
        with self.lock:
            self._write(text)

    def report(self, done: int, total: int) -> None:
        """A ``progress(done, total)`` report: a line once the interval has passed since
        the phase began, or since the last line.

        A phase that ends (or fails) within the first interval writes no line before its
        end line (or before the error line, which then stays the one line a user's
        mistake gets); the heartbeat keeps a longer phase from being silent longer.
        """
        with self.lock:
            self.reported, self.done, self.total = True, done, total
            if time.monotonic() - self.last >= self.interval:
                self._write(self._status())

    def _stop(self) -> None:
        self.stopping.set()
        if self.beat is not None:
            self.beat.join()

    def finish(self) -> None:
        """The phase ended: its last line (for a phase of counts, if it said anything)."""
        self._stop()
        elapsed = _clock(time.monotonic() - self.begun)
        with self.lock:
            if not self.counted:
                self._write(f"{self.what}: done in {elapsed}")
            elif self.reported or self.shown:
                counts = f"{self.done}/{self.total}" if self.total else f"{self.done}"
                self._write(f"{self.what}: {counts} done in {elapsed}")

    def abandon(self) -> None:
        """The phase failed: no more lines (the error line follows)."""
        self._stop()


@contextlib.contextmanager
def reporting_progress(
    what: str, *, total: int | None = None, quiet: bool = False,
    describe: Callable[[int], str] | None = None,
) -> Iterator[ProgressCallback | None]:
    """Yield the ``progress(done, total)`` callback the API's long loops accept.

    The library never prints; the CLI turns its callbacks into output on
    stderr.  With ``quiet`` (e.g. ``--json``) it yields None and writes
    nothing.  On a terminal it draws one bar, which appears at the first report,
    so a mistake caught while the arguments are checked is one error line without
    a bar above it; a bar interrupted by an error is erased.  Elsewhere (a log
    file, a pipe) it writes plain lines (:class:`_LogLines`): one at the first
    report of work done, then at most and at least one every
    :data:`LOG_INTERVAL` seconds, and one when the phase ends.  ``describe(done)``,
    if given, names the phase at ``done`` (which of several parts it is in).
    """
    if quiet:
        yield None
        return
    if _plain_stderr():
        lines = _LogLines(what, total, describe)
        try:
            yield lines.report
        except BaseException:
            lines.abandon()
            raise
        lines.finish()
        return
    started: list[tuple[Progress, Any]] = []

    def report(done: int, new_total: int) -> None:
        if not started:
            bar = progress_bar(what)
            bar.start()
            started.append((bar, bar.add_task(what, total=total)))
        bar, task = started[0]
        label = what if describe is None else describe(done)
        bar.update(task, completed=done, total=new_total, description=label)

    try:
        yield report
    except BaseException:
        if started:
            _erase(started.pop()[0])
        raise
    finally:
        if started:
            bar, task = started[0]
            bar.update(task, description=what)  # the line that stays names the whole phase
            bar.stop()


def _erase(bar: Progress) -> None:
    """Stop ``bar`` leaving nothing on the terminal (an error line follows)."""
    # The live display alone, as Progress.stop() would add an empty line on a console
    # that is not a terminal, above the error line.
    live = bar.live
    live.transient = True
    live.stop()


@contextlib.contextmanager
def reporting_phase(what: str, *, quiet: bool = False) -> Iterator[None]:
    """Report a phase the library gives no progress of (reading or writing a large file).

    On a terminal a spinner with the elapsed time, left as a line when the phase
    ends; elsewhere (a log) a start line, a line every :data:`LOG_INTERVAL`
    seconds while it runs and an end line with its time.  An error erases the
    spinner and ends the lines (the error line follows).  ``quiet`` (``--json``)
    writes nothing.
    """
    if quiet:
        yield
        return
    if _plain_stderr():
        lines = _LogLines(what, counted=False)
        lines.start_line(f"{what} ...")
        try:
            yield
        except BaseException:
            lines.abandon()
            raise
        lines.finish()
        return
    spinner = Progress(SpinnerColumn(finished_text="[progress.spinner]done"),
                       "[progress.description]{task.description}", TimeElapsedColumn(),
                       console=error_console, transient=False)
    task = spinner.add_task(what, total=None)
    spinner.start()
    try:
        yield
    except BaseException:
        _erase(spinner)
        raise
    spinner.update(task, total=1, completed=1)
    spinner.stop()


def _format(value: Any) -> str:
    if value is None:
        return "-"  # not defined for this column (e.g. no finite stranger mu: all exposed)
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.6g}"
    return str(value)


def metrics_table(title: str, columns: dict[str, dict[str, Any]]) -> Table:
    """A rich table with one row per metric and one column per topology.

    Without vertical rules (two spaces between columns): five topologies and the longest
    metric name fit in 80 columns, names and numbers whole.
    """
    keys = list(next(iter(columns.values())))
    table = Table(title=title, box=None, padding=(0, 1), pad_edge=False,
                  header_style="bold underline")
    table.add_column("metric", no_wrap=True, min_width=max(map(len, keys), default=6))
    for name in columns:
        table.add_column(name, justify="right", no_wrap=True)
    for key in keys:
        table.add_row(key, *(_format(column.get(key)) for column in columns.values()))
    return table


NetworkArg = typer.Argument(
    None, help="Network file (.json node-link or .graphml; gzip-compressed: .json.gz, "
               ".graphml.gz).", show_default=False)
ExampleOpt = typer.Option(None, "--example", "-e", help="Use a bundled example instead of a file.")
JsonOpt = typer.Option(False, "--json", help="Print one JSON object instead of a table.")
#: --predictor of the commands whose default is eq. (15) (analyze).
PaperPredictorOpt = typer.Option(
    None, "--predictor",
    help="'paper' (eq. 15, the default; a design file's own predictor with --topology "
         "DESIGN.json), 'default' (topokit's fitted TrainingTimePredictor, fitted on logistic "
         "regression; not for AutoTag), 'mlp' (the same fitted on MLP runs), 'workload' or a "
         "predictor JSON file (topokit calibrate).")
#: --predictor of validate, whose default is design's.
DesignPredictorOpt = typer.Option(
    None, "--predictor",
    help="What predicts each run [default: as topokit design judges: 'workload' with "
         "--workload, else 'default' ('mlp' for the MLP); a design file of --topologies by "
         "its own]: 'paper' (eq. 15), 'default', 'mlp', 'workload' or a predictor JSON file "
         "(topokit calibrate).")


