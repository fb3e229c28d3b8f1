"""topokit.plotting: one style, one save helper, no backend changes."""

import os
import subprocess
import sys
import textwrap

import matplotlib
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from topokit.errors import InvalidInputError
from topokit.plotting import save_figure
from topokit.plotting._style import CYCLE, check_figure_path
from topokit.plotting.design import (
    accuracy_time_figure,
    degree_deviation_figure,
    global_iterate_figure,
)
from topokit.plotting.gfl import plot_sweep
from topokit.plotting.learn import plot_adjacencies, plot_graph

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _SpyFigure:
    """Stands in for a Figure: records whether anything was drawn."""

    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    def savefig(self, fname, **kwargs) -> None:
        self.calls += 1
        with open(fname, "wb") as handle:
            handle.write(PNG_MAGIC[:4])  # half a file, then (maybe) a crash
        if self.fail:
            raise RuntimeError("renderer crashed")


def _sweep() -> Figure:
    return plot_sweep([0.1, 1.0, 10.0], {"a": [1.0, 2.0, 3.0], "b": [3.0, np.nan, 1.0]},
                      xlabel="mu")


@pytest.mark.parametrize("name", ["figure.gif", "figure.jpg", "figure", "figure.png.tmp"])
def test_wrong_suffix_raises_before_drawing_and_writes_nothing(tmp_path, name):
    spy = _SpyFigure()
    with pytest.raises(InvalidInputError) as error:
        save_figure(spy, tmp_path / name)
    message = str(error.value)
    assert str(tmp_path / name) in message
    assert all(suffix in message for suffix in (".png", ".pdf", ".svg"))
    assert spy.calls == 0
    assert list(tmp_path.iterdir()) == []


def test_check_figure_path_accepts_any_case():
    assert check_figure_path("out/Figure.PNG").name == "Figure.PNG"


def test_non_positive_dpi_raises_before_drawing(tmp_path):
    spy = _SpyFigure()
    with pytest.raises(InvalidInputError, match="dpi"):
        save_figure(spy, tmp_path / "figure.png", dpi=0)
    assert spy.calls == 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("suffix", "magic"),
                         [(".png", PNG_MAGIC), (".PNG", PNG_MAGIC), (".pdf", b"%PDF-")])
def test_saved_file_has_the_format_of_its_suffix_and_no_temp_file(tmp_path, suffix, magic):
    path = tmp_path / "nested" / f"sweep{suffix}"
    assert save_figure(_sweep(), path) == path
    assert path.read_bytes().startswith(magic)
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_svg_is_svg(tmp_path):
    path = save_figure(_sweep(), tmp_path / "sweep.svg")
    assert b"<svg" in path.read_bytes()[:1000]


def test_failed_save_leaves_neither_file_nor_temp_file(tmp_path):
    spy = _SpyFigure(fail=True)
    with pytest.raises(RuntimeError, match="renderer crashed"):
        save_figure(spy, tmp_path / "figure.png")
    assert spy.calls == 1
    assert list(tmp_path.iterdir()) == []


def test_save_replaces_an_existing_file(tmp_path):
    path = tmp_path / "sweep.png"
    path.write_bytes(b"old")
    save_figure(_sweep(), path)
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert list(tmp_path.iterdir()) == [path]


def test_save_closes_a_pyplot_figure(tmp_path):
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots()
    axis.plot([0, 1], [1, 0])
    assert plt.fignum_exists(figure.number)
    save_figure(figure, tmp_path / "line.png")
    assert not plt.fignum_exists(figure.number)


def test_figures_are_not_registered_with_pyplot():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    graph = nx.path_graph(4)
    nx.set_edge_attributes(graph, 0.5, "weight")
    figures = [_sweep(), plot_adjacencies([np.ones(6), np.zeros(6)], 4, ["a", "b"]),
               plot_graph(graph, title="path")]
    assert all(isinstance(figure, Figure) for figure in figures)
    assert plt.get_fignums() == before


def test_style_is_applied_and_the_users_rc_restored():
    user_cycle = matplotlib.cycler(color=["#123456", "#654321"])
    with matplotlib.rc_context({"axes.prop_cycle": user_cycle, "axes.titlesize": 20}):
        figure = _sweep()
        assert matplotlib.rcParams["axes.prop_cycle"] == user_cycle
        assert matplotlib.rcParams["axes.titlesize"] == 20
    colors = [matplotlib.colors.to_hex(line.get_color()) for line in figure.axes[0].get_lines()]
    assert colors == [matplotlib.colors.to_hex(color) for color in CYCLE[:2]]


def test_gfl_and_learn_figures_keep_their_labels():
    axis = _sweep().axes[0]
    assert (axis.get_xlabel(), axis.get_ylabel()) == ("mu", "steady-state MSD (dB)")
    assert axis.get_xscale() == "log"
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["a", "b"]
    figure = plot_adjacencies([np.ones(6), np.zeros(6)], 4, ["learned", "true"])
    assert [ax.get_title() for ax in figure.axes] == ["learned", "true"]
    assert figure.get_size_inches() == pytest.approx((6.4, 3.2))


