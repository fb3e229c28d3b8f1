"""Privatized graph federated learning (Rizk, Vlaski and Sayed).

P servers on a graph, each with K clients; clients run local SGD and send
models or updates to their server, servers combine with their neighbours
through a doubly-stochastic matrix A.  Privacy between servers comes from
random or graph-homomorphic Laplace perturbations, between clients and their
server from secure aggregation (X25519 + HKDF + ChaCha20 masks in a ring
:math:`2^k`) or independent Laplace noise.

Modules
-------
perturbations
    :func:`homomorphic_noise`, :func:`random_noise`, :func:`combine`,
    :func:`validate_combination_matrix` (``G[m, p]`` = noise on m's message to p).
secagg
    :func:`secure_aggregate` and the client/server protocol objects.
privacy
    :func:`epsilon` and :func:`sigma_for_epsilon` (journal Theorem 2).
config
    :class:`GFLConfig`, presets, TOML loading.
core
    :func:`run`, :func:`run_many` -> :class:`GFLResult`.
plotting
    Figure functions (import ``topokit.gfl.plotting`` explicitly).
"""

from __future__ import annotations

from .config import PRESETS, GFLConfig, config_from_dict, load_config, preset
from .core import BATCHABLE, GFLProblem, GFLResult, build_problem, run, run_many
from .perturbations import (
    SCHEMES,
    combination_matrix,
    combine,
    homomorphic_noise,
    laplace_noise,
    random_noise,
    server_noise,
    validate_combination_matrix,
)
from .privacy import epsilon, epsilon_high_probability, sigma_for_epsilon
from .secagg import (
    SecAggClient,
    SecAggServer,
    SecureAggregate,
    decode,
    encode,
    secure_aggregate,
    secure_aggregate_with_dropouts,
)

__all__ = [
    "GFLConfig",
    "PRESETS",
    "preset",
    "load_config",
    "config_from_dict",
    "GFLProblem",
    "GFLResult",
    "BATCHABLE",
    "build_problem",
    "run",
    "run_many",
    "SCHEMES",
    "combination_matrix",
    "validate_combination_matrix",
    "combine",
    "homomorphic_noise",
    "random_noise",
    "server_noise",
    "laplace_noise",
    "epsilon",
    "sigma_for_epsilon",
    "epsilon_high_probability",
    "SecureAggregate",
    "SecAggClient",
    "SecAggServer",
    "encode",
    "decode",
    "secure_aggregate",
    "secure_aggregate_with_dropouts",
]
