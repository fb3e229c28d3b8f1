"""Starting topokit as a user does, for the tests and the benchmarks of its real parts.

A service is tested by starting it as a user would (a subprocess on 127.0.0.1);
these are the two things every such starter needs.
"""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

__all__ = ["free_port", "topokit_command"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of ``host`` that nothing listens on now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def topokit_command() -> list[str]:
    """The ``topokit`` console script of this Python (its ``-c`` twin if none is installed)."""
    script = Path(sys.executable).with_name("topokit")
    if script.exists():
        return [str(script)]
    found = shutil.which("topokit")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from topokit.cli import main; sys.exit(main())"]
