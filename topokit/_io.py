"""Files: atomic writes (a crash or Ctrl-C never leaves a half-written output) and JSON.

JSON has no infinity or NaN.  Every JSON file and every ``--json`` output of
topokit writes a non-finite number as ``null`` (:func:`jsonable`), and readers
give ``null`` back its meaning from the field: an infinite delay (no link), an
infinite hitting time (disconnected), a target never reached.  Strings such as
``"inf"`` are never written.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_path",
    "atomic_paths",
    "atomic_write_text",
    "atomic_write_bytes",
    "claim_parts_dir",
    "jsonable",
    "dumps_json",
    "write_json",
]


_TEMP_SUFFIX = ".tmp"


def _temp_prefix(target: Path) -> str:
    # The writer's pid is part of the name, so a later run can tell a temporary
    # file left by a killed process (pid gone) from one being written now.
    return f".{target.name}.{os.getpid()}."


def _remove_orphaned_temps(target: Path) -> None:
    """Delete temporary files of ``target`` whose writing process no longer exists."""
    for leftover in target.parent.glob(f".{_glob_escape(target.name)}.*{_TEMP_SUFFIX}"):
        pid_text = leftover.name[len(target.name) + 2:].split(".", 1)[0]
        if pid_text.isdigit() and not _process_alive(int(pid_text)):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _glob_escape(name: str) -> str:
    """``name`` with glob's special characters escaped."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _make_parent(target: Path) -> None:
    for parent in reversed(target.parents):
        if parent.exists() and not parent.is_dir():
            from .errors import InvalidInputError

            raise InvalidInputError(
                f"cannot write {target}: {parent} is a file, not a folder; choose another path"
            )
    target.parent.mkdir(parents=True, exist_ok=True)


def _final_mode(target: Path) -> int:
    """The permissions ``target`` gets: those of the file it replaces, else 0666 less umask."""
    if target.exists():
        return target.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _new_temp(target: Path, suffix: str) -> Path:
    _make_parent(target)
    _remove_orphaned_temps(target)
    try:
        fd, name = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=suffix + _TEMP_SUFFIX,
                                    dir=target.parent)
    except OSError as exc:  # the hidden temporary file's name would mean nothing to the user
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None
    os.close(fd)
    return Path(name)


def _name_the_target(exc: OSError, temps: dict[Path, Path]) -> OSError:
    """The same error, naming the user's path instead of a hidden temporary file."""
    if exc.filename is not None and Path(exc.filename) in temps:
        return type(exc)(exc.errno, exc.strerror, str(temps[Path(exc.filename)]))
    return exc


