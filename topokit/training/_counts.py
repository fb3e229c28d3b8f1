"""The class counts of the partition :func:`~topokit.training.train` draws.

:func:`partition_class_counts` replays the first draws of a run's
"partition" generator (the held-out split, then the partition of the
training rows over the devices) and counts each device's rows per class,
ready for ``topokit.optimize(net, class_counts=...)`` and
``net.with_class_counts``.  :func:`topokit.validate` gives each trial's
network these counts.  It sits above :mod:`topokit.training.plan`, whose
``split_data`` and ``partition_rows`` it calls, as ``train`` does.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._checks import check_int
from .._random import SeedLike, spawn_generators
from ..errors import InvalidInputError
from .partition import Partitioner, SkewPartitioner, make_partitioner
from .plan import ROLES, partition_rows, split_data

__all__ = ["partition_class_counts"]


def _partitioner_of(skewness: Any) -> Partitioner:
    """The partitioner of ``skewness``: as :func:`make_partitioner`, a number named skewness.

    >>> _partitioner_of(None), _partitioner_of(0.5)
    (IidPartitioner(), SkewPartitioner(skewness=0.5))
    """
    if skewness is None or (isinstance(skewness, str) and skewness == "iid"):
        return make_partitioner(skewness)
    if not isinstance(skewness, (str, bytes)) and callable(getattr(skewness, "split", None)):
        return make_partitioner(skewness)
    return SkewPartitioner(skewness)  # refuses anything but a real number in [0, 1]


def _check_nodes(nodes: Sequence[Hashable] | None, n_devices: int) -> list[Hashable]:
    """The device ids, one per device (default 0..n_devices-1)."""
    if nodes is None:
        return list(range(n_devices))
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Sequence):
        raise InvalidInputError(
            f"nodes must be a list of the {n_devices} device ids in node order (net.nodes); "
            f"got {type(nodes).__name__}"
        )
    if len(nodes) != n_devices:
        raise InvalidInputError(
            f"nodes must name each of the {n_devices} devices once (net.nodes); got "
            f"{len(nodes)} ids"
        )
    return list(nodes)


def _check_class_labels(y: ArrayLike) -> NDArray:
    """``y`` as a non-empty 1-D array of labels."""
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise InvalidInputError(f"y must be a 1-dimensional array of labels; got shape "
                                f"{labels.shape}")
    if labels.shape[0] == 0:
        raise InvalidInputError("y is empty; give the labels of the training data")
    return labels


def _no_features(labels: NDArray) -> NDArray[np.float64]:
    """A data matrix of no columns beside ``labels``: the draws depend on the labels alone."""
    return np.zeros((np.shape(labels)[0] if np.ndim(labels) else 0, 0))


def partition_class_counts(
    y: ArrayLike,
    n_devices: int,
    skewness: float | str | Partitioner | None = None,
    seed: SeedLike = None,
    *,
    nodes: Sequence[Hashable] | None = None,
    test: Any = None,
) -> NDArray[np.int64]:
    """Each device's training rows per class in the partition ``train`` draws for ``seed``.

    Replays the first draws of :func:`~topokit.training.train`'s "partition"
    generator: the held-out split (``test``), then the partition of the
    training rows over the devices.  Both depend on the labels only (not on
    the features, the model or the topology), so
    ``train(net, topology, X, y, partition=skewness, seed=seed)`` trains on
    exactly these counts, whatever the topology.
    :func:`topokit.validate` computes the counts of its trials with this
    function; trial t's seed is in the ``seed`` column of its runs table.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        The labels of the data given to ``train`` (before the held-out split).
    n_devices : int >= 1
        The number of devices (``net.n_devices``).
    skewness : float in [0, 1], "iid", Partitioner or None, default None
        What ``train`` takes as ``partition``: DeepPrivacy's skewness K
        (:class:`~topokit.training.SkewPartitioner`; K = 0 is an IID split
        drawn that way), None or ``"iid"``
        (:class:`~topokit.training.IidPartitioner`, ``train``'s default), or a
        partitioner.  None and 0.0 draw different (both IID) partitions.
    seed : int, Generator or None
        ``train``'s seed.
    nodes : sequence of node ids, optional
        The devices in node order (``net.nodes``), to name a device that gets
        no data; default 0..n_devices-1.
    test : float in (0, 1), pair (X_test, y_test) or None
        ``train``'s ``test``: the held-out fraction (None: 0.25, stratified)
        or held-out data (only ``y_test`` is read: its classes are columns).

    Returns
    -------
    ndarray of shape (n_devices, n_classes)
        Integer counts, rows in node order, columns the classes in sorted
        label order (of the training and held-out labels); rows sum to the
        devices' partition sizes.  ``optimize(net, class_counts=counts)`` and
        ``net.with_class_counts(counts)`` take it as it is.

    Raises
    ------
    InvalidInputError
        ``y`` not 1-dimensional or empty, ``n_devices`` not an integer >= 1 or
        more than the training rows, ``skewness`` outside [0, 1], ``nodes`` of
        the wrong length, or a device left without data.

    Warns
    -----
    UserWarning
        A skewness that needs more rows of some class than the data has
        (:class:`~topokit.training.SkewPartitioner`).

    Examples
    --------
    >>> y = np.repeat([0, 1, 2], 40)
    >>> counts = partition_class_counts(y, 3, skewness=1.0, seed=0)
    >>> counts
    array([[30,  0,  0],
           [ 0, 30,  0],
           [ 0,  0, 30]])
    >>> int(counts.sum())  # a quarter of the rows is held out for testing
    90
    >>> int(partition_class_counts(y, 3, seed=0, test=0.5).sum())
    60
    """
    labels = _check_class_labels(y)
    n_devices = check_int(n_devices, "n_devices", low=1)
    partitioner = _partitioner_of(skewness)
    devices = _check_nodes(nodes, n_devices)
    if isinstance(test, tuple) and len(test) == 2:
        held_out = _check_class_labels(test[1])
        test = (_no_features(held_out), held_out)
    rng = spawn_generators(seed, ROLES)["partition"]
    data = split_data(_no_features(labels), labels, test, n_devices, rng)
    parts = partition_rows(partitioner, data.codes_train, devices, rng)
    return np.array([np.bincount(data.codes_train[part], minlength=data.n_classes)
                     for part in parts], dtype=np.int64)
