"""Every command and Python block of the tutorials runs as written and prints what the text says.

The pages are ``docs/tutorial/{design,audit,training,gfl,learn,benchmarks}.md``; what
counts as a command, and how a block is marked not run, is in ``doc_commands.py`` (shared
with README.md's test).  Each page runs in its own fresh folder, its commands and Python
blocks in reading order (a command reads the files an earlier one wrote, a Python block the
names an earlier block of the page defined): each command must exit 0 at ``COLUMNS=80`` and
print no line wider than 80 columns, each Python block must run.  The numbers the text
states about what a command prints are checked explicitly below, on the commands that
print them.  ``-rP`` shows every step's time.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from doc_commands import (
    check_ran,
    command_names,
    fenced_blocks,
    metrics_table,
    prose_spans,
    run_steps,
    steps,
)

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial"
PAGES = ("design", "audit", "training", "gfl", "learn", "benchmarks")
TEXTS = {page: (TUTORIAL / f"{page}.md").read_text(encoding="utf-8") for page in PAGES}
STEPS = {page: steps(TEXTS[page], f"{page}.md") for page in PAGES}
COMMANDS = [(page, step.label) for page in PAGES for step in STEPS[page]
            if step.kind == "shell"]
BLOCKS = [(page, step.label) for page in PAGES for step in STEPS[page]
          if step.kind == "python"]


def _flat(page: str) -> str:
    return " ".join(TEXTS[page].split())


def test_the_tutorial_commands_are_found():
    order = {page: [step.label for step in STEPS[page]] for page in PAGES}
    design = order["design"]
    assert design.index("topokit validate --example siot16 -t optimize,autotag,ndlf "
                        "--predictor default --trials 2 -o runs.parquet") \
        < design.index("topokit calibrate runs.parquet --refit default --prior-strength 10 "
                       "-o mine.json") \
        < design.index("topokit design --example siot16 --predictor mine.json")
    written = design.index("topokit design --example toy --max-stranger-mu 0.3 -o design.json")
    assert written < design.index("topokit audit --example toy --topology design.json "
                                  "--rounds 50")
    assert written < max(i for i, label in enumerate(design) if label.startswith("python"))
    audit = order["audit"]
    assert audit.index("topokit design --example toy -o design.json") \
        < audit.index("topokit audit --example toy --topology design.json --rounds 50 "
                      "--delta 1e-5 --json")
    training = order["training"]
    assert training[0].startswith("python")  # self-contained: it designs before it trains
    assert training.index("topokit validate --example siot16 -t autotag,ndlf,dlfdp,erg,"
                          "random:6 --trials 2 --targets 0.85,0.9 -o runs.parquet") \
        < training.index("topokit calibrate runs.parquet -o predictor.json") \
        < training.index("topokit design --example siot16 --predictor predictor.json")
    assert order["gfl"].index("printf 'iterations = 600\\nrepetitions = 10\\n' > "
                              "regression600.toml") \
        < order["gfl"].index("topokit gfl run regression600.toml --preset regression "
                             "--seed 2024")
    assert not order["learn"] and not order["benchmarks"]  # command names in prose only
    not_run = {page: len([block for block in fenced_blocks(TEXTS[page]) if block.not_run])
               for page in PAGES}
    # design: README.md's Quickstart; audit: MFDL's check; training: the full validation.
    assert not_run == {"design": 1, "audit": 1, "training": 1, "gfl": 0, "learn": 0,
                       "benchmarks": 0}


@pytest.mark.parametrize("page", PAGES)
def test_topokit_spans_without_an_option_only_name_commands(page):
    """`topokit design` names a command in prose; `topokit audit net.json` would be a
    command that this test does not run: write it with its options, complete."""
    names = command_names()
    for span in prose_spans(TEXTS[page], f"{page}.md"):
        assert set(span.split()[1:]) <= names, (
            f"{page}.md: `{span}` is neither a command with an option nor a command's name")


# --- running them ----------------------------------------------------------------------

class Pages:
    """Each page's steps, run on first use in a fresh folder of its own."""

    def __init__(self, factory):
        self.factory, self.runs = factory, {}

    def __getitem__(self, page):
        if page not in self.runs:
            self.runs[page] = run_steps(STEPS[page], self.factory.mktemp(page),
                                        f"tutorial_{page}")
        return self.runs[page]


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Pages:
    return Pages(tmp_path_factory)


