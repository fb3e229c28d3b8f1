"""PPGL (Algorithm 1) with and without DP, its accounting, and the baselines."""


import dp_accounting
import numpy as np
import pytest
from dp_accounting import rdp

from topokit.errors import InvalidInputError
from topokit.learn import ConvergenceWarning
from topokit.learn._federated_steps import RoundParameters, server_step
from topokit.learn.baselines import fedavg, graphical_lasso, igl
from topokit.learn.data import digits_views, synthetic_federated
from topokit.learn.federated import client_means, learn_federated
from topokit.learn.metrics import community_scores, edge_scores
from topokit.learn.solvers import signal_difference_norms


@pytest.fixture(scope="module")
def small():
    return synthetic_federated(40, n_nodes=10, n_clients=3, q=0.5, seed=7)


def test_result_shapes_and_to_dict(small):
    res = learn_federated(small.signals, 1.0, 0.1, 0.5, 0.01, rounds=20)
    assert len(res.local) == 3 and res.gamma.shape == (3,)
    assert res.consensus.weights.shape == (45,)
    assert res.n_rounds == 20 and res.privacy is None
    d = res.to_dict()
    assert d["n_rounds"] == 20 and len(d["local"]) == 3
    assert np.all(res.consensus.weights >= 0)


def test_clipping_bounds_every_difference_vector(small):
    X = small.signals[0] * 10
    C = 5.0
    scale = 1.0 / np.maximum(1.0, signal_difference_norms(X) / C)
    assert np.all(signal_difference_norms(X) * scale <= C * (1 + 1e-12))
    assert np.linalg.norm(client_means(X, C)) <= C * (1 + 1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 0.8, 1.0])
def test_dp_noise_scale_and_accounting(small, epsilon):
    delta, C, T = 1e-5, 20.0, 30
    res = learn_federated(small.signals, 1.0, 0.1, 0.5, 0.01, rounds=T, epsilon=epsilon,
                          delta=delta, clip=C, seed=0)
    sizes = [X.shape[0] for X in small.signals]
    # The analytic Gaussian mechanism at every epsilon (dp-accounting's calibration).
    expected = [dp_accounting.get_sigma_gaussian(epsilon, delta) * 2 * C / n for n in sizes]
    np.testing.assert_allclose(res.privacy.sigma, expected, rtol=1e-9)
    multiplier = expected[0] / (2 * C / sizes[0])
    accountant = rdp.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    )
    accountant.compose(
        dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(multiplier), T)
    )
    assert res.privacy.epsilon_rdp == pytest.approx(accountant.get_epsilon(T * delta), rel=1e-9)
    assert res.privacy.basic_epsilon == pytest.approx(T * epsilon)
    assert res.privacy.basic_delta == pytest.approx(T * delta)
    assert res.privacy.epsilon_pld <= res.privacy.basic_epsilon


def test_dp_noise_is_added_with_the_stated_std(small):
    """One round from a large w0 (no projection, no coupling): w_dp - w = -eta s."""
    kwargs = dict(rounds=1, clip=20.0, w0=10.0, eta=0.01)
    plain = learn_federated(small.signals, 1.0, 0.1, 0.0, 0.0, **kwargs)
    noisy = learn_federated(small.signals, 1.0, 0.1, 0.0, 0.0, epsilon=0.5, seed=3, **kwargs)
    again = learn_federated(small.signals, 1.0, 0.1, 0.0, 0.0, epsilon=0.5, seed=3, **kwargs)
    for k in range(3):
        noise = (plain.local[k].weights - noisy.local[k].weights) / 0.01
        assert np.std(noise) == pytest.approx(noisy.privacy.sigma[k], rel=0.25)
        np.testing.assert_array_equal(noisy.local[k].weights, again.local[k].weights)


