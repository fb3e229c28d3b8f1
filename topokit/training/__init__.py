"""Training core: D-PSGD with partial differential privacy (DeepPrivacy, Algorithm 1 of [1]_).

Every device takes local minibatch SGD steps and averages with its neighbours
in a topology with its mixing weights (Lazy-Metropolis unless it carries its
own); the DP devices clip per-example
gradients and add Gaussian noise calibrated by :mod:`topokit.dp`, and privacy
over the run is accounted with dp-accounting.  The paper's training settings
are in its Appendix D; where topokit departs from them (configurable local
steps, clipping to a fixed norm instead of the paper's data-dependent
sensitivity, patience in the convergence check), :func:`train`,
:class:`DPConfig` and :class:`Convergence` say so.

>>> from topokit.training import train, DPConfig, load_digits   # doctest: +SKIP
>>> run = train(net, topology, *load_digits(), dp=DPConfig(epsilon=1.0), seed=0)  # doctest: +SKIP
>>> run.rounds_to(0.9), run.time_to(0.9), run.epsilon  # doctest: +SKIP

References
----------
.. [1] C.-W. Ching, H.-S. Huang, C.-A. Yang, Y.-C. Liu and J.-J. Kuo,
   "Efficient Communication Topology via Partially Differential Privacy for
   Decentralized Learning", National Chung Cheng University, Taiwan
   (Algorithm 1, Proposition 1, Appendix D); full entry in
   ``docs/references.rst``.
"""

from ._counts import partition_class_counts
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
from .user_data import TableData, load_table_data

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
    "partition_class_counts",
    "PoissonSampler",
    "load_digits",
    "load_fashion_mnist",
    "load_cifar10",
    "read_idx",
    "load_table_data",
    "TableData",
]