@pytest.mark.parametrize(("page", "command"), COMMANDS)
def test_tutorial_command_runs_and_fits_80_columns(page, command, ran):
    result = ran[page].results[command]
    if result.skipped:
        pytest.skip(result.skipped)
    print(f"{result.seconds:.1f} s: {page}.md: {command}")  # shown with -rP
    check_ran(f"{page}.md: {command}", result)


@pytest.mark.parametrize(("page", "block"), BLOCKS)
def test_tutorial_python_block_runs(page, block, ran):
    result = ran[page].results[block]
    print(f"{result.seconds:.1f} s: {page}.md: {block}")
    assert result.returncode == 0, f"{page}.md, {block}:\n{result.stderr}"


def _stdout(ran, page: str, command: str) -> str:
    result = ran[page].results[command]
    assert result.returncode == 0, result.stderr
    return result.stdout


def _summary(output: str) -> dict[str, str]:
    """The ``metric value`` rows of ``topokit audit``'s summary."""
    return {cells[0]: cells[1] for cells in map(str.split, output.splitlines())
            if len(cells) == 2}


def _links(output: str) -> list[str]:
    return re.search(r"^links \(\* non-social\): (.*?)\n[A-Z]", output, re.M | re.S) \
        .group(1).replace("\n", " ").split(", ")


# --- design.md ----------------------------------------------------------------------------

def test_design_prints_what_the_design_tutorial_says(ran):
    text = _flat("design")
    # "It keeps the seven social links and no DP device, with fastest-mixing weights (...):
    # 9.7 predicted rounds x 34 s = 331.3 s; DLFDP and ERG are predicted never to reach the
    # target."  (The first section's command is README.md's; the figure's prints the same.)
    assert "9.7 predicted rounds x 34 s = 331.3 s" in text
    output = _stdout(ran, "design", "topokit design --example toy --plot design.png")
    links = _links(output)
    assert len(links) == 7 and not any(link.endswith("*") for link in links)
    assert re.search(r"^DP devices: none$", output, re.M)
    assert re.search(r"^mixing weights: fastest", output, re.M)
    table = metrics_table(output)
    assert round(float(table["predicted_global_iterate"]["optimize"]), 1) == 9.7
    assert float(table["local_iterate"]["optimize"]) == 34
    assert round(float(table["pseudo_time"]["optimize"]), 1) == 331.3
    assert table["pseudo_time"]["DLFDP"] == table["pseudo_time"]["ERG"] == "inf"
    assert (ran["design"].folder / "design.png").is_file()

    # "AutoTag keeps the same six social links, pseudo training time 1128.3 s under
    # eq. (15), against 1143.9 s for NDLF and 7540.5 s for DLFDP"
    assert "1128.3 s under eq. (15), against 1143.9 s for NDLF and 7540.5 s for DLFDP" in text
    output = _stdout(ran, "design",
                     "topokit design --example toy --method autotag --predictor paper")
    links = _links(output)
    assert len(links) == 6 and not any(link.endswith("*") for link in links)
    table = metrics_table(output)
    assert [round(float(table["pseudo_time"][name]), 1) for name in ("AutoTag", "NDLF", "DLFDP")] \
        == [1128.3, 1143.9, 7540.5]

    # The refit and the design with it; the bounded design, audited at its own levels.
    assert (ran["design"].folder / "mine.json").is_file()
    assert "optimize (predictor mine.json)" in _stdout(
        ran, "design", "topokit design --example siot16 --predictor mine.json")
    output = _stdout(ran, "design", "topokit audit --example toy --topology design.json "
                                    "--rounds 50")
    assert "(the design's)" in output  # "audits such a design at its own levels ... says so"


