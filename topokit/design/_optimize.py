"""Topology design by predicted training time: :func:`optimize`.

AutoTag (:func:`topokit.autotag`) grows topologies by the paper's scores and
judges them by eq. (15).  :func:`optimize` judges every topology it looks at
by what a training-time predictor (by default topokit's fitted
:class:`~topokit.design.time_predictor.TrainingTimePredictor`) says training
will take, predicted rounds x local iterate L (eq. 8), and searches for the
fastest:

1. *Starts.*  NDLF, DLFDP, DeepPrivacy-ERG, AutoTag's design and its best
   snapshot of every DP budget, and NDLF pruned to its links of at most t
   seconds for every t at which the pruned social graph is still connected
   (these trade mixing for a shorter L without adding any noise).
2. *Local search* from the best starts: add a link, drop a link, or drop a
   DP device (with its non-social links), in a seeded random order; the
   first move that lowers the predicted time is taken, until a whole pass
   finds none.  A non-social link makes both its ends DP devices, and a
   device stops being one when its last non-social link goes: the DeepPrivacy
   rules hold at every step, and the topology stays connected.
3. *Trust region.*  A fitted predictor is only as good as the runs it was
   fitted on.  A move is taken only if no feature of the predictor (oriented
   so that larger is worse: slower mixing, more noise, more heterogeneity)
   ends up worse than the worst of the reference designs (NDLF, DLFDP, ERG,
   AutoTag), the kind of topologies such corpora are made of.  This keeps the
   search from, say, a path graph whose mixing no run ever measured.

The result is never predicted slower than any reference design: they are
starts, and a move is taken only when it lowers the predicted time.  (Except for a
workload the predictor cannot vouch for DP devices at: see ``workload`` in
:func:`optimize`; the search then starts from and moves among topologies without them.
And except for NDLF kept over a reference predicted faster than it by less than the NDLF
margin: see *NDLF unless clearly faster*.)

*Mixing weights* (``mixing``). The search ranks topologies with Lazy-Metropolis weights,
and other weights may reorder them: a sparser topology often gains more from better
weights than a denser one. So the chosen weights are tried on the searched design and on
the next best distinct candidates (the other searches' results and the starts, by their
predicted time with Lazy-Metropolis weights), :data:`MIXING_CANDIDATES` in all, and the
one predicted fastest with them is the design; each keeps its weights only if predicted
no slower than without them, and another candidate replaces the searched design only
with its weights kept and predicted faster (``stats["mixing"]``: ``from`` names it,
``candidates_weighed`` says how many were, ``candidate_times`` gives their times). On
Marfoq's Gaia (11 silos; epsilon 0.5, target 0.92) the searched design was 4.65 s with
fastest-mixing weights and the sixth-best start, NDLF pruned to its links of at most
0.16 s, 4.41 s (the count was set after seeing that it needed nine). Beyond
:data:`MIXING_CANDIDATE_DEVICES` (32) devices one fastest-mixing solve takes seconds to
minutes, so only the searched design gets them there. NDLF (the social graph as it is)
gets the same weights for the NDLF margin.

By default, with a fitted predictor, the weights are Boyd, Diaconis and Xiao's
fastest-mixing weights: in the design benchmark (logistic regression, 69 settings on
each of two sets of networks the predictor never saw) this was the only choice that met
both of the design issue's goals, never more than 2 % slower than NDLF and at least 1.5x
faster on skewed data (1.53x and 1.50x), while Lazy-Metropolis weights gave 1.13-1.16x
with 7-12 settings slower and Metropolis-Hastings 1.46-1.48x with 2-3 slower
(``python analyses/design_benchmark.py``).  Most of that gain is the weights': NDLF with
fastest-mixing weights and no search is as fast (1.55x and 1.50x).  The MLP does not gain
from them: with its own predictor (``predictor="mlp"``, fitted on MLP runs) fastest-mixing
weights left ``optimize`` more than 2 % slower than NDLF in 21 and 26 of 69 settings (7
and 11 measurably), the paper's weights with ``ndlf_margin`` 1.12 in 0 and 3 (0 and 1), so
for a model that learns as slowly as the MLP the default is the paper's Lazy-Metropolis
weights (docs/tutorial/design.md).  Which model is which is decided by a measurement, the
model's probe rounds, not by its name (:mod:`topokit.design.trust`): a model never measured
gets the Lazy-Metropolis weights and their margin, the choices never slower for neural
networks.  Eq. (15) models Lazy-Metropolis gossip only, so with it the
weights stay the paper's too.

*NDLF unless clearly faster* (``ndlf_margin``). A predictor's errors are a few per cent:
on IID data the search's gains over the social graph are often that small, and training
then shows them as losses. When neither the searched design nor any reference design is
predicted ``ndlf_margin`` times faster than NDLF (each with the design's mixing
weights), NDLF is the result. The defaults with a fitted predictor, 1.0 for
fastest-mixing weights, 1.02 for Metropolis-Hastings and 1.12 for Lazy-Metropolis (1.0
with eq. (15), the paper's model optimised as it is), were chosen on the design
benchmark's networks of seeds 100-103 (the fewest settings more than 2 % slower than
NDLF, ties to the smaller margin) and judged on those of seeds 200-203, which they never
saw (``python analyses/ndlf_margin.py --arm ...``): with Lazy-Metropolis weights 12 of
69 settings slower than NDLF by more than 2 % became 3, with Metropolis-Hastings 3
became 1; with fastest-mixing weights none was slower to begin with. A reference design
must clear the margin too: a reference predicted faster than NDLF by less than the
margin is as uncertain a gain as the design's, and does not displace NDLF. (With margin
1.0, as for fastest-mixing weights and eq. (15), this is the rule that NDLF gives way to
any reference predicted faster.) On held-out networks of the unseen-workload benchmark
(``python -m analyses.workload_unseen --held-out``) five of six designs more than 2 %
slower than NDLF, for two MLPs topokit does not ship, had been predicted less than the
margin faster and had replaced NDLF only because a reference was predicted a little
faster than it.

*The budget cannot decide between two noiseless designs.*  When the searched design has
no DP device, neither it nor NDLF adds noise: their runs are the same at every epsilon.
A predictor fitted across workloads still predicts them differently at different noise
multipliers (its coefficients vary with the workload), so the gain that must clear the
margin is the least the predictor gives over the noise multipliers it was fitted on and
the workload's own (:func:`_least_gain_over_noise`; ``stats["ndlf_margin"]``'s
``least_gain_over_noise``): a design must win whatever the noise it does not add.  On
the unseen-workload benchmark's networks (``python -m analyses.workload_unseen``) the
one pruned social graph that was more than 2 % slower than NDLF (1.108x, a 128-unit MLP)
was predicted 1.121x faster at epsilon 16 and 1.07x at epsilon 0.25, the same design.

*A model the predictor has no run of.*  Its measured traits place it among the models
fitted, but what it gains from a topology is then carried over from them
(:func:`~topokit.design.trust.has_runs_of`).  A design with DP devices must clear the
safe weights' margin, 1.12; one without DP devices that prunes NDLF's links, and so
gains only by the better mixing the predictor carries over, must clear
:data:`~topokit.design.trust.UNRUN_REWIRING_MARGIN` (1.4; its note gives the
measurement).  NDLF with the design's weights is kept otherwise; a calibration on the
model's own runs lifts both.

4. *What strangers learn* (``max_stranger_mu``).  Partial DP protects a
   device against its direct neighbours only; its value reaches strangers
   through the gossip.  With a bound, a topology is admissible only when
   :func:`topokit.privacy_audit` finds no stranger pair exposed, and every DP
   device then adds the least noise z* that brings every stranger pair's mu
   within the bound (:mod:`topokit.audit.stranger_bound`: mu scales as
   1 / z); the predicted time counts that noise.  The search may then also
   make a device DP without giving it a non-social link (noise that shields
   its neighbours' values from strangers), and the starts include NDLF and
   its pruned versions with every device DP.  A move is audited only when it
   lowers the predicted time at the base noise z_0 (more noise never makes
   the predictor's training faster), so the audits stay few.  The result is
   never predicted slower than a reference design that meets the bound, each
   at its own z*.
5. *Per-device noise* (``per_device_noise=True``, under a bound).  z* is what
   the worst stranger pair needs; the other pairs may need less of some
   devices' noise.  After the design and its z* are chosen, each DP device's noise is
   lowered alone, towards z_0, as far as the bound allows with the other
   devices' levels fixed (bisection, one audit per test; in the gossip model more
   noise on one device never raises a stranger's mu), devices in the order of the predicted
   time with that device alone at z_0 (fastest first; ties by node order), and
   a lower level is kept only if the predicted time falls.  The final levels
   are audited once more: the bound is claimed only as audited.  Deterministic
   (no seed involved), and never predicted slower than the common z*.  At z*
   the worst stranger pair is at the bound, so only devices whose noise does
   not reach its view can go lower: with long audits (tens of rounds, every
   device's noise reaching every view) this rarely finds any, at about one
   audit per DP device; while the design is predicted never to reach the
   target, lower levels are credited by the predictor's chance of reaching it
   and kept only if it then does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import csr_matrix

from .._checks import check_choice, check_int
from .._jobs import worker_count
from .._random import SeedLike, int_seed, keyed_seed
from ..audit import AUDIT_MODELS  # a stranger bound's audit models
from ..audit.core import check_audit_rounds
from ..audit.stranger_bound import (
    DeviceNoise,
    NoiseAudit,
    NoiseRequirement,
    StrangerBound,
    required_noise_of_arrays,
)
from ..errors import InvalidInputError
from ..kernels.unchecked import connected_unchecked
from ..network.core import Network, Topology
from ..network.quantities import adjacency_matrix as _link_matrix
from ._autotag import autotag
from .baselines import dlfdp, erg, ndlf
from .features import FeatureSettings, TopologyFeatures, check_class_counts, features_of_arrays
from .metrics import DEFAULT_AUDIT_ROUNDS, evaluate
from .noise import (
    DEFAULT_DELTA,
    DesignNoise,
    decided_noise,
    dp_in_node_order,
    untold_source,
)
from .predictor import GlobalIteratePredictor
from .result import Candidate, Design
from .time_predictor import (
    PREDICTOR_NAMES,
    TrainingTimePredictor,
    load_predictor,
    predict_topology,
    predictor_at_workload,
    predictor_within_fit,
    shipped_predictor_for,
    warn_outside,
    workload_clamps,
    workload_outside,
)
from .trust import (
    SAFE_MIXING,
    UNRUN_REWIRING_MARGIN,
    has_runs_of,
    measured_probe_rounds,
    mixing_for_trait,
    warn_unplaced,
)
from .workload import Workload, check_workload

__all__ = ["optimize", "optimize_with_references", "default_mixing", "check_ndlf_margin",
           "OptimizeOptions", "pruned_social", "MIXING", "MAX_AUTOTAG_DEVICES"]

#: The mixing weights :func:`optimize` can give its design.
MIXING = ("lazy-metropolis", "metropolis", "fastest")

#: The designs :func:`optimize` is never predicted slower than; they also bound its trust region.
REFERENCE_DESIGNS = ("ndlf", "dlfdp", "erg", "autotag")
#: The mixing weights of :func:`optimize`'s design with a fitted predictor, for a model
#: measured to learn fast (module notes; :mod:`topokit.design.trust`).
DEFAULT_MIXING = "fastest"
#: How many times faster than NDLF (with the same mixing weights) a design must be predicted
#: to replace it, with a fitted predictor, per mixing (module notes: chosen by
#: analyses/ndlf_margin.py on benchmark networks the default predictor never saw).
DEFAULT_NDLF_MARGINS = {"lazy-metropolis": 1.12, "metropolis": 1.02, "fastest": 1.0}

#: Up to this many devices AutoTag's design and snapshots are starts (beyond, exact
#: AutoTag takes minutes to hours; see the Notes of :func:`topokit.autotag`), and the
#: local search runs to a local optimum by default.
MAX_AUTOTAG_DEVICES = 128

#: How many candidates (the searched design, then the other searches' results and the
#: starts, by predicted time with Lazy-Metropolis weights) the mixing weights are tried
#: on; the one predicted fastest with them is the design (module notes, *Mixing weights*).
MIXING_CANDIDATES = 12
#: Up to this many devices :data:`MIXING_CANDIDATES` get fastest-mixing weights; beyond,
#: the searched design alone.  One solve takes about 0.03 s at 11 devices, 0.4 s at 24,
#: 0.5 s at 32 and 5 s at 48 (the SDP's cost grows like n^6), minutes at 1,000.
MIXING_CANDIDATE_DEVICES = 32

#: The default evaluation budget of each search beyond :data:`MAX_AUTOTAG_DEVICES`
#: devices: one pass over the O(|V|^2) moves would take hours there (a topology of
#: 1,000 devices takes about 0.6 s to predict on one core).
LARGE_NETWORK_EVALUATIONS = 200

# A move must lower the predicted time by more than this fraction: float noise is no gain.
_RTOL = 1e-9
# Eq. (15): breaks ties of a fitted predictor, which may not tell two topologies apart
# (with IID data and no DP device the default one predicts the same rounds for all).
_PAPER = GlobalIteratePredictor()


class _State(NamedTuple):
    """A topology in the search: its links and the DP devices beyond the non-social ends."""

    adjacency: NDArray[np.bool_]
    extra_dp: NDArray[np.bool_]  # all False unless the search has a stranger bound


class _Score(NamedTuple):
    """One topology as the search sees it."""

    time: float  # predicted rounds x L; inf if never reaching the target
    rounds: float
    local_iterate: float
    features: NDArray[np.float64]  # the predictor's features, oriented (larger is worse)
    paper_time: float  # eq. (15)'s G'(H, phi) x L: breaks ties in ``time``
    noise: NoiseRequirement | None = None  # under a stranger bound: the noise it needs
    device_noise: tuple[float, ...] | None = None  # per-device z (node order) once refined
    reach: float = 1.0  # the predictor's P(reaching the target): step 5's credit at time inf

    def better_than(self, other: _Score) -> bool:
        """Lower predicted time; at a tie (within _RTOL), lower eq. (15) time."""
        if self.time < other.time * (1.0 - _RTOL):
            return True
        tie = self.time == other.time or abs(self.time - other.time) <= _RTOL * other.time
        return tie and self.paper_time < other.paper_time * (1.0 - _RTOL)


@dataclass(frozen=True)
class _Objective:
    """Predicted training time of topologies (adjacency matrices) on one network."""

    net: Network
    predictor: GlobalIteratePredictor | TrainingTimePredictor
    class_counts: NDArray[np.float64] | None
    link_times: NDArray[np.float64]  # inf on the diagonal and where there is no link
    social: NDArray[np.bool_]
    settings: FeatureSettings  # the predictor's (eq. 15 uses H and phi only)
    bound: StrangerBound | None = None
    allow_dp: bool = True  # False: no move adds a DP device (a workload the fit cannot vouch for)

    def dp_mask(self, state: _State) -> NDArray[np.bool_]:
        return (state.adjacency & ~self.social).any(axis=1) | state.extra_dp

    def topology(self, state: _State) -> Topology:
        nodes = self.net.nodes
        rows, cols = np.nonzero(np.triu(state.adjacency, 1))
        return Topology([(nodes[i], nodes[j]) for i, j in zip(rows, cols, strict=True)],
                        [nodes[i] for i in np.flatnonzero(self.dp_mask(state))])

    def state(self, topology: Topology) -> _State:
        adjacency = _link_matrix(self.net, topology) > 0
        dp = np.zeros(self.net.n_devices, dtype=bool)
        dp[[self.net.index[node] for node in topology.dp_devices]] = True
        return _State(adjacency, dp & ~(adjacency & ~self.social).any(axis=1))

    def features(self, state: _State, settings: FeatureSettings | None = None,
                 weights: NDArray[np.float64] | None = None) -> TopologyFeatures:
        return features_of_arrays(self.net, state.adjacency.astype(np.float64),
                                  self.dp_mask(state), self.class_counts,
                                  settings or self.settings, social=self.social,
                                  link_times=self.link_times, weights=weights)

    def admissible_score(self, state: _State) -> _Score | None:
        """The score with the noise the stranger bound needs; None if no noise is enough."""
        if self.bound is None:
            return self.score(state)
        need = required_noise_of_arrays(state.adjacency.astype(np.float64),
                                        self.dp_mask(state), self.social, self.bound)
        if not need.feasible:
            return None
        settings = replace(self.settings, noise_multiplier=need.noise_multiplier)
        return self.score(state, settings)._replace(noise=need)

    def score(self, state: _State, settings: FeatureSettings | None = None,
              weights: NDArray[np.float64] | None = None) -> _Score:
        return self.score_features(self.features(state, settings, weights))

    def score_features(self, features: TopologyFeatures) -> _Score:
        if isinstance(self.predictor, GlobalIteratePredictor):
            rounds = self.predictor.predict_one(features.hitting_time, features.phi)
            oriented = np.array([features.hitting_time, features.phi])
        else:
            rounds, oriented = self.predictor.rounds_and_oriented(features)
        iterate = features.local_iterate
        paper_rounds = _PAPER.predict_one(features.hitting_time, features.phi)
        return _Score(float(rounds) * iterate, float(rounds), iterate, oriented,
                      float(paper_rounds) * iterate)


def _connected(adjacency: NDArray[np.bool_]) -> bool:
    # The compiled search on the dense links: building a sparse matrix of a 1,000-device
    # topology at every move that removes links cost 27 ms, the search itself 1-3 ms.
    return connected_unchecked(adjacency.astype(np.float64))


def _every_device_dp(net: Network, starts: dict[str, Topology]) -> dict[str, Topology]:
    """NDLF and its pruned versions with every device DP: starts under a stranger bound."""
    return {f"{name}+dp": Topology(topology.edges, net.nodes)
            for name, topology in starts.items() if name.startswith("ndlf")}


def pruned_social(net: Network) -> dict[str, Topology]:
    """NDLF keeping only its links of at most t seconds, for every t that keeps it connected.

    Starts of :func:`optimize` (a shorter local iterate L for slower mixing) and
    topologies of the predictor corpus; named by t.  Empty when dropping the slowest
    social link already disconnects the social graph.

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("siot32")
    >>> pruned = pruned_social(net)
    >>> all(t.n_links < net.social.number_of_edges() for t in pruned.values())
    True
    """
    social = net.social_adjacency > 0
    times = np.where(social, net.link_times, np.inf)
    pruned = {}
    for limit in np.unique(times[np.isfinite(times)])[:-1]:
        adjacency = social & (times <= limit)
        if _connected(adjacency):
            rows, cols = np.nonzero(np.triu(adjacency, 1))
            pruned[f"ndlf<={limit:.6g}s"] = Topology(
                [(net.nodes[i], net.nodes[j]) for i, j in zip(rows, cols, strict=True)])
    return pruned


def _starts(net: Network, seed: int, with_autotag: bool, workers: int,
            bounded: bool = False) -> tuple[dict[str, Topology], Design | None]:
    """The reference designs first (in :data:`REFERENCE_DESIGNS` order), then the other starts.

    Also returns AutoTag's design (None when it was not run).
    """
    starts = {"ndlf": ndlf(net), "dlfdp": dlfdp(net)}
    design = autotag(net, n_jobs=workers) if with_autotag else None
    links = design.topology.n_links if design is not None else starts["ndlf"].n_links
    try:
        starts["erg"] = erg(net, links, seed=keyed_seed(seed, 0))
    except InvalidInputError:
        pass  # no connected random graph with that many links: ERG is no reference here
    if design is not None:
        starts["autotag"] = design.topology
        for candidate in design.candidates:
            if candidate.metrics.connected:
                starts[f"autotag-n{candidate.n}"] = candidate.topology
    starts.update(pruned_social(net))
    if bounded:
        starts.update(_every_device_dp(net, starts))
    return starts, design


def _bound(scores: dict[str, _Score]) -> NDArray[np.float64]:
    """The trust region: the worst value of each oriented feature over the reference designs."""
    features = np.array([scores[name].features for name in REFERENCE_DESIGNS if name in scores])
    worst = features.max(axis=0)
    return worst + 1e-12 * np.maximum(1.0, np.abs(worst))


_DROP_DP, _MAKE_DP = -1, -2


def _moves(objective: _Objective, rng: np.random.Generator) -> NDArray[np.int64]:
    """Every move in a seeded random order: (i, j) toggles link ij, (i, -1) drops DP device i,
    and under a stranger bound (i, -2) makes device i DP."""
    finite = np.isfinite(objective.link_times)
    rows, cols = np.nonzero(np.triu(finite, 1))
    devices = np.arange(objective.net.n_devices)
    kinds = (_DROP_DP,) if objective.bound is None else (_DROP_DP, _MAKE_DP)
    moves = np.concatenate([np.column_stack([rows, cols])] + [
        np.column_stack([devices, np.full_like(devices, kind)]) for kind in kinds])
    return moves[rng.permutation(len(moves))]


def _apply(objective: _Objective, state: _State, move: NDArray[np.int64]) -> _State | None:
    """The state after ``move``, or None if the move changes nothing or disconnects."""
    i, j = int(move[0]), int(move[1])
    adjacency, extra = state
    if j == _MAKE_DP:
        if objective.dp_mask(state)[i] or not objective.allow_dp:
            return None
        extra = extra.copy()
        extra[i] = True
        return _State(adjacency, extra)
    changed = adjacency.copy()
    if j >= 0:
        changed[i, j] = changed[j, i] = not adjacency[i, j]
        if changed[i, j] and not (objective.allow_dp or objective.social[i, j]):
            return None  # a stranger link would make its ends DP devices
        if changed[i, j]:  # adding a link never disconnects
            return _State(changed, extra)
    else:
        non_social = adjacency[i] & ~objective.social[i]
        if not (non_social.any() or extra[i]):
            return None
        changed[i, non_social] = changed[non_social, i] = False
        if extra[i]:
            extra = extra.copy()
            extra[i] = False
    return _State(changed, extra) if _connected(changed) else None


@dataclass
class _Search:
    """First-improvement local search from one start (module docstring, step 2)."""

    objective: _Objective
    bound: NDArray[np.float64]
    moves: NDArray[np.int64]
    evaluations: int = 0
    accepted: int = 0
    passes: int = 0
    audits: int = 0

    def improves(self, score: _Score, current: _Score) -> bool:
        return score.better_than(current) and bool(np.all(score.features <= self.bound))

    def admissible_improvement(self, state: _State, current: _Score) -> _Score | None:
        """The move's score if it improves and meets the stranger bound (module notes, 4)."""
        score = self.objective.score(state)  # at the base noise: no more noise is faster
        if not self.improves(score, current):
            return None
        if self.objective.bound is None:
            return score
        self.audits += 1
        score = self.objective.admissible_score(state)
        return score if score is not None and self.improves(score, current) else None

    def one_pass(self, state: _State, current: _Score, budget: int):
        """Try every move once, taking each that improves; returns (state, score, improved)."""
        improved = False
        for move in self.moves:
            if self.evaluations >= budget:
                break
            changed = _apply(self.objective, state, move)
            if changed is None:
                continue
            self.evaluations += 1
            score = self.admissible_improvement(changed, current)
            if score is not None:
                state, current, improved = changed, score, True
                self.accepted += 1
        self.passes += 1
        return state, current, improved

    def run(self, state: _State, current: _Score, budget: int):
        improved = True
        while improved and self.evaluations < budget:
            state, current, improved = self.one_pass(state, current, budget)
        return state, current


