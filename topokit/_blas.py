"""One BLAS thread for small dense work: threadpoolctl's limit, without its per-call scan.

``threadpoolctl.threadpool_limits`` looks up every shared library the process
has loaded each time it is entered: about 3 ms once numpy, SciPy, Numba and
scikit-learn are loaded, which is as much as auditing a small topology.  A
:class:`~threadpoolctl.ThreadpoolController` does that lookup once and then
limits in microseconds; it is made again only when modules were imported since
(a new extension module may bring its own BLAS).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["one_blas_thread"]

_lock = threading.Lock()
_controller: Any = None
_modules_seen = -1


def one_blas_thread() -> Any:
    """A context manager inside which BLAS runs on one thread (``threadpoolctl``).

    Used where the matrices are small and the parallelism comes from elsewhere
    (threads over observers, searches or devices): a BLAS pool spinning beside
    them slows them down several times.

    >>> import numpy as np
    >>> with one_blas_thread():
    ...     float(np.ones((3, 3)) @ np.ones(3) @ np.ones(3))
    9.0
    """
    global _controller, _modules_seen
    with _lock:
        if _controller is None or len(sys.modules) != _modules_seen:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
            _modules_seen = len(sys.modules)
        controller = _controller
    return controller.limit(limits=1, user_api="blas")
