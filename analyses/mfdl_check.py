"""An outside check of the D-SGD audit: MFDL's matrix-factorisation accounting.

MFDL (Bellet, Cyffers, Frey, Gaudel, Lerévérend and Taïani, "Unified privacy guarantees
for decentralized learning via matrix factorization", ICLR 2026; the repository
dimiarbre/MFDL on GitHub) accounts for decentralized SGD with independent noise in every
round (Muffliato with one gossip step, its correlation matrix C = I) in
``MFDL.simulations.muffliato_accounting.compute_muffliato_privacy_loss(W, T, attacker,
participation_interval)``: the attacker k sees the messages of every node j with
W[k, j] > 0 (itself included) in rounds 0..T-1, m^t = sum_{s <= t} W^{t-s} (g^s + eta^s),
and its own inputs g_k^t + eta_k^t; with B the rows of that view, node i's sensitivity is
sqrt(sum_{s,t} |(B^+ B)[(s, i), (t, i)]|) (participation every round).  That is
:func:`topokit.privacy_audit`'s D-SGD model (``model="dsgd"``) with the observer knowing
its own noise (the default) and every device adding noise z: the observer's own messages
are functions of its neighbours' and of its own inputs, and the Fisher information of the
view is G_i = A_i^T C^+ A_i = (B^+ B)[i-block] / z^2, so topokit's
mu_ik = sqrt(min(sum |G_i|, T / z^2)) is MFDL's sensitivity / z capped at sqrt(T) / z.

The cases: the toy network with its stored topology; siot16's NDLF (its social graph, 83
links), DeepPrivacy-ERG (seed 0, 23 links), the exponential graph (seed 0, 7 links per
device) and DLFDP (all 120 pairs linked: every observer hears everyone, so both sides
give sqrt(T) / z, a check of the cap alone); T = 10, 50, 100 and z = 1, 3.731; every
device noisy (MFDL's C = I gives every node the same noise; topokit's noise mapping
names each device).  MFDL runs in a subprocess of its own interpreter (Python 3.12, with
numpy, scipy, networkx, pandas, matplotlib, SciencePlots and fedivertex; not torch: when
torch is missing an empty module stands in for it, as the accounting never calls it) on
the mixing matrices written to a temporary folder, its code unchanged, twice: with its
``np.linalg.pinv`` at numpy's default cut-off (singular values above 1e-15 of the
largest) and with ``rcond=1e-10`` passed to it.  Per case it prints the largest absolute
and relative difference to topokit's mu (MFDL's values capped at sqrt(T) / z), how far
the default cut-off moves MFDL's values, and how many directions of each attacker's view
the default cut-off keeps that the 1e-10 one drops.

Run (from the repository root), with an MFDL checkout and a Python 3.12 environment::

    git clone https://github.com/dimiarbre/MFDL /tmp/mfdl-src
    python3.12 -m venv /tmp/mfdl-venv
    /tmp/mfdl-venv/bin/pip install numpy scipy networkx pandas matplotlib SciencePlots fedivertex
    python -m analyses.mfdl_check --mfdl-python /tmp/mfdl-venv/bin/python --mfdl-src /tmp/mfdl-src

``--quick``: T = 10 only.  About 6 minutes on one core (BLAS on one thread; the pseudo-
inverses of MFDL's dense 1,700 x 1,600 views at T = 100 take most of it); --quick about
6 seconds.  Without MFDL it prints what it needs and exits 2.  Writes
analyses/out/mfdl_check{,_quick}.json (command, versions, date, MFDL commit, numbers) and
analyses/out/mfdl_check{,_quick}.png (MFDL's mu against topokit's for both cut-offs, the
signed relative difference per pair, the largest per case).  Exits 1 when the 1e-10
cut-off's values, capped, differ from topokit's by more than 1e-12 (relative).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from analyses._common import machine, out_path, write_json

ROUNDS = (10, 50, 100)
NOISE = (1.0, 3.731)
#: The relative cut-off given to MFDL's pseudo-inverse in the second run.
CUTOFF = 1e-10
#: numpy's default ``rcond`` of ``np.linalg.pinv`` (MFDL's first run).
NUMPY_DEFAULT_RCOND = 1e-15
#: Relative differences below this count as agreement (rounding of a 1,700-row view).
AGREE_RTOL = 1e-12
#: A default-cut-off value that differs from the 1e-10 one by more than this moved.
MOVED_RTOL = 1e-9
NEEDS = ("needs MFDL: pass --mfdl-python PYTHON3.12 (with numpy, scipy, networkx, pandas, "
         "matplotlib, SciencePlots, fedivertex) and --mfdl-src CHECKOUT of dimiarbre/MFDL "
         "(GitHub); see python -m analyses.mfdl_check --help")


def cases() -> list[tuple[str, Any, Any]]:
    """(label, network, topology) of the graphs compared."""
    import topokit
    from topokit.design.baselines import dlfdp, erg, exponential_graph, ndlf

    toy, siot16 = topokit.load_example("toy"), topokit.load_example("siot16")
    return [("toy (stored topology)", toy, toy.topology),
            ("siot16 NDLF", siot16, ndlf(siot16)),
            ("siot16 ERG (seed 0)", siot16, erg(siot16, seed=0)),
            ("siot16 exponential", siot16, exponential_graph(siot16, seed=0)),
            ("siot16 DLFDP", siot16, dlfdp(siot16))]


def topokit_mu(net, topology, rounds: int, noise: float) -> np.ndarray:
    """topokit's D-SGD mu (owner row, observer column), every device at noise ``noise``."""
    from topokit.audit import privacy_audit

    audit = privacy_audit(net, topology, model="dsgd", rounds=rounds,
                          noise_multiplier=dict.fromkeys(net.nodes, noise))
    return audit.mu


