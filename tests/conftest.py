import os

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("NUMBA_NUM_THREADS", "2")
# pytest-xdist's workers start with COLUMNS=80; rich fixes a console's width from COLUMNS
# when the console is made, so the CLI's consoles would ignore the width a test gives.
os.environ.pop("COLUMNS", None)


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


@pytest.fixture
def never_generated(monkeypatch):
    """Fail the test, before any memory is taken, if a network is generated (the
    refusals of sizes that do not fit must come first)."""
    def never(*args, **kwargs):
        raise AssertionError("the network was generated")

    monkeypatch.setattr("topokit.network.siot.siot", never)
