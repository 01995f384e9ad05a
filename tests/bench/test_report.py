"""The benchmark table: RESULT lines written by bench.report.emit are read back, judged against their goals and
gathered into one table by ``python -m bench``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import __main__ as runner
from bench.report import PREFIX, Result, emit, parse, table

ROOT = Path(__file__).resolve().parents[2]


def test_emit_prints_the_agreed_keys_and_parse_reads_them_back(capsys):
    emitted = emit("balance reads", 838.4, "req/s", better="higher", goal=800, baseline=4990.0)
    line = capsys.readouterr().out.strip()
    assert line.startswith(PREFIX)
    fields = json.loads(line[len(PREFIX) :])
    assert set(fields) == {"figure", "value", "unit", "goal", "better", "baseline", "ratio"}
    assert fields["ratio"] == pytest.approx(838.4 / 4990.0)
    assert parse(f"human text\n{line}\nmore text") == [emitted]


@pytest.mark.parametrize(
    ("value", "goal", "better", "met"),
    [
        (838, 800, "higher", True),
        (741, 800, "higher", False),
        (1.05, 1.10, "lower", True),
        (1.2, 1.1, "lower", False),
    ],
)
def test_met_follows_the_direction_of_the_goal(value, goal, better, met):
    assert Result("f", value, "", goal, better).met is met


def test_a_figure_without_goal_or_baseline_shows_dashes():
    text = table([("simulator_payments", Result("initiations", 144.0, "req/s", None, "higher"))])
    header, _rule, row = text.splitlines()
    assert [cell.strip() for cell in header.split("|")] == ["figure", "value", "goal", "met", "ratio"]
    assert [cell.strip() for cell in row.split("|")] == [
        "simulator_payments: initiations",
        "144 req/s",
        "-",
        "-",
        "-",
    ]


def test_the_table_states_a_missed_goal():
    text = table([("simulator", Result("reads", 741.0, "req/s", 800.0, "higher", 4990.0, 741 / 4990))])
    assert [cell.strip() for cell in text.splitlines()[2].split("|")] == [
        "simulator: reads",
        "741 req/s",
        ">= 800",
        "NO",
        "0.148",
    ]


@pytest.mark.parametrize(
    "line",
    [
        'RESULT {"figure": "x", "value": "fast", "unit": "", "better": "higher"}',
        'RESULT {"figure": "x", "value": 1, "unit": "", "better": "sideways"}',
        'RESULT {"figure": "x", "unit": "", "better": "higher"}',
        "RESULT not json",
    ],
)
def test_malformed_result_lines_are_refused(line):
    with pytest.raises(ValueError, match="malformed RESULT line"):
        parse(line)


def test_every_benchmark_module_emits_results():
    # Each module of bench/ (report aside) must print RESULT lines: a module that only prints text would be
    # missing from the table.
    assert runner.modules() and "report" not in runner.modules()
    for name in runner.modules():
        source = (ROOT / "bench" / f"{name}.py").read_text()
        assert "emit(" in source or '"RESULT ' in source, f"bench/{name}.py prints no RESULT line"


def test_the_runner_prints_the_table_and_fails_on_a_module_without_results(tmp_path):
    # A throw-away package with two "benchmarks": one emits, one prints text only.
    package = tmp_path / "bench"
    package.mkdir()
    for name in ("__init__.py", "__main__.py", "report.py"):
        (package / name).write_text((ROOT / "bench" / name).read_text())
    (package / "good.py").write_text(
        "from bench.report import emit\nprint('human text')\n"
        "emit('things', 12.5, 'op/s', better='higher', goal=10, baseline=25)\n"
    )
    (package / "silent.py").write_text("print('no figures here')\n")
    result = subprocess.run(
        [sys.executable, "-m", "bench"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert "human text" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("good: things"))
    assert [cell.strip() for cell in row.split("|")] == ["good: things", "12.5 op/s", ">= 10", "yes", "0.500"]
    assert "failed: bench.silent (no RESULT line)" in result.stdout