def test_distances_release_is_one_gaussian_release(small):
    """dp_release="distances": z_i + N(0, sigma^2) once, epsilon for the whole run; the run
    is its post-processing, so it converges to the noiseless fixed point of the noisy z."""
    delta, C, epsilon = 1e-5, 20.0, 2.0
    res = learn_federated(small.signals, 1.0, 0.5, 0.5, 0.05, rounds=20_000, tol=1e-9,
                          epsilon=epsilon, delta=delta, clip=C, seed=1,
                          dp_release="distances")
    sizes = [X.shape[0] for X in small.signals]
    expected = [dp_accounting.get_sigma_gaussian(epsilon, delta) * 2 * C / n for n in sizes]
    np.testing.assert_allclose(res.privacy.sigma, expected, rtol=1e-9)
    assert res.privacy.rounds == 1 and res.privacy.release == "distances"
    assert res.privacy.basic_epsilon == pytest.approx(epsilon)
    # one analytic-Gaussian release: the PLD accountant gives back its epsilon
    assert res.privacy.epsilon_pld == pytest.approx(epsilon, rel=1e-2)
    assert res.converged


def test_distances_release_matches_the_gradient_run_at_equal_privacy(small):
    """T gradient releases with noise sigma spend what one release with sigma / sqrt(T) does
    (Gaussian composition is exact): calibrating the one release to the T-round total gives
    that noise."""
    T = 50
    per_round = learn_federated(small.signals, 1.0, 0.1, 0.5, 0.01, rounds=T, epsilon=1.0,
                                clip=20.0, seed=0)
    once = learn_federated(small.signals, 1.0, 0.1, 0.5, 0.01, rounds=T,
                           epsilon=per_round.privacy.epsilon_pld,
                           delta=per_round.privacy.total_delta, clip=20.0, seed=0,
                           dp_release="distances")
    np.testing.assert_allclose(once.privacy.sigma, np.array(per_round.privacy.sigma) / np.sqrt(T),
                               rtol=1e-2)


def test_ppgl_beats_fedavg_on_heterogeneous_clients():
    g = synthetic_federated(200, q=0.3, n_nodes=20, seed=0)
    res = learn_federated(g.signals, 1.0, 0.01, 0.1, 0.01, rounds=2000, eta=0.05,
                          coupling="implicit")
    shared = fedavg(g.signals, 1.0, 0.01, rounds=2000, eta=0.05)
    f_ppgl = np.mean([edge_scores(x.weights, t).f_score
                      for x, t in zip(res.local, g.local_weights, strict=True)])
    f_avg = np.mean([edge_scores(shared.weights, t).f_score for t in g.local_weights])
    assert f_ppgl > f_avg + 0.05


def test_explicit_and_implicit_coupling_share_the_fixed_point(small):
    a = learn_federated(small.signals, 1.0, 0.5, 0.5, 0.05, rounds=20_000, tol=1e-9)
    b = learn_federated(small.signals, 1.0, 0.5, 0.5, 0.05, rounds=20_000, tol=1e-9,
                        coupling="implicit")
    np.testing.assert_allclose(a.consensus.weights, b.consensus.weights, atol=1e-6)


def test_tolerance_not_reached_warns(small):
    with pytest.warns(ConvergenceWarning) as record:
        res = learn_federated(small.signals, 1.0, 0.1, 0.5, 0.01, rounds=5, tol=1e-12)
    assert not res.converged
    assert record[0].filename == __file__  # the warning points at the caller's line


def test_server_step_is_the_gamma_weighted_soft_thresholded_mean():
    """Eq. 15 with the old gamma, then eq. 16's gamma from the new consensus."""
    rng = np.random.default_rng(0)
    W, gamma = rng.random((3, 6)), np.array([0.5, 1.0, 2.0])
    params = RoundParameters(alpha=1.0, beta=0.1, rho=0.5, lam=0.2, eta=0.01, xi=0.1,
                             zeta=1e-3, eps_gamma=1e-6, coupling="explicit")
    w_con, new_gamma = server_step(W, gamma, params)
    mean = gamma @ W / gamma.sum()
    mu = 0.2 / (0.5 * gamma.sum())
    np.testing.assert_allclose(w_con, np.maximum(mean - mu, 0.0))
    np.testing.assert_allclose(new_gamma, 1 / (2 * np.linalg.norm(W - w_con, axis=1) + 1e-6))
    # rho = 0: nothing couples the clients, and the l1 term alone sets w_con to zero
    assert not server_step(W, gamma, params._replace(rho=0.0)).w_con.any()


