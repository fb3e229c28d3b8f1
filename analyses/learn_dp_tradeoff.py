"""Table IV of Zhang et al.: PPGL-L's F-score against the per-round epsilon, with privacy accounted.

    python -m analyses.learn_dp_tradeoff [--quick]

Setting (the paper's Table IV): N_i in {50, 100, 200}, q = 0.5, I = 5, d = 20,
delta = 1e-5 per round, C = 20, epsilon per round and per client; noise of
Corollary 1 (sensitivity 2 C / N_i), calibrated with the analytic Gaussian mechanism at
every epsilon; T = ROUNDS rounds with eta = ETA
(implicit coupling).  Tuning as in analyses/learn_tables.py, once per N and
without DP: beta from IGL's best mean F over BETAS, then (rho, lambda) from
PPGL-L's best mean F over RHOS x LAM_OVER_RHO; the DP runs reuse them (the
paper tunes without noise; tuning on private data would itself spend privacy).
10 instances (3 with --quick).

Three parts, all with formally accounted privacy (dp-accounting, PLD and RDP,
total delta T * 1e-5, beside basic composition T epsilon):

1. ``table``: IGL, PPGL-L without DP and with epsilon in {0.5, 0.8, 1.0}, and
   beside each DP row PPGL-L with ``dp_release="distances"`` at the same
   accounted total privacy: each client privatizes its mean distances once
   (noise sigma / sqrt(T), which spends exactly what T gradient releases of
   noise sigma do) and the rounds are post-processing.  The mean distances are
   the only data-dependent part of the gradient, so both carry the same
   information about the data.
2. ``sweep``: F against epsilon per round from 0.5 to 1000, to show where the
   learned graphs regain their structure.
3. ``paper_noise``: the per-round epsilon whose noise is Corollary 1's divided by
   N_i (as if the sensitivity were 2 C / N_i^2, e.g. noise calibrated for the
   mean but added to a gradient of summed distances), run as an ordinary,
   accounted epsilon: these F-scores land near the paper's Table IV, ours at
   Corollary 1's noise do not.

Writes analyses/out/learn_dp_tradeoff.{csv,md}, learn_dp_sweep.{csv,md},
learn_dp_paper_noise.{csv,md} and learn_dp_tradeoff.png.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from analyses._common import out_path, run_quick, write_table
from analyses.learn_tables import BETAS, igl_score, mean_scores
from topokit._io import atomic_path
from topokit.dp import classic_gaussian_factor, gaussian_sigma
from topokit.learn import (
    learn_federated,
    synthetic_federated,
)

ROUNDS, ETA, C, DELTA = 200, 0.2, 20.0, 1e-5
RHOS = (0.1, 0.3, 1.0, 3.0)
LAM_OVER_RHO = (0.01, 0.1, 0.2)
SIZES = (50, 100, 200)
TABLE_EPSILONS = (0.5, 0.8, 1.0)
SWEEP_EPSILONS = (0.5, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
#: Table IV of the paper: F-score of IGL, PPGL-L without DP (None) and per epsilon.
PAPER_F = {
    50: {"IGL": 0.646, None: 0.709, 0.5: 0.615, 0.8: 0.651, 1.0: 0.694},
    100: {"IGL": 0.725, None: 0.767, 0.5: 0.709, 0.8: 0.732, 1.0: 0.754},
    200: {"IGL": 0.808, None: 0.828, 0.5: 0.811, 0.8: 0.819, 1.0: 0.823},
}


def igl_scores(data, beta) -> tuple[float, float]:
    """IGL's mean (F, RE) over clients and instances."""
    return tuple(igl_score(data, beta)[2:])


def tune(data) -> dict:
    """beta from IGL's best F, then (rho, lambda) from PPGL-L's best F, all without DP."""
    beta = max(BETAS, key=lambda b: igl_scores(data, b)[0])
    grid = [(rho, round(f * rho, 6)) for rho in RHOS for f in LAM_OVER_RHO]
    rho, lam = max(grid, key=lambda rl: ppgl(data, None, {"beta": beta, "rho": rl[0],
                                                          "lam": rl[1]})[0])
    return {"beta": beta, "rho": rho, "lam": lam}


def ppgl(data, epsilon, params, *, delta=DELTA, dp_release="gradients"):
    """PPGL-L's mean (F, RE) over instances and the privacy of the run (None without DP)."""
    scores, privacy = [], None
    for k, instance in enumerate(data):
        result = learn_federated(instance.signals, 1.0, params["beta"], params["rho"],
                                 params["lam"], rounds=ROUNDS, eta=ETA,
                                 coupling="implicit", epsilon=epsilon, delta=delta,
                                 clip=C if epsilon else None, seed=k, dp_release=dp_release)
        scores.append(mean_scores([g.weights for g in result.local], instance.local_weights)[2:])
        privacy = result.privacy
    f_score, rel_error = np.mean(scores, axis=0)
    return float(f_score), float(rel_error), privacy


def one_release(data, params, privacy) -> tuple[float, float]:
    """PPGL-L's mean (F, RE) with ``dp_release="distances"`` at the gradient run's total privacy.

    One Gaussian release of each client's clipped mean distances, calibrated to the
    (epsilon, delta) that dp-accounting's PLD gives for the whole gradient run; its noise
    is the gradient noise / sqrt(T) (Gaussian composition is exact).
    """
    return ppgl(data, privacy.epsilon_pld, params, delta=privacy.total_delta,
                dp_release="distances")[:2]


