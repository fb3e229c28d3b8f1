"""Graph topology learning from smooth signals, alone or federated under privacy."""
from .problems import federated_problem, log_degree_problem, solve_problem
from .solvers import ConvergenceWarning, LearnedGraph, learn_graph, params_for_degree
__all__ = ["log_degree_problem", "federated_problem", "solve_problem", "learn_graph",
           "params_for_degree", "LearnedGraph", "ConvergenceWarning"]
