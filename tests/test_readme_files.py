"""Every configuration file README names is one that python-can or ecu-sim reads, on Linux."""

from __future__ import annotations

import platform
import re

import can.util
import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


@pytest.mark.skipif(platform.system() != "Linux", reason="README names the files python-can reads on Linux")
def test_the_python_can_files_readme_names_are_the_ones_python_can_reads_on_linux() -> None:
    sentence = re.search(r"python-can's configuration files \(on Linux (?P<files>[^)]*)\)", README)
    assert sentence is not None
    named = set(re.findall(r"`([^`[]+)`", sentence["files"]))  # not the `[default]` section
    assert named == set(can.util.CONFIG_FILES)


def test_readme_names_no_configuration_file_python_can_ignores_on_linux() -> None:
    assert "can.ini" not in README  # read by python-can on Windows only
