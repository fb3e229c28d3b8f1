"""Social-IoT networks: the Santander SIoT static devices, a generator, networkx graphs.

DeepPrivacy (Ching et al., Sec. VI-A) takes its networks from the Santander
Social-IoT data set: ownership object relations (OOR) among *static* devices,
with 16- and 32-device connected social networks "extracted at random".  This
module rebuilds that pipeline on the real data and generalises it.

- :func:`load_siot_devices`: the static devices (a small bundled extract, or the
  user's own full copy of the data set).
- :func:`siot_oor_graph`: the data set's OOR relation among static devices.
- :func:`siot_oor_network`: a connected ``n``-device OOR network extracted at
  random, as a :class:`~topokit.design.Network` (positions, Raspberry Pi
  classes, LTE-M categories).
- :func:`siot_synthetic_devices` / :func:`siot`: a synthetic city with the data
  set's measured structure, and networks of any size extracted from it.
- :func:`from_networkx`: any networkx graph as a social network.

Data source
-----------
Net4uCA/SIoT-IoT-Dataset (GitHub).  Cite C. Marche, L. Atzori, V. Pilloni,
M. Nitti, "How to exploit the Social Internet of Things: Query Generation Model
and Device Profiles' Dataset", Computer Networks 174 (2020) 107248.  The
repository states no licence, so topokit bundles only a small extract
(``datasets/siot_extract.csv``, provenance in ``datasets/README.md``);
point :func:`load_siot_devices` at your own copy for the full data.

Measured facts (static devices of the full data set; reproduce with
``python analyses/make_siot_networks.py --data static_devices.csv``):
7,546 static devices, 6,080 private and 1,466 public; 3,761 private owners with
1 (1,695), 2 (1,813) or 3 (253) static devices, every owner's devices at one
position.  Under OOR a private owner's devices form an isolated clique of at
most 3 devices, so **every connected OOR network of 4 or more devices consists
of public (municipal) devices only**; with the default scale and range
(6,000 m per unit, 400 m) the public devices form 8 OOR components, the
largest holding 1,430 of the 1,466.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from .._checks import (
    check_connected,
    check_fits_in_memory,
    check_int,
    check_positive,
    check_real,
    shown,
)
from .._random import SeedLike, spawn_generators
from ..errors import InputFileError, InputFileNotFoundError, InvalidInputError
from . import physical
from .core import Network

__all__ = [
    "SIOT_COLUMNS",
    "SIOT_CITATION",
    "RADIO_RANGES_M",
    "DEFAULT_METRES_PER_UNIT",
    "DEFAULT_PUBLIC_RANGE_M",
    "load_siot_devices",
    "siot_oor_graph",
    "siot_oor_network",
    "siot_synthetic_devices",
    "siot_statistics",
    "siot",
    "from_networkx",
]

#: The columns of the Santander SIoT static-device table that topokit reads.
SIOT_COLUMNS = (
    "id_device", "id_user", "public", "device_type", "device_brand", "device_model", "x", "y",
)
#: Where the SIoT data comes from: cite it with results on it.
SIOT_CITATION = (
    "C. Marche, L. Atzori, V. Pilloni, M. Nitti, \"How to exploit the Social Internet of Things: "
    "Query Generation Model and Device Profiles' Dataset\", Computer Networks 174 (2020) 107248; "
    "data: github.com/Net4uCA/SIoT-IoT-Dataset"
)

#: Radio ranges of the data set's OOR rule for public static devices (its README).
RADIO_RANGES_M = {"lora": 1500.0, "wifi": 400.0, "bluetooth": 40.0}

#: Metres per unit of the data set's unit square (our assumption; see :func:`siot_oor_network`).
DEFAULT_METRES_PER_UNIT = 6000.0

#: OOR range among public static devices: the data set's Wi-Fi range.
DEFAULT_PUBLIC_RANGE_M = RADIO_RANGES_M["wifi"]

#: Private static device types of the data set: PC, printer, home sensors.
PRIVATE_STATIC_TYPES = {6: "pc", 7: "printer", 8: "home sensors"}
#: Public static device types of the data set.
PUBLIC_STATIC_TYPES = {
    9: "point of interest", 10: "environment/weather", 12: "indicator",
    14: "street light", 15: "parking", 16: "alarms",
}

#: Owners per set of static device types, counted on the full file (3,761 owners:
#: 1,695 with one static device, 1,813 with two, 253 with three).
OWNER_TYPE_SETS = {
    (6,): 1340, (7,): 307, (8,): 48,
    (6, 7): 1514, (6, 8): 253, (7, 8): 46,
    (6, 7, 8): 253,
}

#: Public static devices per type, counted on the full file (1,466 in all).
PUBLIC_TYPE_COUNTS = {9: 95, 10: 140, 12: 10, 14: 506, 15: 677, 16: 38}

#: Layout of each public type on the full file, in units of the unit square:
#: mean x, mean y, sample std x, std y, median nearest-neighbour distance
#: within the type.
PUBLIC_TYPE_LAYOUT = {
    9: (0.6119, 0.4896, 0.2196, 0.1039, 0.013766),
    10: (0.7020, 0.5256, 0.1507, 0.1458, 0.007495),
    12: (0.8385, 0.5160, 0.0436, 0.0199, 0.016501),
    14: (0.6516, 0.4523, 0.1650, 0.1076, 0.004740),
    15: (0.8363, 0.5175, 0.0368, 0.0256, 0.000445),
    16: (0.2661, 0.3743, 0.0736, 0.1812, 0.000756),
}

#: Devices per deployment cluster in the synthetic city (a modelling choice).
_CLUSTER_SIZE = 25
#: Cluster spread = this factor x the type's measured nearest-neighbour distance;
#: for a Gaussian cluster of 25 points it brings the synthetic nearest-neighbour
#: distance close to the measured one.
_CLUSTER_SPREAD = 3.0

_DEVICE_CLASSES = tuple(sorted(physical.DEVICE_COMPUTE_SECONDS))
_ORIGINAL_FILES = (
    "objects_description.csv", "private_static_devices.csv", "public_static_devices.csv",
)


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------

def _bundled_extract() -> Path:
    from .examples import data_dir

    return data_dir() / "siot_extract.csv"


def load_siot_devices(path: str | Path | None = None) -> pd.DataFrame:
    """Read the static devices of the Santander SIoT data set.

    Parameters
    ----------
    path : str or Path, optional
        ``None`` reads the small bundled extract (``datasets/siot_extract.csv``).
        A CSV file must have the columns :data:`SIOT_COLUMNS` (the joined
        ``static_devices.csv`` layout; ``#`` starts a comment line).  A folder
        must hold either ``static_devices.csv`` or the original repository's
        ``objects_description.csv``, ``private_static_devices.csv`` and
        ``public_static_devices.csv`` (unzipped; comma- or space-separated, with
        or without a header row), which are joined on ``id_device``.

    Returns
    -------
    pandas.DataFrame
        One row per static device, columns :data:`SIOT_COLUMNS` (integers, and
        float positions in the unit square), sorted by ``id_device``.
        ``id_user`` 0 is the municipality (public devices).

    Raises
    ------
    InputFileNotFoundError
        If the file or folder does not exist.
    InputFileError
        If a column is missing, a value is not numeric, ids repeat or
        positions are not finite.

    Notes
    -----
    Source: Net4uCA/SIoT-IoT-Dataset; cite :data:`SIOT_CITATION`.
    """
    if path is None:
        path = _bundled_extract()
    path = Path(path)
    if not path.exists():
        raise InputFileNotFoundError(
            f"no such file or folder: {path}; give the joined static_devices.csv, or a folder "
            f"with {', '.join(_ORIGINAL_FILES)}"
        )
    if path.is_dir():
        joined = path / "static_devices.csv"
        if joined.is_file():
            return load_siot_devices(joined)
        return _load_original_files(path)
    try:
        table = pd.read_csv(path, comment="#", skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{path}: not a readable CSV file: {exc}") from None
    return _check_devices(table, str(path))


def _read_table(path: Path, names: list[str]) -> pd.DataFrame:
    """A comma- or whitespace-separated table with an optional header row."""
    try:
        table = pd.read_csv(path, sep=r"[,;\s]+", engine="python", header=None, comment="#")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{path}: not a readable table: {exc}") from None
    if table.shape[1] < len(names):
        raise InputFileError(
            f"{path}: expected {len(names)} columns ({', '.join(names)}); got {table.shape[1]}"
        )
    table = table.iloc[:, : len(names)]
    table.columns = names
    first = pd.to_numeric(table.iloc[0], errors="coerce") if len(table) else None
    if first is not None and first.isna().any():  # a header row
        table = table.iloc[1:]
    return table.apply(pd.to_numeric, errors="coerce").reset_index(drop=True)


def _load_original_files(folder: Path) -> pd.DataFrame:
    missing = [name for name in _ORIGINAL_FILES if not (folder / name).is_file()]
    if missing:
        raise InputFileNotFoundError(
            f"{folder} holds neither static_devices.csv nor the original files; missing "
            f"{', '.join(missing)} (unzip them from Net4uCA/SIoT-IoT-Dataset)"
        )
    objects = _read_table(folder / _ORIGINAL_FILES[0], list(SIOT_COLUMNS[:2] + SIOT_COLUMNS[3:6]))
    positions = pd.concat(
        [_read_table(folder / name, ["id_device", "x", "y"]) for name in _ORIGINAL_FILES[1:]],
        ignore_index=True,
    )
    table = positions.merge(objects, on="id_device", how="left")
    unknown = table["id_user"].isna()
    if unknown.any():
        raise InputFileError(
            f"{folder}: device {shown(table.loc[unknown, 'id_device'].iloc[0])} has a position "
            "but no row in objects_description.csv"
        )
    table["public"] = (table["id_user"] == 0).astype(np.int64)
    return _check_devices(table[list(SIOT_COLUMNS)], str(folder))


def _check_devices(table: pd.DataFrame, source: str) -> pd.DataFrame:
    """Validate a device table and return a clean copy (typed, sorted by id)."""
    if not isinstance(table, pd.DataFrame):
        raise InvalidInputError(
            f"devices must be a pandas.DataFrame with columns {', '.join(SIOT_COLUMNS)}; "
            f"got {type(table).__name__}. Load one with topokit.datasets.load_siot_devices()."
        )
    missing = [column for column in SIOT_COLUMNS if column not in table.columns]
    if missing:
        raise InputFileError(
            f"{source}: missing column(s) {', '.join(missing)}; expected {', '.join(SIOT_COLUMNS)} "
            f"and got {', '.join(map(str, table.columns))}"
        )
    if len(table) == 0:
        raise InputFileError(f"{source}: no devices")
    clean = pd.DataFrame(index=range(len(table)))
    for column in SIOT_COLUMNS:
        values = pd.to_numeric(table[column].reset_index(drop=True), errors="coerce")
        if values.isna().any():
            row = int(np.flatnonzero(values.isna().to_numpy())[0])
            raise InputFileError(
                f"{source}: column {column!r} must be numeric; row {row} holds "
                f"{shown(table[column].iloc[row])}"
            )
        if column in ("x", "y"):
            if not np.all(np.isfinite(values.to_numpy(dtype=np.float64))):
                raise InputFileError(f"{source}: column {column!r} has infinite values")
            clean[column] = values.astype(np.float64)
        else:
            if not np.all(values.to_numpy(dtype=np.float64) % 1 == 0):
                raise InputFileError(f"{source}: column {column!r} must hold integers")
            clean[column] = values.astype(np.int64)
    duplicated = clean["id_device"].duplicated()
    if duplicated.any():
        raise InputFileError(
            f"{source}: id_device {int(clean.loc[duplicated, 'id_device'].iloc[0])} appears more "
            "than once; every device needs its own id"
        )
    bad_public = ~clean["public"].isin([0, 1]) | ((clean["public"] == 1) != (clean["id_user"] == 0))
    if bad_public.any():
        row = clean.loc[bad_public].iloc[0]
        raise InputFileError(
            f"{source}: device {int(row['id_device'])} has public={int(row['public'])} and "
            f"id_user={int(row['id_user'])}; public devices (public=1) belong to id_user 0, the "
            "municipality, and private ones (public=0) to a user id > 0"
        )
    return clean.sort_values("id_device", kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# The OOR relation
# ---------------------------------------------------------------------------------------------

def _check_range(value: float | None, name: str) -> float | None:
    return None if value is None else check_positive(value, name)


def _oor_pairs(
    devices: pd.DataFrame,
    metres_per_unit: float,
    public_range_m: float,
    colocation_range_m: float | None,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Row-index pairs (i < j) of the OOR links, and of the optional co-location links."""
    owners = devices["id_user"].to_numpy()
    public = devices["public"].to_numpy() == 1
    rows = np.arange(len(devices), dtype=np.int64)
    # Same private owner: every pair of the owner's devices (a self-join on the owner).
    members = pd.DataFrame({"row": rows[~public], "owner": owners[~public]})
    joined = members.merge(members, on="owner", suffixes=("_i", "_j"))
    joined = joined[joined["row_i"] < joined["row_j"]]
    private_pairs = joined[["row_i", "row_j"]].to_numpy(dtype=np.int64).reshape(-1, 2)
    # Public devices within radio range of each other.
    xy = _metres(devices, metres_per_unit)
    public_rows = rows[public]
    found = cKDTree(xy[public_rows]).query_pairs(public_range_m, output_type="ndarray")
    public_pairs = public_rows[found] if len(found) else np.empty((0, 2), np.int64)
    oor = np.vstack([private_pairs, public_pairs])
    if colocation_range_m is None:
        clor = np.empty((0, 2), np.int64)
    else:
        clor = cKDTree(xy).query_pairs(colocation_range_m, output_type="ndarray")
        clor = clor.reshape(-1, 2)
        clor = clor[owners[clor[:, 0]] != owners[clor[:, 1]]]
    return np.sort(oor, axis=1).astype(np.int64), np.sort(clor, axis=1).astype(np.int64)


def _metres(devices: pd.DataFrame, metres_per_unit: float) -> NDArray[np.float64]:
    """Device positions in metres; refused when distances between them would overflow.

    The k-d tree squares coordinate differences: a scale that takes them beyond
    about 1e154 m gives infinite distances (and an error deep in scipy).
    """
    xy = devices[["x", "y"]].to_numpy() * metres_per_unit
    with np.errstate(over="ignore"):
        span = float(np.ptp(xy, axis=0).max()) if len(xy) else 0.0
        overflows = not np.isfinite(2.0 * span * span)
    if overflows:
        extent = float(np.ptp(devices[["x", "y"]].to_numpy(), axis=0).max())
        raise InvalidInputError(
            f"metres_per_unit={metres_per_unit:g} spreads the devices over {span:.3g} m, too "
            f"far to measure distances in floating point; use at most "
            f"{1e150 / max(extent, 1e-300):.3g} (the devices span {extent:.3g} units)"
        )
    return xy


def _adjacency(n: int, pairs: NDArray[np.int64]) -> sparse.csr_matrix:
    data = np.ones(2 * len(pairs), dtype=np.int8)
    rows = np.r_[pairs[:, 0], pairs[:, 1]]
    cols = np.r_[pairs[:, 1], pairs[:, 0]]
    matrix = sparse.csr_matrix((data, (rows, cols)), shape=(n, n))
    matrix.sum_duplicates()
    matrix.data[:] = 1
    return matrix


def siot_oor_graph(
    devices: pd.DataFrame,
    *,
    metres_per_unit: float = DEFAULT_METRES_PER_UNIT,
    public_range_m: float = DEFAULT_PUBLIC_RANGE_M,
    colocation_range_m: float | None = None,
) -> nx.Graph:
    """The SIoT data set's ownership object relation (OOR) among static devices.

    Rules (Net4uCA/SIoT-IoT-Dataset README, "Adjacency Matrices"): devices of
    the same owner are linked; public static devices (owner 0, the
    municipality) are linked only when within radio range of each other.

    Parameters
    ----------
    devices : pandas.DataFrame
        Static devices, as returned by :func:`load_siot_devices`.
    metres_per_unit : float
        Metres per unit of the data set's unit square (default 6,000; see
        :func:`siot_oor_network`).
    public_range_m : float
        Radio range of the public OOR rule in metres.  The data set uses LoRa
        (about 1,500 m), Wi-Fi (about 400 m) or Bluetooth (about 40 m)
        (:data:`RADIO_RANGES_M`); the default is Wi-Fi.
    colocation_range_m : float, optional
        Not part of OOR.  If given, static devices of *different* owners closer
        than this are also linked: a co-location object relation (C-LOR) among
        stationary devices as defined by Atzori et al., "The Social Internet of
        Things (SIoT)", Computer Networks 56 (2012).  It lets private owners
        join connected networks (under OOR alone they are isolated cliques).

    Returns
    -------
    networkx.Graph
        Nodes are ``id_device`` values with attributes ``id_user``, ``public``,
        ``device_type``, ``x``, ``y``; edges carry ``relation`` ("oor" or
        "clor").  An OOR pair within co-location range stays "oor".
    """
    devices = _check_devices(devices, "devices")
    metres_per_unit = check_positive(metres_per_unit, "metres_per_unit")
    public_range_m = check_positive(public_range_m, "public_range_m")
    colocation_range_m = _check_range(colocation_range_m, "colocation_range_m")
    oor, clor = _oor_pairs(devices, metres_per_unit, public_range_m, colocation_range_m)
    ids = devices["id_device"].to_numpy()
    graph = nx.Graph()
    for record in devices.itertuples(index=False):
        graph.add_node(
            int(record.id_device), id_user=int(record.id_user), public=int(record.public),
            device_type=int(record.device_type), x=float(record.x), y=float(record.y),
        )
    graph.add_edges_from(((int(ids[i]), int(ids[j])) for i, j in clor), relation="clor")
    graph.add_edges_from(((int(ids[i]), int(ids[j])) for i, j in oor), relation="oor")
    return graph


# ---------------------------------------------------------------------------------------------
# Random extraction of a connected network
# ---------------------------------------------------------------------------------------------

def _check_network_size(n: int) -> None:
    """Refuse a device count whose n x n delays cannot fit in memory.

    Building the network holds none of them (it keeps the positions and the
    radio model; see :attr:`Network.delay`), but every design and analysis
    reads its delays, one n x n float64 array (computed a block of rows at a
    time); the synthetic city behind :func:`siot` is far smaller.
    """
    check_fits_in_memory(
        8 * n * n, f"n_devices={n} devices (their n x n delays)", "use fewer devices"
    )


def _component_sizes(adjacency: sparse.csr_matrix) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Component label of every node and the size of every component."""
    _, labels = connected_components(adjacency, directed=False)
    return labels, np.bincount(labels)


#: How to get a large enough OOR component, said when none is (the CLI names its options).
NO_COMPONENT_FIX = ("Ask for fewer devices, a larger public_range_m, or set colocation_range_m to "
                    "let private owners join.")


def _grow_connected(
    adjacency: sparse.csr_matrix, n: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Rows of a random connected ``n``-set: a uniform seed, then uniform frontier draws."""
    labels, sizes = _component_sizes(adjacency)
    eligible = np.flatnonzero(sizes[labels] >= n)
    if len(eligible) == 0:
        raise InvalidInputError(
            f"no connected component holds {n} devices; the largest holds {int(sizes.max())}. "
            + NO_COMPONENT_FIX
        )
    chosen = [int(eligible[rng.integers(len(eligible))])]
    frontier = _Frontier(adjacency, chosen[0])
    while len(chosen) < n:
        node = frontier.take(int(rng.integers(frontier.size)))
        chosen.append(node)
    return np.sort(np.array(chosen, dtype=np.int64))


class _Frontier:
    """The devices linked to a growing set but not in it, drawn by rank in row order.

    ``take(k)`` removes and returns the ``k``-th smallest row of the frontier, what
    ``np.flatnonzero(frontier & ~inside)[k]`` gives, and adds that row's neighbours.
    Rows are counted per block of about sqrt(rows), so a draw costs O(sqrt(rows)),
    not a pass over every row: ``siot(20000)`` grows its set from a city of 150,000
    devices.
    """

    def __init__(self, adjacency: sparse.csr_matrix, start: int):
        rows = adjacency.shape[0]
        self._indptr, self._indices = adjacency.indptr, adjacency.indices
        self._block = max(64, int(np.sqrt(rows)))
        self._open = np.zeros(rows, dtype=bool)  # in the frontier, not in the set
        self._inside = np.zeros(rows, dtype=bool)
        self._counts = np.zeros(-(-rows // self._block), dtype=np.int64)
        self.size = 0
        self._inside[start] = True
        self._add_neighbours(start)

    def _add_neighbours(self, row: int) -> None:
        linked = self._indices[self._indptr[row]:self._indptr[row + 1]]
        new = linked[~(self._open[linked] | self._inside[linked])]  # CSR rows: no repeats
        self._open[new] = True
        self._counts += np.bincount(new // self._block, minlength=len(self._counts))
        self.size += len(new)

    def take(self, rank: int) -> int:
        ends = np.cumsum(self._counts)
        block = int(np.searchsorted(ends, rank, side="right"))
        before = int(ends[block - 1]) if block else 0
        start = block * self._block
        row = start + int(np.flatnonzero(self._open[start:start + self._block])[rank - before])
        self._open[row] = False
        self._inside[row] = True
        self._counts[block] -= 1
        self.size -= 1
        self._add_neighbours(row)
        return row


def _check_class_probabilities(
    probabilities: Mapping[str, float] | None,
) -> tuple[list[str], NDArray]:
    if probabilities is None:
        return list(_DEVICE_CLASSES), np.full(len(_DEVICE_CLASSES), 1.0 / len(_DEVICE_CLASSES))
    if not isinstance(probabilities, Mapping) or not probabilities:
        raise InvalidInputError(
            "class_probabilities must map device classes "
            f"{list(_DEVICE_CLASSES)} to probabilities; "
            f"got {probabilities!r}"
        )
    unknown = [name for name in probabilities if name not in physical.DEVICE_COMPUTE_SECONDS]
    if unknown:
        raise InvalidInputError(
            f"unknown device class {unknown[0]!r} in class_probabilities; expected some of "
            f"{list(_DEVICE_CLASSES)}"
        )
    names = sorted(probabilities)
    values = np.array([check_real(probabilities[name], f"class_probabilities[{name!r}]")
                       for name in names])
    if not np.all(np.isfinite(values)) or (values < 0).any() or abs(values.sum() - 1.0) > 1e-9:
        raise InvalidInputError(
            "class_probabilities must be >= 0 and sum to 1; "
            f"got {dict(zip(names, values.tolist(), strict=True))}"
        )
    return names, values


def _device_profiles(
    n: int,
    rngs: Mapping[str, np.random.Generator],
    class_probabilities: Mapping[str, float] | None,
    cat_m2_probability: float,
) -> tuple[list[str], list[str]]:
    """Raspberry Pi class and LTE-M category of ``n`` devices, each drawn independently."""
    names, weights = _check_class_probabilities(class_probabilities)
    classes = [names[k] for k in rngs["device_class"].choice(len(names), size=n, p=weights)]
    m2 = rngs["lte"].random(n) < cat_m2_probability
    return classes, ["cat-m2" if flag else "cat-m1" for flag in m2]


def siot_oor_network(
    devices: pd.DataFrame,
    n_devices: int,
    *,
    seed: SeedLike = None,
    metres_per_unit: float = DEFAULT_METRES_PER_UNIT,
    public_range_m: float = DEFAULT_PUBLIC_RANGE_M,
    colocation_range_m: float | None = None,
    class_probabilities: Mapping[str, float] | None = None,
    cat_m2_probability: float = 0.5,
    model_size_mb: float = physical.REFERENCE_MODEL_MB,
    name: str | None = None,
) -> Network:
    """A connected ``n_devices`` OOR social network extracted at random from real devices.

    DeepPrivacy (Sec. VI-A) uses "ownership object relations and static
    devices" of the Santander SIoT data set and extracts 16- and 32-device
    connected social networks at random.  This function does the same:

    1. Build the OOR relation (:func:`siot_oor_graph`): same owner, or two
       public devices within ``public_range_m``.
    2. Draw a seed device uniformly among the devices whose OOR component holds
       at least ``n_devices`` devices.
    3. ``n_devices - 1`` times, draw a device uniformly from the frontier (the
       devices linked to the chosen set but not in it) and add it.
    4. The social graph is the induced OOR subgraph: every OOR link between two
       chosen devices (not only the links used to grow the set).

    Private owners have at most 3 static devices, each owner an isolated
    clique, so for ``n_devices >= 4`` the result consists of public devices
    only, unless ``colocation_range_m`` adds co-location links.

    Parameters
    ----------
    devices : pandas.DataFrame
        Static devices from :func:`load_siot_devices` (or
        :func:`siot_synthetic_devices`).
    n_devices : int
        Number of devices in the network.
    seed : int, numpy.random.Generator or None
        Independent streams are spawned for sampling, device classes and LTE-M
        categories, so changing one rule leaves the others' draws unchanged.
    metres_per_unit : float
        Metres per unit of the data set's unit square.  The data set gives
        none.  Default 6,000 m (our assumption): (a) the unit square then
        covers 36 km^2, about the area of the municipality of Santander
        (34.8 km^2); (b) the median nearest-neighbour distance of public street
        lights (0.00474 units) becomes 28 m, typical pole spacing (25-40 m),
        and that of the parking sensors (0.000445 units, one per space) 2.7 m,
        within a parking space's 2.5-6 m.  Street lights alone give
        5,300-8,400 m, parking sensors 5,600-13,500 m.
    public_range_m : float
        OOR range among public devices: the data set's Wi-Fi range, 400 m, by
        default.  Wi-Fi is the one of its three technologies (LoRa 1,500 m,
        Wi-Fi 400 m, Bluetooth 40 m) that DeepPrivacy's devices have.  With
        6,000 m per unit it yields networks where a few pairs (3-9% in the
        bundled ones) lie within the 100 m Wi-Fi range of the delay model and
        most do not; 40 m gives networks mostly within Wi-Fi range (on average
        87% of the pairs at 16 devices, 45% at 100) and 1,500 m social graphs
        of density about 0.75.
    colocation_range_m : float, optional
        Also link static devices of different owners closer than this (C-LOR
        among stationary devices; see :func:`siot_oor_graph`).  Off by default:
        the paper uses OOR only.
    class_probabilities : mapping, optional
        Probability of each Raspberry Pi class ("rpi2" 770 s, "rpi3" 312 s,
        "rpi4" 114 s per round, DeepPrivacy Sec. VI-A).  The paper gives no
        proportions: default uniform, each device drawn independently.
    cat_m2_probability : float
        Probability that a device is LTE-M Cat-M2 rather than Cat-M1 (the paper
        mixes both, proportions not stated; default 0.5, independent draws).
    model_size_mb : float
        Model size for the delays (the paper's 4 MB).
    name : str, optional
        Network name; default ``"siot-oor-<n>"``.

    Returns
    -------
    Network
        Nodes are the real ``id_device`` values (sorted), positions in metres,
        delays from :func:`topokit.physical.pairwise_delays`.

    Raises
    ------
    InvalidInputError
        If ``n_devices`` is not a positive integer or no OOR component is large
        enough.

    Examples
    --------
    >>> net = siot_oor_network(load_siot_devices(), 16, seed=0)
    >>> net.n_devices, nx.is_connected(net.social)
    (16, True)
    """
    devices = _check_devices(devices, "devices")
    n = check_int(n_devices, "n_devices", low=1)
    _check_network_size(n)
    metres_per_unit = check_positive(metres_per_unit, "metres_per_unit")
    public_range_m = check_positive(public_range_m, "public_range_m")
    colocation_range_m = _check_range(colocation_range_m, "colocation_range_m")
    cat_m2_probability = check_real(cat_m2_probability, "cat_m2_probability", low=0, high=1)
    model_size_mb = check_positive(model_size_mb, "model_size_mb")
    if n > len(devices):
        raise InvalidInputError(f"n_devices={n} exceeds the {len(devices)} devices given")
    rngs = spawn_generators(seed, ["sample", "device_class", "lte"])
    oor, clor = _oor_pairs(devices, metres_per_unit, public_range_m, colocation_range_m)
    links = np.vstack([oor, clor])
    rows = _grow_connected(_adjacency(len(devices), links), n, rngs["sample"])
    chosen = np.zeros(len(devices), dtype=bool)
    chosen[rows] = True
    ids = devices["id_device"].to_numpy()
    social = nx.Graph()
    social.add_nodes_from(ids[rows].tolist())  # Python ints, in row order
    inside = links[chosen[links[:, 0]] & chosen[links[:, 1]]]
    social.add_edges_from(zip(ids[inside[:, 0]].tolist(), ids[inside[:, 1]].tolist(),
                              strict=True))
    classes, lte = _device_profiles(n, rngs, class_probabilities, cat_m2_probability)
    positions = devices[["x", "y"]].to_numpy()[rows] * metres_per_unit
    return Network.from_positions(
        social, positions, compute_time=classes, lte=lte, model_size_mb=model_size_mb,
        name=name or f"siot-oor-{n}",
    )


# ---------------------------------------------------------------------------------------------
# Synthetic city and generator
# ---------------------------------------------------------------------------------------------

def siot_synthetic_devices(scale: float = 1.0, *, seed: SeedLike = None) -> pd.DataFrame:
    """A synthetic city of static devices with the Santander data set's structure.

    Statistics reproduced (all measured on the full ``static_devices.csv``;
    printed by ``analyses/make_siot_networks.py``):

    - owners: ``round(3761 * scale)`` private owners whose sets of static
      device types follow :data:`OWNER_TYPE_SETS` (so 1, 2 or 3 devices in the
      proportions 1,695 / 1,813 / 253 of 3,761); every owner's devices share
      the owner's home position (the data set's README: static objects are
      left at the users' home);
    - homes uniform on the square (the data set's homes come from the SWIM
      mobility model on the unit square; the real file has an empty north-east
      corner, sea, which is not reproduced);
    - public devices: ``round(count * scale)`` of each type of
      :data:`PUBLIC_TYPE_COUNTS` (1,466 at scale 1), owner 0, brand and model
      1 (as in the file); placed in deployment clusters of about 25 devices
      whose centres follow a Gaussian with the type's measured mean and
      standard deviation (:data:`PUBLIC_TYPE_LAYOUT`), each device a Gaussian
      offset of 3 x the type's measured nearest-neighbour distance from its
      centre.  Over seeds 0-4 at scale 1 this gives per-type median
      nearest-neighbour distances within 25% of the measured ones for street
      lights, parking, environment and points of interest (up to 2.4x for the
      10 indicators, 1.4x for the 38 alarms), and a giant OOR component of
      88-95% of the public devices at 400 m and 6,000 m per unit (real file:
      1,430 of 1,466, 97.5%).

    Parameters
    ----------
    scale : float
        Size of the city relative to the real one (>= 1 keeps all statistics;
        the area grows with it, so densities stay those of the data set: the
        coordinates lie in ``[0, sqrt(scale)]``).
    seed : int, numpy.random.Generator or None

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SIOT_COLUMNS`; private brand and model are 0 (not
        modelled: they only matter for the parental relation, POR).
    """
    scale = check_positive(scale, "scale")
    rngs = spawn_generators(seed, ["owners", "homes", "public"])
    side = float(np.sqrt(scale))
    private = _synthetic_owners(scale, side, rngs)
    public = _synthetic_public(scale, side, rngs["public"])
    table = pd.concat([private, public], ignore_index=True)
    table.insert(0, "id_device", np.arange(1, len(table) + 1, dtype=np.int64))
    return table[list(SIOT_COLUMNS)]


def _synthetic_owners(
    scale: float, side: float, rngs: Mapping[str, np.random.Generator]
) -> pd.DataFrame:
    sets = list(OWNER_TYPE_SETS)
    weights = np.array([OWNER_TYPE_SETS[s] for s in sets], dtype=np.float64)
    n_owners = max(1, int(round(sum(OWNER_TYPE_SETS.values()) * scale)))
    picks = rngs["owners"].choice(len(sets), size=n_owners, p=weights / weights.sum())
    homes = rngs["homes"].random((n_owners, 2)) * side
    owner, kind, xy = [], [], []
    for k, (pick, home) in enumerate(zip(picks, homes, strict=True)):
        for device_type in sets[pick]:
            owner.append(k + 1)
            kind.append(device_type)
            xy.append(home)
    xy = np.array(xy).reshape(-1, 2)
    return pd.DataFrame({
        "id_user": np.array(owner, dtype=np.int64), "public": 0,
        "device_type": np.array(kind, dtype=np.int64), "device_brand": 0, "device_model": 0,
        "x": xy[:, 0], "y": xy[:, 1],
    })


def _synthetic_public(scale: float, side: float, rng: np.random.Generator) -> pd.DataFrame:
    parts = []
    for device_type, count in PUBLIC_TYPE_COUNTS.items():
        mean_x, mean_y, sd_x, sd_y, nn = PUBLIC_TYPE_LAYOUT[device_type]
        n = max(1, int(round(count * scale)))
        n_clusters = int(np.ceil(n / _CLUSTER_SIZE))
        spread = np.array([sd_x, sd_y]) * side
        centres = np.array([mean_x, mean_y]) * side + spread * rng.standard_normal((n_clusters, 2))
        members = rng.integers(n_clusters, size=n)
        xy = centres[members] + _CLUSTER_SPREAD * nn * rng.standard_normal((n, 2))
        xy = np.clip(xy, 0.0, side)
        parts.append(pd.DataFrame({
            "id_user": 0, "public": 1, "device_type": device_type, "device_brand": 1,
            "device_model": 1, "x": xy[:, 0], "y": xy[:, 1],
        }))
    table = pd.concat(parts, ignore_index=True)
    integers = ("id_user", "public", "device_type", "device_brand", "device_model")
    return table.astype({column: np.int64 for column in integers})


def siot_statistics(
    devices: pd.DataFrame,
    *,
    metres_per_unit: float = DEFAULT_METRES_PER_UNIT,
    public_range_m: float = DEFAULT_PUBLIC_RANGE_M,
) -> dict:
    """The structural statistics the generator targets, measured on a device table.

    Returns
    -------
    dict
        ``n_devices``, ``n_private``, ``n_public``, ``n_owners``,
        ``owners_by_size`` (devices per owner -> owners), ``owner_type_sets``,
        ``colocated_owners`` (owners whose devices share one position),
        ``public_type_counts``, ``public_nn_median`` (per type, units),
        ``oor_component_sizes`` (descending, components of 2+ devices) and
        ``public_oor_component_sizes`` (components among public devices,
        descending, singletons included).
    """
    devices = _check_devices(devices, "devices")
    private = devices[devices["public"] == 0]
    public = devices[devices["public"] == 1]
    per_owner = private.groupby("id_user")
    sizes = per_owner.size()
    type_sets = per_owner["device_type"].apply(lambda s: tuple(sorted(s)))
    colocated = int((per_owner[["x", "y"]].nunique().max(axis=1) == 1).sum())
    nn = {}
    for device_type, group in public.groupby("device_type"):
        if len(group) > 1:
            xy = group[["x", "y"]].to_numpy()
            distances, _ = cKDTree(xy).query(xy, k=2)
            nn[int(device_type)] = float(np.median(distances[:, 1]))
    oor, _ = _oor_pairs(devices, metres_per_unit, public_range_m, None)
    labels, component_sizes = _component_sizes(_adjacency(len(devices), oor))
    public_rows = np.flatnonzero(devices["public"].to_numpy() == 1)
    public_sizes = np.bincount(labels[public_rows]) if len(public_rows) else np.array([], int)
    return {
        "n_devices": len(devices),
        "n_private": len(private),
        "n_public": len(public),
        "n_owners": int(len(sizes)),
        "owners_by_size": {int(k): int(v) for k, v in sizes.value_counts().sort_index().items()},
        "owner_type_sets": {
            tuple(int(t) for t in k): int(v) for k, v in type_sets.value_counts().items()
        },
        "colocated_owners": colocated,
        "public_type_counts": {
            int(k): int(v) for k, v in public["device_type"].value_counts().sort_index().items()
        },
        "public_nn_median": nn,
        "oor_component_sizes": sorted((int(s) for s in component_sizes if s > 1), reverse=True),
        "public_oor_component_sizes": sorted((int(s) for s in public_sizes if s > 0), reverse=True),
    }


def siot(
    n_devices: int,
    *,
    seed: SeedLike = None,
    metres_per_unit: float = DEFAULT_METRES_PER_UNIT,
    public_range_m: float = DEFAULT_PUBLIC_RANGE_M,
    colocation_range_m: float | None = None,
    class_probabilities: Mapping[str, float] | None = None,
    cat_m2_probability: float = 0.5,
    model_size_mb: float = physical.REFERENCE_MODEL_MB,
    name: str | None = None,
) -> Network:
    """A synthetic SIoT network of any size, with the Santander data set's structure.

    Builds a synthetic city (:func:`siot_synthetic_devices`, scale
    ``max(1, n_devices / 1000)`` so that a large enough OOR component exists)
    and extracts a connected ``n_devices`` network from it exactly as
    :func:`siot_oor_network` does from the real file.  The statistics it
    reproduces and their sources are listed in :func:`siot_synthetic_devices`;
    the extraction rule, the metres-per-unit factor, the radio range and the
    device-class and LTE-M rules are those of :func:`siot_oor_network` (same
    parameters, same defaults).

    As on the real data, OOR networks of 4 or more devices hold public devices
    only; pass ``colocation_range_m`` (e.g. 100) to let private owners, with
    their ownership cliques, join through co-location links.

    Examples
    --------
    >>> net = siot(64, seed=1)
    >>> net.n_devices, nx.is_connected(net.social)
    (64, True)
    """
    n = check_int(n_devices, "n_devices", low=1)
    _check_network_size(n)
    rngs = spawn_generators(seed, ["city", "network"])
    city = siot_synthetic_devices(max(1.0, n / 1000.0), seed=rngs["city"])
    return siot_oor_network(
        city, n, seed=rngs["network"], metres_per_unit=metres_per_unit,
        public_range_m=public_range_m, colocation_range_m=colocation_range_m,
        class_probabilities=class_probabilities, cat_m2_probability=cat_m2_probability,
        model_size_mb=model_size_mb, name=name or f"siot-synthetic-{n}",
    )


# ---------------------------------------------------------------------------------------------
# Any networkx graph
# ---------------------------------------------------------------------------------------------

def from_networkx(
    graph: nx.Graph,
    *,
    seed: SeedLike = None,
    area_m: float = 1000.0,
    class_probabilities: Mapping[str, float] | None = None,
    cat_m2_probability: float = 0.5,
    model_size_mb: float = physical.REFERENCE_MODEL_MB,
    require_connected: bool = True,
    name: str | None = None,
) -> Network:
    """Read any networkx graph as a social network of IoT devices.

    Positions are drawn uniformly on an ``area_m`` x ``area_m`` square; device
    classes and LTE-M categories follow the rule of :func:`siot_oor_network`
    (independent draws, uniform classes and Cat-M2 with probability 0.5 by
    default).  With the default 1,000 m square a pair lies within the 100 m
    Wi-Fi range with probability about pi 100^2 / 1000^2 = 3%: some pairs use
    Wi-Fi, most LTE-M.

    Parameters
    ----------
    graph : networkx.Graph
        Undirected simple graph; nodes keep their ids and order.  Node and edge
        attributes are ignored.
    seed : int, numpy.random.Generator or None
    area_m : float
        Side of the square, in metres.
    require_connected : bool
        Raise :class:`~topokit.errors.DisconnectedGraphError` for a
        disconnected graph (DeepPrivacy needs a connected social network).

    Examples
    --------
    >>> net = from_networkx(nx.karate_club_graph(), seed=0)
    >>> net.n_devices, net.social.number_of_edges()
    (34, 78)
    """
    if not isinstance(graph, nx.Graph):
        raise InvalidInputError(f"graph must be a networkx.Graph; got {type(graph).__name__}")
    if graph.is_directed() or graph.is_multigraph():
        raise InvalidInputError(
            "graph must be an undirected simple graph; convert it with nx.Graph(graph) "
            "(a directed graph's links then become undirected)"
        )
    if graph.number_of_nodes() == 0:
        raise InvalidInputError("graph has no nodes")
    loops = list(nx.selfloop_edges(graph))
    if loops:
        raise InvalidInputError(
            f"graph has a self-loop on {loops[0][0]!r}; remove them with "
            "graph.remove_edges_from(list(nx.selfloop_edges(graph)))"
        )
    area_m = check_positive(area_m, "area_m")
    cat_m2_probability = check_real(cat_m2_probability, "cat_m2_probability", low=0, high=1)
    _check_network_size(graph.number_of_nodes())
    social = nx.Graph()
    social.add_nodes_from(graph.nodes)
    social.add_edges_from(graph.edges)
    if require_connected:
        check_connected(social, "the social graph")
    rngs = spawn_generators(seed, ["positions", "device_class", "lte"])
    positions = rngs["positions"].random((social.number_of_nodes(), 2)) * area_m
    classes, lte = _device_profiles(
        social.number_of_nodes(), rngs, class_probabilities, cat_m2_probability
    )
    return Network.from_positions(
        social, positions, compute_time=classes, lte=lte, model_size_mb=model_size_mb,
        name=name or graph.graph.get("name") or "networkx",
    )
