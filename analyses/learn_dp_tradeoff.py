"""Table IV of Zhang et al.: PPGL-L's F-score against the per-round epsilon, with privacy accounted.

    python analyses/learn_dp_tradeoff.py [--quick]

N_i in {50, 100, 200}, q = 0.5, I = 5, d = 20, delta = 1e-5 per round, C = 20,
epsilon in {0.5, 0.8, 1.0} per round and per client; T = ROUNDS rounds with
eta = ETA (implicit coupling); beta, rho, lambda fixed from analyses/learn_tables.py's
tuning at N = 50 (BETA, RHO, LAM).  The total epsilon over T rounds comes from
dp-accounting (PLD and RDP, at total delta T * 1e-5) beside basic composition.
10 instances (3 with --quick).  Writes analyses/out/learn_dp_tradeoff.{csv,md}.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topokit.learn import edge_scores, igl, learn_federated, synthetic_federated  # noqa: E402

from _common import run_quick, write_table  # noqa: E402

ROUNDS, ETA, BETA, RHO, LAM, C, DELTA = 100, 0.2, 0.01, 0.1, 0.01, 20.0, 1e-5


def scores(ws, truths):
    s = [edge_scores(w, t) for w, t in zip(ws, truths)]
    return np.mean([x.f_score for x in s]), np.mean([x.relative_error for x in s])


def main(quick: bool) -> None:
    n_inst = 3 if quick else 10
    rows = []
    for n in (50, 100, 200):
        data = [synthetic_federated(n, q=0.5, seed=7000 + 10 * s + n) for s in range(n_inst)]
        res = {"IGL": [scores([g.weights for g in igl(d.signals, 1.0, BETA)], d.local_weights)
                       for d in data]}
        privacy = {}
        for eps in (None, 0.5, 0.8, 1.0):
            out = []
            for k, d in enumerate(data):
                r = learn_federated(d.signals, 1.0, BETA, RHO, LAM, rounds=ROUNDS, eta=ETA,
                                    coupling="implicit", epsilon=eps, delta=DELTA,
                                    clip=C if eps else None, seed=k)
                out.append(scores([g.weights for g in r.local], d.local_weights))
                privacy[eps] = r.privacy
            res["PPGL-L" if eps is None else f"PPGL-L (eps={eps})"] = out
        for method, vals in res.items():
            eps = None if "eps=" not in method else float(method.split("=")[1].rstrip(")"))
            p = privacy.get(eps) if eps else None
            rows.append({"N": n, "method": method, "F": np.mean([v[0] for v in vals]),
                         "RE": np.mean([v[1] for v in vals]),
                         "sigma": p.sigma[0] if p else np.nan,
                         "eps_total_pld": p.epsilon_pld if p else np.nan,
                         "eps_total_rdp": p.epsilon_rdp if p else np.nan,
                         "eps_basic": p.basic_epsilon if p else np.nan,
                         "delta_total": p.total_delta if p else np.nan})
            print(rows[-1], flush=True)
    write_table("learn_dp_tradeoff", pd.DataFrame(rows), [
        ("N", "N", ""), ("method", "method", ""), ("F", "F", ".3f"), ("RE", "RE", ".3f"),
        ("sigma", "sigma", ".3g"), ("eps total (PLD)", "eps_total_pld", ".3g"),
        ("eps total (RDP)", "eps_total_rdp", ".3g"), ("basic T*eps", "eps_basic", ".3g"),
    ])


if __name__ == "__main__":
    run_quick(main)