def _mfdl_worker(folder: str) -> None:
    """MFDL's accounting of every case in ``folder`` (runs under MFDL's interpreter).

    Sent as source to ``python -c``: self-contained.  Reads cases.json, writes one .npz
    per case (``sens_default``, ``sens_cutoff``: owner row, attacker column; the relative
    singular values of the attacker's view B, from the first pseudo-inverse of each call)
    and meta.json.
    """
    import contextlib
    import functools
    import io
    import json
    import platform
    import sys
    import types
    from pathlib import Path

    try:
        import torch  # noqa: F401
        stubbed = False
    except ImportError:  # workloads_generator imports torch; the accounting never calls it
        sys.modules["torch"] = types.ModuleType("torch")
        stubbed = True
    import numpy as np
    from MFDL.simulations import muffliato_accounting

    root = Path(folder)
    spec = json.loads((root / "cases.json").read_text())
    pinv = np.linalg.pinv
    spectra: list = []

    def recording_pinv(matrix, *args, **kwargs):
        if not spectra:  # the first pseudo-inverse of a call is of B, the attacker's view
            values = np.linalg.svd(matrix.conjugate(), full_matrices=False)[1]  # as pinv does
            spectra.append(values / values[0])
        return pinv(matrix, *args, **kwargs)

    try:
        for case in spec["cases"]:
            weights = np.load(root / case["weights"])
            n, rounds = weights.shape[0], case["rounds"]
            found: dict = {"spectra": np.zeros((n, case["view_rows"]))}
            for name, cutoff in (("default", None), ("cutoff", spec["cutoff"])):
                np.linalg.pinv = (recording_pinv if cutoff is None
                                  else functools.partial(pinv, rcond=cutoff))
                sens = np.full((n, n), np.nan)
                for k in range(n):
                    spectra.clear()
                    with contextlib.redirect_stdout(io.StringIO()):  # it prints a check
                        column = muffliato_accounting.compute_muffliato_privacy_loss(
                            communication_matrix=weights, nb_steps=rounds, attacker=k,
                            participation_interval=1)
                    sens[:, k] = column
                    sens[k, k] = np.nan
                    if spectra:
                        found["spectra"][k, :spectra[0].size] = spectra[0]
                found[f"sens_{name}"] = sens
            np.savez(root / case["result"], **found)
            print(f"MFDL: {case['result']} done", file=sys.stderr, flush=True)
    finally:
        np.linalg.pinv = pinv
    (root / "meta.json").write_text(json.dumps({
        "python": platform.python_version(), "numpy": np.__version__,
        "torch": "stand-in module (not installed)" if stubbed else "installed"}))


