"""Old module paths of topokit, kept importable after the modules moved.

Until version 0.1 the DeepPrivacy modules sat flat in ``topokit/``; they moved
to :mod:`topokit.design`, and later the network model, the privacy audit and
validation moved to rooms of their own (:mod:`topokit.network`,
:mod:`topokit.audit`, :mod:`topokit.validation`; the layout is in
``docs/architecture.rst``).  Code outside this repository imports the old paths
(``from topokit.design.audit import privacy_audit``), so a meta-path finder
resolves each old name to the *same* module object as its new home: private
names, monkeypatching and ``isinstance`` checks keep working, and nothing is
imported before it is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

__all__ = ["MOVED_MODULES", "LazyModule"]

#: Old module path -> the module's home since the layout of version 0.2.
MOVED_MODULES: dict[str, str] = {
    # Flat modules of version 0.1.
    "topokit.physical": "topokit.network.physical",
    "topokit.metrics": "topokit.design.metrics",
    "topokit.predictor": "topokit.design.predictor",
    "topokit.baselines": "topokit.design.baselines",
    "topokit.datasets": "topokit.network.siot",
    "topokit.examples": "topokit.network.examples",
    "topokit.batch": "topokit.design.batch",
    "topokit.privacy": "topokit.dp",
    "topokit.kernels._incremental": "topokit.design._autotag_kernels",
    "topokit.gfl.cli": "topokit.cli.gfl",
    "topokit.gfl.plotting": "topokit.plotting.gfl",
    "topokit.learn.cli": "topokit.cli.learn",
    "topokit.learn.plotting": "topokit.plotting.learn",
    # The design package's modules before the network model, the audit and
    # validation got rooms of their own.  ``topokit.network`` and
    # ``topokit.validation`` are those rooms now: packages that export what the
    # old modules exported.
    "topokit.design.network": "topokit.network",
    "topokit.design.physical": "topokit.network.physical",
    "topokit.design.siot": "topokit.network.siot",
    "topokit.design.examples": "topokit.network.examples",
    "topokit.design.audit": "topokit.audit.core",
    "topokit.design._audit_kernels": "topokit.audit._kernels",
    "topokit.design._stranger_bound": "topokit.audit.stranger_bound",
    "topokit.design.validation": "topokit.validation.core",
    "topokit.design.calibration": "topokit.validation.calibration",
    # Export to a runtime left the design package: it writes designs, it does not make them.
    "topokit.design.export": "topokit.export.core",
}


class LazyModule(ModuleType):
    """A stand-in for the module ``target`` under the name ``name``: it imports ``target`` on
    the first attribute asked of it and answers with the target's attributes."""

    def __init__(self, name: str, target: str) -> None:
        super().__init__(name)
        self.__dict__["_target"] = target

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self.__dict__["_target"]), attribute)


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        # The target module is already executed; the import system only binds
        # it under the old name (sys.modules[old] is the target itself).
        pass


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new_home = MOVED_MODULES.get(fullname)
        if new_home is None:
            return None
        spec = importlib.util.find_spec(new_home)
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(new_home), origin=spec.origin if spec else None,
            is_package=bool(spec and spec.submodule_search_locations),
        )


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