@contextlib.contextmanager
def atomic_paths(*paths: str | os.PathLike, suffix: str = "") -> Iterator[list[Path]]:
    """Yield temporary paths next to ``paths``; on success they replace ``paths`` together.

    Every output is written to its temporary file first; only when the block
    ends without an exception are they renamed over the targets, one
    :func:`os.replace` each.  A failure while writing leaves every old output
    in place, so several files that belong together (a table and its curves, a
    summary and its graphs) are never a mix of two runs.  A replaced file keeps
    its permissions; a new one gets ``0666`` less the umask.  Temporary files
    of a killed run are removed by the next write to the same path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_paths(folder / "a.txt", folder / "b.txt") as (a, b):
    ...     _ = a.write_text("one"), b.write_text("two")
    >>> sorted(p.name for p in folder.iterdir())
    ['a.txt', 'b.txt']
    """
    targets = [Path(path) for path in paths]
    temps: dict[Path, Path] = {}
    try:
        for target in targets:
            temps[_new_temp(target, suffix)] = target
        try:
            yield list(temps)
        except OSError as exc:
            raise _name_the_target(exc, temps) from None
        for temp, target in temps.items():
            os.chmod(temp, _final_mode(target))
        for temp, target in temps.items():
            os.replace(temp, target)
    finally:
        for temp in temps:
            if temp.exists():
                temp.unlink()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path``.

    The temporary file lives in the same folder so that :func:`os.replace` is an
    atomic rename on POSIX and Windows.  On an exception the temporary file is
    removed and ``path`` is left untouched.  See :func:`atomic_paths` for
    permissions, leftovers of killed runs and several files at once.
    """
    with atomic_paths(path, suffix=suffix) as (temp,):
        yield temp


def _write(path: str | os.PathLike, mode: str, writer: Callable[[IO], None]) -> Path:
    with atomic_path(path) as tmp:
        with open(tmp, mode) as handle:
            writer(handle)
            handle.flush()
            os.fsync(handle.fileno())
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return _write(path, "w", lambda handle: handle.write(text))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return _write(path, "wb", lambda handle: handle.write(data))


def claim_parts_dir(parts_dir: Path, description: dict) -> None:
    """Mark ``parts_dir`` as holding the resumable pieces of the job ``description``.

    A resumed run may reuse the pieces only if it is the same job; another job
    pointed at the same output gets a clear error instead of mixed results.
    """
    import json

    from .errors import InvalidInputError

    manifest = Path(parts_dir) / "manifest.json"
    if manifest.exists():
        try:
            previous = json.loads(manifest.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise InvalidInputError(
                f"{manifest} is unreadable, so the interrupted run's pieces cannot be trusted; "
                f"delete {parts_dir} (or run again with --restart / resume=False)"
            ) from None
        if previous != description:
            raise InvalidInputError(
                f"{parts_dir} holds an interrupted run of a different job "
                f"({_job_summary(previous)}); delete it, run again with --restart "
                "(resume=False), or choose another output path"
            )
    else:
        atomic_write_text(manifest, json.dumps(description))


def _job_summary(description: Any) -> str:
    """A short name of a job description: its kind and a digest of the rest."""
    import hashlib
    import json

    kind = description.get("kind", "job") if isinstance(description, dict) else "job"
    digest = hashlib.sha256(json.dumps(description, sort_keys=True, default=str).encode())
    return f"{kind} {digest.hexdigest()[:12]}"


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars and arrays made plain and non-finite floats made None.

    Mappings keep their keys (as strings), tuples and arrays become lists; any
    other object is returned unchanged, so :func:`json.dumps` still refuses what
    JSON cannot hold.

    Examples
    --------
    >>> import numpy as np
    >>> jsonable({"H": np.float64("inf"), "edges": np.array([[0, 1]]), "n": np.int64(3)})
    {'H': None, 'edges': [[0, 1]], 'n': 3}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    # No value can be a numpy object before numpy is imported (the CLI's help never does).
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        return jsonable(value.tolist())
    if numpy is not None and isinstance(value, numpy.generic):
        return jsonable(value.item())
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value


def dumps_json(value: Any, *, indent: int | None = 1) -> str:
    """Strict JSON text of ``value`` (non-finite numbers as ``null``), ending in a newline."""
    return json.dumps(jsonable(value), indent=indent, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike, value: Any, *, indent: int | None = 1) -> Path:
    """Write ``value`` as strict JSON to ``path`` atomically."""
    return atomic_write_text(path, dumps_json(value, indent=indent))


def read_json_file(path: str | os.PathLike, kind: str) -> Any:
    """The JSON in the file at ``path`` (a ``kind`` file, such as "workload" or "design").

    Raises
    ------
    InputFileNotFoundError
        No file there.
    InputFileError
        A directory, malformed JSON (with its line) or not UTF-8 text; each
        message names the file.
    """
    from .errors import InputFileError, InputFileNotFoundError

    path = Path(path)
    if not path.exists():
        raise InputFileNotFoundError(f"no such {kind} file: {path}")
    if path.is_dir():
        raise InputFileError(f"{path} is a directory; expected a {kind} JSON file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{path}: malformed JSON at line {exc.lineno}: {exc.msg}") from None
    except UnicodeDecodeError:
        raise InputFileError(f"{path}: not a UTF-8 text file") from None
