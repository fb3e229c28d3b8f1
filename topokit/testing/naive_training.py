"""A per-device loop reference for topokit.training.train, written from Algorithm 1 line by line.

It shares the data preparation (split, partition, Poisson sampler, noise
multipliers) and the random streams with the vectorised core, so that for the
same seed both must give the same numbers; the arithmetic of a round is
independent: per-device loops, explicit per-example gradients, explicit
clipping, one noise vector per DP device, and x_i = sum_j a_ij y_j summed over
the neighbours one by one.
"""

from __future__ import annotations

import numpy as np

from topokit._random import spawn_generators
from topokit.kernels import lazy_metropolis
from topokit.training.core import ROLES, PoissonSampler
from topokit.training.models import make_model
from topokit.training.partition import make_partitioner
from topokit.training.plan import stratified_split
from topokit.training.privacy import (
    DPConfig,
    accounting_sampling_rates,
    clip_gradients,
    resolve_noise_multipliers,
)


def _mixing_matrix(net, topology):
    """A of the run: the topology's link weights, else Lazy-Metropolis (eq. 4).

    Written out link by link rather than taken from ``Topology.mixing_matrix``,
    so that the comparison with the vectorised core also checks that method.
    """
    if topology.weights is None:
        return lazy_metropolis(topology.graph(net.nodes))
    A = np.zeros((net.n_devices, net.n_devices))
    for (u, v), w in zip(topology.edges, topology.weights, strict=True):
        A[net.index[u], net.index[v]] = A[net.index[v], net.index[u]] = w
    for i in range(net.n_devices):
        A[i, i] = 1.0 - sum(A[i, j] for j in range(net.n_devices) if j != i)
    return A


def naive_train(
    net, topology, X, y, *, model="logreg", rounds=200, lr=0.2, lr_decay=0.99, local_steps=1,
    batch_size=64, dp=None, partition=None, checkpoint_every=1, seed=None,
):
    """Returns (checkpoint rounds, accuracy (n_checkpoints, n_devices), final params)."""
    rngs = spawn_generators(seed, ROLES)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    train_rows, test_rows = stratified_split(y, 0.25, rngs["partition"])
    X_train, y_train, X_test, y_test = X[train_rows], y[train_rows], X[test_rows], y[test_rows]
    classes = np.unique(np.concatenate([y_train, y_test]))
    y_train, y_test = np.searchsorted(classes, y_train), np.searchsorted(classes, y_test)
    model = make_model(model, X.shape[1], len(classes))
    n = net.n_devices
    parts = make_partitioner(partition).split(y_train, n, rngs["partition"])
    sampler = PoissonSampler(parts, batch_size)
    if dp is None and topology.dp_devices:
        dp = DPConfig()
    dp_rows = sorted(net.index[v] for v in topology.dp_devices) if dp else []
    if dp_rows:
        q = accounting_sampling_rates(dp, sampler.sizes[dp_rows], batch_size, local_steps)
        z = dict(zip(dp_rows, resolve_noise_multipliers(dp, q, rounds), strict=True))
    A = _mixing_matrix(net, topology)
    params = model.init(n, rngs["init"])
    x = [params[i].copy() for i in range(n)]

    def accuracy(i):
        scores = model.scores(x[i][None], X_test)[0]
        return float(np.mean(scores.argmax(axis=1) == y_test))

    checkpoints, accuracies = [0], [[accuracy(i) for i in range(n)]]
    for t in range(rounds):
        eta = lr * lr_decay**t
        local = [xi.copy() for xi in x]
        for k in range(local_steps):
            index, weight = sampler.sample(rngs["sampling"])
            for i in range(n):
                grads = model.per_example_gradients(
                    local[i][None], X_train[index[i]][None], y_train[index[i]][None]
                )[0]
                drawn = weight[i] > 0  # the rows of this device's Poisson batch (not padding)
                divisor = sampler.expected[i]
                clipping = dp and i in dp_rows and dp.sensitivity == "clipped"
                if clipping:
                    grads = clip_gradients(grads, dp.max_grad_norm)
                    if k > 0:
                        # later steps of a DP device: the sum over |b| rows divided by at
                        # least |b|, so that the step is at most eta C long
                        divisor = max(divisor, int(drawn.sum()))
                step = np.zeros_like(local[i])
                for b in np.flatnonzero(drawn):
                    step += grads[b] / divisor
                local[i] = local[i] - eta * step
        sent = []
        for i in range(n):
            message = local[i].copy()
            if i in dp_rows:
                if dp.sensitivity == "clipped":
                    batch = sampler.expected[i]
                    delta_t = 2 * eta * dp.max_grad_norm * (1 / batch + local_steps - 1)
                else:
                    delta_t = 2 * np.linalg.norm(local[i] - x[i])
                message = message + z[i] * delta_t * rngs["noise"].standard_normal(message.shape)
            sent.append(message)
        for i in range(n):
            x[i] = sum(A[i, j] * sent[j] for j in range(n) if A[i, j] != 0)
        if (t + 1) % checkpoint_every == 0 or t + 1 == rounds:
            checkpoints.append(t + 1)
            accuracies.append([accuracy(i) for i in range(n)])
    return np.array(checkpoints), np.array(accuracies), np.vstack(x)
