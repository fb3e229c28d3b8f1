"""topokit's analysis scripts: benchmarks, reproductions of the paper's figures and the
measurements behind the shipped predictors.

Run each from the repository root as a module, e.g. ``python -m analyses.design_benchmark
--quick``; outputs go to ``analyses/out/``.  The library logic they use lives in topokit
(:mod:`topokit.validation.compare`, :mod:`topokit.validation.corpus`, ...);
:mod:`analyses._common` holds what the scripts share besides it.
"""
