"""The round loop of D-PSGD with partial DP: local steps, noise, mixing, checkpoints, stop rules.

:func:`run_rounds` executes a :class:`~topokit.training.plan.TrainingPlan`
with the run's generators; each step of a round has its own object holding
the buffers it reuses across rounds:

- :class:`LocalSGD`: every device's ``local_steps`` minibatch SGD steps;
- :class:`GaussianNoise`: the noise the DP devices add to what they send;
- :func:`mixing_product`: X <- A Y, dense or CSR, and :func:`round_mixing`, the
  product of each round (one for a static topology, one per round of a schedule);
- :class:`StoppingRules`: divergence, target accuracy and convergence,
  checked at every checkpoint.

Nothing here validates: the plan is checked when it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidInputError
from ._kernels import all_finite, csr_mix
from .models import LogisticRegression, Model

if TYPE_CHECKING:
    from ._sampling import PoissonSampler
    from .core import Convergence
    from .plan import TrainingPlan
    from .privacy import DPPlan

__all__ = [
    "Course",
    "run_rounds",
    "mixing_product",
    "round_mixing",
    "LocalSGD",
    "GaussianNoise",
    "StoppingRules",
    "SPARSE_MIXING_FROM",
    "SPARSE_MIXING_DENSITY",
]

#: The mixing product X <- A Y uses A in CSR form from this many devices on, when at most
#: this fraction of its entries is nonzero.
SPARSE_MIXING_FROM = 16
SPARSE_MIXING_DENSITY = 0.25

Mix = Callable[[NDArray[np.float64], NDArray[np.float64]], None]


class Course(NamedTuple):
    """What the round loop measured.

    Attributes
    ----------
    rounds : ndarray of int64, shape (n_checkpoints,)
        Rounds completed at each checkpoint (0 is the initial model).
    accuracy : ndarray of shape (n_checkpoints, n_devices)
    rounds_run : int
    stop_rule : str
        "rounds", "convergence", "target_accuracy" or "diverged".
    final_params : ndarray of shape (n_devices, n_params)
    """

    rounds: NDArray[np.int64]
    accuracy: NDArray[np.float64]
    rounds_run: int
    stop_rule: str
    final_params: NDArray[np.float64]


def _as_slice(rows: NDArray[np.int64]) -> slice | NDArray[np.int64]:
    """``rows`` as a slice when they are evenly spaced (indexing then gives a view)."""
    if len(rows) == 0:
        return rows
    if len(rows) == 1:
        return slice(int(rows[0]), int(rows[0]) + 1)
    steps = np.diff(rows)
    if steps[0] > 0 and np.all(steps == steps[0]):
        return slice(int(rows[0]), int(rows[-1]) + 1, int(steps[0]))
    return rows


def mixing_product(weights: NDArray[np.float64]) -> Mix:
    """``mix(values, out)``: out <- weights @ values, in CSR form when that is cheaper."""
    n = weights.shape[0]
    if n >= SPARSE_MIXING_FROM and np.count_nonzero(weights) < SPARSE_MIXING_DENSITY * n * n:
        # CSR @ dense costs O(links * p), not O(n^2 p): faster from 16 devices on at the degrees
        # of social graphs (scipy's product: 19 vs 29 us at 32 devices, 74 vs 446 us at 128);
        # the kernel does scipy's arithmetic without its per-call overhead.
        from scipy.sparse import csr_matrix

        sparse = csr_matrix(weights)
        sparse.sort_indices()
        csr = (sparse.indptr.astype(np.int64), sparse.indices.astype(np.int64), sparse.data)

        def mix(values, out):
            csr_mix(*csr, values, out)

        return mix

    def mix(values, out):
        np.matmul(weights, values, out=out)

    return mix


def round_mixing(plan: TrainingPlan) -> Callable[[int], Mix]:
    """``mix_at(t)``: the product X <- A_t Y of round t.

    A static topology has one product for every round (the plan's
    ``mixing``); a cyclic schedule one per topology of its period, built
    once; a generated schedule a new one each round, its topology drawn and
    checked as the round starts.
    """
    scheduled = plan.time_varying
    if scheduled is None:
        mix = mixing_product(plan.mixing)
        return lambda t: mix
    if scheduled.period is not None:
        products = [mixing_product(scheduled.matrix(t)) for t in range(scheduled.period)]
        return lambda t: products[t % len(products)]
    return lambda t: mixing_product(scheduled.matrix(t))


def initial_params(model: Model, n_devices: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``model.init`` as a C-contiguous float64 buffer of shape (n_devices, n_params)."""
    params = np.array(model.init(n_devices, rng), dtype=np.float64, order="C")
    if params.shape != (n_devices, model.n_params):
        raise InvalidInputError(
            f"model.init returned shape {params.shape}; expected ({n_devices}, {model.n_params})"
        )
    return params


