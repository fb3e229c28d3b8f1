import os

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")


@pytest.fixture(scope="module")
def toy():
    """The bundled toy network (with its topology), one per test module."""
    from topokit.network.examples import load_example

    return load_example("toy")


@pytest.fixture(scope="module")
def digits():
    """scikit-learn's digits, standardised: (X, y)."""
    from topokit.training import load_digits

    return load_digits()