# ---------------------------------------------------------------------------------------------
# The public function
# ---------------------------------------------------------------------------------------------

def _resolve_predictor(predictor: Any) -> tuple[Any, dict[str, Any]]:
    """The predictor object and what :attr:`Design.predictor` records of it."""
    given = "default" if predictor is None else predictor
    model = load_predictor(given)
    if isinstance(model, GlobalIteratePredictor) and model.use_noise_variance:
        raise InvalidInputError(
            "optimize cannot use an eq. (15) predictor fitted with the noise variance U (U is "
            "measured in training, not known at design time); use a shipped predictor or a "
            "TrainingTimePredictor"
        )
    name = given.strip().lower() if isinstance(given, str) and given.strip().lower() in \
        PREDICTOR_NAMES else str(given) if isinstance(given, (str, Path)) else "object"
    return model, {"name": name, "record": model.to_dict()}


def default_mixing(predictor: Any, workload: Workload | None = None) -> str:
    """The mixing weights :func:`optimize` gives its design when ``mixing`` is None.

    Lazy-Metropolis for eq. (15), which was fitted on and only models that gossip.
    For a fitted predictor they follow the measured probe rounds of the model
    (:func:`~topokit.design.trust.measured_probe_rounds`: the workload's, the
    calibration runs', or topokit's measurement of its own models), never its
    name: fastest-mixing weights (:data:`DEFAULT_MIXING`) for a model that learns
    as fast as those they were measured never slower for, else, and for a model
    never measured, the safe Lazy-Metropolis weights
    (:func:`~topokit.design.trust.mixing_for_trait`; module notes).
    ``predictor`` is what :func:`optimize` takes: a name, a path, a predictor or
    None (the default).

    >>> [default_mixing(name) for name in ("default", "mlp", "paper")]
    ['fastest', 'lazy-metropolis', 'lazy-metropolis']
    >>> default_mixing("workload", Workload(model="mine", probe_rounds=34))
    'lazy-metropolis'
    """
    predictor = load_predictor("default" if predictor is None else predictor)
    if isinstance(predictor, GlobalIteratePredictor):
        return "lazy-metropolis"
    return mixing_for_trait(measured_probe_rounds(predictor, workload).probe_rounds)