class LocalSGD:
    """Every device's ``local_steps`` minibatch SGD steps of a round, in place.

    Logistic regression takes the fused path: ||x||^2 of every training row
    computed once, the gradient written into a buffer kept across rounds.
    DP devices clip every per-example gradient to their bound in
    ``plan.dp.clip`` (None: nobody clips), and from the second local step on
    divide their clipped sum by max(B_i, |b_i|) rather than B_i
    (``plan.dp.capped``), so that no later step moves by more than eta C: the
    bound :func:`~topokit.training.privacy.clipped_sensitivity` proves.
    """

    def __init__(self, plan: TrainingPlan, shape: tuple[int, int], rng: np.random.Generator):
        self.model = plan.model
        self.sampler: PoissonSampler = plan.sampler
        self.local_steps = plan.schedule.local_steps
        self.clip = plan.dp.clip
        self.capped = plan.dp.capped
        self.rng = rng
        self.X_train, self.codes_train = plan.data.X_train, plan.data.codes_train
        self.fused = isinstance(self.model, LogisticRegression)
        self.grad = np.empty(shape)
        self.batch_sq_norms = None
        # Gathered once: full batches every step, or (fused path) every row of every device, the
        # Poisson draw then being weights that are zero on the rows not drawn; a GEMM over all
        # rows (|D_i| instead of about B) costs less than gathering a new batch every step.
        self.gather_once = self.sampler.full or self.fused
        if self.gather_once:
            index = self.sampler.members
            self.full_batch = (self.X_train[index], self.codes_train[index])
            if self.fused:
                row_sq_norms = np.einsum("rf,rf->r", self.X_train, self.X_train)
                self.batch_sq_norms = row_sq_norms[index]

    def _gradient(self, params, X_batch, y_batch, batch_weight):
        if self.fused:
            return self.model.gradient(
                params, X_batch, y_batch, batch_weight, self.clip,
                row_sq_norms=self.batch_sq_norms, out=self.grad,
            )
        return self.model.gradient(params, X_batch, y_batch, batch_weight, self.clip)

    def __call__(self, local: NDArray[np.float64], eta: float) -> None:
        """Take the steps x <- x - eta g from ``local``, overwriting it."""
        for k in range(self.local_steps):
            # The first step's divisor is B_i for everyone (its bound does not need more, and
            # with K = 1 the step stays the unbiased estimate); later DP steps are capped.
            capped = self.capped if k > 0 else None
            if self.gather_once:
                X_batch, y_batch = self.full_batch
                batch_weight = self.sampler.sample_weights(self.rng, capped)
            else:
                index, batch_weight = self.sampler.sample(self.rng, capped)
                X_batch, y_batch = self.X_train[index], self.codes_train[index]
            step = self._gradient(local, X_batch, y_batch, batch_weight)
            np.multiply(step, eta, out=self.grad)
            np.subtract(local, self.grad, out=local)


class GaussianNoise:
    """The Gaussian noise w_i ~ N(0, sigma_t^2 I) each DP device adds to what it sends."""

    def __init__(self, dp: DPPlan, n_params: int, rng: np.random.Generator):
        self.dp = dp
        self.rng = rng
        self.buffer = np.empty((len(dp.rows), n_params))
        self.index = _as_slice(dp.rows)  # a view when the DP rows are evenly spaced

    def __call__(
        self, local: NDArray[np.float64], params: NDArray[np.float64], eta: float
    ) -> None:
        """Add the noise of a round of step size ``eta`` to the DP rows of ``local``."""
        if not self.dp.active:
            return
        std = self.dp.noise_std(eta, local, params)
        self.rng.standard_normal(out=self.buffer)
        self.buffer *= std[:, None]
        local[self.index] += self.buffer


class StoppingRules:
    """The rules checked at every checkpoint, in order: diverged, target accuracy, convergence.

    Convergence needs |R_t - R_{t-H}| <= tol at ``patience`` consecutive
    checkpoints after at least one round (the paper's "t != 0").
    """

    def __init__(self, convergence: Convergence | None):
        self.convergence = convergence
        self.calm = 0  # consecutive checkpoints that satisfied the convergence rule

    def check(self, params: NDArray[np.float64], accuracies: list[NDArray]) -> str | None:
        """The rule that stops the run at this checkpoint, or None to go on."""
        if not all_finite(params):
            return "diverged"  # recorded, not raised: sweeps keep going
        if self.convergence is None:
            return None
        current = accuracies[-1].mean()
        target = self.convergence.target_accuracy
        if target is not None and current >= target:
            return "target_accuracy"
        moved = abs(current - accuracies[-2].mean())
        if len(accuracies) >= 3 and moved <= self.convergence.tol:
            self.calm += 1
            return "convergence" if self.calm >= self.convergence.patience else None
        self.calm = 0
        return None


def run_rounds(
    plan: TrainingPlan,
    rngs: dict[str, np.random.Generator],
    progress: Callable[[int, int], Any] | None = None,
) -> Course:
    """Run the rounds of ``plan`` with the run's "init", "sampling" and "noise" generators.

    One round: local SGD steps, noise on the DP rows, X <- A_t Y (the same A
    every round unless the topology varies in time, :func:`round_mixing`); the accuracy
    is recorded at round 0 and at every checkpoint, where the stop rules are
    checked.
    """
    schedule = plan.schedule
    params = initial_params(plan.model, plan.n_devices, rngs["init"])
    evaluate = plan.model.evaluator(plan.data.X_test, plan.data.codes_test)
    local_sgd = LocalSGD(plan, params.shape, rngs["sampling"])
    add_noise = GaussianNoise(plan.dp, params.shape[1], rngs["noise"])
    mix_at = round_mixing(plan)
    stopping = StoppingRules(plan.convergence)
    local, mixed = np.empty_like(params), np.empty_like(params)
    checkpoints, accuracies = [0], [evaluate(params)]
    stop_rule, done = "rounds", 0
    for t in range(schedule.rounds):
        eta = schedule.step_size(t)
        np.copyto(local, params)
        local_sgd(local, eta)
        add_noise(local, params, eta)
        mix_at(t)(local, mixed)
        params, mixed = mixed, params  # double buffer: the old parameters are not needed now
        done = t + 1
        if progress:
            progress(done, schedule.rounds)
        if schedule.is_checkpoint(done):
            checkpoints.append(done)
            accuracies.append(evaluate(params))
            rule = stopping.check(params, accuracies)
            if rule is not None:
                stop_rule = rule
                break
    return Course(
        rounds=np.asarray(checkpoints, dtype=np.int64),
        accuracy=np.vstack(accuracies),
        rounds_run=done,
        stop_rule=stop_rule,
        final_params=params,
    )
