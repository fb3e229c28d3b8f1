"""``import topokit`` and ``topokit --help`` load none of the heavy dependencies.

scikit-learn (with pandas and scipy.stats behind it) and Numba cost about a second of
CPU to import, networkx and numpy a tenth each; the network model, the predictors and
the kernels that need them load when first used (``python -m analyses.startup``
measures the cost).  Help and ``import topokit`` load not even numpy.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("sklearn", "pandas", "numba", "scipy.stats", "dask", "cvxpy", "matplotlib", "torch",
         "networkx")  # the network model: 0.1 s of CPU that topokit --help does not need


@pytest.mark.parametrize("statement", ["import topokit", "import topokit.cli",
                                       "import topokit.design", "from topokit import Workload"])
def test_importing_loads_no_heavy_dependency(statement):
    code = (f"import sys; {statement}; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "", f"{statement} loaded {loaded}"


def test_the_lazy_names_resolve_to_the_real_objects():
    import topokit
    from topokit.design import _optimize, time_predictor

    assert topokit.optimize is _optimize.optimize
    assert topokit.load_predictor is time_predictor.load_predictor
    assert topokit.design.Design is topokit.Design
    from topokit.autotag import Design  # the old module path, through its stand-in

    assert Design is topokit.Design and topokit.autotag.__name__ == "autotag"


@pytest.mark.parametrize("argv", [["--help"], ["design", "--help"], ["audit", "--help"],
                                  ["serve", "--help"], ["--version"]])
def test_help_and_version_load_no_numpy(argv):
    code = (f"import sys; sys.argv = ['topokit', *{argv!r}]\n"
            "from topokit.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('numpy' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr


def test_import_topokit_loads_no_numpy():
    code = "import sys, topokit; print('numpy' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "False"
