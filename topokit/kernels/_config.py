"""Numba flags, in one place (as stumpy does).

``cache=True`` keeps compiled kernels on disk between runs so the CLI and the
tests pay the compile cost once.  ``fastmath`` stays off: hitting times feed
comparisons (AutoTag's tie-breaking, SSP's minimum) that must not change with
reassociation.
"""

NJIT_FLAGS = {"cache": True, "nogil": True, "fastmath": False}
PARALLEL_FLAGS = {**NJIT_FLAGS, "parallel": True}
