"""Social links with infinite delay: said once when the network is built, listed in designs."""

from __future__ import annotations

import warnings

import networkx as nx
import numpy as np
import pytest

from topokit import optimize
from topokit.design.baselines import ndlf
from topokit.design.report import StrangerAudit, design_record
from topokit.errors import UnusableSocialLinksWarning
from topokit.network.core import Network


def _five_devices() -> tuple[nx.Graph, list[float], np.ndarray]:
    """A 5-cycle plus the chord 0-2, whose delay is inf (6 social links, 5 usable)."""
    social = nx.cycle_graph(5)
    social.add_edge(0, 2)
    delay = np.full((5, 5), 2.0)
    delay[0, 2] = delay[2, 0] = np.inf
    return social, [10.0] * 5, delay


def test_the_infinite_delay_social_link_is_named_once_and_left_out_of_every_design():
    with pytest.warns(UnusableSocialLinksWarning) as caught:
        net = Network(*_five_devices(), name="five")
    ours = [w for w in caught if issubclass(w.category, UnusableSocialLinksWarning)]
    assert len(ours) == 1
    message = str(ours[0].message)
    assert message.startswith("1 social link has infinite delay and cannot be used (0-2)")
    assert "NDLF and every design leave them out" in message
    assert "give them a finite delay" in message
    assert ours[0].filename == __file__  # points at the user's line
    assert net.unusable_social_links == [(0, 2)]

    assert net.social.number_of_edges() == 6
    assert ndlf(net).n_links == 5
    assert (0, 2) not in ndlf(net).edges

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusableSocialLinksWarning)  # copies say nothing
        copy = net.with_class_counts([[1, 1]] * 5).with_topology(None)
        chosen = optimize(copy, seed=0)
    record = design_record(copy, "autotag", chosen, {}, StrangerAudit(0, 1.0))
    assert record["unusable_social_links"] == [[0, 2]]
    assert [0, 2] not in record["topology"]["edges"]


def test_many_infinite_delay_links_are_counted_and_the_first_few_shown():
    social = nx.complete_graph(5)
    delay = np.full((5, 5), np.inf)
    delay[0, 1] = delay[1, 0] = delay[1, 2] = delay[2, 1] = 1.0
    with pytest.warns(UnusableSocialLinksWarning,
                      match=r"^8 social links have infinite delay and cannot be used "
                            r"\(0-2, 0-3, 0-4, and 5 more\)"):
        net = Network(social, [1.0] * 5, delay)
    assert len(net.unusable_social_links) == 8


def test_a_network_without_such_links_says_nothing_and_records_an_empty_list(recwarn):
    social, compute, delay = _five_devices()
    delay[0, 2] = delay[2, 0] = 3.0
    net = Network(social, compute, delay)
    assert not [w for w in recwarn if issubclass(w.category, UnusableSocialLinksWarning)]
    assert net.unusable_social_links == []
