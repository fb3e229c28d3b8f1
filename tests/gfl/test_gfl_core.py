"""Tests of topokit.gfl.core and topokit.gfl.config: invariants and seeded statistics.

No dB margins are hard-coded: schemes are compared with each other in the
same seeded run (common random numbers).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from topokit import gfl
from topokit.errors import InvalidInputError, NetworkFileError, NetworkFileNotFoundError
from topokit.gfl.core import _run_loop

SMALL = gfl.preset("regression").replace(
    n_servers=6, clients_per_server=20, clients_per_round=5, samples_per_client=(50, 50),
    iterations=400, repetitions=4, seed=1,
)


def _by_label(results):
    return {r.label: r for r in results}


# --------------------------------------------------------------------------- exact invariants
def test_vectorised_run_matches_per_client_loop():
    config = SMALL.replace(n_servers=4, clients_per_server=8, clients_per_round=3,
                           iterations=6, repetitions=2, client_noise="laplace",
                           client_sigma2=0.05)
    variants = [{"scheme": "random", "share": "updates"}, {"scheme": "homomorphic"},
                {"scheme": "random", "include_self_noise": False, "mu": 0.3}]
    fast = gfl.run_many(config, variants)
    slow = _run_loop(config, variants)
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_allclose(a.final_centroid, b.final_centroid, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(a.msd_individual_db, b.msd_individual_db, atol=1e-9)


def test_numba_kernel_matches_numpy_twin():
    from topokit.gfl.core import _local_updates, _local_updates_numpy

    for task in ("regression", "classification"):
        config = gfl.preset(task).replace(iterations=1, n_servers=3, clients_per_server=6,
                                          clients_per_round=4)
        problem = gfl.build_problem(config)
        rng = np.random.default_rng(0)
        w = rng.normal(size=(2, 3, problem.dim))
        selected = np.stack([np.stack([rng.permutation(6)[:4] for _ in range(3)])
                             for _ in range(2)])
        batch = rng.random((2, 3, 4, config.epochs[1], config.batch_size[1]))
        mu = np.array([0.3, 0.7])
        fast = _local_updates(problem, config, w, mu, selected, batch)
        twin = _local_updates_numpy(problem, config, w, mu, selected, batch)
        for a, b in zip(fast, twin, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_sharing_updates_equals_sharing_models_without_noise():
    config = SMALL.replace(iterations=30, repetitions=2, scheme="none")
    models, updates = gfl.run_many(config, [{"share": "models"}, {"share": "updates"}])
    np.testing.assert_allclose(models.msd_centroid_db, updates.msd_centroid_db, atol=1e-8)
    np.testing.assert_allclose(models.final_centroid, updates.final_centroid, atol=1e-10)


def test_homomorphic_noise_leaves_first_centroid_step_unchanged():
    """After one iteration from the same start, the centroid is the noise-free one."""
    config = SMALL.replace(iterations=1, repetitions=3)
    variants = [{"scheme": s} for s in ("none", "homomorphic", "random")]
    none, hom, rnd = gfl.run_many(config, variants)
    np.testing.assert_allclose(hom.final_centroid, none.final_centroid, atol=1e-12)
    assert np.abs(rnd.final_centroid - none.final_centroid).max() > 1e-4
    assert hom.msd_individual_db[1] > none.msd_individual_db[1]


def test_same_seed_same_numbers_and_seed_matters():
    config = SMALL.replace(iterations=20, repetitions=1)
    a, b = gfl.run(config), gfl.run(config)
    np.testing.assert_array_equal(a.msd_centroid_db, b.msd_centroid_db)
    c = gfl.run(config.replace(seed=2))
    assert not np.allclose(a.msd_centroid_db, c.msd_centroid_db)


def test_w_opt_is_the_minimiser_of_the_average_risk():
    problem = gfl.build_problem(SMALL)
    weights = (np.arange(problem.U.shape[2]) < problem.n[..., None]) / problem.n[..., None]
    resid = problem.D - problem.U @ problem.w_opt
    grad = -2 * np.einsum("pkn,pkni->i", weights * resid, problem.U) / problem.n.size
    grad += 2 * problem.rho * problem.w_opt
    assert np.abs(grad).max() < 1e-12


# --------------------------------------------------------------------------- seeded statistics
@pytest.fixture(scope="module")
def sweep():
    variants = [{"scheme": s, "sigma_g2": g, "name": f"{s}@{g}"}
                for g in (0.1, 1.0) for s in ("random", "homomorphic")]
    variants += [{"scheme": s, "mu": m, "name": f"{s}/mu={m}"}
                 for m in (0.1, 0.5) for s in ("random", "homomorphic")]
    variants += [{"scheme": "none", "name": "none"}]
    return _by_label(gfl.run_many(SMALL, variants))


def test_homomorphic_centroid_far_below_random_and_gap_grows(sweep):
    gaps = {}
    for g in (0.1, 1.0):
        hom = sweep[f"homomorphic@{g}"].steady_state_db()
        rnd = sweep[f"random@{g}"].steady_state_db()
        none = sweep["none"].steady_state_db()
        # "far below": homomorphic is closer to the noise-free run than to random
        assert rnd - hom > hom - none
        gaps[g] = rnd - hom
    assert gaps[1.0] > gaps[0.1]


def test_random_suffers_from_small_step_size_homomorphic_does_not(sweep):
    rnd_small, rnd_large = (sweep[f"random/mu={m}"].steady_state_db() for m in (0.1, 0.5))
    hom_small, hom_large = (sweep[f"homomorphic/mu={m}"].steady_state_db() for m in (0.1, 0.5))
    assert rnd_small > rnd_large  # the O(1/mu) term
    assert hom_small <= hom_large


def test_updates_beat_models_in_single_server_setting():
    config = gfl.preset("models-vs-updates").replace(
        clients_per_server=100, clients_per_round=10, iterations=200, repetitions=10, seed=3)
    results = _by_label(gfl.run_many(config, [
        {"share": "models", "name": "models"}, {"share": "updates", "name": "updates"},
        {"client_noise": "none", "name": "clean"}]))
    models, updates, clean = (results[k].steady_state_db() for k in ("models", "updates", "clean"))
    assert clean < updates < models
    # the noise hurts models more at every late iteration, not only on average
    tail = slice(-50, None)
    updates_tail = results["updates"].msd_centroid_db[tail]
    assert np.all(updates_tail < results["models"].msd_centroid_db[tail])


def test_divergence_is_recorded_not_raised():
    config = SMALL.replace(iterations=60, repetitions=2, feature_eigs=(2.0, 3.0))
    stable, unstable = gfl.run_many(config, [{"mu": 0.1}, {"mu": 5.0}])
    assert not stable.diverged and stable.diverged_at is None
    assert unstable.diverged and unstable.n_diverged == 2
    assert np.isnan(unstable.msd_centroid_db[-1])
    assert np.isfinite(unstable.msd_centroid_db[: unstable.diverged_at]).all()


def test_secure_aggregation_in_the_loop_matches_plain_aggregation():
    config = SMALL.replace(n_servers=3, clients_per_server=6, clients_per_round=3,
                           iterations=5, repetitions=1, frac_bits=24, ring_bits=48)
    plain, masked = gfl.run_many(config, [{"client_noise": "none"}, {"client_noise": "secagg"}])
    np.testing.assert_allclose(masked.final_centroid, plain.final_centroid, atol=1e-5)
    assert not np.array_equal(masked.final_centroid, plain.final_centroid)  # fixed-point rounding


def test_secure_aggregation_with_os_keys_is_bit_reproducible():
    # Keys and masks come from the OS, different every run; the masks cancel
    # exactly, so the same seed still gives the same bits.
    config = SMALL.replace(n_servers=3, clients_per_server=6, clients_per_round=3, iterations=4,
                           repetitions=1, client_noise="secagg", frac_bits=24, ring_bits=48)
    first, second = gfl.run(config), gfl.run(config)
    np.testing.assert_array_equal(first.final_centroid, second.final_centroid)
    np.testing.assert_array_equal(first.msd_centroid_db, second.msd_centroid_db)


def test_leaving_the_fixed_point_ring_is_recorded_as_divergence_as_without_secagg():
    config = SMALL.replace(iterations=60, repetitions=2, feature_eigs=(2.0, 3.0), mu=5.0,
                           clients_per_round=2, frac_bits=8, ring_bits=24)
    plain, masked = gfl.run_many(config, [{"client_noise": "none"},
                                          {"client_noise": "secagg"}])
    assert plain.diverged and masked.diverged
    assert np.isnan(masked.msd_centroid_db[-1])
    assert np.isfinite(masked.msd_centroid_db[: masked.diverged_at]).all()


def test_classification_homomorphic_close_to_clean_random_worse():
    config = gfl.preset("classification").replace(iterations=150, repetitions=4)
    variants = [{"scheme": s} for s in ("none", "homomorphic", "random")]
    none, hom, rnd = gfl.run_many(config, variants)
    tail = slice(-50, None)
    assert none.test_error[tail].mean() < none.test_error[0]
    assert hom.steady_state_db() < rnd.steady_state_db()


def test_classification_runs_and_reports_test_error():
    config = gfl.preset("classification").replace(iterations=10, repetitions=1)
    result = gfl.run(config)
    assert result.test_error is not None and result.test_error.shape == (11,)
    assert ((0 <= result.test_error) & (result.test_error <= 1)).all()
    assert result.w_opt.shape == (31,)
    assert result.msd_centroid_db[-1] < result.msd_centroid_db[0]


# --------------------------------------------------------------------------- results & config
def test_result_frame_and_dict():
    result = gfl.run(SMALL.replace(iterations=5, repetitions=1))
    frame = result.to_frame()
    assert list(frame.columns[:4]) == ["label", "iteration", "msd_centroid_db", "msd_individual_db"]
    assert len(frame) == 6 and (frame["scheme"] == "homomorphic").all()
    data = json.loads(json.dumps(result.to_dict()))
    assert len(data["msd_centroid_db"]) == 6 and data["config"]["n_servers"] == 6


def test_progress_callback_called_every_iteration():
    seen = []
    gfl.run(SMALL.replace(iterations=7, repetitions=1), progress=lambda i, n: seen.append((i, n)))
    assert seen == [(i, 7) for i in range(1, 8)]


def test_config_validation_messages():
    with pytest.raises(InvalidInputError, match="scheme must be one of"):
        SMALL.replace(scheme="gaussian")
    with pytest.raises(InvalidInputError, match="must not exceed"):
        SMALL.replace(clients_per_round=50)
    with pytest.raises(InvalidInputError, match="unknown GFL configuration keys"):
        gfl.config_from_dict({"sigma": 1.0})
    with pytest.raises(InvalidInputError, match="lo <= hi"):
        SMALL.replace(epochs=(5, 2))
    with pytest.raises(InvalidInputError, match="variants may change only"):
        gfl.run_many(SMALL, [{"n_servers": 3}])
    with pytest.raises(InvalidInputError, match="preset must be one of"):
        gfl.preset("nope")


def test_toml_loading(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('preset = "models-vs-updates"\n[gfl]\niterations = 12\nepochs = [2, 3]\n')
    config = gfl.load_config(path)
    assert config.n_servers == 1 and config.iterations == 12 and config.epochs == (2, 3)
    bad = tmp_path / "bad.toml"
    bad.write_text("iterations = [\n")
    with pytest.raises(NetworkFileError, match="not valid TOML"):
        gfl.load_config(bad)
    bad.write_text("iteratons = 3\n")
    with pytest.raises(NetworkFileError, match="unknown GFL configuration keys"):
        gfl.load_config(bad)
    with pytest.raises(NetworkFileNotFoundError):
        gfl.load_config(tmp_path / "missing.toml")
