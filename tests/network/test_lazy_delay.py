"""A network built from positions keeps its delays as the radio model until they are read.

``Network.from_positions`` (and loading a file that stores no delays) keeps the
positions and the model's settings; ``net.delay`` computes the n x n matrix when
first read, bit for bit the array of :func:`pairwise_delays`.  The checks of the
constructor read the delays only at the social links' pairs, and writing a file
of the model's delays never computes them: ``generate siot`` then holds no n x n
array.
"""

from __future__ import annotations

import pickle
import warnings

import networkx as nx
import numpy as np
import pytest

from topokit.errors import InvalidInputError, UnusableSocialLinksWarning
from topokit.network import physical
from topokit.network.core import Network, Topology
from topokit.network.formats import delay_form, load_network, save_network
from topokit.network.physical import pair_delays, pairwise_delays
from topokit.network.siot import siot


def _bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=np.float64).view(np.uint64)


def _random_model(n: int, seed: int) -> dict:
    """Positions spread over a few Wi-Fi ranges, mixed LTE-M categories, a range limit."""
    rng = np.random.default_rng(seed)
    return {"positions": rng.random((n, 2)) * 600.0,
            "lte": rng.choice(["cat-m1", "cat-m2"], size=n).tolist(),
            "wifi_range_m": 100.0, "max_range_m": 450.0}


