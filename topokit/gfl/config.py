"""Configuration of a GFL run: one frozen dataclass, named presets, TOML loading.

A configuration file is TOML with the fields of :class:`GFLConfig` at the top
level or under a ``[gfl]`` table; ``preset = "name"`` picks the base preset
whose fields the file overrides::

    preset = "regression"
    iterations = 300
    scheme = "homomorphic"
    sigma_g2 = 0.5
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from .._checks import (
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)
from ..errors import InputFileError, InputFileNotFoundError, InvalidInputError

__all__ = ["GFLConfig", "PRESETS", "preset", "load_config", "config_from_dict"]

TASKS = ("regression", "classification")
SHARES = ("models", "updates")
SCHEME_NAMES = ("none", "random", "homomorphic")
CLIENT_NOISE = ("none", "laplace", "secagg")
WEIGHTS = ("lazy-metropolis", "metropolis")
GRAPHS = ("erdos-renyi", "ring", "complete", "star", "path")


@dataclass(frozen=True)
class GFLConfig:
    """All settings of one privatized GFL run (journal Sec. V; updates journal Sec. 5).

    Attributes
    ----------
    task : {"regression", "classification"}
        Regularised least squares on synthetic non-IID data, or a regularised
        logistic risk on scikit-learn's breast-cancer data.
    n_servers, clients_per_server : int
        P and K.
    samples_per_client : (int, int)
        Range [lo, hi] of N_{p,k} (drawn once per client; lo == hi gives equal sizes).
        Regression only; classification splits the data set unequally.
    n_features : int
        M (regression only; classification uses the data's 30 features + bias).
    clients_per_round : int
        L, clients sampled per server and iteration (without replacement).
    epochs, batch_size : (int, int)
        Ranges of E_{p,k} and B_{p,k}, drawn once per client, inclusive.
    mu, rho : float
        Step size and regularisation.
    iterations : int
        Number of GFL iterations.
    share : {"models", "updates"}
        What clients send (journal eq. 7, or updates journal eqs. 54-55).
    scheme : {"none", "random", "homomorphic"}
        Server-to-server perturbations.
    sigma_g2 : float
        Variance of the servers' Laplace noise.
    include_self_noise : bool
        Random scheme: also perturb the copy a server keeps (default True).
    client_noise : {"none", "laplace", "secagg"}
        Client-to-server privacy: nothing, independent Laplace noise of
        variance ``client_sigma2``, or real secure aggregation (slow: X25519
        per pair and round; the masks cancel, only fixed-point rounding remains).
    client_sigma2 : float
    frac_bits, ring_bits : int
        Fixed-point encoding of secure aggregation.
    graph : {"erdos-renyi", "ring", "complete", "star", "path"}
        Server graph (Erdos-Renyi redrawn until connected).
    edge_probability : float
        Erdos-Renyi edge probability.
    weights : {"lazy-metropolis", "metropolis"}
        Combination matrix built from the graph.
    local_step : {"mu/E", "mu"}
        Step of one local epoch: the papers' mu / E_{p,k} (journal eq. 3; then
        sharing updates without noise equals sharing models exactly) or mu.
    feature_eigs : (float, float)
        Regression: eigenvalues of each client's feature covariance drawn from
        this range (non-IID clients).
    noise_var : (float, float)
        Regression: range of each client's output noise variance sigma_v^2.
    repetitions : int
        Independent repetitions (sampling and noise) averaged in the MSD.
    divergence_threshold : float
        An MSD above this (or non-finite) marks a repetition as diverged.
    seed : int or None
    """

    task: str = "regression"
    n_servers: int = 10
    clients_per_server: int = 100
    samples_per_client: tuple[int, int] = (100, 100)
    n_features: int = 2
    clients_per_round: int = 11
    epochs: tuple[int, int] = (1, 10)
    batch_size: tuple[int, int] = (5, 10)
    mu: float = 0.7
    rho: float = 0.1
    iterations: int = 500
    share: str = "models"
    scheme: str = "homomorphic"
    sigma_g2: float = 0.1
    include_self_noise: bool = True
    client_noise: str = "none"
    client_sigma2: float = 0.0
    frac_bits: int = 16
    ring_bits: int = 32
    graph: str = "erdos-renyi"
    edge_probability: float = 0.4
    weights: str = "lazy-metropolis"
    local_step: str = "mu/E"
    feature_eigs: tuple[float, float] = (0.1, 0.5)
    noise_var: tuple[float, float] = (0.01, 0.1)
    repetitions: int = 1
    divergence_threshold: float = 1e6
    seed: int | None = 0
    name: str = field(default="custom", compare=False)

    def __post_init__(self) -> None:
        _validate(self)

    def replace(self, **changes: Any) -> GFLConfig:
        """A copy with some fields changed (validated)."""
        return config_from_dict({**self.to_dict(), **changes})

    def to_dict(self) -> dict[str, Any]:
        """Plain dictionary (tuples as lists), TOML/JSON ready except ``seed=None``."""
        out = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def _range(value: Any, name: str, *, integer: bool, positive: bool = True) -> None:
    if not isinstance(value, tuple) or len(value) != 2:
        raise InvalidInputError(f"{name} must be a pair (lo, hi); got {value!r}")
    for item in value:
        if integer:
            check_int(item, name, low=1)
        else:
            (check_positive if positive else check_nonnegative)(item, name)
    if value[0] > value[1]:
        raise InvalidInputError(f"{name} must have lo <= hi; got {value!r}")


def _validate(c: GFLConfig) -> None:
    check_choice(c.task, "task", TASKS)
    check_choice(c.share, "share", SHARES)
    check_choice(c.scheme, "scheme", SCHEME_NAMES)
    check_choice(c.client_noise, "client_noise", CLIENT_NOISE)
    check_choice(c.graph, "graph", GRAPHS)
    check_choice(c.weights, "weights", WEIGHTS)
    check_choice(c.local_step, "local_step", ("mu/E", "mu"))
    check_int(c.n_servers, "n_servers", low=1)
    check_int(c.clients_per_server, "clients_per_server", low=1)
    check_int(c.n_features, "n_features", low=1)
    check_int(c.clients_per_round, "clients_per_round", low=1)
    check_int(c.iterations, "iterations", low=1)
    check_int(c.repetitions, "repetitions", low=1)
    if c.clients_per_round > c.clients_per_server:
        raise InvalidInputError(
            f"clients_per_round (L={c.clients_per_round}) must not exceed clients_per_server "
            f"(K={c.clients_per_server})"
        )
    if c.client_noise == "secagg" and c.clients_per_round < 2:
        raise InvalidInputError("secure aggregation needs clients_per_round >= 2")
    _range(c.samples_per_client, "samples_per_client", integer=True)
    _range(c.epochs, "epochs", integer=True)
    _range(c.batch_size, "batch_size", integer=True)
    _range(c.feature_eigs, "feature_eigs", integer=False)
    _range(c.noise_var, "noise_var", integer=False, positive=False)
    check_positive(c.mu, "mu")
    check_nonnegative(c.rho, "rho")
    check_nonnegative(c.sigma_g2, "sigma_g2")
    check_nonnegative(c.client_sigma2, "client_sigma2")
    check_probability(c.edge_probability, "edge_probability")
    check_positive(c.divergence_threshold, "divergence_threshold")
    if c.seed is not None:
        check_int(c.seed, "seed", low=0)
    if not isinstance(c.include_self_noise, bool):
        raise InvalidInputError(
            f"include_self_noise must be true or false; got {c.include_self_noise!r}"
        )


_PAIRS = ("samples_per_client", "epochs", "batch_size", "feature_eigs", "noise_var")
_FIELDS = {f.name for f in dataclasses.fields(GFLConfig)}


def config_from_dict(values: dict[str, Any]) -> GFLConfig:
    """Build a validated :class:`GFLConfig` from a mapping (lists accepted for pairs).

    Raises
    ------
    InvalidInputError
        Unknown keys (listed with the valid ones) or invalid values.
    """
    unknown = sorted(set(values) - _FIELDS)
    if unknown:
        raise InvalidInputError(
            f"unknown GFL configuration keys {unknown}; valid keys are {sorted(_FIELDS)}"
        )
    converted = dict(values)
    for key in _PAIRS:
        if key in converted and isinstance(converted[key], list):
            converted[key] = tuple(converted[key])
        if key in converted and isinstance(converted[key], (int, float)) and not isinstance(
            converted[key], bool
        ):
            converted[key] = (converted[key], converted[key])
    return GFLConfig(**converted)


#: The papers' experiments by name (``topokit gfl run --preset NAME``).
PRESETS: dict[str, GFLConfig] = {
    # journal Sec. V / updates journal Sec. 5.1
    "regression": GFLConfig(name="regression"),
    # updates journal Sec. 5.2: one server, 1000 clients of varying data size
    "models-vs-updates": GFLConfig(
        name="models-vs-updates",
        n_servers=1,
        clients_per_server=1000,
        samples_per_client=(20, 200),
        clients_per_round=30,
        mu=0.2,
        rho=0.007,
        scheme="none",
        sigma_g2=0.0,
        client_noise="laplace",
        client_sigma2=0.02,
        share="updates",
        graph="complete",
        iterations=300,
        repetitions=20,
    ),
    # updates journal Sec. 5.3 with breast-cancer data instead of Avazu
    "classification": GFLConfig(
        name="classification",
        task="classification",
        n_servers=5,
        clients_per_server=10,
        clients_per_round=5,
        mu=0.5,
        rho=0.03,
        sigma_g2=0.6,
        iterations=300,
    ),
}


def preset(name: str) -> GFLConfig:
    """The named preset: ``"regression"``, ``"models-vs-updates"`` or ``"classification"``."""
    check_choice(name, "preset", sorted(PRESETS))
    return PRESETS[name]


def load_config(path: str | os.PathLike, *, base: str | None = None) -> GFLConfig:
    """Read a TOML configuration file.

    Parameters
    ----------
    path : path-like
        TOML file; fields at the top level or under ``[gfl]``.
    base : str, optional
        Preset the file overrides, unless the file names its own ``preset``.
        Default ``"regression"``.

    Raises
    ------
    InputFileNotFoundError
        The file does not exist.
    InputFileError
        It is not valid TOML or has unknown keys or invalid values.
    """
    file = Path(path)
    if file.is_dir():
        raise InputFileError(f"{file} is a directory; expected a TOML configuration file")
    if not file.is_file():
        raise InputFileNotFoundError(f"configuration file {str(file)!r} does not exist")
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{file}: not valid TOML: {exc}") from None
    if isinstance(data.get("gfl"), dict):
        data = {**{k: v for k, v in data.items() if k != "gfl"}, **data["gfl"]}
    name = data.pop("preset", base or "regression")
    try:
        start = preset(name).to_dict()
        start["name"] = file.stem
        return config_from_dict({**start, **data})
    except InvalidInputError as exc:
        raise InputFileError(f"{file}: {exc}") from None
