"""Decisions by measured traits, not names; the horizon as a setting; graded trust (issue 39)."""

import copy
import warnings

import numpy as np
import pytest

from topokit import Workload, load_example, load_predictor, optimize
from topokit.design import default_mixing, predictor_at_workload, workload_outside
from topokit.design.baselines import ndlf
from topokit.design.time_predictor import predictor_within_fit, workload_clamps
from topokit.design.trust import (
    FASTEST_MIXING_MAX_PROBE_ROUNDS,
    UNRUN_REWIRING_MARGIN,
    measured_probe_rounds,
    mixing_for_trait,
    shipped_probe_rounds,
)
from topokit.errors import InvalidInputError, StrangersExposedWarning, TopokitWarning


@pytest.fixture(scope="module")
def siot16():
    return load_example("siot16")


def _quiet_optimize(net, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TopokitWarning)  # a measured workload: no warning
        warnings.simplefilter("ignore", StrangersExposedWarning)  # no DP device
        return optimize(net, seed=0, **options)


def test_topokit_s_mlp_under_another_name_gets_the_mlp_s_design(siot16):
    """The issue's control: MLP(32) named "mine" with its measured traits is the MLP."""
    ceiling = load_predictor("workload").provenance_["ceilings"]["mlp"]
    told = dict(epsilon=0.5, target=0.85, rounds=200, ceiling=ceiling)
    mlp = _quiet_optimize(siot16, workload=Workload(model="mlp", **told))
    mine = _quiet_optimize(siot16, workload=Workload(model="mine", probe_rounds=34, **told))
    assert mine.topology == mlp.topology
    assert mine.metrics.pseudo_time == mlp.metrics.pseudo_time
    decided = mine.stats["workload"]["decided_by"]
    assert decided["mixing"] == "lazy-metropolis" and decided["ndlf_margin"] == 1.12
    assert decided["source"] == "the workload"
    assert mlp.stats["workload"]["decided_by"]["probe_rounds"] == 34.0


def test_the_weights_follow_the_measured_trait_not_the_name():
    model = load_predictor("workload")
    assert shipped_probe_rounds() == {"logreg": 4.0, "mlp": 34.0}
    fast = Workload(model="mlp", probe_rounds=FASTEST_MIXING_MAX_PROBE_ROUNDS)
    slow = Workload(model="logreg", probe_rounds=FASTEST_MIXING_MAX_PROBE_ROUNDS + 1)
    assert default_mixing(model, fast) == "fastest"
    assert default_mixing(model, slow) == "lazy-metropolis"
    assert default_mixing(model, Workload(model="mine")) == "lazy-metropolis"  # unknown: safe
    assert measured_probe_rounds(model, Workload(model="mine")).probe_rounds is None
    assert [mixing_for_trait(t) for t in (3, 10, 10.5, None)] == \
        ["fastest", "fastest", "lazy-metropolis", "lazy-metropolis"]


def test_a_model_never_measured_gets_the_safe_choices_and_one_line(siot16):
    with pytest.warns(TopokitWarning) as caught:
        design = optimize(siot16, seed=0, workload=Workload(model="mine", epsilon=0.5))
    messages = [str(w.message) for w in caught if issubclass(w.category, TopokitWarning)
                and not issubclass(w.category, StrangersExposedWarning)]
    assert len(messages) == 1 and "ceiling_probe" in messages[0]
    assert "probe_rounds=" in messages[0] and "\n" not in messages[0]
    record = design.stats["workload"]
    assert record["decided_by"]["mixing"] == "lazy-metropolis"
    assert record["decided_by"]["ndlf_margin"] == 1.12
    # No run of "mine" in the predictor: the search's noiseless pruned graph must clear more.
    assert not design.topology.dp_devices
    assert design.stats["ndlf_margin"]["margin"] == UNRUN_REWIRING_MARGIN
    # Predicted as the slowest-learning model fitted (the MLP), at the user's epsilon.
    assert record["clamped"]["probe_rounds"] == {"given": None, "used": 34.0}
    judged = design.predictor["record"]["settings"]["noise_multiplier"]
    assert judged == Workload(epsilon=0.5).resolved_noise_multiplier


@pytest.mark.parametrize("rounds", [100, 300, 500])
def test_the_horizon_is_never_outside(rounds):
    for model in ("logreg", "mlp"):
        assert workload_outside("workload", Workload(model=model, epsilon=0.25,
                                                     rounds=rounds)) == ()


