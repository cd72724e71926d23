"""scripts/bench versus: a commit's package beside this tree's, ratios taken round by round."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench import versus
from tests.conftest import REPO


def test_the_ratio_to_the_baseline_is_taken_within_each_round() -> None:
    assert versus.pairwise([120.0, 60.0], [100.0, 50.0]) == (1.2, 1.2)


def test_rounds_of_ours_and_of_the_baseline_must_pair_up() -> None:
    with pytest.raises(ValueError, match="3 rounds of ours against 2"):
        versus.pairwise([1.0, 2.0, 3.0], [1.0, 2.0])


def test_a_summary_gives_median_best_and_the_range_of_its_ratios() -> None:
    summary = versus.Summary((50.0, 70.0, 60.0), (0.9, 1.1, 1.0))
    assert (summary.median, summary.best) == (60.0, 70.0)
    assert summary.ratio_median == 1.0 and summary.ratio_range() == (0.9, 1.1)


def test_a_case_without_a_baseline_has_no_ratio() -> None:
    assert versus.Summary((1.0,)).ratio_median is None


def test_the_baseline_package_is_exported_from_git(tmp_path: Path) -> None:
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    versus.export(head, tmp_path)
    assert (tmp_path / "ecu_sim" / "__main__.py").is_file()
    assert not (tmp_path / "tests").exists()


def test_a_commit_git_does_not_know_ends_with_what_to_give_instead(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"cannot export 'no-such-commit'.*give a commit"):
        versus.export("no-such-commit", tmp_path)


def test_the_table_shows_the_ratio_only_where_there_is_a_baseline() -> None:
    result = {"rev": "abc", "rounds": 2, "loadavg": (0.5, 0.4, 0.3), "cases": {
        "baseline simulate": {"median": 100.0, "best": 110.0, "ratio_median": None, "ratio_range": None},
        "simulate": {"median": 105.0, "best": 120.0, "ratio_median": 1.05, "ratio_range": (1.0, 1.1)},
        "cosim n=1": {"median": 9000.0, "best": 9500.0, "ratio_median": None, "ratio_range": None}}}
    text = versus.table(result)
    assert "| simulate | 105 ticks/s | 120 ticks/s | 1.050 (1.00 .. 1.10) |" in text
    assert "| cosim n=1 | 9,000 steps/s | 9,500 steps/s |  |" in text
