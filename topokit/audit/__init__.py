"""What strangers learn through partial-DP gossip: the network-privacy audit.

==========================  ============================================================
module                      what it holds
==========================  ============================================================
:mod:`.core`                :func:`privacy_audit` -> :class:`PrivacyAudit`: the exact
                            mu-GDP of every stranger pair, for gossip and for D-SGD;
                            :func:`stranger_summary`: its stranger counts and maximum
:mod:`.attack`              :func:`reconstruction_attack`: the BLUE an observer computes of
                            every value from its view (checks the audit's mu)
:mod:`.stranger_bound`      the noise a topology's DP devices need so that no stranger
                            pair exceeds a bound (what :func:`topokit.optimize` enforces)
``._kernels``               the audit's arithmetic (one observer at a time)
``._schedule``              the same for a time-varying topology (round t's own W_t)
==========================  ============================================================
"""

from __future__ import annotations

from .attack import ReconstructionAttack, reconstruction_attack
from .core import (
    AUDIT_MODELS,
    MAX_AUDIT_ROUNDS,
    PrivacyAudit,
    audit_memory_needed,
    check_audit_rounds,
    privacy_audit,
    stranger_summary,
)

__all__ = ["PrivacyAudit", "privacy_audit", "stranger_summary", "AUDIT_MODELS", "MAX_AUDIT_ROUNDS",
           "check_audit_rounds", "audit_memory_needed", "ReconstructionAttack",
           "reconstruction_attack"]
