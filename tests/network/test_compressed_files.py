"""Network files compressed with gzip: a name ending in ``.json.gz`` or ``.graphml.gz``.

:func:`save_network` writes the same text as for the uncompressed name,
through gzip, atomically and as it is encoded; the gzip header records no time
and no name, so the same network gives the same bytes every time.
:func:`load_network` gives the network back, its delays bit for bit; a damaged
gzip stream is refused in one line naming the file.
"""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pytest

from topokit.cli import _sizes
from topokit.errors import InputFileError
from topokit.network import formats
from topokit.network.core import NETWORK_SUFFIXES, Network, network_suffix
from topokit.network.formats import (
    COMPACT_FROM_DEVICES,
    delay_form,
    load_network,
    load_topology,
    save_network,
)
from topokit.network.siot import siot

FORMATS = [".json", ".graphml"]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """The same floats bit for bit (0.0 and -0.0 differ)."""
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


@pytest.fixture(scope="module")
def large() -> Network:
    """A generated network written in the compact form (no delays stored)."""
    return siot(COMPACT_FROM_DEVICES, seed=2)


@pytest.fixture(scope="module")
def edited(large) -> Network:
    """``large`` with delays the radio model does not give: a default and listed pairs,
    an unreachable pair and a -0.0 among them."""
    delay = large.delay.copy()
    delay[3, 7] = delay[7, 3] = 1.5
    delay[0, 9] = delay[9, 0] = np.inf
    delay[1, 2] = delay[2, 1] = -0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # social links made unreachable
        return Network(large.social, large.compute_time, delay, positions=large.positions,
                       physical_model=large.physical_model, name=large.name)


def load_quietly(path) -> Network:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_network(path)


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize("which", ["toy", "large", "edited"])
def test_a_compressed_file_holds_the_uncompressed_text_and_loads_back_bit_for_bit(
        tmp_path, suffix, which, toy, large, edited):
    net = {"toy": toy, "large": large, "edited": edited}[which]
    plain = save_network(net, tmp_path / f"n{suffix}")
    packed = save_network(net, tmp_path / f"n{suffix}.gz")
    assert packed.read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic number
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    assert packed.stat().st_size < plain.stat().st_size
    again, reference = load_quietly(packed), load_quietly(plain)
    assert same_bits(again.delay, net.delay)
    assert list(again.nodes) == list(reference.nodes)
    assert same_bits(again.compute_time, reference.compute_time)
    assert set(again.social.edges) == set(reference.social.edges)
    if suffix == ".json":
        assert again == reference
    if which == "edited":
        assert delay_form(net).kind == "sparse" and np.signbit(again.delay[1, 2])


@pytest.mark.parametrize("suffix", FORMATS)
def test_the_same_network_gives_the_same_bytes(tmp_path, large, suffix):
    first = save_network(large, tmp_path / f"a{suffix}.gz").read_bytes()
    second = save_network(large, tmp_path / f"b{suffix}.GZ").read_bytes()
    assert first == second
    # Header: no flags (so no file name), mtime 0: nothing of the time or the temporary file.
    assert first[3] == 0 and first[4:8] == b"\0\0\0\0"


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, large,
                                                                  monkeypatch):
    path = save_network(large, tmp_path / "n.json.gz")
    before = path.read_bytes()

    def broken(net):
        yield {"source": 0, "target": 1}
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(formats, "_link_records", broken)
    with pytest.raises(OSError, match="No space left"):
        save_network(large, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["n.json.gz"]


def damaged(data: bytes) -> dict[str, bytes]:
    """Ways a gzip file arrives broken: not compressed, cut short, a flipped byte, a wrong
    checksum."""
    return {"not gzip": gzip.decompress(data), "cut short": data[: len(data) // 2],
            "flipped": data[:30] + bytes([data[30] ^ 0xFF]) + data[31:],
            "checksum": data[:-8] + bytes(4) + data[-4:]}


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize("how", ["not gzip", "cut short", "flipped", "checksum"])
def test_a_damaged_gzip_file_is_refused_in_one_line(tmp_path, toy, suffix, how):
    data = save_network(toy, tmp_path / f"good{suffix}.gz").read_bytes()
    bad = tmp_path / f"bad{suffix}.gz"
    bad.write_bytes(damaged(data)[how])
    with pytest.raises(InputFileError) as caught:
        load_network(bad)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{bad}: not a readable gzip file")
    assert _sizes.network_file_size(bad) is None  # sized as unreadable: the loader says why


def test_the_suffixes_are_matched_whole_and_in_any_case(tmp_path, toy):
    assert NETWORK_SUFFIXES == (".json", ".graphml", ".json.gz", ".graphml.gz")
    assert [network_suffix(name) for name in ("a.JSON.GZ", "a.graphml.gz", "a.tar.gz",
                                              "json.gz.txt", "a.graphml")] == \
        [".json.gz", ".graphml.gz", None, None, ".graphml"]
    folder = tmp_path / "net.json.gz"
    folder.mkdir()
    with pytest.raises(InputFileError, match=r"\.json, \.graphml, \.json\.gz or \.graphml\.gz"):
        load_network(folder)


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_compressed_file_is_sized_as_the_uncompressed_one(tmp_path, edited, suffix):
    plain = _sizes.network_file_size(save_network(edited, tmp_path / f"n{suffix}"))
    packed = _sizes.network_file_size(save_network(edited, tmp_path / f"n{suffix}.gz"))
    assert packed == plain and packed.n_devices == COMPACT_FROM_DEVICES


def test_a_compressed_graphml_network_given_as_a_topology_says_so(tmp_path, toy):
    path = save_network(toy, tmp_path / "n.graphml.gz")
    with pytest.raises(InputFileError, match="GraphML network file, not a design"):
        load_topology(path)