def test_design_python_blocks_give_the_stated_values(ran):
    namespace = ran["design"].namespace
    topokit = namespace["topokit"]
    net = namespace["net"]
    # "an exhaustive search over every subset of the 14 reachable pairs
    # (`topokit.design.baselines.optimum`) finds the same 1128.3 s"
    assert round(namespace["baselines"].optimum(net).metrics.pseudo_time, 1) == 1128.3
    block = next(step.code for step in STEPS["design"]
                 if "partition_class_counts" in step.code)
    assert '# "default": what judged it' in block and "# eq. (15)'s optimum: 1128.3 s" in block
    assert namespace["design"].predictor["name"] == "default"
    assert round(topokit.optimize(net, predictor="paper").metrics.pseudo_time, 1) == 1128.3
    # The design file's levels are the Python design's (the same seed and bound).
    design = namespace["design"]
    assert namespace["levels"] == pytest.approx(
        design.stats["stranger_bound"]["noise_multipliers"])
    # Designs for your workload: "'workload'", "about 0.956 and 34", "[]: fitted there".
    assert namespace["told"].predictor["name"] == "workload"
    probe = namespace["probe"]
    assert (round(probe.ceiling, 3), probe.probe_rounds) == (0.956, 34)
    for_mine = namespace["for_mine"]
    assert list(for_mine.stats["workload"]["outside"]) == []
    # "'lazy-metropolis', as for the MLP": the measured trait decides, not the name.
    assert for_mine.stats["workload"]["decided_by"]["mixing"] == "lazy-metropolis"


# --- audit.md -----------------------------------------------------------------------------

def test_audit_prints_what_the_audit_tutorial_says(ran):
    text = _flat("audit")
    # Table: "toy, Fig. 2(b) (default: the device) | 30 | 4 of 16 | median 1.0, max 1.37"
    assert "| toy, Fig. 2(b) (default: the device) | 30 | 4 of 16 | median 1.0, max 1.37 |" \
        in TEXTS["audit"]
    rows = _summary(_stdout(ran, "audit", "topokit audit --example toy --rounds 30"))
    assert (rows["exposed_stranger_pairs"], rows["stranger_pairs"]) == ("4", "16")
    assert float(rows["stranger_mu_median"]) == 1.0
    assert round(float(rows["stranger_mu_max"]), 2) == 1.37

    # Results: "to the eavesdropper 2 of the 16 stranger pairs are exposed ...; the median
    # of the finite stranger mu is 1.0 ..., the maximum 1.37 ... With `delta=1e-5` the worst
    # finite stranger epsilon is 6.3."
    assert "the worst finite stranger epsilon is 6.3." in text
    rows = _summary(_stdout(
        ran, "audit", "topokit audit --example toy --rounds 30 --eavesdropper --delta 1e-5"))
    assert (rows["exposed_stranger_pairs"], rows["stranger_pairs"]) == ("2", "16")
    assert float(rows["stranger_mu_median"]) == 1.0
    assert round(float(rows["stranger_mu_max"]), 2) == 1.37
    assert round(float(rows["stranger_epsilon_max"]), 1) == 6.3

    # D-SGD: "mu = sqrt(30) = 5.48 ..., the median stranger pair; the worst finite stranger
    # mu is 8.93 (8.81 for the same step every round)"
    assert "the worst finite stranger mu is 8.93 (8.81 for the same step every round)" in text
    rows = _summary(_stdout(ran, "audit", "topokit audit --example toy --rounds 30 "
                                          "--model dsgd"))
    assert round(float(rows["stranger_mu_median"]), 2) == round(math.sqrt(30), 2) == 5.48
    assert round(float(rows["stranger_mu_max"]), 2) == 8.93
    assert round(float(rows["stranger_mu_lower_max"]), 2) == 8.81

    # The figure's caption: T = 50 rounds, z = 1, the stored topology.
    output = _stdout(ran, "audit", "topokit audit --example toy --rounds 50 --plot audit.png")
    assert "stored topology" in output and "T = 50 rounds, z = 1;" in output
    assert (ran["audit"].folder / "audit.png").is_file()
    assert '"network": "toy"' in _stdout(
        ran, "audit", "topokit audit --example toy --topology design.json --rounds 50 "
                      "--delta 1e-5 --json")


def test_audit_python_blocks_give_the_stated_values(ran):
    namespace = ran["audit"].namespace
    np, toy = namespace["np"], namespace["toy"]
    audit, attack = namespace["audit"], namespace["attack"]
    b, f = namespace["b"], namespace["f"]
    reconstruction_attack = namespace["reconstruction_attack"]
    attack_block = next(step.code for step in STEPS["audit"]
                        if "reconstruction_attack(" in step.code)
    for comment in ("# inf: D reads B's value", "# 1.4e-15", "# both 0.731",
                    "# 0.73: the error the audit predicts"):
        assert comment in attack_block
    assert audit.mu.shape == (6, 6)  # "# (6, 6): owner i (row) against observer k"
    assert audit.mu[b, toy.nodes.index("D")] == np.inf
    # 1.4e-15: rounding error, exposed values come back "to 1e-14"
    assert abs(reconstruction_attack(toy, observer="D", rounds=30, seed=0).error[b]) < 1e-14
    assert round(attack.predicted_std[f], 3) == round(1 / audit.mu[f, b], 3) == 0.731
    assert round(attack.error[f].std(), 2) == 0.73