def _check_options(net: Any, n_starts: Any, max_evaluations: Any, trust_region: Any,
                   progress: Any) -> None:
    if not isinstance(net, Network):
        raise InvalidInputError(f"net must be a topokit Network; got {type(net).__name__}")
    net.require_connected()
    check_int(n_starts, "n_starts", low=1)
    if max_evaluations is not None:
        check_int(max_evaluations, "max_evaluations", low=0)
    if not isinstance(trust_region, (bool, np.bool_)):
        raise InvalidInputError(f"trust_region must be True or False; got {trust_region!r}")
    if progress is not None and not callable(progress):
        raise InvalidInputError("progress must be a callable progress(done, total) or None")


def _objective(net: Network, model: Any, class_counts: ArrayLike | None,
               bound: StrangerBound | None = None, allow_dp: bool = True) -> _Objective:
    if class_counts is None:
        class_counts = getattr(net, "class_counts", None)
    counts = (None if class_counts is None
              else check_class_counts(class_counts, net.n_devices, nodes=net.nodes))
    settings = (FeatureSettings() if isinstance(model, GlobalIteratePredictor)
                else model.feature_settings)
    return _Objective(net=net, predictor=model, class_counts=counts,
                      link_times=np.where(np.eye(net.n_devices, dtype=bool), np.inf,
                                          net.link_times),
                      social=net.social_adjacency > 0, settings=settings, bound=bound,
                      allow_dp=allow_dp)


def _ranked_starts(objective: _Objective, starts: dict[str, Topology]) -> list[tuple[str, Any]]:
    """(name, score) of every distinct admissible start, fastest first (ties: the order of
    ``starts``)."""
    seen, scored = set(), []
    for name, topology in starts.items():
        key = (topology.edges, topology.dp_devices)
        if key not in seen:
            seen.add(key)
            score = objective.admissible_score(objective.state(topology))
            if score is not None:
                scored.append((name, score))
    order = sorted(range(len(scored)), key=lambda k: (scored[k][1].time,
                                                       scored[k][1].paper_time, k))
    return [scored[k] for k in order]


def _search_from(objective: _Objective, bound: NDArray, start: tuple[str, _Score],
                 topology: Topology, seed: int, key: int, budget: int) -> tuple:
    search = _Search(objective, bound, _moves(objective, np.random.default_rng(
        keyed_seed(seed, 1, key))))
    state, score = search.run(objective.state(topology), start[1], budget)
    return state, score, search