def test_baselines_run(small):
    assert len(igl(small.signals, 1.0, 0.1)) == 3
    assert fedavg(small.signals, 1.0, 0.1, rounds=10).weights.shape == (45,)


def test_graphical_lasso_recovers_a_gaussian_markov_chain():
    """On data drawn from a sparse precision matrix (a chain), the edges are -Theta's support."""
    d = 10
    precision = np.eye(d)
    upper, lower = (np.arange(d - 1), np.arange(1, d)), (np.arange(1, d), np.arange(d - 1))
    precision[upper] = precision[lower] = -0.4
    rng = np.random.default_rng(0)
    X = rng.multivariate_normal(np.zeros(d), np.linalg.inv(precision), size=2000)
    i, j = np.triu_indices(d, 1)
    truth = np.maximum(-precision[i, j], 0.0)
    weights = graphical_lasso([X, X[:1000]], reg=0.05)
    for w in weights:
        assert edge_scores(w, truth, threshold=0.1).f_score == 1.0
    assert np.abs(weights[0] - truth)[truth > 0].max() < 0.1  # shrunk by reg, not lost
    with pytest.raises(InvalidInputError, match="reg must be > 0"):
        graphical_lasso([X], reg=0.0)
    # fewer signals than nodes: scikit-learn's failure becomes one clear message
    few = synthetic_federated(10, n_clients=1, n_nodes=20, seed=0).signals
    with pytest.raises(InvalidInputError, match="raise reg"):
        graphical_lasso(few, reg=0.001)


def test_digits_example_has_labels_and_views():
    views, labels = digits_views((0, 1), per_class=5)
    assert len(views) == 4 and all(v.shape == (16, 10) for v in views)
    res = learn_federated(views, 1.0, 0.1, 0.5, 0.01, rounds=50)
    scores = community_scores(res.consensus.graph, labels)
    assert 0.0 <= scores["nmi"] <= 1.0


def test_consensus_graph_of_digit_quadrants_finds_the_digits():
    """Table V style: Louvain on PPGL's consensus graph recovers the three digit classes,
    which one quadrant alone (IGL) does not (analyses/learn_digits.py's setting)."""
    views, labels = digits_views((0, 1, 6), per_class=10, seed=0)
    res = learn_federated(views, 1.0, 0.05, 0.3, 0.01, rounds=300, eta=0.05, coupling="implicit")
    assert community_scores(res.consensus.graph, labels)["nmi"] == pytest.approx(1.0)
    alone = [community_scores(g.graph, labels)["nmi"] for g in igl(views, 1.0, 0.05)]
    assert max(alone) < 0.9


@pytest.mark.parametrize(
    "signals, kwargs, message",
    [
        ("mixed", {}, "same nodes"),
        ("nan", {}, "NaN"),
        ("ok", {"alpha": -1.0}, "alpha must be > 0"),
        ("ok", {"epsilon": 1.0}, "clip"),
        ("ok", {"rounds": 0}, "rounds must be an integer >= 1"),
        ("ok", {"rounds": 2.0}, "rounds must be an integer >= 1"),
        ("ok", {"xi": 1.0}, r"xi must lie in \[0, 1\)"),
        ("ok", {"coupling": "prox"}, "coupling must be one of 'explicit', 'implicit'"),
        ("ok", {"dp_release": "models"}, "dp_release must be one of 'gradients', 'distances'"),
        ("one", {}, "list of arrays"),
        ("tiny", {}, "n_nodes >= 2"),
    ],
)
def test_bad_input_gets_clear_error(small, signals, kwargs, message):
    data = {
        "mixed": [np.ones((5, 4)), np.ones((5, 5))],
        "nan": [np.full((5, 4), np.nan)],
        "ok": small.signals,
        "one": np.ones((5, 4)),
        "tiny": [np.ones((5, 1))],
    }[signals]
    args = {"alpha": 1.0, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        learn_federated(data, args.pop("alpha"), 0.1, 0.5, 0.01, **args)
