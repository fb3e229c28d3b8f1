"""The shape of the package: every module imports on its own, imports point one way,
old module paths still resolve, and no orchestration function grows past a page."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import topokit
from topokit._compat import MOVED_MODULES

PACKAGE = Path(topokit.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = sorted(_module_name(path) for path in PACKAGE.rglob("*.py"))


#: Imports each module named on its command line in a child forked from an interpreter
#: that holds the third-party libraries but no topokit module: every child starts from no
#: topokit at all, as a fresh interpreter would, without paying numpy's, scipy's or
#: numba's import again for each of the package's modules.  Prints one line per failure.
_FORKING_IMPORTER = r"""
import importlib, os, sys
for library in ("numpy", "scipy.sparse", "scipy.linalg", "scipy.optimize", "networkx",
                "pandas", "pyarrow", "sklearn.linear_model", "numba", "matplotlib",
                "cvxpy", "dp_accounting", "typer", "rich", "joblib", "distributed",
                "cryptography"):
    try:
        importlib.import_module(library)
    except ImportError:
        pass
assert not [m for m in sys.modules if m == "topokit" or m.startswith("topokit.")]
for module in sys.argv[1:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(module)
            message = ""
        except BaseException as exc:
            message = f"{type(exc).__name__}: {exc}"
        os.write(write, message.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if message or status:
        print(f"{module}\t{' '.join(message.split()) or f'exit status {status}'}")
"""


def _imports_alone(modules: list[str]) -> dict[str, str]:
    completed = subprocess.run([sys.executable, "-c", _FORKING_IMPORTER, *modules],
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return dict(line.split("\t", 1) for line in completed.stdout.splitlines())


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_every_module_imports_on_its_own_in_a_fresh_interpreter():
    # One topokit-free start per module: an import cycle hidden by import order in a
    # shared interpreter shows up here as a partially initialised module.
    halves = [MODULES[0::2], MODULES[1::2]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = {module: error for half in pool.map(_imports_alone, halves)
                    for module, error in half.items()}
    assert failures == {}


def test_the_forking_importer_reports_a_module_that_fails():
    failures = _imports_alone(["topokit.errors", "topokit.no_such_module"])
    assert list(failures) == ["topokit.no_such_module"]
    assert "ModuleNotFoundError" in failures["topokit.no_such_module"]


# Which top-level parts of topokit each part may import.  Data flows one way, with no
# exception by name: shared infrastructure <- kernels, dp <- the network model <- the
# privacy audit and the training core <- design <- validation (design x training) and export
# (a design in a runtime's format);
# gfl and learn stand beside them; plotting, the HTTP service, cli and the reference twins on
# top.
SHARED = {"errors", "_checks", "_io", "_random", "_compat", "_version", "_jobs", "_blas"}
_BASE = SHARED | {"kernels", "dp"}
ALLOWED = {
    "shared": SHARED,
    "kernels": SHARED | {"kernels"},
    "dp": SHARED | {"dp"},
    "network": _BASE | {"network"},
    "audit": _BASE | {"network", "audit"},
    "training": _BASE | {"network", "training"},
    "design": _BASE | {"network", "audit", "design"},
    "validation": _BASE | {"network", "audit", "design", "training", "validation"},
    "export": _BASE | {"network", "audit", "design", "export"},
    "gfl": _BASE | {"gfl"},
    "learn": _BASE | {"learn"},
    "plotting": _BASE | {"network", "audit", "design", "training", "validation", "gfl", "learn",
                         "plotting"},
    "service": _BASE | {"network", "audit", "design", "training", "validation", "export",
                        "service"},
    "cli": _BASE | {"network", "audit", "design", "training", "validation", "export", "gfl",
                    "learn", "plotting", "service", "cli"},
    "testing": _BASE | {"network", "audit", "design", "training", "testing"},
}


def _part(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "root"
    return "shared" if parts[1] in SHARED else parts[1]


def _plot_method_bodies(tree: ast.Module) -> set[int]:
    """ids of the nodes inside ``plot`` methods: a result's ``plot()`` may import
    :mod:`topokit.plotting` when called, as pandas' ``DataFrame.plot`` does."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "plot":
            inside.update(id(child) for child in ast.walk(node))
    return inside


def _type_checking_bodies(tree: ast.Module) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:``: annotations only, never executed."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(child) for statement in node.body for child in ast.walk(statement))
    return inside


def _module_path(module: str) -> Path:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _topokit_imports(path: Path, module: str, *, skip_plot: bool = True) -> set[str]:
    """The topokit modules (or module.name) ``module`` imports, at any depth of its code."""
    is_package = path.name == "__init__.py"
    package = module.split(".") if is_package else module.split(".")[:-1]
    tree = ast.parse(path.read_text())
    skipped = _type_checking_bodies(tree) | (_plot_method_bodies(tree) if skip_plot else set())
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names] if not node.module \
                else [target]
            found.update(n for n in names if n.startswith("topokit."))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("topokit."))
    return found


