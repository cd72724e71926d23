"""Every configuration file the documentation names is one that python-can or ecu-sim reads, on
Linux; every relative link of README.md names a file or folder of the repository.

README.md is not part of the documentation site, whose links ``mkdocs build --strict`` checks
(scripts/test), so its own links are checked here.
"""

from __future__ import annotations

import configparser
import platform
import re
from pathlib import Path

import can.util
import pytest

from tests.conftest import REPO

README = REPO / "README.md"
#: the page that names python-can's configuration files
BUS_PAGE = REPO / "docs" / "bus.md"
DOCUMENTS = (README, *sorted((REPO / "docs").glob("*.md")))
#: an inline Markdown link or image: [text](target) or ![alt](target "title")
LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


@pytest.mark.skipif(platform.system() != "Linux", reason="the page names the files python-can reads on Linux")
def test_the_python_can_files_the_bus_page_names_are_the_ones_python_can_reads_on_linux() -> None:
    text = BUS_PAGE.read_text(encoding="utf-8")
    sentence = re.search(r"python-can's configuration files \(on Linux (?P<files>[^)]*)\)", text)
    assert sentence is not None
    named = set(re.findall(r"`([^`[]+)`", sentence["files"]))  # not the `[default]` section
    assert named == set(can.util.CONFIG_FILES)


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(REPO)) for d in DOCUMENTS])
def test_no_document_names_a_configuration_file_python_can_ignores_on_linux(document: Path) -> None:
    assert "can.ini" not in document.read_text(encoding="utf-8")  # read by python-can on Windows only


def relative_links(markdown: str) -> list[str]:
    """The targets of the inline links and images that point into the repository, without anchors."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)  # not inside code
    targets = [match["target"] for match in LINK.finditer(text)]
    return [target.split("#", 1)[0] for target in targets
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


def test_the_link_reader_finds_links_and_images_and_leaves_out_other_sites() -> None:
    markdown = ("[a](docs/a.md#part) ![b](docs/b.png) [c](https://example.org) [d](#here)\n"
                "```sh\necho [e](f.md)\n```\n")
    assert relative_links(markdown) == ["docs/a.md", "docs/b.png"]


def test_every_relative_link_of_the_readme_points_at_a_file_or_folder_that_exists() -> None:
    links = relative_links(README.read_text(encoding="utf-8"))
    assert links, "README.md links to no page of the documentation"
    missing = [link for link in links if not (REPO / link).exists()]
    assert not missing, f"README.md links to what does not exist: {missing}"


def test_the_readmes_status_line_says_what_setup_cfg_declares() -> None:
    """The line under the title: the system, the oldest Python (``python_requires``) and the
    licence (``license``), whose text is the repository's LICENSE."""
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg", encoding="utf-8")
    oldest = setup["options"]["python_requires"].removeprefix(">=")
    licence = setup["metadata"]["license"]
    status = README.read_text(encoding="utf-8").split("\n\n")[1]
    assert status.startswith(f"Linux · Python {oldest}+ · {licence} licence"), status
    assert "[LICENSE](LICENSE)" in status
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith(f"{licence} License\n")