def epsilon_for_sigma(sigma: float, sensitivity: float) -> float:
    """The per-round epsilon >= 1 whose calibrated noise (analytic Gaussian) is sigma."""
    def excess(log_eps):
        return math.log(gaussian_sigma(math.exp(log_eps), DELTA, sensitivity)) - math.log(sigma)
    if excess(0.0) <= 0:
        raise ValueError("sigma is at least the noise of epsilon = 1; use the classic formula")
    return math.exp(brentq(excess, 0.0, math.log(1e7), xtol=1e-10))


def privacy_columns(privacy) -> dict:
    if privacy is None:
        return {"sigma": np.nan, "eps_total_pld": np.nan, "eps_total_rdp": np.nan,
                "eps_basic": np.nan}
    return {"sigma": privacy.sigma[0], "eps_total_pld": privacy.epsilon_pld,
            "eps_total_rdp": privacy.epsilon_rdp, "eps_basic": privacy.basic_epsilon}


def table_rows(n: int, data, params) -> list[dict]:
    f_igl, re_igl = igl_scores(data, params["beta"])
    rows = [{"N": n, "method": "IGL", "F": f_igl, "RE": re_igl, "paper_F": PAPER_F[n]["IGL"],
             "once_F": np.nan, "once_RE": np.nan, **params, **privacy_columns(None)}]
    for epsilon in (None, *TABLE_EPSILONS):
        f_score, rel_error, privacy = ppgl(data, epsilon, params)
        once_f, once_re = one_release(data, params, privacy) if privacy else (np.nan, np.nan)
        rows.append({"N": n, "method": "PPGL-L" if epsilon is None else f"PPGL-L (eps={epsilon})",
                     "F": f_score, "RE": rel_error, "paper_F": PAPER_F[n][epsilon],
                     "once_F": once_f, "once_RE": once_re, **params,
                     **privacy_columns(privacy)})
        print(rows[-1], flush=True)
    return rows


def sweep_rows(n: int, data, params, epsilons) -> list[dict]:
    rows = []
    for epsilon in epsilons:
        f_score, rel_error, privacy = ppgl(data, epsilon, params)
        rows.append({"N": n, "eps_round": epsilon, "F": f_score, "RE": rel_error,
                     **privacy_columns(privacy)})
    return rows


def paper_noise_rows(n: int, data, params) -> list[dict]:
    rows = []
    for epsilon in TABLE_EPSILONS:
        sensitivity = 2.0 * C / n
        sigma = classic_gaussian_factor(DELTA) * sensitivity / epsilon / n
        equivalent = epsilon_for_sigma(sigma, sensitivity)
        f_score, rel_error, privacy = ppgl(data, equivalent, params)
        rows.append({"N": n, "paper_eps": epsilon, "eps_round": equivalent, "F": f_score,
                     "RE": rel_error, "paper_F": PAPER_F[n][epsilon],
                     **privacy_columns(privacy)})
        print(rows[-1], flush=True)
    return rows


def figure(sweep: pd.DataFrame, table: pd.DataFrame, paper: pd.DataFrame) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (n, group), colour in zip(sweep.groupby("N"), ("C0", "C1", "C2"), strict=True):
        ax.plot(group["eps_round"], group["F"], "o-", color=colour, label=f"PPGL-L, N = {n}")
        no_dp = table[(table["N"] == n) & (table["method"] == "PPGL-L")]["F"].iloc[0]
        ax.axhline(no_dp, color=colour, ls=":", lw=1)
        rows = paper[paper["N"] == n]
        ax.plot(rows["eps_round"], rows["paper_F"], "x", color=colour, ms=8,
                label=f"paper, N = {n}, at eps giving Cor. 1 noise / N")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon per round and client (delta = 1e-5), accounted")
    ax.set_ylabel("F-score of the local graphs")
    ax.set_title("PPGL under DP: dotted = without DP")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out_path("learn_dp_tradeoff.png")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    return path


def main(quick: bool) -> None:
    n_inst = 3 if quick else 10
    sweep_epsilons = SWEEP_EPSILONS[::3] if quick else SWEEP_EPSILONS
    table, sweep, paper = [], [], []
    for n in SIZES:
        data = [synthetic_federated(n, q=0.5, seed=7000 + 10 * s + n) for s in range(n_inst)]
        params = tune(data)
        print(f"N = {n}: tuned {params}", flush=True)
        table += table_rows(n, data, params)
        sweep += sweep_rows(n, data, params, sweep_epsilons)
        paper += paper_noise_rows(n, data, params)
    privacy_cols = [("sigma", "sigma", ".3g"), ("eps total (PLD)", "eps_total_pld", ".3g"),
                    ("eps total (RDP)", "eps_total_rdp", ".3g"),
                    ("basic T*eps", "eps_basic", ".3g")]
    table, sweep, paper = pd.DataFrame(table), pd.DataFrame(sweep), pd.DataFrame(paper)
    write_table("learn_dp_tradeoff", table, [
        ("N", "N", ""), ("method", "method", ""), ("F", "F", ".3f"), ("RE", "RE", ".3f"),
        ("paper F", "paper_F", ".3f"),
        ("one release, same total privacy: F", "once_F", ".3f"), ("its RE", "once_RE", ".3f"),
        ("beta", "beta", "g"), ("rho", "rho", "g"), ("lambda", "lam", "g"), *privacy_cols])
    write_table("learn_dp_sweep", sweep, [
        ("N", "N", ""), ("eps per round", "eps_round", ".3g"), ("F", "F", ".3f"),
        ("RE", "RE", ".3f"), *privacy_cols])
    write_table("learn_dp_paper_noise", paper, [
        ("N", "N", ""), ("paper eps", "paper_eps", ".3g"),
        ("eps per round giving its noise / N", "eps_round", ".4g"), ("F", "F", ".3f"),
        ("paper F", "paper_F", ".3f"), *privacy_cols])
    print(figure(sweep, table, paper))


if __name__ == "__main__":
    run_quick(main)
