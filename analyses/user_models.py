"""Models topokit does not ship, written as a user would: against the public interfaces.

- :class:`DeepMLP`: a ReLU perceptron with any tuple of hidden widths, a subclass of
  :class:`topokit.training.Model` (``n_params``, ``init``, ``scores``,
  ``per_example_gradients``).  Its ``gradient`` clips every per-example gradient to
  ``max_grad_norm`` exactly as the base class does, by the "ghost norm" identity
  ||a delta^T||_F = ||a|| ||delta|| per layer, so that the per-example gradients are not
  materialised (the base class's ``gradient`` builds them: about 150 MB per step for
  24 devices at hidden=(128,)); ``tests/training/test_user_models.py`` checks the two agree.
- :class:`FeatureTrainer`: a plain ``trainer=`` function for :func:`topokit.validate`,
  ``fn(net, topology, *, rounds, seed, dp)`` -> the test accuracy after each round:
  logistic regression on fixed random Fourier features of the data
  (:func:`random_fourier_features`), trained by :func:`topokit.training.train`.
  :func:`feature_trainer` builds one.

Run ``python -m analyses.workload_unseen`` for the benchmark that uses them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from topokit.training import LogisticRegression, Model, train

__all__ = ["DeepMLP", "FeatureTrainer", "feature_trainer", "random_fourier_features"]

_TINY = 1e-12  # the floor of a squared norm before its square root (as topokit's models)


def _shared_matmul(X: NDArray, weights: NDArray) -> NDArray:
    """X @ W for every device: X (b, f) shared or (n, b, f), W (n, f, k) -> (n, b, k).

    A shared X is one GEMM against all devices' weights side by side (numpy's broadcasting
    matmul loops over the devices).
    """
    if X.ndim == 2:
        n, f, k = weights.shape
        wide = np.ascontiguousarray(weights.transpose(1, 0, 2)).reshape(f, n * k)
        return np.ascontiguousarray((X @ wide).reshape(X.shape[0], n, k).transpose(1, 0, 2))
    return np.matmul(X, weights)


class DeepMLP(Model):
    """A ReLU perceptron: softmax(W_L relu(... relu(W_1 x + b_1) ...) + b_L), cross-entropy.

    Parameters
    ----------
    n_features, n_classes : int
    hidden : sequence of int, default (64, 32)
        The widths of the hidden layers, in order (at least one).

    One device's parameters are W_1 (n_features, h_1), b_1, W_2 (h_1, h_2), b_2, ...,
    W_L (h_last, n_classes), b_L, flattened in that order; ``init`` is Glorot-uniform for
    the weights and zero for the biases.

    Examples
    --------
    >>> model = DeepMLP(64, 10, hidden=(64, 32))
    >>> model.n_params == 64 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10
    True
    >>> model.init(3, np.random.default_rng(0)).shape
    (3, 6570)
    """

    def __init__(self, n_features: int, n_classes: int, *, hidden: Sequence[int] = (64, 32)):
        super().__init__(n_features, n_classes)
        widths = tuple(int(h) for h in hidden)
        if not widths or min(widths) < 1:
            raise ValueError(f"hidden must list at least one width >= 1; got {hidden!r}")
        self.hidden = widths
        self.sizes = (self.n_features, *widths, self.n_classes)
        # (weights start, bias start, bias end) of every layer in the flat vector.
        self._slices = []
        start = 0
        for fan_in, fan_out in zip(self.sizes[:-1], self.sizes[1:], strict=True):
            bias = start + fan_in * fan_out
            self._slices.append((start, bias, bias + fan_out))
            start = bias + fan_out
        self._n_params = start

    @property
    def n_params(self) -> int:
        return self._n_params

    def _layers(self, params: NDArray) -> list[tuple[NDArray, NDArray]]:
        """Every layer's (W of shape (n, in, out), b of shape (n, 1, out))."""
        n = params.shape[0]
        layers = []
        for (w0, b0, b1), fan_in, fan_out in zip(self._slices, self.sizes[:-1], self.sizes[1:],
                                                  strict=True):
            weights = np.ascontiguousarray(params[:, w0:b0]).reshape(n, fan_in, fan_out)
            layers.append((weights, params[:, b0:b1].reshape(n, 1, fan_out)))
        return layers

    def init(self, n_devices: int, rng: np.random.Generator) -> NDArray[np.float64]:
        params = np.zeros((n_devices, self.n_params))
        for (w0, b0, _), fan_in, fan_out in zip(self._slices, self.sizes[:-1], self.sizes[1:],
                                                 strict=True):
            limit = math.sqrt(6.0 / (fan_in + fan_out))
            params[:, w0:b0] = rng.uniform(-limit, limit, (n_devices, fan_in * fan_out))
        return params

    def _forward(self, params: NDArray, X: NDArray):
        """(layers, inputs of every layer, pre-activations of every layer); the last
        pre-activation is the logits."""
        layers = self._layers(params)
        inputs, pre = [X], []
        for depth, (weights, bias) in enumerate(layers):
            z = (_shared_matmul(inputs[-1], weights) if depth == 0
                 else np.matmul(inputs[-1], weights)) + bias
            pre.append(z)
            if depth < len(layers) - 1:
                inputs.append(np.maximum(z, 0.0))
        return layers, inputs, pre

    def scores(self, params: NDArray, X: NDArray) -> NDArray:
        return self._forward(params, np.asarray(X, dtype=np.float64))[2][-1]

    def _backward(self, params: NDArray, X: NDArray, y: NDArray):
        """(inputs of every layer, residual of every layer): the per-example gradient of
        layer l is inputs[l] (x) residual[l] for W_l and residual[l] for b_l."""
        X = np.asarray(X, dtype=np.float64)
        n = params.shape[0]
        if X.ndim == 2:  # a shared batch: every device's copy
            X = np.broadcast_to(X, (n, *X.shape))
        y = np.broadcast_to(np.asarray(y, dtype=np.int64), X.shape[:-1])
        layers, inputs, pre = self._forward(params, X)
        logits = pre[-1]
        residual = np.exp(logits - logits.max(axis=-1, keepdims=True))
        residual /= residual.sum(axis=-1, keepdims=True)
        np.put_along_axis(residual, y[..., None],
                          np.take_along_axis(residual, y[..., None], -1) - 1.0, -1)
        residuals = [residual]
        for depth in range(len(layers) - 1, 0, -1):
            weights = layers[depth][0]
            residual = np.matmul(residual, np.swapaxes(weights, -1, -2)) * (pre[depth - 1] > 0)
            residuals.append(residual)
        return inputs, residuals[::-1]

    def per_example_gradients(self, params: NDArray, X: NDArray, y: NDArray) -> NDArray:
        """The gradient of every example's cross-entropy: shape (n_devices, batch, n_params)."""
        inputs, residuals = self._backward(params, X, y)
        lead = residuals[0].shape[:-1]
        parts = []
        for a, delta in zip(inputs, residuals, strict=True):
            parts.append((a[..., :, None] * delta[..., None, :]).reshape(*lead, -1))
            parts.append(delta)
        return np.concatenate(parts, axis=-1)

    def gradient(self, params, X, y, weight, max_grad_norm=None):
        """sum_b weight[:, b] clip(g_b), shape (n_devices, n_params), as
        :meth:`topokit.training.Model.gradient` gives it (each per-example gradient clipped to
        l2 norm ``max_grad_norm``, a number or one per device, ``inf`` for no clipping),
        from the per-layer norms ||g_b||^2 = sum_l (||a_l||^2 + 1) ||delta_l||^2."""
        inputs, residuals = self._backward(params, X, y)
        weight = np.asarray(weight, dtype=np.float64)
        if max_grad_norm is None:
            factors = weight
        else:
            sq_norms = sum((np.einsum("nbi,nbi->nb", a, a) + 1.0)
                           * np.einsum("nbo,nbo->nb", delta, delta)
                           for a, delta in zip(inputs, residuals, strict=True))
            bound = np.asarray(max_grad_norm, dtype=np.float64)
            if bound.ndim == 1:
                bound = bound[:, None]
            factors = np.minimum(1.0, bound / np.sqrt(np.maximum(sq_norms, _TINY))) * weight
        n = params.shape[0]
        out = np.empty((n, self.n_params))
        for (w0, b0, b1), a, delta in zip(self._slices, inputs, residuals, strict=True):
            scaled = delta * factors[..., None]
            out[:, w0:b0] = np.matmul(np.swapaxes(a, -1, -2), scaled).reshape(n, -1)
            out[:, b0:b1] = scaled.sum(axis=1)
        return out

    def __repr__(self) -> str:
        return (f"DeepMLP(n_features={self.n_features}, n_classes={self.n_classes}, "
                f"hidden={self.hidden})")


