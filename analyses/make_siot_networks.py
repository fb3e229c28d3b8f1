"""Build the bundled Santander SIoT files and print the statistics they rely on.

From the full static-devices file of the Santander SIoT data set
(Net4uCA/SIoT-IoT-Dataset; cite C. Marche, L. Atzori, V. Pilloni, M. Nitti,
Computer Networks 174 (2020) 107248), this script

1. prints the statistics of the real data used by ``topokit.datasets``
   (counts, owners per size, type sets, public layout, OOR component sizes for
   several ranges and scales, the metres-per-unit calibration);
2. writes ``datasets/siot16.json``, ``siot32.json``, ``siot100.json``: OOR
   networks extracted at random with ``siot_oor_network`` (seeds 16, 32, 100,
   default settings);
3. writes ``datasets/siot_extract.csv``: the devices of those networks plus
   every device inside a fixed window of the city (the repository has no
   licence, so only this extract is bundled).

The output is deterministic: running it twice gives the same bytes.
``--check`` rebuilds into a temporary folder and compares with ``--out``.

Run: python -m analyses.make_siot_networks --data /path/to/static_devices.csv
     (or a folder with the original objects_description.csv,
     private_static_devices.csv, public_static_devices.csv; or set
     TOPOKIT_SIOT_DATA)
"""

from __future__ import annotations

import argparse
import filecmp
import os
import sys
import tempfile
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from topokit._io import atomic_write_text
from topokit.network.formats import save_network
from topokit.network.siot import (
    DEFAULT_METRES_PER_UNIT,
    DEFAULT_PUBLIC_RANGE_M,
    RADIO_RANGES_M,
    SIOT_CITATION,
    SIOT_COLUMNS,
    load_siot_devices,
    siot_oor_network,
    siot_statistics,
)

DATASETS = Path(__file__).resolve().parents[1] / "datasets"
#: Bundled network sizes; each uses its size as seed.
SIZES = (16, 32, 100)
#: The extract's window of the unit square (x0, x1, y0, y1): a strip of the city
#: with private homes and public devices, for tests of the loader and the OOR rules.
WINDOW = (0.55, 0.70, 0.45, 0.55)
FILES = tuple(f"siot{n}.json" for n in SIZES) + ("siot_extract.csv",)


def bundled_networks(devices: pd.DataFrame) -> dict[int, object]:
    """The bundled networks: ``siot_oor_network(devices, n, seed=n)``, default settings."""
    return {n: siot_oor_network(devices, n, seed=n, name=f"siot{n}") for n in SIZES}


def extract(devices: pd.DataFrame, networks: dict) -> pd.DataFrame:
    """Devices of the bundled networks plus every device inside :data:`WINDOW`."""
    x0, x1, y0, y1 = WINDOW
    inside = devices["x"].between(x0, x1) & devices["y"].between(y0, y1)
    used = devices["id_device"].isin({node for net in networks.values() for node in net.nodes})
    return devices.loc[inside | used, list(SIOT_COLUMNS)].reset_index(drop=True)


def write_extract(table: pd.DataFrame, path: Path) -> None:
    header = (
        "# Extract of the Santander SIoT data set, static devices (Net4uCA/SIoT-IoT-Dataset).\n"
        f"# Cite: {SIOT_CITATION}.\n"
        "# No licence is stated by the source: only this small extract is bundled.\n"
        "# Made by analyses/make_siot_networks.py; provenance in datasets/README.md.\n"
    )
    atomic_write_text(path, header + table.to_csv(index=False, lineterminator="\n"))


def build(devices: pd.DataFrame, out: Path) -> None:
    networks = bundled_networks(devices)
    for n, net in networks.items():
        save_network(net, out / f"siot{n}.json")
    write_extract(extract(devices, networks), out / "siot_extract.csv")


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------

