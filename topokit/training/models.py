"""Classifiers on stacked parameters: every device's model in one (n_devices, n_params) array.

A model is a small object that knows its parameter count and works on the
parameters of all devices at once, so that a D-PSGD round is a few batched
matrix products and never a Python loop over devices.

The interface (subclass :class:`Model` to plug in your own):

- ``n_params``: length of one device's flat parameter vector.
- ``init(n_devices, rng)`` -> array of shape (n_devices, n_params).
- ``scores(params, X)`` -> logits of shape (n_devices, batch, n_classes) for
  ``X`` of shape (n_devices, batch, n_features), or (batch, n_features) shared
  by every device (the test set).
- ``per_example_gradients(params, X, y)`` -> shape (n_devices, batch,
  n_params): gradient of the cross-entropy loss of every example.
- ``gradient(params, X, y, weight, max_grad_norm=None)`` -> shape
  (n_devices, n_params): ``sum_b weight[:, b] * clip(g_b)``, each per-example
  gradient clipped to l2 norm ``max_grad_norm`` first (no clipping when None).
  The base class builds it from ``per_example_gradients``; the bundled models
  ``max_grad_norm`` may also be an array of shape (n_devices,), ``inf`` for
  devices that do not clip.  The bundled models
  override it with the "ghost norm" identity ||x r^T||_F = ||x|| ||r|| so that
  per-example gradients are never materialised.

``loss``, ``predict``, ``accuracy(params, X, y)`` (fraction correct per device)
and ``evaluator(X, y)`` (a callable ``params -> accuracy`` for a fixed test
set, which a model may speed up by precomputing what depends on ``X``) are
derived from ``scores``.  :class:`LogisticRegression` overrides them with Numba
kernels (:mod:`topokit.training._kernels`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_int
from ..errors import InvalidInputError
from ._kernels import (
    argmax_classes,
    clipped_residual,
    count_correct,
    count_correct_certified,
    shift_logits,
    weights_to_float32,
)

__all__ = ["Model", "LogisticRegression", "MLP", "make_model"]

_TINY = 1e-12


def _softmax(logits: NDArray) -> NDArray:
    shifted = np.subtract(logits, logits.max(axis=-1, keepdims=True), order="C")
    np.exp(shifted, out=shifted)
    shifted /= shifted.sum(axis=-1, keepdims=True)
    return shifted


def _subtract_one_hot(probabilities: NDArray, y: NDArray) -> None:
    """probabilities - one_hot(y), in place (the residual of softmax cross-entropy)."""
    if not probabilities.flags.c_contiguous:
        picked = np.take_along_axis(probabilities, y[..., None], -1)
        np.put_along_axis(probabilities, y[..., None], picked - 1.0, -1)
        return
    k = probabilities.shape[-1]
    flat = probabilities.reshape(-1)  # a view of the C-contiguous array
    flat[np.arange(y.size) * k + y.reshape(-1)] -= 1.0


def _clip_factors(sq_norms: NDArray, max_grad_norm: float | NDArray | None) -> NDArray:
    """min(1, C / ||g_b||) for every example (1 when C is None).

    ``max_grad_norm`` is a number or one norm per device, shape (n_devices,)
    (``inf`` for a device that does not clip).
    """
    if max_grad_norm is None:
        return np.ones_like(sq_norms)
    bound = np.asarray(max_grad_norm, dtype=np.float64)
    if bound.ndim == 1:
        bound = bound[:, None]
    return np.minimum(1.0, bound / np.sqrt(np.maximum(sq_norms, _TINY)))


def _matmul(X: NDArray, weights: NDArray) -> NDArray:
    """X @ W for every device: X (n, b, f) or (b, f) shared, W (n, f, k) -> (n, b, k).

    A shared X is one GEMM against all devices' weights side by side; numpy's
    broadcasting matmul would fall back to a slow loop there.
    """
    if X.ndim == 2:
        n, f, k = weights.shape
        wide = np.ascontiguousarray(weights.transpose(1, 0, 2)).reshape(f, n * k)
        return (X @ wide).reshape(X.shape[0], n, k).transpose(1, 0, 2)  # a view, no copy
    return np.matmul(X, weights)


class Model:
    """Base class of a classifier on stacked parameters (see the module docstring).

    Parameters
    ----------
    n_features, n_classes : int
        Input dimension and number of classes.
    """

    def __init__(self, n_features: int, n_classes: int):
        self.n_features = check_int(n_features, "n_features", low=1)
        self.n_classes = check_int(n_classes, "n_classes", low=2)

    @property
    def n_params(self) -> int:
        raise NotImplementedError

    def init(self, n_devices: int, rng: np.random.Generator) -> NDArray[np.float64]:
        raise NotImplementedError

    def scores(self, params: NDArray, X: NDArray) -> NDArray:
        raise NotImplementedError

    def per_example_gradients(self, params: NDArray, X: NDArray, y: NDArray) -> NDArray:
        raise NotImplementedError

    def gradient(
        self,
        params: NDArray,
        X: NDArray,
        y: NDArray,
        weight: NDArray,
        max_grad_norm: float | None = None,
    ) -> NDArray:
        """sum_b weight[:, b] * clip(g_b): shape (n_devices, n_params)."""
        grads = self.per_example_gradients(params, X, y)
        factors = _clip_factors(np.einsum("nbp,nbp->nb", grads, grads), max_grad_norm)
        return np.einsum("nb,nbp->np", factors * weight, grads)

    def loss(self, params: NDArray, X: NDArray, y: NDArray) -> NDArray:
        """Mean cross-entropy of every device: shape (n_devices,)."""
        logits = self.scores(params, X)
        logits = logits - logits.max(axis=-1, keepdims=True)
        log_norm = np.log(np.exp(logits).sum(axis=-1))
        y = np.broadcast_to(y, logits.shape[:-1])
        picked = np.take_along_axis(logits, y[..., None], axis=-1)[..., 0]
        return (log_norm - picked).mean(axis=-1)

    def predict(self, params: NDArray, X: NDArray) -> NDArray[np.int64]:
        """Predicted class of every example for every device: shape (n_devices, batch)."""
        return self.scores(params, X).argmax(axis=-1)

    def accuracy(self, params: NDArray, X: NDArray, y: NDArray) -> NDArray[np.float64]:
        """Fraction of correct predictions of every device: shape (n_devices,)."""
        return (self.predict(params, X) == y).mean(axis=-1)

    def evaluator(self, X: NDArray, y: NDArray) -> Callable[[NDArray], NDArray[np.float64]]:
        """``evaluate(params)`` = ``accuracy(params, X, y)`` for a fixed held-out set.

        Models may precompute what depends on ``X`` only (the training loop
        evaluates the same test set at every checkpoint).
        """
        return lambda params: self.accuracy(params, X, y)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_features={self.n_features}, n_classes={self.n_classes})"


class LogisticRegression(Model):
    """Multinomial logistic regression (softmax of an affine map), cross-entropy loss.

    One device's parameters are the (n_features + 1, n_classes) matrix
    [W; b] flattened row by row.  ``init`` draws N(0, init_scale^2) weights
    and zero biases (``init_scale=0`` starts every device at zero).
    """

    def __init__(self, n_features: int, n_classes: int, *, init_scale: float = 0.01):
        super().__init__(n_features, n_classes)
        self.init_scale = float(init_scale)

    @property
    def n_params(self) -> int:
        return (self.n_features + 1) * self.n_classes

    def _split(self, params: NDArray) -> tuple[NDArray, NDArray]:
        stacked = params.reshape(params.shape[0], self.n_features + 1, self.n_classes)
        return stacked[:, :-1, :], stacked[:, -1:, :]

    def init(self, n_devices: int, rng: np.random.Generator) -> NDArray[np.float64]:
        params = np.zeros((n_devices, self.n_features + 1, self.n_classes))
        if self.init_scale:
            params[:, :-1, :] = self.init_scale * rng.standard_normal(
                (n_devices, self.n_features, self.n_classes)
            )
        return params.reshape(n_devices, -1)

    def scores(self, params: NDArray, X: NDArray) -> NDArray:
        weights, bias = self._split(params)
        return _matmul(X, weights) + bias

    def _shared_logits(self, params: NDArray, X: NDArray) -> tuple[NDArray, NDArray]:
        """Logits on a shared X (m, f) without the bias: (n * k, m), device i's class c in row
        i * k + c (one GEMM against all devices' weights stacked class by class), and the
        biases (n, k)."""
        n, f, k = params.shape[0], self.n_features, self.n_classes
        stacked = params.reshape(n, f + 1, k)
        tall = np.ascontiguousarray(stacked[:, :-1, :].transpose(0, 2, 1)).reshape(n * k, f)
        return tall @ X.T, stacked[:, -1, :]

    def predict(self, params: NDArray, X: NDArray) -> NDArray[np.int64]:
        if X.ndim != 2:
            return super().predict(params, X)
        # Shared test set: one GEMM, then the argmax over the classes in a kernel (first
        # maximum wins, as in argmax).
        logits, bias = self._shared_logits(params, X)
        labels = np.empty((params.shape[0], X.shape[0]), dtype=np.int64)
        argmax_classes(logits, bias, labels)
        return labels

    def accuracy(self, params: NDArray, X: NDArray, y: NDArray) -> NDArray[np.float64]:
        if X.ndim != 2:
            return super().accuracy(params, X, y)
        logits, bias = self._shared_logits(params, X)
        correct = np.empty(params.shape[0], dtype=np.int64)
        count_correct(logits, bias, np.asarray(y, dtype=np.int64), correct)
        return correct / X.shape[0]

    def evaluator(self, X: NDArray, y: NDArray) -> Callable[[NDArray], NDArray[np.float64]]:
        """Accuracy on a fixed test set from a single-precision product, exact labels.

        The test-set product runs in float32 (half the time of float64), with
        a rigorous bound on its error; the few examples whose two best classes
        are closer than the bound are classified again in float64 (see
        :func:`~topokit.training._kernels.count_correct_certified`).  Falls
        back to :meth:`accuracy` for data beyond float32's range.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        if X.ndim != 2 or not np.all(np.abs(X) < 1e30) or self.n_features > 1000:
            return super().evaluator(X, y)
        f, k = self.n_features, self.n_classes
        X32 = X.astype(np.float32)
        # |float32 X W - X W| <= gamma_{f+2} ||x|| ||w_c|| (conversion of both factors and f
        # roundings); gamma_{f+2} < (f + 2) 2^-24 (1 + 1e-4) for f < 1e3: taken twice for safety.
        scale = (f + 2) * 2.0**-23
        x_norm = np.sqrt(np.einsum("mf,mf->m", X, X))
        x_max = float(x_norm.max())
        buffers = {}

        def evaluate(params):
            n = params.shape[0]
            if n not in buffers:
                buffers[n] = (np.empty((n, k, f), dtype=np.float32),
                              np.empty((n * k, X.shape[0]), dtype=np.float32))
            tall, logits = buffers[n]
            stacked = params.reshape(n, f + 1, k)
            weights = stacked[:, :-1, :]
            # float32 weights and max_c ||w_ic|| (inf where float32 could overflow, or NaN).
            w_norm = weights_to_float32(weights, tall, x_max)
            np.matmul(tall.reshape(n * k, f), X32.T, out=logits)
            correct = np.empty(n, dtype=np.int64)
            count_correct_certified(logits, stacked[:, -1, :], y, x_norm, w_norm, scale, X,
                                    weights, correct)
            return correct / X.shape[0]

        return evaluate

    def _residual(self, params: NDArray, X: NDArray, y: NDArray) -> NDArray:
        residual = _softmax(self.scores(params, X))
        _subtract_one_hot(residual, y)
        return residual

    def per_example_gradients(self, params: NDArray, X: NDArray, y: NDArray) -> NDArray:
        residual = self._residual(params, X, y)
        ones = np.ones((*X.shape[:-1], 1))
        augmented = np.concatenate([X, ones], axis=-1)
        grads = augmented[..., :, None] * residual[..., None, :]
        return grads.reshape(*X.shape[:-1], self.n_params)

    def gradient(self, params, X, y, weight, max_grad_norm=None, *, row_sq_norms=None, out=None):
        """As :meth:`Model.gradient`, by a fused kernel on the batch logits.

        ``row_sq_norms`` (n_devices, batch), optional, holds ||x||^2 of every
        example (computed when not given); ``out`` (n_devices, n_params),
        optional, receives the gradient.
        """
        n, f, k = params.shape[0], self.n_features, self.n_classes
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64)
        weight = np.asarray(weight, dtype=np.float64)
        if max_grad_norm is None:
            bound = np.full(n, np.inf)
        else:
            bound = np.asarray(max_grad_norm, dtype=np.float64)
            if bound.shape != (n,):
                bound = np.array(np.broadcast_to(bound, (n,)))
            if row_sq_norms is None:
                row_sq_norms = np.einsum("nbf,nbf->nb", X, X)
        if row_sq_norms is None:
            row_sq_norms = np.zeros(y.shape)
        stacked = params.reshape(n, f + 1, k)
        residual = np.matmul(X, stacked[:, :-1, :])
        if out is None:
            out = np.empty((n, self.n_params))
        grad = out.reshape(n, f + 1, k)
        shift_logits(residual, stacked[:, -1, :])
        np.exp(residual, out=residual)
        clipped_residual(residual, y, weight, row_sq_norms, bound, grad[:, -1, :])
        np.matmul(np.swapaxes(X, -1, -2), residual, out=grad[:, :-1, :])
        return out