def _eager(net: Network) -> Network:
    """The same network with its delays given as a matrix (as before they were lazy)."""
    model = net.physical_model
    delay = pairwise_delays(net.positions, model_size_mb=model["model_size_mb"],
                            lte=model["lte"], wifi_range_m=model["wifi_range_m"],
                            max_range_m=model["max_range_m"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSocialLinksWarning)
        return Network(net.social, net.compute_time, delay, positions=net.positions,
                       name=net.name, physical_model=model, class_counts=net.class_counts)


def _lazy(n: int = 300, seed: int = 0, **changes) -> Network:
    model = {**_random_model(n, seed), **changes}
    social = nx.gnp_random_graph(n, 0.05, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusableSocialLinksWarning)
        return Network.from_positions(social, model.pop("positions"), "rpi3", **model)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_pair_delays_are_the_entries_of_the_matrix(seed):
    """Every pair, including unreachable ones (inf), Wi-Fi ones and the diagonal."""
    model = _random_model(150, seed)
    positions = model.pop("positions")
    matrix = pairwise_delays(positions, **model)
    rows, cols = np.indices(matrix.shape).reshape(2, -1)
    pairs = pair_delays(positions, rows, cols, **model)
    assert np.array_equal(_bits(pairs), _bits(matrix.ravel()))
    assert np.isinf(pairs).any() and (pairs == physical.transfer_seconds(4.0, 72.2)).any()


def test_the_pair_delays_check_the_settings_as_the_matrix_does():
    with pytest.raises(InvalidInputError, match="lte"):
        pair_delays(np.zeros((2, 2)), [0], [1], lte="cat-m9")
    with pytest.raises(InvalidInputError, match="model_size_mb"):
        pair_delays(np.zeros((2, 2)), [0], [1], model_size_mb=0.0)


def test_a_lazy_network_reads_as_the_eager_delays_bit_for_bit():
    net = _lazy()
    assert net._delay_matrix is None  # built without its n x n delays
    eager = _eager(net)
    assert np.array_equal(_bits(net.delay), _bits(eager.delay))
    assert net.delay is net.delay and not net.delay.flags.writeable  # computed once


def test_the_constructor_checks_give_what_the_matrix_gives():
    """Unusable social links (a range limit) are found at the links' pairs alone."""
    net = _lazy(max_range_m=300.0)
    assert net._delay_matrix is None
    assert net.unusable_social_links == _eager(net).unusable_social_links != []
    with pytest.warns(UnusableSocialLinksWarning, match="infinite delay"):
        Network.from_positions(nx.path_graph(2), [[0.0, 0.0], [500.0, 0.0]], max_range_m=300.0)


def test_a_topology_is_validated_without_the_matrix():
    net = _lazy(max_range_m=300.0)
    far = next((u, v) for u, v in net.unusable_social_links)
    with pytest.raises(Exception, match="infinite delay"):
        Topology([far]).validate(net)
    assert net._delay_matrix is None


@pytest.mark.parametrize("close", [True, False])
def test_the_overflow_check_is_exact(close):
    """A model's bound that overflows falls back to the delays themselves: Wi-Fi pairs
    only (close) fit where the matrix fits; an LTE-M pair overflows as the matrix does."""
    positions = [[0.0, 0.0], [50.0, 0.0]] if close else [[0.0, 0.0], [500.0, 0.0]]
    settings = {"model_size_mb": 1e307}
    delay = pairwise_delays(np.array(positions), **settings)
    eager = lazy = None
    try:
        eager = Network(nx.path_graph(2), [1e308, 1e308], delay)
    except InvalidInputError as exc:
        with pytest.raises(InvalidInputError, match=str(exc)[:40]):
            Network.from_positions(nx.path_graph(2), positions, [1e308, 1e308], **settings)
    else:
        lazy = Network.from_positions(nx.path_graph(2), positions, [1e308, 1e308], **settings)
        assert np.array_equal(lazy.delay, eager.delay)
    assert (eager is None) == (not close)


def test_writing_the_model_form_never_computes_the_matrix(tmp_path, monkeypatch):
    """The same bytes as from the eager network, and the matrix never built."""
    net = siot(400, seed=2)
    eager = _eager(net)
    eager_path = save_network(eager, tmp_path / "eager.json")

    def never(self):
        raise AssertionError("the n x n delays were computed")

    with monkeypatch.context() as patch:
        patch.setattr(physical._ModelDelays, "matrix", never)
        assert delay_form(net).kind == "model"
        lazy_path = save_network(net, tmp_path / "lazy.json")
        gz_path = save_network(net, tmp_path / "lazy.graphml.gz")
        loaded = load_network(lazy_path)
        assert loaded._delay_matrix is None  # loading a model-form file keeps it lazy
        assert loaded == net  # equal by the model, still without the matrix
    assert net._delay_matrix is None
    assert lazy_path.read_bytes() == eager_path.read_bytes()
    assert np.array_equal(_bits(load_network(gz_path).delay), _bits(eager.delay))
    assert np.array_equal(_bits(loaded.delay), _bits(eager.delay))


def test_explicit_delays_are_still_compared_to_the_model(tmp_path):
    """A network given a matrix that differs from its model's by one pair is not written in
    the model form (as before)."""
    net = siot(300, seed=1)
    delay = np.array(net.delay)
    delay[0, 1] = delay[1, 0] = delay[0, 1] + 1.0
    changed = Network(net.social, net.compute_time, delay, positions=net.positions,
                      physical_model=net.physical_model)
    assert delay_form(changed).kind != "model"
    assert delay_form(_eager(net)).kind == "model"


def test_pickling_keeps_a_lazy_network_lazy():
    net = _lazy(400)
    data = pickle.dumps(net)
    assert len(data) < 8 * 400 * 400 / 4  # no n x n delays inside
    back = pickle.loads(data)
    assert back._delay_matrix is None and net._delay_matrix is None
    assert back == net and net._delay_matrix is None
    assert np.array_equal(_bits(back.delay), _bits(_eager(net).delay))


def test_equality_of_lazy_and_eager_networks():
    net, other = _lazy(seed=3), _lazy(seed=3)
    assert net == other and net._delay_matrix is None  # the same model: no matrix needed
    assert net == _eager(net) and _eager(net) == net
    moved = _lazy(seed=3, wifi_range_m=50.0)
    assert net != moved


def test_copies_share_the_model_and_its_computed_delays():
    net = _lazy()
    copy = net.with_class_counts([[1, 2]] * net.n_devices)
    assert copy._delay_matrix is None and copy == net.with_class_counts(copy.class_counts)
    matrix = net.delay
    assert net.with_topology(None)._delay_matrix is matrix
    assert np.array_equal(copy.delay, matrix)


def test_a_network_pickled_with_its_delays_as_an_attribute_still_unpickles():
    """A pickle of the earlier layout (the matrix under "delay") reads back equal."""
    net = Network(nx.path_graph(3), [1.0] * 3, [[0, 2, 5], [2, 0, 3], [5, 3, 0]])
    state = dict(net.__dict__)
    state["delay"] = state.pop("_delay_matrix")
    del state["_delay_model"]
    old = Network.__new__(Network)
    old.__setstate__(state)
    assert old == net and old.delay.tolist() == net.delay.tolist()
    assert pickle.loads(pickle.dumps(old)) == net
