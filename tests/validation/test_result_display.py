"""What a validation result and a ceiling probe show: one line each, every topology named."""

from __future__ import annotations

import numpy as np
import pandas as pd

from topokit.plotting.design import validation_figure
from topokit.training.ceiling import CeilingProbe
from topokit.validation.result import ValidationResult


def _frame() -> pd.DataFrame:
    """Two of the user's topologies and NDLF, 2 trials each, read at 2 targets (12 rows)."""
    rows = []
    for k, (name, kind) in enumerate((("mine", "custom"), ("theirs", "custom"),
                                      ("ndlf", "ndlf"))):
        for trial in range(2):
            for target in (0.8, 0.9):
                rows.append({"topology": name, "kind": kind, "trial": trial, "target": target,
                             "predicted_global_iterate": 10.0 + k + trial,
                             "measured_rounds": 20.0 + 2 * k + trial,
                             "pseudo_time": 100.0 + 10 * k + trial,
                             "measured_time": 200.0 + 20 * k + trial})
    return pd.DataFrame(rows)


def test_a_validation_result_shows_its_counts_in_one_line():
    frame = pd.concat([_frame()] * 50, ignore_index=True)  # long tables stay one line
    text = repr(ValidationResult(frame, pd.DataFrame({"round": np.arange(10_000)})))
    assert text == "ValidationResult(runs=6, topologies=3, targets=2, trials=2)"


def test_a_ceiling_probe_shows_its_numbers_not_its_arrays():
    rounds = np.arange(1, 1001)
    accuracy = np.minimum(rounds / 100.0, 0.97)
    text = repr(CeilingProbe(0.97, rounds, accuracy))
    assert text == "CeilingProbe(ceiling=0.97, probe_rounds=88, rounds=1000)"


def test_the_validation_figure_names_each_of_the_users_topologies(tmp_path):
    result = ValidationResult(_frame(), pd.DataFrame())
    figure = validation_figure(result.frame)
    legend = figure.axes[0].get_legend()
    assert [text.get_text() for text in legend.get_texts()] == ["mine", "theirs", "NDLF"]
    markers = [collection.get_paths()[0].vertices.tobytes()
               for collection in figure.axes[0].collections[:2]]
    assert markers[0] != markers[1]  # told apart by marker, not only by the legend
    path = result.plot(tmp_path / "validation.png")
    assert path.read_bytes().startswith(b"\x89PNG")
