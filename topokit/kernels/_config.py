"""Numba flags and the chunking of stacks, in one place (as stumpy does).

``cache=True`` keeps compiled kernels on disk between runs so the CLI and the
tests pay the compile cost once.  ``fastmath`` stays off: hitting times feed
comparisons (AutoTag's tie-breaking, SSP's minimum) that must not change with
reassociation.
"""

import numba

NJIT_FLAGS = {"cache": True, "nogil": True, "fastmath": False}
PARALLEL_FLAGS = {**NJIT_FLAGS, "parallel": True}

#: Chunks per thread in the stack kernels (each chunk allocates its workspace once).
CHUNKS_PER_THREAD = 4


def chunks() -> int:
    """Chunks of a stack for the parallel kernels (each chunk allocates its workspace once)."""
    return CHUNKS_PER_THREAD * numba.get_num_threads()