class MLP(Model):
    """A one-hidden-layer perceptron: softmax(W2 relu(W1 x + b1) + b2), cross-entropy loss.

    One device's parameters are W1 (n_features, hidden), b1, W2 (hidden,
    n_classes), b2, flattened in that order.  ``init`` is Glorot-uniform for
    the weights and zero for the biases.
    """

    def __init__(self, n_features: int, n_classes: int, *, hidden: int = 32):
        super().__init__(n_features, n_classes)
        self.hidden = check_int(hidden, "hidden", low=1)
        f, h, k = self.n_features, self.hidden, self.n_classes
        sizes = [f * h, h, h * k, k]
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).tolist()

    @property
    def n_params(self) -> int:
        return self._offsets[-1]

    def _split(self, params: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        n = params.shape[0]
        f, h, k = self.n_features, self.hidden, self.n_classes
        o = self._offsets
        # Contiguous copies: np.matmul falls back to a slow loop on strided batches.
        return (
            np.ascontiguousarray(params[:, o[0]:o[1]]).reshape(n, f, h),
            params[:, o[1]:o[2]].reshape(n, 1, h),
            np.ascontiguousarray(params[:, o[2]:o[3]]).reshape(n, h, k),
            params[:, o[3]:o[4]].reshape(n, 1, k),
        )

    def init(self, n_devices: int, rng: np.random.Generator) -> NDArray[np.float64]:
        f, h, k = self.n_features, self.hidden, self.n_classes
        params = np.zeros((n_devices, self.n_params))
        o = self._offsets
        limit1, limit2 = math.sqrt(6.0 / (f + h)), math.sqrt(6.0 / (h + k))
        params[:, o[0]:o[1]] = rng.uniform(-limit1, limit1, (n_devices, f * h))
        params[:, o[2]:o[3]] = rng.uniform(-limit2, limit2, (n_devices, h * k))
        return params

    def _forward(self, params, X):
        w1, b1, w2, b2 = self._split(params)
        pre = _matmul(X, w1) + b1
        hidden = np.ascontiguousarray(np.maximum(pre, 0.0))
        return (w1, w2), pre, hidden, np.matmul(hidden, w2) + b2

    def scores(self, params: NDArray, X: NDArray) -> NDArray:
        return self._forward(params, X)[-1]

    def _backward(self, params, X, y):
        (_, w2), pre, hidden, logits = self._forward(params, X)
        out_res = _softmax(logits)
        _subtract_one_hot(out_res, y)
        hid_res = np.matmul(out_res, np.swapaxes(w2, -1, -2)) * (pre > 0)
        return hidden, hid_res, out_res

    def per_example_gradients(self, params: NDArray, X: NDArray, y: NDArray) -> NDArray:
        hidden, hid_res, out_res = self._backward(params, X, y)
        lead = X.shape[:-1]
        parts = [
            (X[..., :, None] * hid_res[..., None, :]).reshape(*lead, -1),
            hid_res,
            (hidden[..., :, None] * out_res[..., None, :]).reshape(*lead, -1),
            out_res,
        ]
        return np.concatenate(parts, axis=-1)

    def gradient(self, params, X, y, weight, max_grad_norm=None):
        hidden, hid_res, out_res = self._backward(params, X, y)
        if max_grad_norm is None:
            factors = weight
        else:
            sq_norms = (np.einsum("nbf,nbf->nb", X, X) + 1.0) * np.einsum(
                "nbh,nbh->nb", hid_res, hid_res
            ) + (np.einsum("nbh,nbh->nb", hidden, hidden) + 1.0) * np.einsum(
                "nbk,nbk->nb", out_res, out_res
            )
            factors = _clip_factors(sq_norms, max_grad_norm) * weight
        hid_res = hid_res * factors[..., None]
        out_res = out_res * factors[..., None]
        n = params.shape[0]
        o = self._offsets
        out = np.empty((n, self.n_params))
        out[:, o[0]:o[1]] = np.matmul(np.swapaxes(X, -1, -2), hid_res).reshape(n, -1)
        out[:, o[1]:o[2]] = hid_res.sum(axis=1)
        out[:, o[2]:o[3]] = np.matmul(np.swapaxes(hidden, -1, -2), out_res).reshape(n, -1)
        out[:, o[3]:o[4]] = out_res.sum(axis=1)
        return out

    def __repr__(self) -> str:
        return (
            f"MLP(n_features={self.n_features}, n_classes={self.n_classes}, hidden={self.hidden})"
        )


_MODELS = {"logreg": LogisticRegression, "mlp": MLP}


def _shipped_name(model: Any) -> str | None:
    """The name ("logreg", "mlp") that builds ``model`` as topokit trains it, else None.

    A name topokit trains is its own; an instance counts only when it is that
    name's model exactly (its class, not a subclass, with the same settings:
    an MLP of another hidden width is another model, which no shipped fit has
    runs of).

    >>> _shipped_name("mlp"), _shipped_name(MLP(4, 3)), _shipped_name(MLP(4, 3, hidden=128))
    ('mlp', 'mlp', None)
    """
    if isinstance(model, str):
        return model if model in _MODELS else None
    for name, cls in _MODELS.items():
        if type(model) is cls and repr(model) == repr(cls(model.n_features, model.n_classes)):
            return name
    return None


def make_model(model: str | Model, n_features: int, n_classes: int) -> Model:
    """A :class:`Model` from a name ("logreg", "mlp") or a ready instance (checked)."""
    if isinstance(model, Model):
        if model.n_features != n_features or model.n_classes < n_classes:
            raise InvalidInputError(
                f"the model expects {model.n_features} features and {model.n_classes} classes; "
                f"the data has {n_features} features and {n_classes} classes"
            )
        return model
    if isinstance(model, str) and model in _MODELS:
        return _MODELS[model](n_features, n_classes)
    raise InvalidInputError(
        f"model must be one of {sorted(_MODELS)} or a topokit.training.Model instance; "
        f"got {model!r}"
    )

