"""topokit._blas.one_blas_thread: BLAS on one thread inside, as it was before, outside."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info

from topokit._blas import one_blas_thread


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_blas_runs_on_one_thread_inside_and_as_before_outside():
    before = _blas_threads()
    assert before  # numpy's BLAS is loaded
    for _ in range(3):  # the kept controller limits each time, not only the first
        with one_blas_thread():
            assert _blas_threads() == [1] * len(before)
            np.linalg.inv(np.eye(4) * 2.0)
        assert _blas_threads() == before


def test_a_module_imported_since_renews_the_controller():
    import sys
    import types

    from topokit import _blas

    with one_blas_thread():
        pass
    first = _blas._controller
    sys.modules["_topokit_test_new_module"] = types.ModuleType("_topokit_test_new_module")
    try:
        with one_blas_thread():
            assert _blas._controller is not first
        renewed = _blas._controller
        with one_blas_thread():
            assert _blas._controller is renewed  # nothing imported since: kept
    finally:
        del sys.modules["_topokit_test_new_module"]
