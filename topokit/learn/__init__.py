"""System 3: graph topology learning from smooth signals, alone or federated under privacy.

Single graph: :func:`learn_graph` (the log-degree model, eq. (7) of Zhang [1]_,
Kalofolias' model [2]_) with fast dual Newton (default), PDHG and FBF solvers or
the cvxpy formulation :func:`log_degree_problem`; :func:`params_for_degree` picks
(alpha, beta) for a target average degree.  Federated: :func:`learn_federated` (PPGL, Algorithm 1
of [1]_, optional differential privacy calibrated as its Corollary 1), its cvxpy
reference :func:`federated_problem`, and the baselines :func:`igl`,
:func:`fedavg` and :func:`graphical_lasso`.  The figures live in
:mod:`topokit.plotting.learn` and the ``topokit learn`` commands in
``topokit.cli.learn``.

References
----------
.. [1] X. Zhang, "Graph Topology Learning Under Privacy Constraints",
   arXiv:2301.06662, 2023 (later versions of the preprint, by X. Zhang and
   Q. Wang, are titled "Graph Learning Across Data Silos").
.. [2] V. Kalofolias, "How to learn a graph from smooth signals",
   International Conference on Artificial Intelligence and Statistics
   (AISTATS), PMLR, 2016, pp. 920-929.
"""

import importlib
from typing import Any

from .baselines import fedavg, graphical_lasso, igl
from .data import SyntheticGraphs, digits_views, load_signals, synthetic_federated
from .federated import FederatedGraphs, PrivacySpent, learn_federated
from .metrics import EdgeScores, community_scores, edge_scores, threshold_sensitivity
from .solvers import (
    ConvergenceWarning,
    LearnedGraph,
    kkt_residual,
    learn_graph,
    learn_graph_from_distances,
    params_for_degree,
    weights_to_graph,
)

__all__ = [
    "log_degree_problem",
    "federated_problem",
    "solve_problem",
    "SolverFailedError",
    "learn_graph",
    "learn_graph_from_distances",
    "params_for_degree",
    "kkt_residual",
    "weights_to_graph",
    "LearnedGraph",
    "ConvergenceWarning",
    "learn_federated",
    "FederatedGraphs",
    "PrivacySpent",
    "igl",
    "fedavg",
    "graphical_lasso",
    "synthetic_federated",
    "SyntheticGraphs",
    "digits_views",
    "load_signals",
    "edge_scores",
    "EdgeScores",
    "threshold_sensitivity",
    "community_scores",
]


# The cvxpy formulations load cvxpy (a large import) only when first used, so that
# the command line and the fast solvers start without it.
_PROBLEMS = ("SolverFailedError", "federated_problem", "log_degree_problem", "solve_problem")


def __getattr__(name: str) -> Any:
    if name in _PROBLEMS:
        return getattr(importlib.import_module("topokit.learn.problems"), name)
    raise AttributeError(f"module 'topokit.learn' has no attribute {name!r}")
