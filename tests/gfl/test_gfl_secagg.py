"""Tests of topokit.gfl.secagg: exact cancellation, uniformity, fresh masks, loud failures."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from topokit import gfl
from topokit.errors import (
    EncodingOverflowError,
    InsecureKeysWarning,
    InvalidInputError,
    MissingShareError,
)
from topokit.gfl.secagg import SecAggClient, SecAggServer


@pytest.mark.parametrize("ring_bits,frac_bits", [(32, 16), (64, 24), (20, 8)])
def test_aggregate_equals_plain_sum_of_encodings_bit_for_bit(ring_bits, frac_bits):
    rng = np.random.default_rng(ring_bits)
    x = rng.normal(scale=3.0, size=(7, 50))
    agg = gfl.secure_aggregate(x, round_index=3, frac_bits=frac_bits, ring_bits=ring_bits)
    encoded = gfl.encode(x, frac_bits=frac_bits, ring_bits=ring_bits)
    modulus = 1 << ring_bits
    plain = [sum(int(v) for v in column) % modulus for column in encoded.T]  # exact Python ints
    assert [int(v) for v in agg.encoded_total] == plain
    # masked vectors differ from the encodings, the decoded total is the sum to rounding
    assert np.all(agg.masked != encoded)
    np.testing.assert_allclose(agg.total, x.sum(axis=0), atol=x.shape[0] * 2.0**-frac_bits)
    assert agg.masked.dtype == np.uint64 and agg.masked.shape == (7, 50)
    assert int(agg.masked.max()) < modulus


def test_encode_decode_roundtrip_including_negatives():
    x = np.array([0.0, 1.25, -1.25, -0.0009, 1000.5])
    np.testing.assert_allclose(gfl.decode(gfl.encode(x, frac_bits=10), frac_bits=10), x,
                               atol=2.0**-11)


def test_single_masked_vector_is_uniform_over_ring():
    ring_bits, dim, bins = 32, 20000, 64
    x = np.full((5, dim), 0.125)  # a constant input: any structure would show
    masked = gfl.secure_aggregate(x, ring_bits=ring_bits).masked[0]
    counts = np.bincount((masked >> np.uint64(ring_bits - 6)).astype(np.int64), minlength=bins)
    assert stats.chisquare(counts).pvalue > 1e-3
    low = np.bincount((masked & np.uint64(bins - 1)).astype(np.int64), minlength=bins)
    assert stats.chisquare(low).pvalue > 1e-3
    # the unmasked encoding is a single ring element: maximally non-uniform
    assert len(np.unique(gfl.encode(x[0]))) == 1


@pytest.mark.filterwarnings("ignore::topokit.errors.InsecureKeysWarning")
def test_masks_differ_between_rounds_and_are_deterministic_with_seed():
    x = np.random.default_rng(0).normal(size=(4, 256))
    seeded = {"seed": 5, "key_source": "insecure-seeded"}
    r0 = gfl.secure_aggregate(x, round_index=0, **seeded)
    r0_again = gfl.secure_aggregate(x, round_index=0, **seeded)
    r1 = gfl.secure_aggregate(x, round_index=1, **seeded)  # same keys, next round
    np.testing.assert_array_equal(r0.masked, r0_again.masked)
    assert np.mean(r0.masked == r1.masked) < 0.01
    # reusing a mask would reveal input differences: masked0 - masked1 must not equal x0 - x1
    diff_masked = (r0.masked[0] - r1.masked[0]) & np.uint64(2**32 - 1)
    assert np.mean(diff_masked == 0) < 0.01
    np.testing.assert_array_equal(r0.encoded_total, r1.encoded_total)


def _round(n: int, round_index: int = 0):
    rng = np.random.default_rng(9)
    clients = [SecAggClient(u, round_index) for u in range(n)]
    keys = {c.client_id: c.public_key for c in clients}
    x = rng.normal(size=(n, 16))
    return clients, keys, x


def test_missing_masked_vector_fails_loudly():
    clients, keys, x = _round(4)
    ids = [c.client_id for c in clients]
    messages = {c.client_id: c.mask(x[c.client_id], ids, keys) for c in clients[:-1]}
    with pytest.raises(MissingShareError, match=r"missing from clients \[3\]"):
        SecAggServer(ids).aggregate(messages)


def test_wrong_public_key_fails_loudly():
    clients, keys, x = _round(4)
    ids = [c.client_id for c in clients]
    intruder = SecAggClient(99, 0)
    tampered = {**keys, 2: intruder.public_key}  # client 0 receives a wrong key for client 2
    messages = {c.client_id: c.mask(x[c.client_id], ids, keys) for c in clients[1:]}
    messages[0] = clients[0].mask(x[0], ids, tampered)
    with pytest.raises(MissingShareError, match="clients 0 and 2"):
        SecAggServer(ids).aggregate(messages)


def test_wrong_round_key_derivation_fails_loudly():
    clients, keys, x = _round(3)
    ids = [0, 1, 2]
    stale = SecAggClient(1, 0, None)
    stale._key = clients[1]._key  # same key pair, but masks from round 1
    stale.round_index = 1
    messages = {0: clients[0].mask(x[0], ids, keys), 1: stale.mask(x[1], ids, keys),
                2: clients[2].mask(x[2], ids, keys)}
    with pytest.raises(MissingShareError, match="key confirmation failed"):
        SecAggServer(ids).aggregate(messages)


def test_missing_or_malformed_public_key_fails_loudly():
    clients, keys, x = _round(3)
    with pytest.raises(MissingShareError, match="no public key for peer 2"):
        clients[0].mask(x[0], [0, 1, 2], {1: keys[1]})
    with pytest.raises(MissingShareError, match="32 raw bytes"):
        clients[0].mask(x[0], [0, 1, 2], {**keys, 2: b"short"})


def test_encoding_overflow_and_input_errors():
    with pytest.raises(EncodingOverflowError, match="does not fit"):
        gfl.secure_aggregate([[40000.0], [1.0]], frac_bits=16, ring_bits=32)
    with pytest.raises(EncodingOverflowError, match="sum of the inputs"):
        gfl.secure_aggregate([[20000.0], [20000.0]], frac_bits=16, ring_bits=32)
    with pytest.raises(InvalidInputError, match="at least 2 clients"):
        gfl.secure_aggregate([[1.0, 2.0]])
    with pytest.raises(InvalidInputError, match="NaN"):
        gfl.secure_aggregate([[np.nan], [1.0]])
    with pytest.raises(InvalidInputError, match="ring_bits"):
        gfl.secure_aggregate([[1.0], [1.0]], ring_bits=80)
    with pytest.raises(InvalidInputError, match="frac_bits"):
        gfl.secure_aggregate([[1.0], [1.0]], frac_bits=40, ring_bits=32)


def test_to_dict_is_json_ready():
    import json

    agg = gfl.secure_aggregate([[1.0, 2.0], [3.0, 4.0]])
    data = json.loads(json.dumps(agg.to_dict()))
    assert data["total"] == [4.0, 6.0] and data["ring_bits"] == 32


# --------------------------------------------------------------------------- dropout recovery
from topokit.gfl.secagg import (  # noqa: E402
    _recover_private_key,
    _recover_seed,
    secure_aggregate_with_dropouts,
    shamir_combine,
    shamir_split,
)


@pytest.mark.parametrize("dropped", [(), (3,), (0, 5, 6)])
def test_dropout_recovery_equals_sum_of_survivors_bit_for_bit(dropped):
    rng = np.random.default_rng(len(dropped))
    x = rng.normal(scale=2.0, size=(8, 40))
    agg = secure_aggregate_with_dropouts(x, dropped, threshold=5, round_index=2)
    survivors = [u for u in range(8) if u not in dropped]
    assert agg.survivors == tuple(survivors) and agg.masked.shape == (len(survivors), 40)
    encoded = gfl.encode(x[survivors])
    plain = [sum(int(v) for v in column) % 2**32 for column in encoded.T]
    assert [int(v) for v in agg.encoded_total] == plain
    # double masking: every delivered vector is masked
    assert np.mean(agg.masked == encoded) < 0.01


def test_too_many_dropouts_fail_loudly():
    with pytest.raises(MissingShareError, match="fewer than the threshold 4"):
        secure_aggregate_with_dropouts(np.ones((6, 3)), [0, 1, 2], threshold=4)
    with pytest.raises(InvalidInputError, match="dropped clients must be indices"):
        secure_aggregate_with_dropouts(np.ones((4, 3)), [9])


def test_shamir_threshold_and_corrupted_shares():
    secret = np.random.default_rng(0).bytes(32)
    shares = shamir_split(secret, 7, 4)
    for subset in ([0, 1, 2, 3], [6, 2, 4, 1], [3, 4, 5, 6, 0]):
        assert shamir_combine([shares[i] for i in subset], 4, 32) == secret
    with pytest.raises(MissingShareError, match="3 distinct shares"):
        shamir_combine(shares[:3], 4, 32)
    with pytest.raises(MissingShareError, match="3 distinct shares"):
        shamir_combine(shares[:3] + shares[:1], 4, 32)  # a repeated share does not count


def test_rebuilt_secrets_are_checked():
    import hashlib

    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    rng = np.random.default_rng(1)
    key = X25519PrivateKey.from_private_bytes(rng.bytes(32))
    public = key.public_key().public_bytes_raw()
    shares = shamir_split(key.private_bytes_raw(), 5, 3)
    rebuilt = _recover_private_key(shares[:3], 3, public, owner=4)
    assert rebuilt.public_key().public_bytes_raw() == public
    forged = [shares[0], shares[1], (shares[2][0], shares[2][1] + 1)]
    with pytest.raises(MissingShareError):
        _recover_private_key(forged, 3, public, owner=4)
    seed = rng.bytes(32)
    seed_shares = shamir_split(seed, 5, 3)
    commitment = hashlib.sha256(seed).digest()
    assert _recover_seed(seed_shares[2:], 3, commitment, owner=0) == seed
    with pytest.raises(MissingShareError):
        _recover_seed([seed_shares[0], seed_shares[1], (3, seed_shares[2][1] ^ 1)], 3,
                      commitment, owner=0)


# --------------------------------------------------------------------------- randomness
def test_keys_come_from_the_os_so_masks_differ_while_the_sum_is_the_same_bits():
    x = np.random.default_rng(3).normal(size=(5, 64))
    first, second = gfl.secure_aggregate(x), gfl.secure_aggregate(x)
    assert np.mean(first.masked == second.masked) < 0.01
    np.testing.assert_array_equal(first.encoded_total, second.encoded_total)


def test_a_seed_for_the_keys_is_refused_unless_named_insecure():
    x = np.ones((3, 2))
    with pytest.raises(InvalidInputError, match="key_source='insecure-seeded'"):
        gfl.secure_aggregate(x, seed=0)
    with pytest.raises(InvalidInputError, match="key_source='insecure-seeded'"):
        secure_aggregate_with_dropouts(x, [], seed=0)
    with pytest.raises(InvalidInputError, match="key_source must be one of"):
        gfl.secure_aggregate(x, key_source="seeded")
    with pytest.warns(InsecureKeysWarning, match="tests of the protocol only"):
        gfl.secure_aggregate(x, seed=0, key_source="insecure-seeded")
    with pytest.warns(InsecureKeysWarning):
        SecAggClient(0, 0, np.random.default_rng(0))


def test_a_seeded_gfl_run_does_not_let_its_seed_unmask_a_client(monkeypatch):
    # A reader who knows the simulation seed re-derives every key the run could have
    # drawn from it; with OS keys none of those keys is the one that masked the message.
    import topokit.gfl.secagg as secagg

    seen = []
    original = secagg._private_key

    def spy(rng):
        key = original(rng)
        seen.append((rng, key.private_bytes_raw()))
        return key

    monkeypatch.setattr(secagg, "_private_key", spy)
    config = gfl.preset("regression").replace(client_noise="secagg", iterations=2,
                                               repetitions=1, seed=0)
    gfl.run(config)
    assert seen and all(rng is None for rng, _ in seen)
    assert len({key for _, key in seen}) == len(seen)  # fresh keys, none derived twice


def test_extra_shares_must_agree_with_the_threshold_ones():
    secret = b"\x07" * 32
    shares = shamir_split(secret, 6, 3)
    assert shamir_combine(shares, 3, 32) == secret  # all six consistent
    corrupted = shares[:5] + [(shares[5][0], shares[5][1] + 1)]
    with pytest.raises(MissingShareError, match="do not lie on one polynomial"):
        shamir_combine(corrupted, 3, 32)
    twice = shares[:3] + [(shares[0][0], shares[0][1] + 1)]
    with pytest.raises(MissingShareError, match="appears twice"):
        shamir_combine(twice, 3, 32)
