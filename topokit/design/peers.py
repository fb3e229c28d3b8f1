"""The peers of the field over a network: time-varying schedules, and EquiStatic.

Each time-varying builder returns a :class:`~topokit.network.TopologySchedule` whose
rounds use only the network's usable pairs (finite delay), with the devices
placed in the ring order of :func:`~topokit.design.baselines.exponential_graph`
(:func:`~topokit.design.baselines.ring_order`: ``net.nodes`` unless shuffled
by a seed), so that construction index i is device ``ring_order(net)[i]``:

- :func:`one_peer_exponential`: Ying et al.'s one-peer exponential graph
  (NeurIPS 2021), each device averaging with one peer 2^k positions away;
- :func:`base_graph`: Takezawa et al.'s Base-(k+1) graph (NeurIPS 2023), a
  finite sequence of mixing matrices of maximum degree k whose product is
  exactly the average, for any number of devices;
- :func:`epidemic`: de Vos et al.'s epidemic learning (NeurIPS 2023), each
  device sending to s peers drawn at random every round (a generated schedule).

:func:`equistatic` is static: Song et al.'s U-EquiStatic (NeurIPS 2022), a
:class:`~topokit.network.Topology` with the construction's mixing weights,
whose consensus rate does not grow with the number of devices, placed in the
same ring order.

The ends of every link that is not a social link are the DP devices, in every
round (:mod:`topokit.network.schedule` says why).  A construction that needs a
pair the network cannot carry is refused in one line naming the pair: unlike
the static exponential graph, which joins what it loses with the fastest
usable links, these sequences reach their exact average only with every link
they prescribe.

Every schedule here can be saved to a file, :meth:`TopologySchedule.save
<topokit.network.TopologySchedule.save>`, and read back,
:func:`~topokit.network.load_schedule`: the cyclic ones whole, epidemic
learning as its rounds' generator (:class:`EpidemicRounds`, kept in
:mod:`topokit.network.rounds`), its seed and its window, rebuilt over the
network it was made for.

The index-level constructions, :func:`one_peer_exponential_weights`,
:func:`base_graph_weights` and :func:`equistatic_weights` (with the draw
:func:`equistatic_offsets`), give the mixing matrices alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .._checks import check_int
from .._random import SeedLike, check_random_state
from ..errors import InvalidInputError
from ..network.core import Network, Topology
from ..network.rounds import EpidemicRounds
from ..network.schedule import TopologySchedule
from .baselines import ring_order

__all__ = ["one_peer_exponential", "base_graph", "epidemic", "equistatic",
           "one_peer_exponential_weights", "base_graph_weights", "equistatic_weights",
           "equistatic_offsets", "EpidemicRounds"]


# ---------------------------------------------------------------------------------------------
# Over a network
# ---------------------------------------------------------------------------------------------


def one_peer_exponential(net: Network, *, seed: SeedLike = None) -> TopologySchedule:
    """Ying et al.'s one-peer exponential graph over the usable pairs of ``net``.

    Round t pairs the devices 2^k ring positions apart, k = t mod tau and
    tau = ceil(log2 n) (:func:`one_peer_exponential_weights`); each pair
    averages with weight 1/2.  When n = 2^tau, any tau consecutive rounds give
    every device the exact average [1]_.

    Parameters
    ----------
    net : Network
    seed : int, Generator or None
        The ring order (:func:`~topokit.design.baselines.ring_order`): None
        keeps ``net.nodes``.

    Returns
    -------
    TopologySchedule
        Cyclic with period tau, named ``"one-peer-exponential"``.

    Raises
    ------
    InvalidInputError
        A pair the construction needs has an infinite delay (named).

    References
    ----------
    .. [1] B. Ying, K. Yuan, Y. Chen, H. Hu, P. Pan and W. Yin, "Exponential
       graph is provably efficient for decentralized deep training", NeurIPS
       2021 (the one-peer exponential graph and its periodic exact averaging).

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> net = Network(nx.cycle_graph(8), [1.0] * 8, np.ones((8, 8)))
    >>> schedule = one_peer_exponential(net)
    >>> schedule.period, schedule.topology_at(1).edges[:2]
    (3, ((0, 2), (1, 3)))
    """
    return _schedule_over(net, one_peer_exponential_weights(net.n_devices),
                          ring_order(net, seed), "one-peer-exponential")


def base_graph(net: Network, max_degree: int, *, seed: SeedLike = None) -> TopologySchedule:
    """Takezawa et al.'s Base-(k+1) graph over the usable pairs of ``net``, k = ``max_degree``.

    A sequence of m = O(log_{k+1} n) mixing matrices in which every device
    has at most k peers a round, and whose product over one period is
    exactly the average J/n, for any number n of devices [1]_
    (:func:`base_graph_weights`, a port of the authors' construction).

    Parameters
    ----------
    net : Network
    max_degree : int >= 1
        k: the most peers a device has in one round (at most n - 1).
    seed : int, Generator or None
        The ring order (:func:`~topokit.design.baselines.ring_order`).

    Returns
    -------
    TopologySchedule
        Cyclic, named ``"base:k"``.

    Raises
    ------
    InvalidInputError
        ``max_degree`` below 1 or above n - 1; a pair the construction needs
        has an infinite delay (named).

    References
    ----------
    .. [1] Y. Takezawa, R. Sato, H. Bao, K. Niwa and M. Yamada, "Beyond
       exponential graph: communication-efficient topologies for
       decentralized learning via finite-time convergence", NeurIPS 2023;
       code https://github.com/yukiTakezawa/BaseGraph (MIT).

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> net = Network(nx.path_graph(6), [1.0] * 6, np.ones((6, 6)))
    >>> schedule = base_graph(net, 2)
    >>> product = np.eye(6)
    >>> for t in range(schedule.period):
    ...     product = schedule.mixing_at(t, net.nodes) @ product
    >>> schedule.period, bool(np.allclose(product, 1 / 6))
    (2, True)
    """
    n = net.n_devices
    k = check_int(max_degree, "max_degree", low=1)
    if n > 1 and k > n - 1:
        raise InvalidInputError(
            f"the Base-(k+1) graph with max_degree={k} gives a device up to {k} peers a round, "
            f"but the network has {n} devices (at most {n - 1} peers); use max_degree 1 to "
            f"{n - 1}"
        )
    return _schedule_over(net, base_graph_weights(n, k), ring_order(net, seed), f"base:{k}")


def epidemic(net: Network, s: int, *, seed: SeedLike = None,
             window: int | None = None) -> TopologySchedule:
    """De Vos et al.'s epidemic learning over the usable pairs of ``net``: s random peers a round.

    Every round, every device draws s distinct peers uniformly among the
    devices it can reach (finite delay) and sends them its model [1]_.
    topokit's topologies are undirected, so a send is a link used both
    ways, and the round mixes with Metropolis-Hastings weights 1 / (1 +
    max(d_i, d_j)) over those links (symmetric and doubly stochastic; the
    paper's receivers average what they get uniformly, which is not).

    Parameters
    ----------
    net : Network
    s : int >= 1
        Peers each device sends to per round; at most its usable degree.
    seed : int, Generator or None
        Seeds the draws: round t uses ``keyed_rng(seed, t)``.
    window : int, optional
        Rounds the schedule's checks cover
        (:data:`~topokit.network.schedule.DEFAULT_WINDOW`).

    Returns
    -------
    TopologySchedule
        Generated, named ``"epidemic:s"``; its DP devices are every device
        with a usable pair outside the social graph (any round may draw it).
        Its file (:meth:`TopologySchedule.save
        <topokit.network.TopologySchedule.save>`) is rebuilt over ``net``.

    Raises
    ------
    InvalidInputError
        ``s`` below 1 or above some device's usable degree (named).

    References
    ----------
    .. [1] M. de Vos, S. Farhadkhani, R. Guerraoui, A.-M. Kermarrec, R. Pires
       and R. Sharma, "Epidemic learning: boosting decentralized learning
       with randomized communication", NeurIPS 2023 (EL-Local).

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> net = Network(nx.complete_graph(5), [1.0] * 5, np.ones((5, 5)))
    >>> schedule = epidemic(net, 1, seed=0)
    >>> schedule.topology_at(4) == epidemic(net, 1, seed=0).topology_at(4)
    True
    """
    rounds = EpidemicRounds.over(net, s)
    ends = {node for u, v in _usable_pairs(net) if not net.social.has_edge(u, v)
            for node in (u, v)}
    return TopologySchedule(rounds, seed=seed, dp_devices=ends, window=window,
                            name=f"epidemic:{rounds.s}")


def equistatic(net: Network, m: int | None = None, *, seed: SeedLike = None) -> Topology:
    """Song et al.'s U-EquiStatic over the usable pairs of ``net``: M random ring offsets.

    The device at ring position i is linked to positions i + u and i - u
    (mod n) for each of M offsets u_1, ..., u_M drawn uniformly from
    {1, ..., n - 1} (:func:`equistatic_offsets`), with the mixing weights of
    :func:`equistatic_weights`: each device keeps 1/n of its value and has
    at most 2M peers [1]_.  The paper's static topologies are D-EquiStatic
    (device i sends to i + u_m only, a directed graph) and U-EquiStatic (its
    symmetrised, undirected twin); topokit trains over undirected links with
    symmetric mixing, so this is U-EquiStatic.

    Its consensus rate ||W - J||_2 is at most epsilon with probability at
    least 1 - p once M >= 8 ln(2n/p) / (3 epsilon^2): about ln n peers buy
    a rate that does not grow with n (the Notes of :func:`equistatic_weights`).

    Parameters
    ----------
    net : Network
    m : int >= 1, optional
        M, the offsets (basis matrices) drawn.  Default ceil(log2 n), the
        out-degree of the static exponential graph, the degree at which the
        authors compare the two (their ``consensus.ipynb``).
    seed : int, Generator or None
        Draws the offsets.  The devices stay in node order (``ring_order(net)``
        without a seed), so the same seed gives the same topology.

    Returns
    -------
    Topology
        The links with their U-EquiStatic weights; the ends of the links that
        are not social links are the DP devices.  One device: no links.

    Raises
    ------
    InvalidInputError
        ``m`` below 1; a link the draw needs has an infinite delay (named);
        every offset drawn shares a factor with n, so the devices split into
        groups that never mix (named, with the offsets).

    References
    ----------
    .. [1] Z. Song, W. Li, K. Jin, L. Shi, M. Yan, W. Yin and K. Yuan,
       "Communication-efficient topologies for decentralized learning with
       O(1) consensus rate", NeurIPS 2022; code
       https://github.com/kexinjinnn/EquiTopo (``EquiStatic.py``).

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> net = Network(nx.cycle_graph(16), [1.0] * 16, np.ones((16, 16)))
    >>> topology = equistatic(net, 3, seed=0)
    >>> W = topology.mixing_matrix(net.nodes)
    >>> bool(np.allclose(W, W.T) and np.allclose(W.sum(axis=0), 1)), float(W[0, 0])
    (True, 0.0625)
    >>> max(sum(1 for link in topology.edges if node in link) for node in net.nodes) <= 2 * 3
    True
    """
    n = net.n_devices
    m = (n - 1).bit_length() if m is None else check_int(m, "m", low=1)
    if n == 1:
        return Topology((), ())
    offsets = equistatic_offsets(n, m, seed=seed)
    name = f"equistatic:{m}"
    common = math.gcd(n, *offsets.tolist())
    if common > 1:
        # Then W has a second eigenvalue 1: the groups i mod common never mix.
        raise InvalidInputError(
            f"{name} drew the ring offsets {sorted(set(offsets.tolist()))}, which all share "
            f"the factor {common} with the {n} devices, so the devices split into {common} "
            "groups that never mix; use another seed or a larger M"
        )
    links = _topology_over(net, equistatic_weights(n, offsets), ring_order(net), name,
                           lambda i, j: f"ring offset {min(j - i, n - j + i)}")
    ends = {node for u, v in links.non_social_edges(net) for node in (u, v)}
    return Topology(links.edges, ends, links.weights)


def _usable_pairs(net: Network) -> list[tuple[Hashable, Hashable]]:
    rows, cols = np.nonzero(np.triu(np.isfinite(net.delay), 1))
    return [(net.nodes[i], net.nodes[j]) for i, j in zip(rows, cols, strict=True)]


def _schedule_over(net: Network, matrices: Sequence[NDArray[np.float64]], order: list,
                   name: str) -> TopologySchedule:
    """The cyclic schedule of index-level mixing ``matrices`` with index i on ``order[i]``:
    every link must be usable, and the ends of the non-social ones are the DP devices."""
    rounds = [_round_over(net, matrix, order, name, t) for t, matrix in enumerate(matrices)]
    ends = {node for topology in rounds for u, v in topology.non_social_edges(net)
            for node in (u, v)}
    return TopologySchedule(rounds, dp_devices=ends, name=name)


def _round_over(net: Network, matrix: NDArray[np.float64], order: list, name: str,
                t: int) -> Topology:
    """Round ``t``'s topology: the links and weights of ``matrix`` placed on ``order``."""
    return _topology_over(net, matrix, order, name, lambda i, j: f"round {t}")


def _topology_over(net: Network, matrix: NDArray[np.float64], order: list, name: str,
                   where: Callable[[int, int], str]) -> Topology:
    """The links and weights of the index-level ``matrix`` with index i on ``order[i]``, no
    DP devices; a link with an infinite delay is refused, ``where(i, j)`` saying what in the
    construction needs it."""
    rows, cols = np.nonzero(np.triu(matrix, 1))
    for i, j in zip(rows, cols, strict=True):
        u, v = order[i], order[j]
        if not np.isfinite(net.delay[net.index[u], net.index[v]]):
            raise InvalidInputError(
                f"{name} needs the link {u!r}-{v!r} ({where(int(i), int(j))}), which this "
                "network cannot carry (infinite delay); choose a network where those devices "
                "can connect, or another topology"
            )
    pairs = [(order[i], order[j]) for i, j in zip(rows, cols, strict=True)]
    return Topology(pairs, (), matrix[rows, cols].tolist())


# ---------------------------------------------------------------------------------------------
# Index-level constructions
# ---------------------------------------------------------------------------------------------


def one_peer_exponential_weights(n: int) -> list[NDArray[np.float64]]:
    """The mixing matrices of one period of the (undirected) one-peer exponential graph.

    Ying et al.'s graph is directed: in round t, device i sends to
    i + 2^k mod n, k = t mod tau, tau = ceil(log2 n) (their code:
    ``int(log2(n - 1)) + 1`` rounds).  topokit's topologies are undirected,
    with symmetric mixing matrices, so here round k links i and i + 2^k mod
    n for i = 0, 1, ... in turn, whenever neither is linked yet in that round:
    each device has at most one peer, and a pair averages with weight 1/2.
    For n = 2^tau the pairs are those of the hypercube's k-th dimension (i
    and i XOR 2^k), each round averages along one dimension, and any tau
    consecutive rounds multiply to exactly J/n, the periodic exact
    averaging of Ying et al. (NeurIPS 2021).

    Parameters
    ----------
    n : int >= 1

    Returns
    -------
    list of ndarray of shape (n, n)
        tau matrices (one identity for n = 1).

    Examples
    --------
    >>> W = one_peer_exponential_weights(4)
    >>> W[0].tolist()   # round 0: pairs 0-1 and 2-3
    [[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]]
    >>> bool((W[1] @ W[0] == 0.25).all())   # two rounds: exactly the average
    True
    """
    n = check_int(n, "n", low=1)
    if n == 1:
        return [np.eye(1)]
    matrices = []
    for k in range((n - 1).bit_length()):  # ceil(log2 n) rounds
        matrix, linked = np.eye(n), np.zeros(n, dtype=bool)
        for i in range(n):
            j = (i + 2**k) % n
            if i != j and not linked[i] and not linked[j]:
                linked[i] = linked[j] = True
                matrix[i, i] = matrix[j, j] = matrix[i, j] = matrix[j, i] = 0.5
        matrices.append(matrix)
    return matrices


def base_graph_weights(n: int, max_degree: int) -> list[NDArray[np.float64]]:
    """The mixing matrices of one period of Takezawa et al.'s Base-(k+1) graph, k = ``max_degree``.

    A port of the authors' ``BaseGraph(n_nodes, max_degree)`` (NeurIPS 2023,
    https://github.com/yukiTakezawa/BaseGraph, MIT licence) to numpy: the
    devices are split into groups whose sizes are multiples of powers of
    k + 1 (``SimpleBaseGraph``), each group averaged exactly by cliques of at
    most k + 1 devices along the digits of its indices (``HyperHyperCube``,
    the k-peer hyper-hypercube), and the groups then brought to one average
    in a few rounds of weighted links; ``BaseGraph`` also tries splitting n
    into a (k+1)-smooth factor times the rest and keeps the shorter
    sequence.  Every matrix is symmetric and doubly stochastic, every
    device has at most k peers in it, and the product of the period is
    exactly J/n (to round-off), for every n >= 1.  The one departure: the
    authors take the largest power of b not above n as
    ``b ** int(math.log(n, b))``, which floating point can round down at an
    exact power (``math.log(243, 3) < 5``); here it is exact (both give the
    same matrices for every n from 1 to 99 and k from 1 to 4, and at 243).

    Parameters
    ----------
    n : int >= 1
    max_degree : int >= 1

    Returns
    -------
    list of ndarray of shape (n, n)

    Examples
    --------
    >>> matrices = base_graph_weights(5, 1)
    >>> product = np.eye(5)
    >>> for matrix in matrices:
    ...     product = matrix @ product
    >>> len(matrices), bool(np.allclose(product, 0.2, atol=1e-12))
    (5, True)
    """
    n = check_int(n, "n", low=1)
    k = check_int(max_degree, "max_degree", low=1)
    groups1, groups2 = _smooth_split(n, k)
    simple = _simple_base_graph(n, k)
    parts = [_simple_base_graph(len(group), k) for group in groups1]
    cubes = [_hyper_hyper_cube(len(group), k) for group in groups2]
    if len(simple) < len(parts[0]) + len(cubes[0]):
        return simple
    return ([_placed(n, [(part[m], group) for part, group in zip(parts, groups1, strict=True)])
             for m in range(len(parts[0]))]
            + [_placed(n, [(cube[m], group) for cube, group in zip(cubes, groups2, strict=True)])
               for m in range(len(cubes[0]))])


def equistatic_offsets(n: int, m: int, *, seed: SeedLike = None) -> NDArray[np.int64]:
    """U-EquiStatic's draw: M ring offsets u_1, ..., u_M, uniform on {1, ..., n - 1}.

    Independent and with replacement, as in the paper and the authors' code
    (``np.random.choice(np.arange(1, n), size=M, replace=True)``); a
    repeated offset doubles its links' weights in :func:`equistatic_weights`.

    Parameters
    ----------
    n : int >= 2
    m : int >= 1
    seed : int, Generator or None

    Returns
    -------
    ndarray of int, shape (m,)

    Examples
    --------
    >>> offsets = equistatic_offsets(16, 4, seed=0)
    >>> offsets.shape, bool(((offsets >= 1) & (offsets <= 15)).all())
    ((4,), True)
    """
    n = check_int(n, "n", low=2)
    m = check_int(m, "m", low=1)
    return check_random_state(seed).integers(1, n, size=m, dtype=np.int64)


def equistatic_weights(n: int,
                       offsets: Sequence[int] | NDArray[np.integer]) -> NDArray[np.float64]:
    """U-EquiStatic's mixing matrix W for the ring offsets u_1, ..., u_M (Song et al., 2022).

    A reimplementation from the paper's definitions of the authors'
    ``UEquiStatic(n, M=...)`` (``EquiStatic.py`` of
    https://github.com/kexinjinnn/EquiTopo, which states no licence; no code
    is copied, and both give the same matrix for the same offsets): device i
    keeps 1/n of its value and gives (n - 1) / (2nM) to i + u and to i - u
    (mod n) for each offset u, so weights of a repeated offset add up and
    u = n/2 gives its one peer (n - 1) / (nM).

    Parameters
    ----------
    n : int >= 2
    offsets : sequence of int in [1, n - 1], non-empty
        The paper's u_1, ..., u_M (:func:`equistatic_offsets` draws them).

    Returns
    -------
    ndarray of shape (n, n)
        Symmetric, doubly stochastic and circulant; non-negative, diagonal 1/n.

    Notes
    -----
    With the cyclic shift P ([P]_ij = 1 iff j = i + 1 mod n), the basis
    matrices and U-EquiStatic are

    .. math::

       A^{(u)} = \\frac{1}{n} I + \\frac{n - 1}{n} P^u, \\qquad
       W = \\frac{1}{2M} \\sum_{m=1}^{M} \\left(A^{(u_m)} + A^{(u_m)\\top}\\right)

    (D-EquiStatic is :math:`\\frac{1}{M} \\sum_m A^{(u_m)}`).  W is circulant,
    so its eigenvalues are

    .. math::

       \\lambda_k = \\frac{1}{n} + \\frac{n - 1}{nM} \\sum_{m=1}^{M}
       \\cos\\frac{2 \\pi k u_m}{n}, \\qquad k = 0, \\dots, n - 1,

    with :math:`\\lambda_0 = 1`, and the consensus rate is
    :math:`\\rho = \\|W - J\\|_2 = \\max_{k \\neq 0} |\\lambda_k|`, J = 11^T / n.
    For u uniform on {1, ..., n - 1}, E A^{(u)} = J, and each term
    :math:`X_m = ((A^{(u_m)} + A^{(u_m)\\top})/2 - J)/M` has
    :math:`\\|X_m\\|_2 \\le 1/M`, so the matrix Bernstein inequality gives, for
    :math:`\\epsilon \\in (0, 1]`,

    .. math::

       P(\\rho > \\epsilon) \\le 2n \\exp(-3 M \\epsilon^2 / 8),

    which is at most p once :math:`M \\ge 8 \\ln(2n/p) / (3 \\epsilon^2)`: the
    paper's n-independent rate with Theta(ln n) peers, and the M the authors'
    code computes from epsilon and p.

    Examples
    --------
    >>> W = equistatic_weights(4, [1])
    >>> W[0].tolist()   # 1/n to itself, (n - 1) / (2nM) to 0 + 1 and 0 - 1 (mod 4)
    [0.25, 0.375, 0.0, 0.375]
    >>> sorted(np.round(np.linalg.eigvalsh(W), 12).tolist())   # 1/4 + 3/4 cos(pi k / 2)
    [-0.5, 0.25, 0.25, 1.0]
    """
    n = check_int(n, "n", low=2)
    u = _checked_offsets(n, offsets)
    shift = np.zeros((n, n))
    positions = np.arange(n)
    for offset in u.tolist():  # P^u, summed over the draws
        shift[positions, (positions + offset) % n] += 1.0
    basis_sum = u.size * np.eye(n) / n + (n - 1) / n * shift  # sum_m A^(u_m)
    return (basis_sum + basis_sum.T) / (2 * u.size)


def _checked_offsets(n: int, offsets: Sequence[int] | NDArray[np.integer]) -> NDArray[np.integer]:
    u = np.asarray(offsets)
    integral = u.ndim == 1 and u.size > 0 and np.issubdtype(u.dtype, np.integer)
    if not integral or u.min() < 1 or u.max() > n - 1:
        raise InvalidInputError(
            f"offsets must be a non-empty sequence of integers in [1, {n - 1}]; got {offsets!r}"
        )
    return u


def _floor_power(n: int, base: int) -> int:
    """The largest power of ``base`` not above ``n`` (exact, in integers)."""
    power = 1
    while power * base <= n:
        power *= base
    return power


def _largest_prime_factor(n: int) -> int:
    largest, p = 1, 2
    while p * p <= n:
        while n % p == 0:
            largest, n = p, n // p
        p += 1
    return max(largest, n)


def _placed(n: int, blocks: list[tuple[NDArray[np.float64], list[int]]]) -> NDArray[np.float64]:
    """An (n, n) matrix holding each block's matrix on its devices (the authors' ``extend``)."""
    matrix = np.zeros((n, n))
    for block, devices in blocks:
        matrix[np.ix_(devices, devices)] += block
    return matrix


def _smooth_split(n: int, k: int) -> tuple[list[list[int]], list[list[int]]]:
    """``BaseGraph.split_nodes``: n = g r with g the largest divisor of n whose prime factors
    are at most k + 1; g consecutive groups of r devices, and r groups of g devices taking
    one device from each of those."""
    factor = math.prod(_floor_power(n, b) for b in range(2, k + 2))
    g = math.gcd(n, factor)
    r = n // g
    groups1 = [list(range(r * i, r * (i + 1))) for i in range(g)]
    groups2 = [[groups1[i][j] for i in range(g)] for j in range(r)]
    return groups1, groups2


def _hyper_hyper_cube(n: int, k: int) -> list[NDArray[np.float64]]:
    """``HyperHyperCube``: exact averaging of n devices whose prime factors are at most
    k + 1, one round per factor f of n: cliques of f devices a stride apart, weight 1/f."""
    if n == 1:
        return [np.eye(1)]
    factors = _factors_up_to(n, k)
    matrices = []
    for m, f in enumerate(factors):
        matrix, links = np.zeros((n, n)), np.zeros(n, dtype=int)
        stride = math.prod(factors[:m])
        for i in range(n):
            for step in range(1, f):
                j = (i + stride * step) % n
                if links[i] < f - 1 and links[j] < f - 1:
                    links[i] += 1
                    links[j] += 1
                    matrix[i, j] = matrix[j, i] = matrix[i, i] = matrix[j, j] = 1 / f
        matrices.append(matrix)
    return matrices


def _factors_up_to(n: int, k: int) -> list[int]:
    """``HyperHyperCube.split_node``: n's factors from k + 1 down to 2, greedily, ascending."""
    factors, rest = [], n
    for factor in range(k + 1, 1, -1):
        while rest % factor == 0 and rest > 1:
            factors.append(factor)
            rest //= factor
    return factors[::-1]


def _simple_base_graph(n: int, k: int) -> list[NDArray[np.float64]]:
    """``SimpleBaseGraph``: exact averaging of any n devices with at most k peers a round."""
    if n == 1:
        return [np.eye(1)]
    if _largest_prime_factor(n) <= k + 1:
        return _hyper_hyper_cube(n, k)
    groups, sizes = _power_groups(n, k)
    subgroups = [_equal_subgroups(group, k) for group in groups]
    cubes = [_hyper_hyper_cube(len(group), k) for group in groups]
    cubes2 = [_hyper_hyper_cube(len(parts[0]), k) for parts in subgroups]
    state = _SimpleRounds(n, k, groups, sizes, subgroups, cubes, cubes2)
    matrices = []
    while True:
        matrices.append(state.round(len(matrices)))
        if state.done[0] == len(cubes2[0]):
            return matrices


@dataclass
class _SimpleRounds:
    """The loop of ``SimpleBaseGraph.construct``, one round per call of :meth:`round`.

    Groups l = 0..L-1 of sizes a_l (k+1)^{p_l}, decreasing powers: first each
    group averages within itself (``cubes``); then in round ``first + l`` the
    devices of the larger groups l' > l each link to one device of every
    subgroup of group l (weights that give group l its share of the running
    average), and group l's leftover devices average in cliques; afterwards a
    group re-averages its subgroups (``cubes2``), counted in ``done``.
    """

    n: int
    k: int
    groups: list[list[int]]
    sizes: list[int]
    subgroups: list[list[list[int]]]
    cubes: list[list[NDArray[np.float64]]]
    cubes2: list[list[NDArray[np.float64]]]

    def __post_init__(self):
        self.done = [0] * len(self.groups)

    def round(self, m: int) -> NDArray[np.float64]:
        matrix = np.zeros((self.n, self.n))
        first = len(self.cubes[0])
        isolated: list[list[int]] | None = None
        pool: list[int] = []
        for l in reversed(range(len(self.groups))):  # noqa: E741 -- the paper's index
            if m < first:
                cube = self.cubes[l]
                matrix += _placed(self.n, [(cube[m % len(cube)], self.groups[l])])
            elif m < first + l:
                if isolated is None:
                    isolated = [list(part) for part in self.subgroups[m - first]]
                    pool = [node for part in isolated for node in part]
                self._link_to_isolated(matrix, l, m - first, isolated, pool)
            elif m == first + l and l != len(self.groups) - 1:
                self._leftover_cliques(matrix, pool)
            else:
                self._reaverage(matrix, l)
        diagonal = np.diagonal(matrix).copy()
        matrix[np.diag_indices(self.n)] = np.where(diagonal == 0, 1.0, diagonal)
        return matrix

    def _link_to_isolated(self, matrix, l: int, target: int, isolated: list[list[int]],  # noqa: E741
                          pool: list[int]) -> None:
        share = self.sizes[target] / sum(self.sizes[target:])
        for i in self.groups[l]:
            for part in isolated:
                j = part.pop()
                pool.remove(j)
                matrix[i, j] = matrix[j, i] = share / len(isolated)
                matrix[j, j] = 1 - matrix[i, j]
            matrix[i, i] = 1 - share

    def _leftover_cliques(self, matrix, pool: list[int]) -> None:
        while len(pool) > 1:
            clique = pool[:min(self.k + 1, len(pool))]
            del pool[:len(clique)]
            matrix[np.ix_(clique, clique)] = 1 / len(clique)

    def _reaverage(self, matrix, l: int) -> None:  # noqa: E741
        if self.sizes[l] < self.k + 1:
            cube = self.cubes[l]
            matrix += _placed(self.n, [(cube[self.done[l] % len(cube)], self.groups[l])])
        else:
            cube = self.cubes2[l]
            matrix += _placed(self.n, [(cube[self.done[l] % len(cube)], part)
                                       for part in self.subgroups[l]])
        self.done[l] += 1


def _power_groups(n: int, k: int) -> tuple[list[list[int]], list[int]]:
    """``SimpleBaseGraph.split_nodes``: consecutive groups of sizes a_l (k+1)^{p_l}, the
    digits of n in base k + 1 from the top (each size the largest multiple of a power that
    fits what is left)."""
    factor, sizes = _floor_power(n, k + 1), []
    while sum(sizes) != n:
        rest = n - sum(sizes)
        if rest >= factor:
            sizes.append((rest // factor) * factor)
        factor //= k + 1
    starts = np.cumsum([0, *sizes]).tolist()
    return [list(range(starts[i], starts[i + 1])) for i in range(len(sizes))], sizes


def _equal_subgroups(group: list[int], k: int) -> list[list[int]]:
    """``SimpleBaseGraph.split_nodes2``: a group of a (k+1)^p devices as a subgroups of
    (k+1)^p consecutive devices."""
    power = math.gcd(len(group), _floor_power(len(group), k + 1))
    return [group[i * power:(i + 1) * power] for i in range(len(group) // power)]