def optimize(
    net: Network,
    *,
    predictor: str | Path | GlobalIteratePredictor | TrainingTimePredictor | None = None,
    class_counts: ArrayLike | None = None,
    seed: SeedLike = None,
    n_jobs: int = 1,
    n_starts: int = 3,
    max_evaluations: int | None = None,
    trust_region: bool = True,
    progress: Callable[[int, int], Any] | None = None,
    max_stranger_mu: float | None = None,
    audit_rounds: int = DEFAULT_AUDIT_ROUNDS,
    mixing: str | None = None,
    audit_model: str = "gossip",
    per_device_noise: bool = True,
    ndlf_margin: float | None = None,
    workload: Workload | None = None,
) -> Design:
    """The topology a training-time predictor says trains fastest, under DeepPrivacy's rules.

    Minimises predicted rounds x L(G_c) (L from eq. 8) over valid topologies:
    every link has a finite delay, a link that is not social joins two DP
    devices (those are the DP devices), and the topology is connected.  See
    the module notes for the search (starts, local search, trust region).

    Parameters
    ----------
    net : Network
        Its social graph must be connected.  Its ``class_counts`` (if any) are
        the data the predictor sees, unless ``class_counts`` is given.
    predictor : "default", "paper", "mlp", path or predictor, optional
        What judges a topology (:func:`topokit.load_predictor`).  Default
        ``"default"``, topokit's fitted :class:`TrainingTimePredictor`, which
        knows DP noise and data heterogeneity and predicts when a topology
        never reaches the target (fitted on logistic-regression runs);
        ``"mlp"`` is the same fitted on MLP runs, for neural networks;
        ``"paper"`` is eq. (15).
    class_counts : array-like of shape (n_devices, n_classes), optional
        Training rows of each class on each device (node order); None: the
        network's, or IID data if it has none.
    seed : int, Generator or None
        Seeds ERG and the order in which moves are tried; the same seed gives
        the same design.
    n_jobs : int, default 1
        Threads for AutoTag and for the searches from different starts.  The
        result does not depend on it.
    n_starts : int, default 3
        The local search runs from this many of the fastest distinct starts.
    max_evaluations : int, optional
        Stop each search after this many predicted topologies.  None: at a
        local optimum (a whole pass over the moves improves nothing) up to
        :data:`MAX_AUTOTAG_DEVICES` devices, else after
        :data:`LARGE_NETWORK_EVALUATIONS`; ``stats["evaluation_budget"]``
        records the budget used.
    trust_region : bool, default True
        Take only moves whose features stay within the worst of the
        reference designs' (module notes, step 3).
    progress : callable, optional
        Called as ``progress(done, total)`` after each search (total = the
        number of searches).
    max_stranger_mu : float > 0, optional
        Bound every stranger pair (i, k), k not a social neighbour of i, to
        mu_ik <= this under :func:`topokit.privacy_audit` (its default threat
        model; linear gossip over ``audit_rounds`` rounds): no stranger pair
        exposed, and every DP device adds the noise multiplier z* the bound
        needs (at least the predictor's), which the predicted time counts
        (module notes, step 4).  Needs a predictor that knows DP noise (a
        :class:`TrainingTimePredictor`, such as ``"default"``).  The audit is in
        units of a common sensitivity: it holds for D-SGD training when every
        device's expected batch min(B, |D_i|) is the same (every device holds at
        least B examples); otherwise audit the run with each device's
        ``TrainingRun.sensitivity`` (``privacy_audit(..., sensitivity=...)``).
    audit_rounds : int >= 1, default 50
        T of that audit.
    audit_model : {"gossip", "dsgd"}, default "gossip"
        The audit's model (:func:`topokit.privacy_audit`): ``"gossip"``, each
        device's one private value averaged over the rounds (the issue's
        model; exact), or ``"dsgd"``, a bounded private contribution every
        round as in D-SGD training (an upper bound on mu that composes over
        the rounds, so it needs far more noise; exact for linear updates, a
        linearisation for real training).  The gossip bound does not bound
        what a stranger learns from D-SGD training.
    mixing : {"lazy-metropolis", "metropolis", "fastest"}, optional
        The mixing weights of the design: the paper's Lazy-Metropolis,
        (non-lazy) Metropolis-Hastings 1 / (1 + max(d_i, d_j)), or Boyd,
        Diaconis and Xiao's fastest-mixing weights
        (:func:`~topokit.design.mixing.fastest_mixing_topology`; links they
        leave unused are dropped).  The searched design and NDLF both get
        them, and ``ndlf_margin`` chooses between the two as weighted (module
        notes).  Other weights are kept when predicted no slower, inside the
        trust region and still within ``max_stranger_mu``;
        ``stats["mixing"]`` says whether they were.  Default: ``"fastest"``
        with a fitted predictor for a model measured to learn fast (module
        notes: in the design benchmark the only setting that met both of the
        design issue's goals for logistic regression), ``"lazy-metropolis"``
        for a model that learns more slowly, such as the MLP (fastest-mixing
        weights made it measurably slower than NDLF in 7-11 of 69 settings),
        for a model never measured, and with eq. (15), which was fitted on and
        only models Lazy-Metropolis gossip (:func:`default_mixing`,
        :mod:`topokit.design.trust`).
    per_device_noise : bool, default True
        Under ``max_stranger_mu``: after the design and its common z* are
        chosen, lower single DP devices' noise below z* (never below the
        predictor's z_0) where the bound still holds and the predicted time
        falls (module notes, step 5); False keeps z* on every DP device.
        Ignored without a bound.
    ndlf_margin : float >= 1, optional
        Keep NDLF (the social graph, no DP device, with the design's mixing
        weights) when it is predicted no slower than any reference design and
        the searched design is predicted less than this many times faster
        (module notes: chosen on one set of benchmark networks, judged on
        another); 1.0 keeps any design predicted faster.  Default, with a
        fitted predictor: 1.0 for fastest-mixing weights, 1.02 for
        Metropolis-Hastings and 1.12 for Lazy-Metropolis (the margins absorb
        the predictor's errors); 1.0 with eq. (15) (``predictor="paper"``
        optimises the paper's model as it is).  A design with DP devices for
        a model the predictor has no run of (its traits measured, but no run
        fitted or calibrated on: :func:`~topokit.design.trust.has_runs_of`)
        must clear at least the Lazy-Metropolis margin, 1.12, and one without
        DP devices whose links are not NDLF's (a pruned social graph) at least
        :data:`~topokit.design.trust.UNRUN_REWIRING_MARGIN`, 1.4.  A reference
        design predicted faster than NDLF displaces it only when predicted
        faster by the margin too: its predicted advantage is as uncertain as
        the design's.  A design without DP devices must clear the margin at
        every noise level a predictor fitted across workloads knows, since
        neither it nor NDLF adds noise (module notes).
        ``stats["ndlf_margin"]`` records the decision, the margin applied, the
        predicted gain (and then ``least_gain_over_noise``), the fastest
        reference's predicted gain over NDLF (``reference_gain``) and NDLF's
        weights.
    workload : Workload, optional
        What the user trains (:class:`~topokit.design.workload.Workload`: model,
        epsilon and delta per round, clipping norm, batch size, local steps,
        target, horizon, the model's ceiling and probe rounds).  With
        ``predictor`` None it is judged by the shipped ``"workload"`` predictor
        (:func:`~topokit.design.time_predictor.shipped_predictor_for`: fitted
        across epsilon 0.25-8, targets near and far from the ceiling, and
        models told apart by their measured probe rounds).  The search runs at
        the workload's noise, target and trait
        (:func:`~topokit.design.time_predictor.predictor_at_workload`); a
        feature outside the ranges fitted, or unknown, is clamped to the
        nearest value the predictor knows and the rest of the workload is kept
        (:func:`~topokit.design.time_predictor.predictor_within_fit`: graded
        trust), and a :class:`~topokit.errors.TopokitWarning` says so.  The
        horizon (``rounds``) is a setting: a shorter one only moves the
        cut-off past which a topology never reaches the target.  Where a
        feature lies beyond the worse end of what was fitted (more noise, a
        target closer to the ceiling, a model slower to learn than any run) or
        is unknown, the search adds no DP device (no run vouches for one
        there): the design is then NDLF or a pruned social graph, and may be
        predicted slower than a reference design with DP devices.  The mixing weights and
        the NDLF margin follow the model's measured probe rounds, never its
        name (:func:`default_mixing`, :mod:`topokit.design.trust`); a model
        never measured gets the safe choices and a warning that says how to
        measure it.  ``stats["workload"]`` records the workload, the reasons,
        what was clamped (``clamped``: feature -> given and used value),
        ``decided_by`` (the probe rounds, their source, the weights and the
        margin) and the design's predicted rounds at the workload's settings.
        A predictor fitted at one workload (``"default"``, ``"mlp"``, named)
        designs at its own settings where the workload lies outside them.
        None (default): the predictor's own settings, as before workloads.

    Returns
    -------
    Design
        ``topology`` (the best found), ``metrics`` (:func:`topokit.evaluate`
        under the predictor: ``pseudo_time`` is the predicted time),
        ``candidates`` (AutoTag's best snapshot per budget, judged by the same
        predictor; empty when AutoTag was not run), ``n`` (the number of DP
        devices), ``predictor`` (its name and full record) and ``stats``
        (``start``: where the best search began; ``start_times``: the
        predicted time of every reference design; evaluations, moves taken;
        with ``max_stranger_mu``, ``stranger_bound``: the bound, T, the common
        noise multiplier z* (``noise_multiplier``), each DP device's own z
        (``noise_multipliers``, device -> z: z* unless lowered; what to train
        with, as ``DPConfig(noise_multiplier=...)``), ``devices_lowered``, the
        worst stranger mu audited at those levels, the audits run (of them
        ``noise_audits`` for the per-device levels) and the references that no
        noise makes meet the bound).  ``metrics`` then predict with those levels.

    Raises
    ------
    DisconnectedGraphError
        If the social graph is not connected.
    InvalidInputError
        A bad option, class counts that do not fit the devices, a stranger
        bound with an eq. (15) predictor (it does not see noise), or a bound
        that no start meets (every one leaves a stranger pair exposed).

    Notes
    -----
    While it runs, BLAS is limited to one thread (threadpoolctl).  AutoTag's
    design and snapshots are starts up to
    :data:`MAX_AUTOTAG_DEVICES` devices; beyond, ERG takes NDLF's link count.

    Examples
    --------
    >>> from topokit import load_example
    >>> net = load_example("toy")
    >>> design = optimize(net, seed=0)
    >>> times = design.stats["start_times"]
    >>> all(design.metrics.pseudo_time <= times[name] for name in REFERENCE_DESIGNS)
    True

    No stranger may learn more than mu = 0.2 (the paper's Fig. 2(b) network):

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     bounded = optimize(net, seed=0, max_stranger_mu=0.2)
    >>> bounded.stats["stranger_bound"]["stranger_mu_max"] <= 0.2 * (1 + 1e-12)
    True
    >>> sorted(bounded.topology.dp_devices) == sorted(net.nodes)  # everyone adds noise
    True

    On six devices, training with that much noise is predicted never to reach
    the target, and optimize warns:

    >>> bounded.metrics.pseudo_time, len(caught)
    (inf, 1)
    >>> from topokit import privacy_audit
    >>> z = bounded.stats["stranger_bound"]["noise_multiplier"]
    >>> audit = privacy_audit(net, bounded.topology, rounds=50, noise_multiplier=z)
    >>> audit.summary()["exposed_stranger_pairs"], audit.summary()["stranger_mu_max"] <= 0.2 + 1e-12
    (0, True)

    Each DP device's own level (step 5) meets the bound too, audited as chosen:

    >>> levels = bounded.stats["stranger_bound"]["noise_multipliers"]
    >>> all(z_j <= z for z_j in levels.values())
    True
    >>> privacy_audit(net, bounded.topology, rounds=50,
    ...               noise_multiplier=levels).summary()["stranger_mu_max"] <= 0.2 + 1e-12
    True
    """
    options = {name: value for name, value in locals().items() if name != "net"}
    design, _ = optimize_with_references(net, **options)
    return design