def test_design_analysis_figures_keep_their_labels(tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"degree_deviation": rng.random(50),
                          "hitting_time": 1 + rng.random(50), "spectral_gap": 0.1 + rng.random(50)})
    left, right = degree_deviation_figure(table).axes
    assert (left.get_title(), right.get_title()) == ("(a) hitting time",
                                                     "(b) reciprocal of the spectral gap")
    curves = pd.DataFrame({"round": [1, 2, 1, 2], "time": [10.0, 20.0, 10.0, 30.0],
                           "mean_accuracy": [0.5, 0.7, 0.4, 0.6], "topology": list("aabb")})
    axis = accuracy_time_figure(curves).axes[0]
    assert axis.get_ylabel() == "averaged test accuracy"
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["a", "b"]
    runs = pd.DataFrame({"hitting_time": [1.0, 2.0, 3.0], "phi": [0.0, 0.5, 1.0],
                         "measured_rounds": [10.0, 20.0, 30.0]})
    figure = global_iterate_figure(runs, {"plane": (10.0, 0.0, 0.0)})
    assert figure.axes[1].get_xlabel() == "predicted global iterate G' (rounds)"
    assert save_figure(figure, tmp_path / "fig4.png").read_bytes().startswith(PNG_MAGIC)


def _run_python(code: str, **env: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                            text=True, env={**os.environ, **env}, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# "template" is a backend the old code replaced with Agg; learn's old code replaced "pdf" too.
@pytest.mark.parametrize("backend", ["pdf", "template"])
def test_plotting_never_changes_the_backend(backend):
    out = _run_python("""
        import matplotlib
        import networkx as nx
        import numpy as np

        before = matplotlib.get_backend()
        from topokit.gfl.plotting import plot_sweep
        from topokit.learn.plotting import plot_adjacencies, plot_graph
        import topokit.plotting.gfl, topokit.plotting.learn
        after_import = matplotlib.get_backend()
        plot_sweep([1.0, 2.0], {"a": [1.0, 2.0]}, xlabel="x")
        plot_adjacencies([np.ones(3)], 3)
        plot_graph(nx.path_graph(3))
        print(before, after_import, matplotlib.get_backend())
    """, MPLBACKEND=backend)
    assert out.split() == [backend] * 3


def test_importing_topokit_plotting_does_not_import_matplotlib():
    out = _run_python("""
        import sys
        import topokit.plotting
        assert callable(topokit.plotting.save_figure)
        print("matplotlib" in sys.modules)
    """)
    assert out == "False"


def test_an_optimize_design_is_drawn_against_its_references_with_weighted_links():
    from matplotlib.collections import LineCollection

    from topokit import load_example, optimize
    from topokit.plotting.design import design_figure

    net = load_example("toy")
    design = optimize(net, seed=0)
    figure = design_figure(net, design)
    left, right = figure.axes[:2]
    names = [label.get_text() for label in right.get_yticklabels()]
    assert sorted(names) == sorted([*design.stats["start_times"], "design"])
    assert "AutoTag" not in right.get_title() and "snapshot" not in right.get_xlabel()
    never = [name for name, t in design.stats["start_times"].items() if not np.isfinite(t)]
    texts = [text.get_text() for text in right.texts]
    assert sum("never reaches the target" in text for text in texts) == len(never)
    # The links' widths follow their mixing weights: the least-used link is the thinnest.
    widths = np.concatenate([collection.get_linewidths() for collection in left.collections
                             if isinstance(collection, LineCollection)])
    weights = np.asarray(design.topology.weights)
    assert widths.min() == pytest.approx(0.3 + 2.7 * weights.min() / weights.max())
    assert widths.max() == pytest.approx(3.0)


def test_validation_figure_draws_never_reached_runs_above_the_rest_with_short_ticks():
    from topokit.plotting.design import validation_figure

    frame = pd.DataFrame({
        "target": 0.9, "kind": ["ndlf", "ndlf", "erg"],
        "predicted_global_iterate": [10.0, 12.0, np.inf], "measured_rounds": [20.0, 25.0, np.nan],
        "pseudo_time": [80_000.0, 120_000.0, 140_000.0],
        "measured_time": [90_000.0, 110_000.0, np.nan]})
    figure = validation_figure(frame)
    for axis, top in zip(figure.axes[:2], (25.0, 110_000.0), strict=True):
        hollow = [collection for collection in axis.collections
                  if len(collection.get_facecolors()) == 0]
        assert len(hollow) == 1
        assert hollow[0].get_offsets()[0, 1] == pytest.approx(1.15 * top)
        assert np.isfinite(hollow[0].get_offsets()[0, 0])  # "never" predicted: right edge
    figure.canvas.draw()
    labels = [label.get_text() for label in figure.axes[1].get_xticklabels()]
    assert labels and all(len(label) <= 5 for label in labels)  # 80k, not 80000
