"""Write the bundled underlay networks ``datasets/{gaia,aws_na,geant,exodus,ebone}.json``.

From the GML files of Marfoq et al. (``graph_utils/data`` of
https://github.com/omarfoq/communication-in-cross-silo-fl, Apache-2.0), with
:func:`topokit.network.underlays.load_underlay` at its defaults (their
iNaturalist settings); delays rounded to 1 microsecond and written one
delay-matrix row and one social link a line, to keep the files small::

    python -m analyses.make_underlay_networks --gml /path/to/graph_utils/data
    python -m analyses.make_underlay_networks --gml /path/to/graph_utils/data --check
    python -m analyses.make_underlay_networks --table   # the overlay table of the docs
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from topokit.network.core import Network
from topokit.network.formats import _compact_node_link_text
from topokit.network.underlays import UNDERLAYS, load_underlay

DATASETS = Path(__file__).resolve().parents[1] / "datasets"


def write_all(gml_dir: Path, out: Path) -> None:
    for name, (gml, silos) in UNDERLAYS.items():
        net = load_underlay(gml_dir / gml, name=name)
        net = Network(net.social, net.compute_time, np.round(net.delay, 6), name=name)
        assert net.n_devices == silos, (name, net.n_devices)
        (out / f"{name}.json").write_text(_compact_node_link_text(net))
        upper = net.delay[np.triu_indices(net.n_devices, 1)]
        print(f"{name}: {net.n_devices} silos, d_ij {upper.min() * 1e3:.1f}-"
              f"{upper.max() * 1e3:.1f} ms, r_i {net.compute_time[0] * 1e3:.1f} ms")


def overlay_table() -> None:
    """Cycle time and L (ms) of Marfoq et al.'s overlays on the bundled underlays."""
    from topokit.design.overlays import (
        cycle_time,
        mbst_overlay,
        mst_overlay,
        ring_overlay,
        ring_tour,
        round_times,
    )
    from topokit.network.examples import load_example

    print("| example | ring, one way | ring (= L) | MST (= L) | best delta-MBST (= L) |")
    for name in UNDERLAYS:
        net = load_example(name)
        tour = ring_tour(net)
        one_way = cycle_time(net, zip(tour, tour[1:] + tour[:1], strict=True))
        trees = [mbst_overlay(net, delta) for delta in range(2, net.n_devices)]
        best = min(trees, key=lambda tree: cycle_time(net, tree))
        times = [round_times(net, t) for t in (ring_overlay(net), mst_overlay(net), best)]
        assert all(abs(t.cycle_time - t.local_iterate) < 1e-12 for t in times)
        cells = [one_way] + [t.cycle_time for t in times]
        print(f"| `{name}` | " + " | ".join(f"{1e3 * value:.1f}" for value in cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gml", type=Path, help="folder of the GML files")
    parser.add_argument("--out", type=Path, default=DATASETS)
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temporary folder and compare with --out")
    parser.add_argument("--table", action="store_true",
                        help="print the overlay table of the docs from the bundled networks")
    args = parser.parse_args()
    if args.table:
        overlay_table()
        return
    if args.gml is None:
        parser.error("--gml is required (the folder of Marfoq et al.'s GML files)")
    if not args.check:
        write_all(args.gml, args.out)
        return
    with tempfile.TemporaryDirectory() as folder:
        write_all(args.gml, Path(folder))
        same = all((Path(folder) / f"{name}.json").read_bytes()
                   == (args.out / f"{name}.json").read_bytes() for name in UNDERLAYS)
    print("identical" if same else "DIFFERENT")


if __name__ == "__main__":
    main()