def test_a_longer_horizon_changes_nothing_but_the_epsilon_counts(siot16):
    at = {rounds: _quiet_optimize(siot16, workload=Workload(epsilon=0.25, rounds=rounds))
          for rounds in (200, 300, 500)}
    assert at[300].topology == at[200].topology == at[500].topology
    assert at[300].metrics.pseudo_time == at[200].metrics.pseudo_time
    # The user's epsilon is kept: another epsilon is another noise level in the predictor.
    loose = _quiet_optimize(siot16, workload=Workload(epsilon=8, rounds=300))
    noise = [d.predictor["record"]["settings"]["noise_multiplier"] for d in (at[300], loose)]
    assert noise == [Workload(epsilon=e).resolved_noise_multiplier for e in (0.25, 8)]
    assert at[300].stats["workload"]["designed_at"] == "the workload"


def test_a_shorter_horizon_only_moves_the_cut_off():
    toy = load_example("toy")
    model = load_predictor("workload")
    fitted = predictor_at_workload(model, Workload()).predict_network(toy, ndlf(toy))
    assert np.isfinite(fitted)
    longer = predictor_at_workload(model, Workload(rounds=500))
    assert longer.max_rounds is None and longer.predict_network(toy, ndlf(toy)) == fitted
    cut_above = predictor_at_workload(model, Workload(rounds=int(np.ceil(fitted))))
    assert cut_above.predict_network(toy, ndlf(toy)) == fitted
    cut_below = predictor_at_workload(model, Workload(rounds=int(np.floor(fitted)) - 1))
    assert cut_below.predict_network(toy, ndlf(toy)) == np.inf
    # The cut-off is written with the predictor and read back.
    again = type(model).from_dict(cut_below.to_dict())
    assert again.max_rounds == cut_below.max_rounds


def test_a_field_outside_is_clamped_and_the_rest_kept():
    model = load_predictor("workload")
    low, high = model.provenance_["fitted_ranges"]["noise_multiplier"]
    loose = Workload(epsilon=64, target=0.92)
    clamps = workload_clamps(model, loose)
    assert list(clamps) == ["noise_multiplier"]
    assert clamps["noise_multiplier"] == {"given": loose.resolved_noise_multiplier, "used": low}
    clamped, _ = predictor_within_fit(model, loose)
    assert clamped.feature_settings.noise_multiplier == low
    # The target is kept: the closeness is the workload's, not the predictor's own.
    assert clamped.target_closeness == pytest.approx(0.92 / model.provenance_["ceilings"]
                                                     ["logreg"])
    tight = workload_clamps(model, Workload(epsilon=0.05))
    assert tight["noise_multiplier"]["used"] == high


def test_no_dp_device_at_noise_no_run_was_trained_at(siot16):
    with pytest.warns(TopokitWarning, match="noise multiplier"):
        design = optimize(siot16, seed=0, workload=Workload(epsilon=0.05))
    record = design.stats["workload"]
    assert record["clamped"]["noise_multiplier"]["given"] > \
        record["clamped"]["noise_multiplier"]["used"]
    assert not design.topology.dp_devices
    assert design.stats["ndlf_margin"]["dp_trusted"] is False


def test_a_target_above_the_measured_ceiling_is_one_line():
    with pytest.raises(InvalidInputError, match="above the ceiling 0.8"):
        Workload(target=0.85, ceiling=0.8)
    assert Workload(target=0.8, ceiling=0.8).target == 0.8


# -- bad input: one line, exit 2 --------------------------------------------------------------

def test_the_cli_refuses_a_target_above_the_ceiling_in_one_line():
    from tests.cli_errors import check_one_line

    check_one_line(["design", "--example", "toy", "--target", "0.9", "--ceiling", "0.8"],
                   "above the ceiling 0.8")


def test_calibrating_on_runs_that_never_reached_the_target_is_one_line(tmp_path):
    import pandas as pd

    from tests.cli_errors import check_one_line
    from topokit import save_network, save_topology

    toy = load_example("toy")
    save_network(toy, tmp_path / "toy.json")
    save_topology(ndlf(toy), tmp_path / "ndlf.json")
    save_topology(toy.topology, tmp_path / "paper.json")
    pd.DataFrame({"network": "toy.json", "topology": ["ndlf.json", "paper.json"] * 2,
                  "target": 0.8, "horizon": 40, "measured_rounds": [None] * 4}
                 ).to_csv(tmp_path / "runs.csv", index=False)
    output = tmp_path / "refit.json"
    check_one_line(["calibrate", str(tmp_path / "runs.csv"), "--refit", "default",
                    "-o", str(output)], "no run reached the target")
    assert not output.exists()


