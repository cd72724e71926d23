"""Every INI example the project ships loads through the real settings loader.

A user copies these first: an example that the loader refuses (or reads differently from what it
says) is a bug even when no code changed, so each ```ini block of README.md, of the documentation's
pages and of the deployment guides, and deploy/ecu-sim.ini itself, is loaded here and checked
against its DBC as a run would.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import pytest

from ecu_sim.calibration.files import write_image
from ecu_sim.calibration.layout import NODE_KINDS
from ecu_sim.faults.spec import FaultSchedule
from ecu_sim.nodes.calibrated import builtin_image
from ecu_sim.runs.prepare import prepare
from ecu_sim.settings import load as config
from ecu_sim.settings import sources
from ecu_sim.settings.model import Settings

REPO = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```ini[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
#: keys naming a file a run reads (section, key); an example points at the user's file, which this
#: machine lacks
_FILE_KEYS = {("profile", "dbc"), ("run", "grade_file"), ("faults", "scenario"),
              *(("calibration", kind) for kind in NODE_KINDS)}


def _documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
            *sorted((REPO / "deploy").glob("*.md")),
            *sorted((REPO / "deploy").glob("*/README.md"))]


def _examples() -> list[tuple[str, str]]:
    found = [("deploy/ecu-sim.ini", (REPO / "deploy" / "ecu-sim.ini").read_text(encoding="utf-8"))]
    for document in _documents():
        text = document.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{document.relative_to(REPO)}:{line}", match["body"]))
    return found


EXAMPLES = _examples()


def test_the_configuration_page_has_an_ini_example_to_check() -> None:
    assert any(name.startswith("docs/configuration.md:") for name, _ in EXAMPLES)


def _stand_in(section: str, key: str, named: Path, tmp_path: Path) -> Path:
    """A real file of the kind ``key`` names: the built-in amp DBC, a flat route, an empty scenario,
    the node's built-in calibration in the format the name says."""
    if section == "calibration":
        path = tmp_path / named.name
        write_image(builtin_image(key, Settings()), path)
    elif key == "dbc":
        path = tmp_path / "example.dbc"
        shutil.copy(REPO / "dbc" / "amp.dbc", path)
    elif key == "grade_file":
        path = tmp_path / "route.csv"
        path.write_text("distance_m,grade_pct\n0,0\n")
    else:
        path = tmp_path / "scenario.txt"
        path.write_text("# nothing\n")
    return path


def _with_stand_ins(text: str, tmp_path: Path) -> str:
    """The example with each named file that does not exist here replaced by a stand-in.

    The example is about the settings, not about the user's own DBC or route, which cannot exist
    on a CI machine; replacing only missing files keeps every other value exactly as written.
    """
    section = ""
    lines = []
    for line in text.splitlines():
        header = re.match(r"^\s*\[(?P<name>[^]]+)\]", line)
        if header is not None:
            section = header["name"]
        item = re.match(r"^(?P<key>\w+)(?P<sep>\s*=\s*)(?P<path>/[^\s;#]+)(?P<rest>.*)$", line)
        if (item is not None and (section, item["key"]) in _FILE_KEYS
                and not Path(item["path"]).exists()):
            stand_in = _stand_in(section, item["key"], Path(item["path"]), tmp_path)
            line = f"{item['key']}{item['sep']}{stand_in}{item['rest']}"
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("name", "text"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_the_ini_example_loads_and_fits_its_dbc(name: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / "example.ini"
    path.write_text(_with_stand_ins(text, tmp_path), encoding="utf-8")
    settings, _ = prepare(config.load(argparse.Namespace(config=str(path)), environ={}))
    FaultSchedule.load(settings.faults.inject, settings.faults.scenario, settings.faults.seed)


@pytest.mark.parametrize(("name", "text"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_no_comment_of_the_ini_example_ends_up_in_a_value(name: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / "example.ini"
    path.write_text(text, encoding="utf-8")
    for given in sources.read_ini(str(path)):
        assert not re.search(r"\s[;#]", given.raw), f"{name}: {given.origin} = {given.raw!r}"