# --- training.md --------------------------------------------------------------------------

def test_training_prints_what_the_training_tutorial_says(ran):
    # The figure (the default topologies, 5 trials, topokit's default predictor) titles its
    # columns "target 0.85: Spearman 0.81" and "target 0.9: Spearman 0.69 (4 runs never
    # reached)": the runs that reached the target, the brackets of the printed table.
    output = _stdout(ran, "training", "topokit validate --example siot16 --plot validation.png")
    rows = {cells[0]: cells for cells in map(str.split, output.splitlines())
            if cells[:1] in (["0.85"], ["0.9"])}
    assert rows["0.85"][1:3] == ["20", "0"] and rows["0.85"][4] == "(0.815)"
    assert rows["0.9"][1:3] == ["20", "4"] and rows["0.9"][4] == "(0.687)"
    assert (ran["training"].folder / "validation.png").is_file()
    for name in ("predictor.json", "predictor_85.json"):
        assert (ran["training"].folder / name).is_file()
    # "the slowest device, a Raspberry Pi 2, sets L = 807.6 s" for every framework
    assert "sets L = 807.6 s" in _flat("training")
    table = metrics_table(_stdout(ran, "training",
                                  "topokit design --example siot16 --predictor predictor.json"))
    assert set(table["local_iterate"].values()) == {"807.6"}


def test_training_python_block_trains(ran):
    run = ran["training"].namespace["run"]
    assert len(run.to_frame()) > 0
    assert set(run.epsilon) == {"C", "D", "E"}  # "spent per DP device": Fig. 2(b)'s


# --- gfl.md -------------------------------------------------------------------------------

def _msd(output: str) -> dict[str, tuple[float, float]]:
    """The scheme -> (centroid, individual) MSD in dB of ``topokit gfl run``'s table."""
    rows = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip("│┃ ").split("│")]
        if len(cells) >= 3 and cells[0] in ("none", "random", "homomorphic"):
            rows[cells[0]] = (float(cells[1]), float(cells[2]))
    return rows


def _agree(printed: dict, stated: dict) -> None:
    """The printed values (2 decimals) round to the stated ones (1 decimal)."""
    assert set(printed) == set(stated)
    for scheme, values in stated.items():
        # 0.05 for the stated rounding and 0.005 for the printed: -14.45 is -14.5 stated
        assert printed[scheme] == pytest.approx(values, abs=0.0551), scheme


def test_gfl_prints_what_the_gfl_tutorial_says(ran):
    # The table's Lazy-Metropolis column, from the command line (600 iterations, 10
    # repetitions, seed 2024).
    table = {scheme: (float(centroid), float(individual))
             for scheme, centroid, individual in re.findall(
                 r"^\| (none|random|homomorphic) \| (-[\d.]+) / (-[\d.]+) \|", TEXTS["gfl"],
                 re.M)}
    assert set(table) == {"none", "random", "homomorphic"}
    measured = _msd(_stdout(ran, "gfl", "topokit gfl run regression600.toml --preset "
                                        "regression --seed 2024"))
    _agree(measured, table)
    # "The command above runs the preset as it is (...) and prints other numbers: -33.5 /
    # -30.4 dB without privacy, -18.3 / -9.8 random, -33.4 / -13.0 homomorphic."
    assert ("prints other numbers: -33.5 / -30.4 dB without privacy, -18.3 / -9.8 random, "
            "-33.4 / -13.0 homomorphic.") in _flat("gfl")
    measured = _msd(_stdout(ran, "gfl", "topokit gfl run --preset regression --plot gfl.png"))
    _agree(measured, {"none": (-33.5, -30.4), "random": (-18.3, -9.8),
                      "homomorphic": (-33.4, -13.0)})
    assert (ran["gfl"].folder / "gfl.png").is_file()