@pytest.mark.parametrize("module", [m for m in MODULES if _part(m) not in ("root",)])
def test_imports_point_one_way(module):
    wrong = sorted(
        target for target in _topokit_imports(_module_path(module), module)
        if target.split(".")[1] not in ALLOWED[_part(module)]
    )
    assert wrong == [], f"{module} ({_part(module)}) imports {wrong}"


def _imported_modules(module: str) -> set[str]:
    """The modules of topokit that ``module`` imports (``pkg.name`` resolved to a module
    where it is one, else to ``pkg``), lazy imports in function bodies included."""
    found = set()
    for target in _topokit_imports(_module_path(module), module, skip_plot=False):
        while target not in MODULES and "." in target:
            target = target.rpartition(".")[0]
        if target in MODULES and target != module:
            found.add(target)
    return found


def _package_of(module: str) -> str:
    return module if _module_path(module).name == "__init__.py" else module.rpartition(".")[0]


def test_no_import_circle_between_modules():
    # A package's __init__ re-exports its modules' names: an edge into an __init__ from
    # inside its own package is the re-export, not a dependency, so it is left out.
    graph = {
        module: {target for target in _imported_modules(module)
                 if not (_module_path(target).name == "__init__.py"
                         and module.startswith(target + "."))}
        for module in MODULES
    }
    import networkx as nx

    cycles = [sorted(c) for c in nx.simple_cycles(nx.DiGraph(
        [(a, b) for a, targets in graph.items() for b in targets]
        + [(_package_of(m), m) for m in []]))]
    assert cycles == []


def test_training_imports_nothing_from_design():
    for module in MODULES:
        if _part(module) == "training":
            targets = _topokit_imports(_module_path(module), module, skip_plot=False)
            assert not any(t.split(".")[1] == "design" for t in targets), module


@pytest.mark.parametrize("old, new", sorted(MOVED_MODULES.items()))
def test_old_module_paths_are_the_moved_modules(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


def test_topokit_autotag_stays_the_function_after_importing_the_old_module_path():
    from topokit.autotag import PHASES, Design  # the old path of the module

    assert callable(topokit.autotag) and topokit.autotag.__name__ == "autotag"
    assert PHASES == ("CGP", "LCP", "NEP")
    assert topokit.design.Design is Design


def test_public_names_of_the_top_level_resolve():
    for name in topokit.__all__:
        assert getattr(topokit, name) is not None
    for name in ("baselines", "datasets", "gfl", "learn", "training", "design", "dp"):
        assert getattr(topokit, name).__name__.startswith("topokit.")


def _code_lines(node: ast.FunctionDef, lines: list[str]) -> int:
    docstring = node.body[0] if (node.body and isinstance(node.body[0], ast.Expr)
                                 and isinstance(node.body[0].value, ast.Constant)
                                 and isinstance(node.body[0].value.value, str)) else None
    skipped = set(range(docstring.lineno, docstring.end_lineno + 1)) if docstring else set()
    return sum(
        1 for number in range(node.lineno, node.end_lineno + 1)
        if number not in skipped and lines[number - 1].strip()
        and not lines[number - 1].strip().startswith("#")
    )


def _is_numba_kernel(node: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(decorator) for decorator in node.decorator_list)


#: Longest function outside Numba kernels, in lines of code (docstring and comments excluded).
MAX_FUNCTION_LINES = 100


def test_no_orchestration_function_is_longer_than_a_page():
    too_long = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and not _is_numba_kernel(node):
                length = _code_lines(node, lines)
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} "
                                    f"{node.name} ({length} lines)")
    assert too_long == []
