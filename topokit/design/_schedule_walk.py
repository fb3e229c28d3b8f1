"""Features of a time-varying topology: the walk quantities of :mod:`.features` over rounds.

Every default feature of :func:`~topokit.design.features.topology_features` is
a sum over the rounds after a message is sent of what the mixing has done to
it by then.  For one matrix W that is a function of W's powers (the closed
forms of :mod:`._spectral`); for a :class:`~topokit.network.TopologySchedule`
the power W^k is the product of the rounds that follow the message,
P_k = W_{t+k-1} ... W_t, and the sums are taken round by round.  Round t
sends noise (and data drift) that W_t mixes first, as the training core does,
so a schedule of one topology has the static features (tested).

Averaged over the start rounds t (a cyclic schedule's period, a generated
one's window: the noise of every round is felt), with D_k = P_k - J
(P_k is doubly stochastic, so P_k (I - J) = P_k - J):

- felt diagonal, (C_gamma)_ii = 1 / (n (1 - gamma)) + sum_k gamma^(k-1) ||D_k e_i||^2,
  which gives U_felt and Vogels et al.'s effective number of neighbours n_W(gamma)
  (they define it for time-varying topologies too: the variance a walk of
  averages leaves, Sec. 3 of "Beyond spectral gap", NeurIPS 2022);
- disagreement diagonal, M_ii = sum_k ||D_k e_i||^2, which gives U_dis;
- the drift, ||(1 - gamma) sum_k gamma^(k-1) D_k Pi||_F^2, and the neighbourhood,
  ||W_t Pi||_F^2, of the heterogeneity features.

Two quantities have no single agreed meaning for a schedule and are named for
what they are: the **spectral gap** is the per-round contraction of the
disagreement over the schedule's window T, 1 - max_t ||D_T||_2^(1/T) (the
static gap when T = 1, or for any T when the schedule is one symmetric W);
the **hitting time** is that of the window's mean matrix, which is the
walk's own when the rounds are drawn independently (a walker stepping by a
fresh W_t moves by E[W_t]).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..network.core import Network
from ..network.schedule import TopologySchedule

# The sums stop when the disagreement left, ||D_k||_F^2, is this small against its start
# (n - 1): the terms decay at least geometrically once the schedule contracts, and the
# drift sums D_k itself, so its truncation is the square root of this.
_RELATIVE_TOLERANCE = 1e-32
# ... or after this many rounds, past which gamma^k (gamma < 1) is negligible and the
# undiscounted disagreement's tail is estimated from the last rounds' contraction.
MAX_ROUNDS = 20_000


class _Rounds:
    """The mixing matrices of a schedule's rounds in node order, each built once."""

    def __init__(self, schedule: TopologySchedule, net: Network):
        self._schedule, self._nodes = schedule, net.nodes
        self._period = schedule.period
        self._known: dict[int, NDArray[np.float64]] = {}

    def at(self, t: int) -> NDArray[np.float64]:
        key = t % self._period if self._period else t
        if key not in self._known:
            self._known[key] = self._schedule.mixing_at(key, self._nodes)
        return self._known[key]

    def stack(self, rounds: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.stack([self.at(int(t)) for t in rounds])


class ScheduleFunctions:
    """The features' functions of a schedule's rounds (the interface of :mod:`._spectral`'s),
    averaged over the start rounds; see the module notes.

    Attributes
    ----------
    connected : bool
        The rounds contract the disagreement (its sums are finite).
    contraction_gap : float
        1 - max_t ||D_T||_2^(1/T), T the schedule's window.
    mean_matrix : ndarray of shape (n, n)
        The mean of W_t over the window (its walk's hitting time is the schedule's H).
    rounds : int
        The rounds the sums ran for.
    """

    def __init__(self, net: Network, schedule: TopologySchedule, gamma: float):
        n, self.gamma = net.n_devices, gamma
        rounds = _Rounds(schedule, net)
        starts = np.arange(schedule.window)
        self._first = rounds.stack(starts)
        disagreement = np.broadcast_to(np.eye(n) - 1.0 / n, (starts.size, n, n)).copy()
        felt, undiscounted = np.zeros((starts.size, n)), np.zeros((starts.size, n))
        self._drift = np.zeros_like(disagreement)  # sum_k gamma^(k-1) D_k of every start
        start_norm, weight, norms, gap, k = float(n - 1), 1.0, [], None, 0
        while k < MAX_ROUNDS:
            disagreement = (self._first if k == 0 else rounds.stack(starts + k)) @ disagreement
            # Rounding puts a share of ones into D_k, which no W contracts: taken out.
            disagreement -= disagreement.mean(axis=1, keepdims=True)
            k += 1
            columns = np.sum(disagreement**2, axis=1)
            felt += weight * columns
            undiscounted += columns
            self._drift += weight * disagreement
            weight *= gamma
            if k == schedule.window:
                gap = _contraction_gap(disagreement, k)
            norms.append(float(columns.sum(axis=1).max()))
            if norms[-1] <= _RELATIVE_TOLERANCE * start_norm and gap is not None:
                break
        self._felt = felt.mean(axis=0) + 1.0 / (n * (1.0 - gamma))
        self._disagreement = _with_tail(undiscounted.mean(axis=0), columns.mean(axis=0), norms)
        self.contraction_gap = gap if gap is not None else _contraction_gap(disagreement, k)
        self.connected = bool(np.all(np.isfinite(self._disagreement)))
        self.mean_matrix = self._first.mean(axis=0)
        self.rounds = k

    def disagreement_diagonal(self, rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """M_ii on every row (``rows`` is not needed here)."""
        return self._disagreement

    def felt_diagonal(self, rows: NDArray[np.bool_]) -> NDArray[np.float64]:
        """(C_g)_ii on every row, the consensus share 1 / (n (1 - g)) included."""
        return self._felt

    def felt_mean(self) -> float:
        """tr C_g / n."""
        return float(self._felt.mean())

    def drift_norm2(self, centred: NDArray[np.float64]) -> float:
        """||(1 - g) sum_k g^(k-1) D_k Pi||_F^2, the mean over the start rounds."""
        mixed = (1.0 - self.gamma) * (self._drift @ centred)
        return float(np.mean(np.sum(mixed**2, axis=(1, 2))))

    def neighbourhood_norm2(self, centred: NDArray[np.float64]) -> float:
        """||W_t Pi||_F^2, the mean over the start rounds."""
        return float(np.mean(np.sum((self._first @ centred) ** 2, axis=(1, 2))))


def _contraction_gap(disagreement: NDArray[np.float64], rounds: int) -> float:
    """1 - max_t ||D_T||_2^(1/T): the per-round contraction of the slowest start."""
    largest = float(np.linalg.norm(disagreement, ord=2, axis=(1, 2)).max())
    return float(1.0 - largest ** (1.0 / rounds)) if largest > 0 else 1.0


def _with_tail(diagonal: NDArray[np.float64], last: NDArray[np.float64],
               norms: list[float]) -> NDArray[np.float64]:
    """The undiscounted sums plus the geometric tail, last * r / (1 - r), that the last
    rounds' contraction r implies when they stopped at :data:`MAX_ROUNDS` (``inf`` when
    the rounds stopped contracting); as they are when they ran to the tolerance."""
    if len(norms) < MAX_ROUNDS or norms[-1] == 0.0:
        return diagonal
    span = min(100, len(norms) - 1)
    ratio = (norms[-1] / norms[-1 - span]) ** (1.0 / span) if norms[-1 - span] > 0 else 1.0
    if ratio >= 1.0:
        return np.full_like(diagonal, np.inf)
    return diagonal + last * ratio / (1.0 - ratio)