def random_fourier_features(X: NDArray, n_components: int = 128, *, bandwidth: float = 8.0,
                            seed: int = 0) -> NDArray[np.float64]:
    """sqrt(2) cos(X W / bandwidth + b), W standard normal, b uniform in [0, 2 pi): fixed
    features (seeded) of the Gaussian kernel exp(-||x - x'||^2 / (2 bandwidth^2)), each of
    unit mean square, so the rows have about the squared norm of standardised data.

    >>> random_fourier_features(np.zeros((2, 3)), 4).shape
    (2, 4)
    """
    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((X.shape[1], n_components)) / bandwidth
    b = rng.uniform(0.0, 2.0 * math.pi, n_components)
    return math.sqrt(2.0) * np.cos(X @ W + b)


@dataclass(frozen=True, eq=False)
class FeatureTrainer:
    """A ``trainer=`` for :func:`topokit.validate`: logistic regression on fixed random Fourier
    features of (X, y), trained by :func:`topokit.training.train` over the topology.

    Called as ``trainer(net, topology, rounds=T, seed=s, dp=config)`` it returns the test
    accuracy (averaged over devices) after each of the T rounds.  ``partition`` must be the
    one given to ``validate`` (its runs table describes the partition it replays from the
    same seed and labels), and ``train_options`` any further options of ``train`` (``lr``,
    ``batch_size``...).  A module-level class of arrays and numbers: it pickles.
    """

    X: NDArray
    y: NDArray
    partition: float | None = None
    n_components: int = 128
    bandwidth: float = 8.0
    feature_seed: int = 0
    train_options: dict = field(default_factory=dict)

    def features(self) -> NDArray[np.float64]:
        return random_fourier_features(self.X, self.n_components, bandwidth=self.bandwidth,
                                       seed=self.feature_seed)

    def model(self) -> LogisticRegression:
        """The model trained on the features (for a ceiling probe on them)."""
        return LogisticRegression(self.n_components, int(np.unique(self.y).size))

    def __call__(self, net, topology, *, rounds, seed, dp):
        # validate passes dp=None when no device adds noise, which train spells dp=False
        # (train's None would give the topology's DP devices DPConfig()).
        run = train(net, topology, self.features(), self.y, model=self.model(),
                    dp=False if dp is None else dp, rounds=rounds, seed=seed,
                    partition=self.partition, checkpoint_every=1, **self.train_options)
        return run.mean_accuracy[1:].tolist()  # after rounds 1..T (round 0 is the start)


def feature_trainer(X: NDArray, y: NDArray, *, partition: float | None = None,
                    n_components: int = 128, bandwidth: float = 8.0,
                    feature_seed: int = 0, **train_options) -> FeatureTrainer:
    """A :class:`FeatureTrainer` of (X, y) (``train_options`` go to ``train``)."""
    return FeatureTrainer(np.asarray(X, dtype=np.float64), np.asarray(y), partition,
                          n_components, bandwidth, feature_seed, dict(train_options))