def print_statistics(devices: pd.DataFrame) -> None:
    stats = siot_statistics(devices)
    print("== Santander SIoT static devices (full file) ==")
    for key in ("n_devices", "n_private", "n_public", "n_owners", "owners_by_size",
                "colocated_owners", "public_type_counts"):
        print(f"{key}: {stats[key]}")
    type_sets = sorted(stats["owner_type_sets"].items(), key=lambda kv: (len(kv[0]), kv[0]))
    print("owner_type_sets:", dict(type_sets))
    larger = sum(v for k, v in stats["owners_by_size"].items() if k > 3)
    print("owners with more than 3 static devices:", larger)
    print("\n-- public layout per type (units): mean x, mean y, sd x, sd y, median NN --")
    public = devices[devices["public"] == 1]
    for device_type, group in public.groupby("device_type"):
        xy = group[["x", "y"]].to_numpy()
        nn = np.median(cKDTree(xy).query(xy, k=2)[0][:, 1])
        print(f"type {device_type}: n={len(group)}", np.round(xy.mean(0), 4),
              np.round(xy.std(0, ddof=1), 4), f"{nn:.6f}",
              f"= {nn * DEFAULT_METRES_PER_UNIT:.1f} m at {DEFAULT_METRES_PER_UNIT:.0f} m/unit")
    print("\n-- metres-per-unit calibration --")
    nn14 = stats["public_nn_median"][14]
    nn15 = stats["public_nn_median"][15]
    print(f"street lights: median NN {nn14:.6f} units; 25-40 m pole spacing -> "
          f"{25 / nn14:.0f}-{40 / nn14:.0f} m per unit")
    print(f"parking sensors: median NN {nn15:.6f} units; 2.5-6 m per space -> "
          f"{2.5 / nn15:.0f}-{6 / nn15:.0f} m per unit")
    print(f"default {DEFAULT_METRES_PER_UNIT:.0f} m per unit: unit square = "
          f"{(DEFAULT_METRES_PER_UNIT / 1000) ** 2:.0f} km^2 "
          "(municipality of Santander: 34.8 km^2)")
    print("\n-- OOR components (default: "
          f"{DEFAULT_METRES_PER_UNIT:.0f} m/unit, {DEFAULT_PUBLIC_RANGE_M:.0f} m) --")
    sizes = stats["oor_component_sizes"]
    print(f"components of 2+ devices: {len(sizes)}; largest ten: {sizes[:10]}")
    print(f"components among public devices: {stats['public_oor_component_sizes']}")
    print("each private owner is its own OOR component, a clique of its 1-3 static devices: "
          f"{stats['owners_by_size']} (devices -> owners); no private device is linked to "
          "another owner's, so connected OOR networks of 4+ devices are all public")
    print("\n-- public OOR components for other ranges and scales (largest five) --")
    for metres_per_unit in (3000.0, DEFAULT_METRES_PER_UNIT, 9000.0):
        for label, range_m in RADIO_RANGES_M.items():
            other = siot_statistics(
                devices, metres_per_unit=metres_per_unit, public_range_m=range_m
            )
            components = other["public_oor_component_sizes"]
            print(f"{metres_per_unit:6.0f} m/unit, {label:9s} {range_m:6.0f} m: "
                  f"{len(components)} components, largest {components[:5]}")


def print_networks(devices: pd.DataFrame, out: Path) -> None:
    print("\n== bundled networks ==")
    from topokit.network.formats import load_network

    owners = devices.set_index("id_device")["id_user"]
    for n in SIZES:
        net = load_network(out / f"siot{n}.json")
        pairs = np.triu_indices(n, 1)
        wifi = float(np.mean(net.delay[pairs] < 1.0))
        classes = pd.Series(net.compute_time).map({770.0: "rpi2", 312.0: "rpi3", 114.0: "rpi4"})
        print(f"siot{n}: {net.social.number_of_edges()} links, "
              f"density {nx.density(net.social):.2f}, "
              f"connected {nx.is_connected(net.social)}, public devices "
              f"{int((owners.loc[net.nodes] == 0).sum())}/{n}, "
              f"pairs within Wi-Fi range {wifi:.1%}, "
              f"classes {classes.value_counts().sort_index().to_dict()}, "
              f"cat-m2 {sum(c == 'cat-m2' for c in net.physical_model['lte'])}")
    table = load_siot_devices(out / "siot_extract.csv")
    print(f"siot_extract.csv: {len(table)} devices ({int(table['public'].sum())} public, "
          f"{table.loc[table['public'] == 0, 'id_user'].nunique()} private owners)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("TOPOKIT_SIOT_DATA"),
                        help="full static_devices.csv, or a folder with the original files")
    parser.add_argument("--out", type=Path, default=DATASETS,
                        help="output folder (default datasets/)")
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temporary folder and compare bytes with --out")
    parser.add_argument("--quiet", action="store_true", help="do not print the statistics")
    args = parser.parse_args(argv)
    if not args.data:
        parser.error("give --data PATH (the full static_devices.csv) or set TOPOKIT_SIOT_DATA")
    devices = load_siot_devices(args.data)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            build(devices, Path(tmp))
            different = [
                name for name in FILES
                if not (args.out / name).is_file()
                or not filecmp.cmp(Path(tmp) / name, args.out / name, shallow=False)
            ]
        print("identical" if not different else f"DIFFERENT: {', '.join(different)}")
        return 1 if different else 0
    build(devices, args.out)
    if not args.quiet:
        print_statistics(devices)
        print_networks(devices, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
