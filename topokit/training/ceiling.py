"""The accuracy a model reaches without DP noise or slow mixing: :func:`ceiling_probe`.

A workload's target is hard when it lies close to the accuracy its model and
data can reach at all: there, the DP noise of a few devices is enough to keep
the training below the target for good, where a target far below the ceiling
is only reached later.  The training-time predictor that knows the workload
(:func:`topokit.load_predictor` ``("workload")``) takes the target's closeness
to this ceiling, ``target / ceiling``, as a feature.

The probe is one cheap run of :func:`~topokit.training.train` whose
averaging is exact and which adds no noise: ``n_devices`` devices on a
complete graph whose mixing weights are all 1/n (W = J, the average of every
model each round), IID data, no DP.  That is centralised minibatch SGD with
the workload's optimiser settings, the best any topology of DeepPrivacy's
D-PSGD can do.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import check_int
from .._random import SeedLike

__all__ = ["CeilingProbe", "ceiling_probe", "complete_averaging"]

#: Checkpoints the ceiling is smoothed over: a single checkpoint's accuracy is noisy.
_SMOOTHING = 5
#: The fewest rounds a probe runs: fewer measure no approach to a ceiling.
MIN_ROUNDS = 3
#: The fraction of its own ceiling whose rounds say how fast a model learns
#: (:attr:`CeilingProbe.probe_rounds`).
PROBE_FRACTION = 0.9


class CeilingProbe(NamedTuple):
    """What :func:`ceiling_probe` measured.

    Attributes
    ----------
    ceiling : float
        The highest accuracy of the run, as a moving mean over
        ``_SMOOTHING`` = 5 checkpoints (the averaged accuracy of the paper's
        R_t).
    rounds : ndarray of int
        The checkpoint rounds.
    accuracy : ndarray of float
        The averaged accuracy at each checkpoint.
    """

    ceiling: float
    rounds: NDArray[np.int64]
    accuracy: NDArray[np.float64]

    def __repr__(self) -> str:
        """One line: the ceiling, how fast it is approached and the horizon; the arrays are
        :attr:`rounds` and :attr:`accuracy`.

        >>> CeilingProbe(0.95, np.arange(1, 6), np.array([0.5, 0.8, 0.9, 0.95, 0.95]))
        CeilingProbe(ceiling=0.95, probe_rounds=3, rounds=5)
        """
        horizon = int(self.rounds[-1]) if len(self.rounds) else 0
        return (f"CeilingProbe(ceiling={self.ceiling:.4g}, probe_rounds={self.probe_rounds}, "
                f"rounds={horizon})")

    def rounds_to(self, target: float) -> int | None:
        """The first checkpoint round whose accuracy reaches ``target``; None if never."""
        hits = np.flatnonzero(self.accuracy >= target)
        return int(self.rounds[hits[0]]) if hits.size else None

    @property
    def probe_rounds(self) -> int | None:
        """The rounds to 90 % of the run's own ceiling (:data:`PROBE_FRACTION`): how fast
        the model learns with exact averaging and no noise, a trait of the model and data
        that a predictor may take as a feature (``Workload(probe_rounds=...)``); None if
        never reached.  On digits: 4 for logistic regression, 33-48 for the MLP."""
        return self.rounds_to(PROBE_FRACTION * self.ceiling)


def complete_averaging(n_devices: int):
    """(Network, Topology) of ``n_devices`` devices whose mixing is the exact average.

    A complete social graph (every link social: no DP end), unit compute times
    and delays, and link weights 1/n, so that W = J = 11^T / n.

    Examples
    --------
    >>> net, topology = complete_averaging(3)
    >>> topology.mixing_matrix(net.nodes).round(3).tolist()
    [[0.333, 0.333, 0.333], [0.333, 0.333, 0.333], [0.333, 0.333, 0.333]]
    """
    import networkx as nx

    from ..network.core import Network, Topology

    n = check_int(n_devices, "n_devices", low=2)
    social = nx.complete_graph(n)
    net = Network(social, np.ones(n), np.ones((n, n)) - np.eye(n), name=f"complete{n}")
    topology = Topology(list(social.edges), weights=[1.0 / n] * social.number_of_edges())
    return net, topology


def ceiling_probe(X: ArrayLike, y: ArrayLike, *, model: Any = "logreg", rounds: int = 200,
                  n_devices: int = 8, seed: SeedLike = 0, **train_kwargs: Any) -> CeilingProbe:
    """The accuracy ``model`` reaches on (X, y) with exact averaging and no DP noise.

    Parameters
    ----------
    X, y : array-like
        The data and labels the workload trains on (``train`` holds out its
        test split as it does for any run).
    model : str or Model, default "logreg"
    rounds : int >= 3, default 200
        The workload's horizon (:data:`MIN_ROUNDS` at least).
    n_devices : int >= 2, default 8
        Devices of the complete graph: each round averages ``n_devices``
        minibatches of ``batch_size`` rows.
    seed : int or Generator, default 0
    **train_kwargs
        Further options of :func:`~topokit.training.train` (``lr``,
        ``lr_decay``, ``batch_size``, ``local_steps``); ``dp``, ``partition``
        and ``convergence`` are the probe's own (none, IID, every round).

    Returns
    -------
    CeilingProbe

    Examples
    --------
    >>> from topokit.training import load_digits
    >>> probe = ceiling_probe(*load_digits(), rounds=40, seed=0)
    >>> 0.9 < probe.ceiling <= 1.0, probe.rounds_to(0.5) is not None
    (True, True)
    """
    from numbers import Integral

    from ..errors import InvalidInputError
    from .core import train

    if not isinstance(rounds, Integral) or isinstance(rounds, bool) or rounds < MIN_ROUNDS:
        raise InvalidInputError(
            f"a ceiling probe needs at least {MIN_ROUNDS} rounds to measure a ceiling and how "
            f"fast the model approaches it; got rounds={rounds!r} (give the workload's horizon)")
    fixed = sorted({"dp", "partition", "convergence"} & set(train_kwargs))
    if fixed:
        raise InvalidInputError(f"ceiling_probe sets {fixed[0]} itself (no DP, IID data, every "
                                "round); leave it out")
    net, topology = complete_averaging(n_devices)
    run = train(net, topology, X, y, model=model, rounds=rounds, dp=None, partition=None,
                checkpoint_every=1, seed=seed, **train_kwargs)
    accuracy = np.asarray(run.mean_accuracy, dtype=np.float64)
    width = min(_SMOOTHING, accuracy.size)
    smoothed = np.convolve(accuracy, np.full(width, 1.0 / width), mode="valid")
    return CeilingProbe(float(smoothed.max()), np.asarray(run.rounds, dtype=np.int64), accuracy)