def optimize_with_references(net: Network, **options: Any) -> tuple[Design, dict[str, Topology]]:
    """:func:`optimize`, and the reference designs it started from (name -> Topology).

    For reports that show the design next to NDLF, DLFDP, ERG and AutoTag
    (``topokit design``) without building them twice.  ``options`` are
    :func:`optimize`'s keywords (:class:`OptimizeOptions`).
    """
    from .._blas import one_blas_thread

    checked = OptimizeOptions.of(options)
    # The search factorises thousands of small matrices: multithreaded BLAS only adds
    # overhead there (and contention with the searches' own threads).
    with one_blas_thread():
        return _optimize(net, checked)


@dataclass(frozen=True)
class OptimizeOptions:
    """The keywords of :func:`optimize`, declared once (their meaning is in its docstring).

    :func:`optimize` and :func:`optimize_with_references` build one with
    :meth:`of`; the search reads its fields.
    """

    predictor: Any = None
    class_counts: ArrayLike | None = None
    seed: SeedLike = None
    n_jobs: int = 1
    n_starts: int = 3
    max_evaluations: int | None = None
    trust_region: bool = True
    progress: Callable[[int, int], Any] | None = None
    max_stranger_mu: float | None = None
    audit_rounds: int = DEFAULT_AUDIT_ROUNDS
    mixing: str | None = None
    audit_model: str = "gossip"
    per_device_noise: bool = True
    ndlf_margin: float | None = None
    workload: Workload | None = None

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "workload", check_workload(self.workload))
        if self.ndlf_margin is not None:
            set_(self, "ndlf_margin", check_ndlf_margin(self.ndlf_margin))
        if not isinstance(self.per_device_noise, (bool, np.bool_)):
            raise InvalidInputError(
                f"per_device_noise must be True or False; got {self.per_device_noise!r}")
        if self.mixing is not None:
            set_(self, "mixing", check_choice(self.mixing, "mixing", MIXING))

    @classmethod
    def of(cls, options: dict[str, Any]) -> OptimizeOptions:
        """The options of ``options`` (keyword -> value); an unknown keyword is one line."""
        known = [f.name for f in fields(cls)]
        unknown = [name for name in options if name not in known]
        if unknown:
            raise InvalidInputError(f"optimize has no option {unknown[0]!r}; its options are "
                                    f"{', '.join(known)}")
        return cls(**options)


def _optimize(net: Network, options: OptimizeOptions):
    _check_options(net, options.n_starts, options.max_evaluations, options.trust_region,
                   options.progress)
    workers = worker_count(options.n_jobs)
    told = _predictor_at(options.predictor, options.workload)
    model, description = told.model, told.description
    decided = _decided_by(model, options)
    mixing, ndlf_margin = decided["mixing"], decided["ndlf_margin"]
    objective = _objective(net, model, options.class_counts,
                           _stranger_bound(model, options.max_stranger_mu, options.audit_rounds,
                                           options.audit_model, told.noise_multiplier),
                           allow_dp=told.dp_trusted or options.max_stranger_mu is not None)
    started = time.perf_counter()
    base_seed = int_seed(options.seed)
    starts, reference = _starts(net, base_seed, net.n_devices <= MAX_AUTOTAG_DEVICES, workers,
                                bounded=objective.bound is not None)
    ranked = _ranked_starts(objective, starts)
    if not ranked:
        raise InvalidInputError(
            f"no design meets max_stranger_mu={options.max_stranger_mu}: every start, NDLF "
            "with every device DP included, leaves a stranger pair exposed to the gossip over "
            f"{options.audit_rounds} rounds; audit one with topokit.privacy_audit to see which")
    scores = dict(ranked)
    bound = (_bound(_reference_scores(objective, scores, starts)) if options.trust_region
             else np.full(len(ranked[0][1].features), np.inf))
    chosen = [entry for entry in ranked
              if objective.allow_dp or not starts[entry[0]].dp_devices][:options.n_starts]
    budget = _budget(options.max_evaluations, net.n_devices)
    results = _run_searches(objective, bound, chosen, starts, base_seed, budget, workers,
                            options.progress)
    best = min(range(len(results)), key=lambda k: (results[k][1].time, results[k][1].paper_time, k))
    stats = _stats(scores, chosen, results, best, started)
    stats["evaluation_budget"] = None if budget == _UNLIMITED else budget
    searched = _Weighted(objective.topology(results[best][0]), results[best][1], None)
    social = (_Weighted(starts["ndlf"], scores["ndlf"], None)
              if "ndlf" in scores else None)  # not a start, or it breaks a stranger bound
    weightings = 0  # each audits the weighted gossip under a stranger bound
    if mixing != "lazy-metropolis":
        candidates = _mixing_candidates(objective, results, chosen, best, ranked, starts,
                                        mixing)
        searched, weighed = _weighted_best(objective, bound, candidates, mixing, base_seed)
        weightings = len(weighed)
        if social is not None and _key(social.topology) in weighed:
            social = weighed[_key(social.topology)]  # weighed among the candidates
        elif social is not None:  # starts from the design's weights, if kept
            social = _mixing_weights(objective, bound, social, mixing, base_seed,
                                     warm_start=searched.topology)
            weightings += 1
    margin = _margin_for(searched, ndlf_margin, model, options, social)
    result, stats["ndlf_margin"] = _ndlf_unless_clearly_faster(
        scores, searched, social, margin, _least_gain_over_noise(objective, searched, social),
        dp_trusted=objective.allow_dp,
        references=[name for name in REFERENCE_DESIGNS
                    if name in starts and (objective.allow_dp or not starts[name].dp_devices)])
    topology, score = result.topology, result.score
    if result.mixing is not None:
        stats["mixing"] = _mixing_record(result, searched)
    if objective.bound is not None:  # of the final design: its weights change the audit
        stats["stranger_bound"] = _bound_stats(objective, score.noise, results, starts, scores,
                                               extra_audits=weightings)
        score = _refined_noise(objective, bound, topology, score, stats["stranger_bound"],
                               options.per_device_noise)
    if options.workload is not None:
        stats["workload"] = {**_workload_record(net, model, topology, options.workload,
                                                options.class_counts, told),
                             "decided_by": decided}
    noise = _noise_record(model, options.workload, topology, net, stats.get("stranger_bound"))
    design = _design(objective, description, topology, score, reference, stats, noise)
    if not np.isfinite(design.metrics.pseudo_time):
        _warn_never_reached(objective)
    if options.workload is not None and objective.bound is None:
        _warn_exposed(design)
    return design, {name: starts[name] for name in REFERENCE_DESIGNS if name in starts}


def _margin_for(searched: _Weighted, margin: float, model: Any,
                options: OptimizeOptions, ndlf: _Weighted | None = None) -> float:
    """The NDLF margin the searched design must clear: the default one, raised when the
    predictor has no run of the workload's model (:func:`~topokit.design.trust.has_runs_of`:
    its traits alone place it) to the safe weights' margin (:data:`DEFAULT_NDLF_MARGINS`)
    for a design with DP devices, whose noise no run of the model vouches for, and to
    :data:`~topokit.design.trust.UNRUN_REWIRING_MARGIN` for a design without any that
    changes NDLF's links, whose gain is only the better mixing the predictor carries over
    from other models.  A margin the user gives, and eq. (15), are kept as they are."""
    if (options.ndlf_margin is not None or isinstance(model, GlobalIteratePredictor)
            or has_runs_of(model, options.workload)):
        return margin
    if searched.topology.dp_devices:
        return max(margin, DEFAULT_NDLF_MARGINS[SAFE_MIXING])
    if ndlf is not None and set(searched.topology.edges) != set(ndlf.topology.edges):
        return max(margin, UNRUN_REWIRING_MARGIN)
    return margin