def test_a_refit_on_one_network_warns_what_it_rests_on(tmp_path):
    import pandas as pd

    from topokit import save_network, save_topology
    from topokit.validation import calibrate

    toy = load_example("toy")
    save_network(toy, tmp_path / "toy.json")
    save_topology(ndlf(toy), tmp_path / "ndlf.json")
    save_topology(toy.topology, tmp_path / "paper.json")
    runs = pd.DataFrame({"network": "toy.json", "topology": ["ndlf.json", "paper.json"] * 2,
                         "target": 0.8, "horizon": 40, "measured_rounds": [9, 21, 8, 24]})
    runs.to_csv(tmp_path / "runs.csv", index=False)
    with pytest.warns(TopokitWarning, match="every run is of one network"):
        calibrate(tmp_path / "runs.csv", predictor="default")
    with warnings.catch_warnings():  # kept near its base, the refit rests on the prior
        warnings.simplefilter("error", TopokitWarning)
        warnings.simplefilter("ignore", StrangersExposedWarning)  # no DP device
        calibrate(tmp_path / "runs.csv", predictor="default", prior_strength=10)


def test_a_model_slower_than_any_fitted_gets_no_dp_device():
    """Beyond the slowest-learning model fitted (or unmeasured), no run vouches for DP devices:
    the search keeps to topologies without them (here still 1.29x predicted over NDLF)."""
    from topokit.training import load_digits, partition_class_counts

    siot32 = load_example("siot32")
    counts = partition_class_counts(load_digits()[1], siot32.n_devices, 0.8, 0,
                                    nodes=siot32.nodes)
    net = siot32.with_class_counts(counts)
    told = dict(model="mine", ceiling=0.95, epsilon=1, target=0.85)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TopokitWarning)
        inside = optimize(net, seed=0, workload=Workload(probe_rounds=27, **told))
        slower = optimize(net, seed=0, workload=Workload(probe_rounds=87, **told))
    assert inside.topology.dp_devices  # a trait inside the fit: DP links pay here
    assert not slower.topology.dp_devices
    assert slower.stats["ndlf_margin"]["dp_trusted"] is False
    assert slower.stats["workload"]["clamped"]["probe_rounds"] == {"given": 87.0, "used": 34.0}
    assert slower.stats["ndlf_margin"]["predicted_gain"] > 1.12  # pruning still gains


def test_dp_devices_for_a_model_without_runs_clear_the_safe_margin():
    """A model placed by its measured traits alone, with no run in the predictor, must have a
    design with DP devices predicted as clearly faster than NDLF as the safe weights ask
    (1.12), whatever its weights' own margin; a design without DP devices, a model the
    predictor has runs of, and a margin the user gives keep theirs."""
    from topokit import Topology
    from topokit.design._optimize import OptimizeOptions, _margin_for, _Weighted
    from topokit.design.trust import has_runs_of

    model = load_predictor("workload")
    told = dict(epsilon=4.0, target=0.85, ceiling=0.93, probe_rounds=5)
    with_dp = _Weighted(Topology([("A", "B")], ["A", "B"]), None, None)
    without_dp = _Weighted(Topology([("A", "B")]), None, None)

    def margin(searched, model_name, ndlf=None, **options):
        workload = Workload(model=model_name, **told)
        return _margin_for(searched, 1.0, model, OptimizeOptions(workload=workload, **options),
                           ndlf)

    assert has_runs_of(model, Workload(model="logreg")) and \
        not has_runs_of(model, Workload(model="rff"))
    assert margin(with_dp, "rff") == 1.12
    assert margin(with_dp, "logreg") == 1.0
    assert margin(without_dp, "rff") == 1.0
    # Without DP devices: NDLF's links reweighted keep the margin, other links raise it.
    ndlf_links = _Weighted(Topology([("A", "B"), ("B", "C")]), None, None)
    assert margin(without_dp, "rff", ndlf=ndlf_links) == UNRUN_REWIRING_MARGIN
    assert margin(without_dp, "rff", ndlf=without_dp) == 1.0
    assert margin(without_dp, "logreg", ndlf=ndlf_links) == 1.0
    assert margin(without_dp, "rff", ndlf=ndlf_links, ndlf_margin=1.0) == 1.0
    assert margin(with_dp, "rff", ndlf_margin=1.0) == 1.0
    calibrated = copy.deepcopy(load_predictor("default"))  # never the loader's own object
    calibrated.provenance_ = {**calibrated.provenance_,
                              "model_traits": {"model": "rff", "probe_rounds": 5.0}}
    assert has_runs_of(calibrated, Workload(model="rff"))