def mfdl_commit(source: Path) -> str:
    """The checkout's commit, or why it is not known."""
    try:
        return subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def run_mfdl(python: str, source: Path, jobs: list[dict[str, Any]]) -> tuple[dict, dict]:
    """MFDL's sensitivities of every job (keyed by its ``result``) and the worker's meta."""
    with tempfile.TemporaryDirectory(prefix="mfdl_check_") as folder:
        root = Path(folder)
        for job in jobs:
            np.save(root / job["weights"], job.pop("matrix"))
        (root / "cases.json").write_text(json.dumps({"cutoff": CUTOFF, "cases": jobs}))
        code = inspect.getsource(_mfdl_worker) + f"\n_mfdl_worker({folder!r})\n"
        environment = dict(os.environ, PYTHONPATH=os.path.abspath(source), MPLBACKEND="Agg",
                           OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        done = subprocess.run([os.path.abspath(python), "-c", code], env=environment, cwd=folder,
                              capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"MFDL's accounting did not run under {python}: {last}; {NEEDS}")
            raise SystemExit(2)
        results = {job["result"]: dict(np.load(root / job["result"])) for job in jobs}
        return results, json.loads((root / "meta.json").read_text())


def _off_diagonal(matrix: np.ndarray) -> np.ndarray:
    return matrix[~np.eye(matrix.shape[0], dtype=bool)]


def _signed_range(values: np.ndarray) -> list[float]:
    return [float(values.min()), float(values.max())]


def compare(label: str, rounds: int, noise: float, mu: np.ndarray, found: dict
            ) -> dict[str, Any]:
    """One case's numbers: topokit's mu against MFDL's at both cut-offs."""
    cap = np.sqrt(rounds) / noise
    ours = _off_diagonal(mu)
    row: dict[str, Any] = {"graph": label, "rounds": rounds, "noise_multiplier": noise,
                           "pairs": int(ours.size), "topokit_mu_range": _signed_range(ours),
                           "topokit_all_finite": bool(np.isfinite(ours).all())}
    capped = {}
    for name in ("default", "cutoff"):
        raw = _off_diagonal(found[f"sens_{name}"]) / noise
        capped[name] = np.minimum(raw, cap)
        difference = np.abs(capped[name] - ours)
        row[f"{name}_max_abs"] = float(difference.max())
        row[f"{name}_max_rel"] = float((difference / ours).max())
        row[f"{name}_uncapped_max_rel"] = float((np.abs(raw - ours) / ours).max())
        row[f"{name}_pairs_capped"] = int((raw > cap * (1 + AGREE_RTOL)).sum())
    for kind, (moved, clean) in {
            "uncapped": (_off_diagonal(found["sens_default"]),
                         _off_diagonal(found["sens_cutoff"])),
            "capped": (capped["default"], capped["cutoff"])}.items():
        shift = (moved - clean) / clean
        row[f"default_shift_{kind}"] = _signed_range(shift)
        row[f"default_pairs_moved_{kind}"] = int((np.abs(shift) > MOVED_RTOL).sum())
    row["mfdl_mu"] = {name: values.tolist() for name, values in capped.items()}
    row["topokit_mu"] = ours.tolist()
    return row


def spectrum_stats(spectra: np.ndarray) -> dict[str, Any]:
    """Directions each cut-off keeps in every attacker's view B (relative singular values)."""
    default = (spectra > NUMPY_DEFAULT_RCOND).sum(axis=1)
    kept = (spectra > CUTOFF).sum(axis=1)
    gap = np.where((spectra <= CUTOFF) & (spectra > 0), spectra, 0.0).max(axis=1)
    kept_small = np.where(spectra > CUTOFF, spectra, np.inf).min(axis=1)
    return {"kept_default": default.tolist(), "kept_cutoff": kept.tolist(),
            "extra_directions_default": int((default - kept).sum()),
            "attackers_with_extra": int((default > kept).sum()),
            "largest_dropped_relative_singular_value": float(gap.max()),
            "smallest_kept_relative_singular_value": float(kept_small.min())}


def case_line(row: dict[str, Any]) -> str:
    """One case's numbers on one line."""
    low, high = row["default_shift_uncapped"]
    capped_low, capped_high = row["default_shift_capped"]
    return (f"{row['graph']:22s} T={row['rounds']:3d} z={row['noise_multiplier']:<5g}  "
            f"cut-off {CUTOFF:g}: max abs {row['cutoff_max_abs']:.2e}, rel "
            f"{row['cutoff_max_rel']:.2e}  |  default cut-off: max abs "
            f"{row['default_max_abs']:.2e}, rel {row['default_max_rel']:.2e}; it moves "
            f"{row['default_pairs_moved_uncapped']} of {row['pairs']} pairs by {low:+.1%}.."
            f"{high:+.1%} ({capped_low:+.1%}..{capped_high:+.1%} capped)")


def _short(row: dict[str, Any]) -> str:
    graph = row["graph"].split(" (")[0].replace("siot16 ", "")
    return f"{graph} T{row['rounds']} z{row['noise_multiplier']:g}"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib.pyplot as plt

    from topokit.plotting._style import save_figure

    figure, (scatter, pairs, per_case) = plt.subplots(1, 3, figsize=(16, 5))
    x = np.concatenate([row["topokit_mu"] for row in rows])
    for name, marker, colour, text in (
            ("default", "x", "tab:blue", "MFDL, numpy's default cut-off"),
            ("cutoff", "o", "tab:orange", f"MFDL, relative cut-off {CUTOFF:g}")):
        y = np.concatenate([row["mfdl_mu"][name] for row in rows])
        style = ({"facecolors": "none", "edgecolors": colour} if marker == "o"
                 else {"color": colour})
        scatter.scatter(x, y, s=14, marker=marker, alpha=0.6, label=text, **style)
        pairs.scatter(x, (y - x) / x, s=14, marker=marker, alpha=0.6, label=text, **style)
        relative = [max(row[f"{name}_max_rel"], 1e-17) for row in rows]
        per_case.plot(range(len(rows)), relative, marker=marker, ls="none", color=colour,
                      label=text, **({"mfc": "none"} if marker == "o" else {}))
    scatter.plot([x.min(), x.max()], [x.min(), x.max()], color="grey", lw=0.8)
    scatter.set_xscale("log")
    scatter.set_yscale("log")
    scatter.set_xlabel("topokit mu (D-SGD audit)")
    scatter.set_ylabel("MFDL sensitivity / z, capped at sqrt(T) / z")
    scatter.set_title("every (owner, observer) pair of every case")
    pairs.set_xscale("log")
    pairs.set_yscale("symlog", linthresh=1e-16)
    pairs.set_ylim(-1.0, 1.0)
    pairs.set_yticks([-1e-2, -1e-6, -1e-10, -1e-14, 0.0, 1e-14, 1e-10, 1e-6, 1e-2])
    pairs.set_xlabel("topokit mu (D-SGD audit)")
    pairs.set_ylabel("(MFDL - topokit) / topokit")
    pairs.set_title("signed relative difference per pair")
    per_case.set_yscale("log")
    per_case.set_xticks(range(len(rows)))
    per_case.set_xticklabels([_short(row) for row in rows], rotation=90, fontsize=7)
    per_case.set_ylabel("largest relative difference (0 drawn at 1e-17)")
    per_case.set_title("per case")
    for axis in (scatter, pairs, per_case):
        axis.legend(fontsize=8)
    figure.tight_layout()
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mfdl-python", help="Python 3.12 interpreter with MFDL's dependencies")
    parser.add_argument("--mfdl-src", help="a checkout of dimiarbre/MFDL (the folder with MFDL/)")
    parser.add_argument("--quick", action="store_true", help="T = 10 only")
    args = parser.parse_args()
    source = Path(args.mfdl_src) if args.mfdl_src else None
    if (not args.mfdl_python or not os.access(args.mfdl_python, os.X_OK) or source is None
            or not (source / "MFDL" / "simulations" / "muffliato_accounting.py").is_file()):
        print(NEEDS)
        raise SystemExit(2)

    from topokit import __version__

    rounds_list = ROUNDS[:1] if args.quick else ROUNDS
    graphs = cases()
    jobs, start = [], time.perf_counter()
    for number, (label, net, topology) in enumerate(graphs):
        degree = (topology.mixing_matrix(net.nodes) > 0).sum(axis=1)
        for rounds in rounds_list:
            jobs.append({"graph": label, "rounds": rounds, "result": f"g{number}_T{rounds}.npz",
                         "weights": f"g{number}_W.npy",
                         "matrix": topology.mixing_matrix(net.nodes),
                         "view_rows": int(degree.max() + 1) * rounds})
    keys = [(job["graph"], job["rounds"], job["result"]) for job in jobs]
    found, meta = run_mfdl(args.mfdl_python, source, jobs)
    mfdl_seconds = time.perf_counter() - start
    rows, spectra = [], []
    for (label, net, topology), (_, rounds, result) in zip(
            [graph for graph in graphs for _ in rounds_list], keys, strict=True):
        stats = spectrum_stats(found[result]["spectra"])
        spectra.append({"graph": label, "rounds": rounds, **stats})
        for noise in NOISE:
            row = compare(label, rounds, noise, topokit_mu(net, topology, rounds, noise),
                          found[result])
            rows.append(row)
            print(case_line(row))
        print(f"{'':22s} view directions kept beyond the 1e-10 cut-off by the default: "
              f"{stats['extra_directions_default']} (in {stats['attackers_with_extra']} of "
              f"{len(stats['kept_cutoff'])} attackers; largest dropped singular value "
              f"{stats['largest_dropped_relative_singular_value']:.1e}, smallest kept "
              f"{stats['smallest_kept_relative_singular_value']:.1e}, relative)")
    summary = {name: {"max_abs": max(row[f"{name}_max_abs"] for row in rows),
                      "max_rel": max(row[f"{name}_max_rel"] for row in rows)}
               for name in ("default", "cutoff")}
    shifts = np.array([row["default_shift_uncapped"] for row in rows])
    capped_shifts = np.array([row["default_shift_capped"] for row in rows])
    summary["default_shift_uncapped"] = [float(shifts.min()), float(shifts.max())]
    summary["default_shift_capped"] = [float(capped_shifts.min()), float(capped_shifts.max())]
    summary["agree"] = bool(summary["cutoff"]["max_rel"] < AGREE_RTOL
                            and all(row["topokit_all_finite"] for row in rows))
    print(f"over all {len(rows)} cases: cut-off {CUTOFF:g} + cap: max abs "
          f"{summary['cutoff']['max_abs']:.2e}, max rel {summary['cutoff']['max_rel']:.2e} "
          f"({'agree' if summary['agree'] else 'DISAGREE'} within {AGREE_RTOL:g}); default "
          f"cut-off + cap: max rel {summary['default']['max_rel']:.2e}; the default moves "
          f"MFDL's values by {summary['default_shift_uncapped'][0]:+.1%} to "
          f"{summary['default_shift_uncapped'][1]:+.1%} (uncapped)")
    stem = "mfdl_check_quick" if args.quick else "mfdl_check"
    command = ("python -m analyses.mfdl_check --mfdl-python PYTHON3.12 --mfdl-src MFDL"
               + (" --quick" if args.quick else ""))
    write_json(f"{stem}.json", {
        "command": command, "topokit_version": __version__, "date": date.today().isoformat(),
        "mfdl": {"repository": "dimiarbre/MFDL", "commit": mfdl_commit(source),
                 "function": "MFDL.simulations.muffliato_accounting."
                             "compute_muffliato_privacy_loss (participation_interval=1)",
                 "environment": meta},
        "cutoff": CUTOFF, "numpy_default_rcond": NUMPY_DEFAULT_RCOND,
        "noise": "every device at z", "machine": machine(),
        "seconds": {"mfdl": round(mfdl_seconds, 1),
                    "total": round(time.perf_counter() - start, 1)},
        "summary": summary, "view_directions": spectra, "cases": rows})
    plot(rows, out_path(f"{stem}.png"))
    if not summary["agree"]:
        print("topokit and MFDL (cut-off 1e-10, capped) do not agree", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