def _decided_by(model: Any, options: OptimizeOptions) -> dict[str, Any]:
    """The mixing weights and NDLF margin of the search (the options', else the defaults
    the model's measured probe rounds give), with that measurement and its source."""
    mixing = options.mixing if options.mixing is not None \
        else default_mixing(model, options.workload)
    margin = options.ndlf_margin
    if margin is None:
        margin = 1.0 if isinstance(model, GlobalIteratePredictor) \
            else DEFAULT_NDLF_MARGINS[mixing]
    trait = measured_probe_rounds(model, options.workload)
    return {"probe_rounds": trait.probe_rounds, "source": trait.source, "mixing": mixing,
            "ndlf_margin": margin}


class _Told(NamedTuple):
    """The predictor the search runs with and how it took the workload."""

    model: Any
    description: dict[str, Any]
    outside: tuple[str, ...] = ()  # workload_outside's reasons
    clamps: dict[str, Any] = {}  # workload_clamps': the features predicted at other values
    at_fitted_settings: bool = False  # a one-workload predictor outside: its own settings
    noise_multiplier: float | None = None  # the DP devices' z the workload trains with

    @property
    def dp_trusted(self) -> bool:
        """Whether the fit vouches for DP devices at this workload: no workload feature is
        unknown or beyond the worse end of its fitted range (more noise, a target closer to
        the ceiling, a model that learns more slowly than any run fitted).  Beyond the
        better end the clamp only makes the predictor more cautious."""
        return all(values["given"] is not None and values["given"] <= values["used"]
                   for values in self.clamps.values())


def _predictor_at(predictor: Any, workload: Workload | None) -> _Told:
    """The predictor the search runs with, its record, and how it took ``workload``.

    Without a predictor named, a workload is judged by the shipped predictor that
    covers it (:func:`~topokit.design.time_predictor.shipped_predictor_for`).  A
    predictor fitted across workloads runs at the workload's settings, with the
    features outside its fitted ranges (or unknown) clamped into them
    (:func:`~topokit.design.time_predictor.predictor_within_fit`: graded trust).
    A predictor fitted at one workload runs at the workload's settings where the
    workload is that one, else at its own, whose designs it can vouch for; a
    warning names whatever lies outside.
    """
    if predictor is None and workload is not None:
        predictor = shipped_predictor_for(workload)
    model, description = _resolve_predictor(predictor)
    if workload is None or isinstance(model, GlobalIteratePredictor):
        return _Told(model, description, workload_outside(model, workload) if workload
                     else ())
    outside = workload_outside(model, workload)
    clamps = workload_clamps(model, workload)
    ranged = bool(clamps) or "fitted_ranges" in (getattr(model, "provenance_", None) or {})
    placed = measured_probe_rounds(model, workload).probe_rounds is not None
    if not placed:  # one line that says what to measure (the reasons would say it thrice)
        warn_unplaced(workload)
    if ranged:
        if placed:
            warn_outside(outside, "optimize kept the rest of the workload and predicted at "
                                  "the nearest values it was fitted on "
                                  "(stats['workload']['clamped'])")
        model, clamps = predictor_within_fit(model, workload)
    else:
        warn_outside(outside, "optimize designed at the settings the predictor was fitted "
                              "on, whose designs it can vouch for")
        if not outside:
            model = predictor_at_workload(model, workload)
    if ranged or not outside:
        description = {**description, "record": model.to_dict()}
    return _Told(model, description, outside, clamps, not ranged and bool(outside),
                 workload.resolved_noise_multiplier)


def _workload_record(net: Network, model: Any, topology: Topology, workload: Workload,
                     class_counts: ArrayLike | None, told: _Told) -> dict[str, Any]:
    """What ``stats["workload"]`` records: the workload, where it lies outside the fit, what
    was clamped, and the design's predicted rounds at the workload's settings."""
    at_workload = predict_topology(net, topology, class_counts=class_counts,
                                   predictor=model if not told.at_fitted_settings
                                   else predictor_at_workload(model, workload))
    clamped = {name: dict(values) for name, values in told.clamps.items()}
    if told.at_fitted_settings:
        designed_at = "the predictor's fitted settings"
    else:
        designed_at = "the workload" + (", clamped to what the predictor was fitted on"
                                        if clamped else "")
    return {"workload": workload.to_dict(), "outside": list(told.outside),
            "clamped": clamped, "designed_at": designed_at,
            "predicted_rounds_at_workload": float(at_workload) if np.isfinite(at_workload)
            else None, "extrapolated": bool(told.outside)}


def check_ndlf_margin(margin: Any, name: str = "ndlf_margin") -> float:
    """``margin`` as a float >= 1 (what :func:`optimize`'s ``ndlf_margin`` accepts), or one
    line naming ``name``."""
    from .._checks import check_real

    return float(check_real(margin, name, low=1.0))


class _Weighted(NamedTuple):
    """A candidate result: its topology (with any weights kept), score and the record of
    :func:`_mixing_weights` (None when no other weights were tried)."""

    topology: Topology
    score: _Score
    mixing: dict[str, Any] | None


