"""Defaults the command line shows in its help, kept where importing them costs nothing.

:mod:`topokit.design.metrics` (their public home, which re-exports them) imports the
predictors, that is scikit-learn; ``topokit --help`` should not.
"""

#: Rounds of gossip of the stranger audit that ``topokit design``, ``analyze`` and
#: :func:`~topokit.validation.validate` run on every topology they report.  mu
#: grows with the rounds and levels off once the gossip has mixed: on the bundled
#: siot32's AutoTag design the worst finite stranger mu at 50 rounds is within 1e-9 of
#: its 1,000-round value.
DEFAULT_AUDIT_ROUNDS = 50

#: Names :func:`~topokit.design.time_predictor.load_predictor` knows besides file paths:
#: eq. (15) and the shipped fits (the HTTP service accepts exactly these).
PREDICTOR_NAMES = ("default", "paper", "mlp", "workload")
