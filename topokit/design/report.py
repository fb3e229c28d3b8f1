"""What a design is reported with: every reference design's metrics beside it, and what
strangers learn from each (``topokit design``, ``topokit analyze``, the HTTP service)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from ..errors import InvalidInputError

__all__ = ["StrangerAudit", "STRANGER_KEYS", "baseline_topologies", "metric_columns",
           "reference_judge", "design_record"]

#: The privacy audit's summary entries that design and analyze show for every topology.
STRANGER_KEYS = ("exposed_stranger_pairs", "stranger_mu_max")


class StrangerAudit(NamedTuple):
    """The network-privacy audit that design and analyze run on every topology they show.

    Partial DP protects a device only against its direct neighbours; this says
    what strangers learn through the gossip (``topokit audit`` gives every pair).
    """

    rounds: int                # T; 0 runs no audit
    noise_multiplier: float    # z of every DP device
    model: str = "gossip"      # the audit's model: one private value, or D-SGD's every round

    def columns(self, net, topology,
                noise_multiplier: float | Mapping[Any, float] | None = None,
                progress: Callable[[int, int], Any] | None = None) -> dict[str, Any]:
        """``STRANGER_KEYS`` of the audit of ``topology`` (nothing when rounds is 0), at
        ``noise_multiplier`` if given (a bounded design's own levels: z* or device -> z),
        else the audit's z; ``progress(done, total)`` after each observer."""
        if self.rounds == 0:
            return {}
        from ..audit.core import stranger_summary

        z = self.noise_multiplier if noise_multiplier is None else noise_multiplier
        summary = stranger_summary(net, topology, rounds=self.rounds, noise_multiplier=z,
                                   model=self.model, progress=progress)
        return {key: summary[key] for key in STRANGER_KEYS}

    def settings(self) -> dict[str, Any]:
        """What the audit columns mean, for the JSON outputs."""
        from ..audit.core import privacy_audit

        knows = privacy_audit.__kwdefaults__["observer_knows_own_noise"]
        return {"rounds": self.rounds, "noise_multiplier": self.noise_multiplier,
                "model": self.model, "observer_knows_own_noise": knows}


def baseline_topologies(net, design, *, seed: int) -> dict[str, Any]:
    """The baselines next to an AutoTag design: NDLF, DLFDP and DeepPrivacy-ERG."""
    from ..design.baselines import dlfdp, erg, ndlf

    topologies = {"NDLF": ndlf(net), "DLFDP": dlfdp(net)}
    try:
        topologies["ERG"] = erg(net, seed=seed, reference=design)
    except InvalidInputError:
        pass  # no connected random graph with AutoTag's link count: nothing to compare
    return topologies


def metric_columns(net, topologies: dict[str, Any], predictor, *, audit: StrangerAudit,
                   chosen=None, progress: Callable[[int, int], Any] | None = None,
                   noise: Mapping[str, Mapping[Any, float]] | None = None
                   ) -> dict[str, dict[str, Any]]:
    """One column of metrics per topology, each with its stranger audit (if asked for).

    optimize's design (``chosen``, column ``"optimize"``) is shown as optimize
    made it: its metrics and its audit at the noise it decided (``Design.noise``;
    in designs made before that record, a stranger bound's z* or each DP
    device's own level).  ``progress(done, total)`` is called
    after each observer of each audit (total: topologies x devices), which is
    where the time goes on large networks.  ``noise`` (column -> device -> z)
    audits a column at its own levels (a design file's) instead of the audit's z.
    """
    return dict(_metric_columns_in_turn(net, topologies, predictor, audit=audit,
                                        chosen=chosen, progress=progress, noise=noise))


def _metric_columns_in_turn(net, topologies: dict[str, Any], predictor, *,
                            audit: StrangerAudit, chosen=None,
                            progress: Callable[[int, int], Any] | None = None,
                            noise: Mapping[str, Mapping[Any, float]] | None = None
                            ) -> Iterator[tuple[str, dict[str, Any]]]:
    """:func:`metric_columns`' (label, column) pairs, each as soon as it is audited: an
    interrupted report keeps the columns done."""
    from ..design.metrics import evaluate

    bound = None if chosen is None else chosen.stats.get("stranger_bound")
    total = len(topologies) * net.n_devices

    def column(k: int, name: str, topology) -> dict[str, Any]:
        observed = None if progress is None else (
            lambda done, _: progress(k * net.n_devices + done, total))
        if chosen is not None and name == "optimize":
            if chosen.noise is not None:
                levels = chosen.noise_multipliers
            elif bound is not None:
                levels = bound.get("noise_multipliers", bound["noise_multiplier"])
            else:
                levels = None
            return {**chosen.metrics.to_dict(),
                    **audit.columns(net, chosen.topology, levels, observed)}
        return {**evaluate(net, topology, predictor).to_dict(),
                **audit.columns(net, topology, (noise or {}).get(name), observed)}

    for k, (name, topology) in enumerate(topologies.items()):
        yield name, column(k, name, topology)


def reference_judge(chosen, given: Any = None):
    """The predictor that judges the reference designs beside optimize's ``chosen``: the one
    that judged it, at the workload it designed for (its record); else ``given`` (a name,
    path or predictor; None: ``"default"``)."""
    from ..design.time_predictor import KIND, TrainingTimePredictor, load_predictor

    record = (chosen.predictor or {}).get("record") or {}
    if record.get("kind") == KIND:
        return TrainingTimePredictor.from_dict(record)
    return load_predictor("default" if given is None else given)


def design_record(net, method: str, chosen, columns: dict, audit: StrangerAudit
                  ) -> dict[str, Any]:
    """What a design run reports, the same from ``topokit design -o`` and the service: the
    design's record (:meth:`~topokit.design.Design.to_dict`), the reference columns,
    the audit's settings and the social links no design could use (infinite delay)."""
    from ..design.result import DESIGN_FORMAT
    from ..network.core import Topology

    # Topology.to_dict writes the pairs as plain JSON values, as the design's own links.
    unusable = Topology(net.unusable_social_links).to_dict()["edges"]
    return {"format": DESIGN_FORMAT, "network": net.name, "method": method,
            **chosen.to_dict(), "baselines": columns, "stranger_audit": audit.settings(),
            "unusable_social_links": unusable}