def _ndlf_unless_clearly_faster(scores: dict[str, _Score], searched: _Weighted,
                                ndlf: _Weighted | None, margin: float,
                                least_gain: float | None = None, dp_trusted: bool = True,
                                references: Sequence[str] = REFERENCE_DESIGNS
                                ) -> tuple[_Weighted, dict[str, Any]]:
    """NDLF (with the design's mixing weights) instead of the searched design when neither
    the design nor any of ``references`` is predicted ``margin`` times faster than it
    (module notes; with margin 1.0, when it is predicted no slower than any of them), or,
    given ``least_gain`` (the least gain over the noise levels fitted, for a design without
    DP devices), the design gains less than ``margin`` there.  Without ``dp_trusted`` (a
    workload the fit cannot vouch for DP devices at) a design with DP devices never
    replaces NDLF: no margin is justified where no run measured that workload."""
    record: dict[str, Any] = {"margin": margin, "kept_ndlf": False, "predicted_gain": None,
                              "ndlf_weights": None, "reference_gain": None}
    if least_gain is not None:
        record["least_gain_over_noise"] = least_gain
    untrusted = not dp_trusted and bool(searched.topology.dp_devices)
    if not dp_trusted:
        record["dp_trusted"] = False
    if ndlf is None:
        return searched, record
    record["ndlf_weights"] = ("lazy-metropolis" if ndlf.mixing is None
                              else ndlf.mixing["weights"])
    fastest_reference = min((scores[name].time for name in references if name in scores),
                            default=np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        gain = float(np.divide(ndlf.score.time, searched.score.time))
        reference_gain = float(np.divide(ndlf.score.time, fastest_reference))
    record["predicted_gain"] = gain if np.isfinite(gain) else None
    record["reference_gain"] = reference_gain if np.isfinite(reference_gain) else None
    if least_gain is not None:
        gain = min(gain, least_gain)
    if untrusted or (ndlf.score.time <= margin * fastest_reference and gain < margin):
        return ndlf, {**record, "kept_ndlf": True}
    return searched, record


def _least_gain_over_noise(objective: _Objective, searched: _Weighted,
                           ndlf: _Weighted | None) -> float | None:
    """NDLF's predicted time over the searched design's, least over the ends of the noise
    multipliers the predictor was fitted on and its own (module notes); None unless the
    design has no DP device and the predictor's coefficients vary with the noise.

    Neither topology adds noise, so their features are the same at every noise
    multiplier: only the predictor's workload context changes.
    """
    predictor = objective.predictor
    if (ndlf is None or searched.topology.dp_devices
            or not isinstance(predictor, TrainingTimePredictor)
            or "noise_multiplier" not in predictor.feature_context):
        return None
    ranges = (getattr(predictor, "provenance_", None) or {}).get("fitted_ranges") or {}
    if "noise_multiplier" not in ranges:
        return None
    features = [objective.features(objective.state(weighted.topology), None,
                                   _weights_of(weighted.topology, objective.net))
                for weighted in (ndlf, searched)]
    gains = []
    for z in (*(float(end) for end in ranges["noise_multiplier"]),
              predictor.feature_settings.noise_multiplier):
        at_z = _with_settings(predictor, noise_multiplier=z)
        ndlf_rounds, searched_rounds = (at_z.rounds_and_oriented(f)[0] for f in features)
        with np.errstate(invalid="ignore", divide="ignore"):
            gains.append(float(np.divide(ndlf_rounds * features[0].local_iterate,
                                         searched_rounds * features[1].local_iterate)))
    finite = [gain for gain in gains if not np.isnan(gain)]
    return min(finite) if finite else None


def _weights_of(topology: Topology, net: Network) -> NDArray[np.float64] | None:
    """The mixing matrix a weighted topology carries (None: Lazy-Metropolis)."""
    return topology.mixing_matrix(net.nodes) if topology.weights is not None else None


def _warn_never_reached(objective: _Objective) -> None:
    import warnings

    from ..errors import TopokitWarning

    cause = ("with the noise max_stranger_mu needs, " if objective.bound is not None else "")
    warnings.warn(
        f"{cause}no design optimize found is predicted to reach the target accuracy "
        "(metrics.pseudo_time is inf); loosen max_stranger_mu or the DP budget, or check the "
        "predictor's settings", TopokitWarning, stacklevel=4)


def _warn_exposed(design: Design) -> None:
    """One line when a design told an epsilon has no DP device and so leaves its stranger
    pairs exposed: the epsilon protects what DP devices send, and there are none."""
    import warnings

    from ..errors import StrangersExposedWarning

    metrics = design.metrics
    if metrics.n_dp_devices or not metrics.exposed_pairs:
        return
    warnings.warn(
        f"the design has no DP device, so the workload's epsilon protects nothing it sends: "
        f"{metrics.exposed_pairs} of its {metrics.stranger_pairs} stranger pairs receive a "
        "device's data with no noise on the way; to protect strangers, give max_stranger_mu, "
        "the largest mu any stranger pair may have (topokit design --max-stranger-mu)",
        StrangersExposedWarning, stacklevel=4)


def _stranger_bound(model: Any, max_stranger_mu: Any, audit_rounds: Any,
                    audit_model: Any, noise_multiplier: float | None = None
                    ) -> StrangerBound | None:
    """The checked stranger bound of :func:`optimize` (None without ``max_stranger_mu``);
    its base noise is ``noise_multiplier`` (the workload's, which a clamped predictor does
    not hold), else the predictor's."""
    from .._checks import check_real

    audit_model = check_choice(audit_model, "audit_model", AUDIT_MODELS)
    rounds = check_audit_rounds(audit_rounds, audit_model, "audit_rounds")
    if max_stranger_mu is None:
        return None
    max_mu = check_real(max_stranger_mu, "max_stranger_mu", low=0, closed="neither")
    if isinstance(model, GlobalIteratePredictor):
        raise InvalidInputError(
            "max_stranger_mu needs a predictor that counts DP noise, and eq. (15) does not: "
            "use predictor='default', 'mlp' or a TrainingTimePredictor file")
    base = model.feature_settings.noise_multiplier if noise_multiplier is None \
        else noise_multiplier
    return StrangerBound(float(max_mu), rounds, float(base), audit_model)


def _reference_scores(objective: _Objective, scores: dict[str, _Score],
                      starts: dict[str, Topology]) -> dict[str, _Score]:
    """The reference designs' scores for the trust region: admissible ones with their noise,
    the others (under a stranger bound) at the base noise, as the corpus trained them."""
    return {name: scores[name] if name in scores else objective.score(
        objective.state(starts[name])) for name in REFERENCE_DESIGNS if name in starts}


def _bound_stats(objective: _Objective, need: NoiseRequirement, results: list, starts: dict,
                 scores: dict, extra_audits: int = 0) -> dict[str, Any]:
    """stats["stranger_bound"] of the design at the common z* (step 5 updates it)."""
    return {
        "max_stranger_mu": objective.bound.max_mu, "audit_rounds": objective.bound.rounds,
        "audit_model": objective.bound.model,
        "base_noise_multiplier": objective.bound.base_noise,
        "noise_multiplier": need.noise_multiplier, "stranger_mu_max": need.stranger_mu_max,
        "audits": sum(result[2].audits for result in results) + extra_audits,
        "inadmissible_references": [name for name in REFERENCE_DESIGNS
                                    if name in starts and name not in scores],
    }


_UNLIMITED = np.iinfo(np.int64).max


def _budget(max_evaluations: int | None, n_devices: int) -> int:
    """Evaluations per search (module constants; the docstring of :func:`optimize`)."""
    if max_evaluations is not None:
        return int(max_evaluations)
    return _UNLIMITED if n_devices <= MAX_AUTOTAG_DEVICES else LARGE_NETWORK_EVALUATIONS


def _run_searches(objective: _Objective, bound: NDArray, chosen: list, starts: dict,
                  seed: int, budget: int, workers: int,
                  progress: Callable[[int, int], Any] | None) -> list[tuple]:
    """One local search per chosen start, in threads; results in the order of ``chosen``."""
    from concurrent.futures import ThreadPoolExecutor

    def run(key: int) -> tuple:
        name, score = chosen[key]
        return _search_from(objective, bound, (name, score), starts[name], seed, key, budget)

    if workers == 1:
        outcomes = map(run, range(len(chosen)))
        return _collect(outcomes, len(chosen), progress)
    with ThreadPoolExecutor(max_workers=min(workers, len(chosen))) as pool:
        return _collect(pool.map(run, range(len(chosen))), len(chosen), progress)


def _collect(outcomes, total: int, progress: Callable[[int, int], Any] | None) -> list:
    results = []
    for done, result in enumerate(outcomes, start=1):
        results.append(result)
        if progress is not None:
            progress(done, total)
    return results


def _stats(scores: dict[str, _Score], chosen: list, results: list, best: int,
           started: float) -> dict[str, Any]:
    searches = [result[2] for result in results]
    return {
        "start": chosen[best][0],
        "start_times": {name: scores[name].time for name in REFERENCE_DESIGNS if name in scores},
        "starts_scored": len(scores),
        "searches": len(searches),
        "evaluations": sum(search.evaluations for search in searches),
        "moves_taken": searches[best].accepted,
        "passes": sum(search.passes for search in searches),
        "seconds": time.perf_counter() - started,
    }


def _rescored(objective: _Objective, net: Network, reference: Design | None) -> tuple:
    """AutoTag's best snapshot per budget, with metrics under the optimizing predictor."""
    if reference is None:
        return ()
    return tuple(Candidate(c.n, c.topology, evaluate(net, c.topology, objective.predictor),
                           c.phase, c.step) for c in reference.candidates)


def _with_noise(predictor: Any, noise: NoiseRequirement | None,
                device_noise: tuple[float, ...] | None = None) -> Any:
    """The predictor with its DP devices' noise multiplier set to what the bound needs
    (and each device's own level, when step 5 chose them)."""
    if noise is None:
        return predictor
    return _with_settings(predictor, noise_multiplier=noise.noise_multiplier,
                          device_noise_multipliers=device_noise)


def _with_settings(predictor: Any, **changes: Any) -> Any:
    """A copy of ``predictor`` whose feature settings have ``changes``."""
    import copy

    return copy.deepcopy(predictor).set_params(
        settings=replace(predictor.feature_settings, **changes))


# ---------------------------------------------------------------------------------------------
# Per-device noise under a stranger bound (module notes, step 5)
# ---------------------------------------------------------------------------------------------

def _scored_at(objective: _Objective, state: _State, weights: NDArray[np.float64] | None,
               noise: NDArray[np.float64], need: NoiseRequirement) -> _Score:
    """The score with DP device j adding noise[j] (node order) instead of the common z*,
    with the predictor's probability of reaching the target."""
    settings = replace(objective.settings, noise_multiplier=need.noise_multiplier,
                       device_noise_multipliers=tuple(noise.tolist()))
    features = objective.features(state, settings, weights)
    reach = objective.predictor.reach_probability(
        objective.predictor.feature_rows([features]))[0]
    return objective.score_features(features)._replace(
        noise=need, device_noise=settings.device_noise_multipliers, reach=float(reach))


def _gains(candidate: _Score, current: _Score, region: NDArray[np.float64]) -> bool:
    """Step 5's test: within the trust region, and a lower predicted time or, while both
    never reach the target, a higher predicted chance of reaching it."""
    if not np.all(candidate.features <= region):
        return False
    if np.isinf(candidate.time) and np.isinf(current.time):
        return candidate.reach > current.reach * (1.0 + _RTOL)
    return candidate.better_than(current)


def _noise_order(objective: _Objective, region: NDArray[np.float64], state: _State,
                 weights: NDArray[np.float64] | None, noise: NDArray[np.float64],
                 score: _Score) -> list[int]:
    """The DP devices whose noise at z_0 alone the predictor credits (:func:`_gains`), the
    most credited first (lowest time, then highest chance of reaching); ties by node order."""
    base = objective.bound.base_noise
    credited = {}
    for j in np.flatnonzero(noise > base):
        trial = noise.copy()
        trial[j] = base
        candidate = _scored_at(objective, state, weights, trial, score.noise)
        if _gains(candidate, score, region):
            credited[int(j)] = candidate
    return sorted(credited, key=lambda j: (credited[j].time, -credited[j].reach, j))


def _lowered_noise(objective: _Objective, region: NDArray[np.float64], topology: Topology,
                   score: _Score) -> tuple[_Score, NDArray[np.float64], DeviceNoise,
                                           NoiseAudit | None]:
    """Step 5 on the final design: its score and per-device z (node order), the audits run,
    and the audit of the final levels (None when no level changed)."""
    state = objective.state(topology)
    weights = (None if topology.weights is None
               else topology.mixing_matrix(objective.net.nodes))
    audits = DeviceNoise(state.adjacency.astype(np.float64), objective.social, objective.bound,
                         None if weights is None else csr_matrix(weights))
    dp = objective.dp_mask(state)
    uniform = np.where(dp, score.noise.noise_multiplier, 0.0)
    # Every DP device at z_0 (bound or not) is as fast as lower noise can make it: if the
    # predictor credits even that with nothing, no audit is worth running.
    floor = _scored_at(objective, state, weights, np.where(dp, objective.bound.base_noise, 0.0),
                       score.noise)
    if not floor.better_than(score):
        return score, uniform, audits, None
    noise = uniform
    current = start = _scored_at(objective, state, weights, uniform, score.noise)
    for j in _noise_order(objective, region, state, weights, noise, start):
        level = audits.least_noise(noise, j)
        if level >= noise[j]:
            continue
        trial = noise.copy()
        trial[j] = level
        candidate = _scored_at(objective, state, weights, trial, score.noise)
        if _gains(candidate, current, region):
            noise, current = trial, candidate
    if not current.better_than(score):  # lower noise that buys no predicted time: keep z*
        return score, uniform, audits, None
    final = audits.audit(noise)
    if not final.within(objective.bound):  # every change was audited; claim only what holds
        return score, uniform, audits, None
    return current, noise, audits, final


def _refined_noise(objective: _Objective, region: NDArray[np.float64], topology: Topology,
                   score: _Score, info: dict[str, Any], per_device: bool) -> _Score:
    """The design's score after step 5 (if asked for); records its levels in ``info``."""
    dp = np.flatnonzero(objective.dp_mask(objective.state(topology)))
    z_star = score.noise.noise_multiplier
    noise, audits, final = np.full(objective.net.n_devices, z_star), 0, None
    if per_device:
        score, noise, search, final = _lowered_noise(objective, region, topology, score)
        audits = search.audits
    info.update({
        "per_device_noise": bool(per_device),
        "noise_multipliers": {objective.net.nodes[j]: float(noise[j]) for j in dp},
        "devices_lowered": int(np.count_nonzero(noise[dp] < z_star)),
        "noise_audits": audits,
        "audits": info["audits"] + audits,
    })
    if final is not None:
        info["stranger_mu_max"] = final.stranger_mu_max
    return score


def _weighted(plain: Topology, net: Network, mixing: str, seed: int,
              warm_start: Topology | None = None) -> Topology:
    """``plain`` with Metropolis-Hastings or fastest-mixing weights on its links.

    ``warm_start``: a topology on the same devices whose fastest-mixing weights (if it
    carries some) the solver starts from; on a network of more than 48 devices, where
    the first-order method runs, it saves most of its steps.
    """
    from .mixing import fastest_mixing_topology, metropolis_hastings_topology

    if mixing == "metropolis":
        return metropolis_hastings_topology(plain, net)
    if warm_start is not None and warm_start.weights is None:
        warm_start = None  # Lazy-Metropolis: no better a start than the solver's own
    return fastest_mixing_topology(plain, net, seed=keyed_seed(seed, 2), warm_start=warm_start)


def _mixing_weights(objective: _Objective, bound: NDArray[np.float64], candidate: _Weighted,
                    mixing: str, seed: int, warm_start: Topology | None = None) -> _Weighted:
    """The design with other mixing weights on its links, if that is predicted no slower.

    Metropolis-Hastings weights, or Boyd, Diaconis and Xiao's fastest-mixing ones
    (:func:`~topokit.design.mixing.fastest_mixing_topology`, which drops links the
    optimum leaves unused).  Kept only when the predicted time does not grow, the
    features stay in the trust region and, under a stranger bound, the weighted gossip
    still meets it (with its own z*).
    """
    plain, score = candidate.topology, candidate.score
    weighted = _weighted(plain, objective.net, mixing, seed, warm_start)
    matrix = weighted.mixing_matrix(objective.net.nodes)
    changed = objective.state(weighted)
    scored, need = None, None
    if objective.bound is not None:
        need = required_noise_of_arrays(changed.adjacency.astype(np.float64),
                                        objective.dp_mask(changed), objective.social,
                                        objective.bound, weights=csr_matrix(matrix))
    if need is None:
        scored = objective.score(changed, None, matrix)
    elif need.feasible:  # else the weighted gossip exposes a stranger pair: no noise helps
        settings = replace(objective.settings, noise_multiplier=need.noise_multiplier)
        scored = objective.score(changed, settings, matrix)._replace(noise=need)
    kept = (scored is not None and not score.better_than(scored)
            and bool(np.all(scored.features <= bound)))
    stats = {"weights": mixing if kept else "lazy-metropolis",
             "links_dropped": plain.n_links - weighted.n_links,
             "predicted_time_lazy_metropolis": score.time,
             f"predicted_time_{mixing}": None if scored is None else scored.time}
    return _Weighted(weighted if kept else plain, scored if kept else score, stats)


def _key(topology: Topology) -> tuple:
    """What tells two candidates apart: their links and DP devices (not their weights)."""
    return topology.edges, topology.dp_devices


def _mixing_candidates(objective: _Objective, results: list, chosen: list, best: int,
                       ranked: list, starts: dict[str, Topology], mixing: str
                       ) -> list[tuple[str, _Weighted]]:
    """(name, candidate without weights) of the distinct topologies the mixing weights are
    tried on: the searched design first, then the other searches' results and the starts
    the search could start from, by predicted time with Lazy-Metropolis weights (ties: that
    order), :data:`MIXING_CANDIDATES` in all; for fastest-mixing weights beyond
    :data:`MIXING_CANDIDATE_DEVICES` devices, where one solve takes seconds to minutes, the
    searched design alone."""
    limit = (1 if mixing == "fastest" and objective.net.n_devices > MIXING_CANDIDATE_DEVICES
             else MIXING_CANDIDATES)
    pool = [(f"search from {chosen[k][0]}", objective.topology(state), score)
            for k, (state, score, _) in enumerate(results)]
    pool += [(name, starts[name], score) for name, score in ranked
             if objective.allow_dp or not starts[name].dp_devices]
    order = sorted(range(len(pool)), key=lambda k: (k != best, pool[k][2].time,
                                                    pool[k][2].paper_time, k))
    seen, candidates = set(), []
    for k in order:
        name, topology, score = pool[k]
        if _key(topology) not in seen and len(candidates) < limit:
            seen.add(_key(topology))
            candidates.append((name, _Weighted(topology, score, None)))
    return candidates


def _weighted_best(objective: _Objective, bound: NDArray[np.float64],
                   candidates: list[tuple[str, _Weighted]], mixing: str, seed: int
                   ) -> tuple[_Weighted, dict[tuple, _Weighted]]:
    """The candidate predicted fastest with the mixing weights (:func:`_mixing_weights`),
    its record naming it (``from``), how many were weighed and each one's predicted time
    (``candidate_times``, None: never reaching the target), and every candidate as
    weighed (by :func:`_key` of its topology without weights).  The first (the searched
    design) is kept with or without its weights, as :func:`_mixing_weights` decides;
    another replaces it only with its weights kept and predicted faster."""
    names = [name for name, _ in candidates]
    results = [_mixing_weights(objective, bound, candidate, mixing, seed)
               for _, candidate in candidates]
    winner = 0
    for k in range(1, len(results)):
        kept = results[k].mixing["weights"] == mixing
        if kept and results[k].score.better_than(results[winner].score):
            winner = k
    chosen = results[winner]
    record = {**chosen.mixing, "from": names[winner], "candidates_weighed": len(results),
              "candidate_times": {name: _finite_or_none(result.score.time)
                                  for name, result in zip(names, results, strict=True)}}
    weighed = {_key(candidate.topology): result
               for (_, candidate), result in zip(candidates, results, strict=True)}
    return chosen._replace(mixing=record), weighed


def _mixing_record(result: _Weighted, searched: _Weighted) -> dict[str, Any]:
    """``stats["mixing"]``: the weighting record of the design, and where the margin kept
    NDLF over the weighted candidates, ``from`` NDLF and those candidates."""
    if result is searched or searched.mixing is None:
        return result.mixing
    weighed = {key: searched.mixing[key] for key in ("candidates_weighed", "candidate_times")}
    return {**result.mixing, "from": "ndlf", **weighed}


def _finite_or_none(value: float) -> float | None:
    """A predicted time for JSON: None where it is inf (never reaching the target)."""
    return float(value) if np.isfinite(value) else None


def _design(objective: _Objective, description: dict, topology: Topology, score: _Score,
            reference: Design | None, stats: dict, noise: DesignNoise) -> Design:
    net = objective.net
    if objective.class_counts is not None:
        net = net.with_class_counts(objective.class_counts)
    predictor = _with_noise(objective.predictor, score.noise, score.device_noise)
    if predictor is not objective.predictor:  # judged at the bound's noise: say so
        description = {**description, "settings": predictor.feature_settings.to_dict()}
    return Design(topology=topology, metrics=evaluate(net, topology, predictor),
                  candidates=_rescored(objective, net, reference),
                  n=len(topology.dp_devices), stats=stats, predictor=description, noise=noise)


def _noise_record(model: Any, workload: Workload | None, topology: Topology, net: Network,
                  bound: dict[str, Any] | None) -> DesignNoise:
    """Each DP device's noise, decided once (:mod:`topokit.design.noise`): the z of the
    workload's epsilon and delta (else the predictor's, else training's default), raised
    to the stranger bound's levels where it has them, never below."""
    dp = dp_in_node_order(topology, net)
    if workload is not None:
        base, delta = workload.resolved_noise_multiplier, workload.delta
        epsilon = workload.epsilon if workload.noise_multiplier is None else None
        source = ("the workload's epsilon" if epsilon is not None else
                  "the workload's noise multiplier")
    else:  # the predictor's z (training's default for eq. 15, which counts no noise)
        from .features import DEFAULT_NOISE_MULTIPLIER  # calibrated on first use

        settings = getattr(model, "feature_settings", None)
        base = (DEFAULT_NOISE_MULTIPLIER if settings is None else settings.noise_multiplier)
        delta, epsilon, source = DEFAULT_DELTA, None, untold_source(base)
    levels = None if bound is None else bound.get("noise_multipliers")
    if levels and any(levels[device] > base for device in dp):
        source += f", raised to meet the stranger bound mu <= {bound['max_stranger_mu']:g}"
    return decided_noise(dp, base=base, delta=delta, epsilon=epsilon, source=source,
                         levels=levels)
