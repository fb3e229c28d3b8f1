"""Training core: D-PSGD with partial differential privacy (DeepPrivacy, Algorithm 1).

>>> from topokit.training import train, DPConfig, load_digits   # doctest: +SKIP
>>> run = train(net, topology, *load_digits(), dp=DPConfig(epsilon=1.0), seed=0)  # doctest: +SKIP
>>> run.rounds_to(0.9), run.time_to(0.9), run.epsilon  # doctest: +SKIP
"""

from .core import Convergence, PoissonSampler, TrainingRun, train
from .data import load_cifar10, load_digits, load_fashion_mnist, read_idx
from .models import MLP, LogisticRegression, Model, make_model
from .partition import (
    DirichletPartitioner,
    IidPartitioner,
    Partitioner,
    SkewPartitioner,
    make_partitioner,
)
from .privacy import DPConfig

__all__ = [
    "train",
    "TrainingRun",
    "Convergence",
    "DPConfig",
    "Model",
    "LogisticRegression",
    "MLP",
    "make_model",
    "Partitioner",
    "IidPartitioner",
    "SkewPartitioner",
    "DirichletPartitioner",
    "make_partitioner",
    "PoissonSampler",
    "load_digits",
    "load_fashion_mnist",
    "load_cifar10",
    "read_idx",
]
