"""README.md's install line works on a fresh clone and installs what it promises.

ecu-sim is on no package index, so the README installs it from the clone. This runs that line as
a newcomer does: the first shell block of the README of a fresh ``git clone`` (nothing untracked
of this tree gets in, and the README read is the clone's), in bash, in the clone, with PyPI and
npm as on any machine. Then the installed ``ecu-sim --version`` runs, every package of the extras
``[all]`` names is installed and imports, the page's plotting library, which setup.py's build_web
fetches from npm at build time, is in the installed package, and the licence's text is among the
files the installed distribution lists (those ``pip show -f`` prints).
tests/project/test_readme_commands.py skips the line (it installs from the network); this is where
it runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, clean_env
from tests.project.test_extras import all_extra, extras
from tests.project.test_readme_commands import command_lines, shell_blocks

#: the page's library in the installed package (setup.py's VENDORED names)
VENDOR_FILES = ("static/vendor/uPlot.iife.min.js", "static/vendor/uPlot.min.css")
#: a fresh clone, a venv, ecu-sim and [all] from PyPI (pip's cache helps), npm ci
INSTALL_TIMEOUT_S = 1200.0
#: environment of the caller that would change what the line installs or where Python looks
_LEAKS = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PIP_USER", "PIP_TARGET",
          "PIP_PREFIX", "PIP_EDITABLE", "PIP_REQUIREMENT")

#: run by the installed Python: where ecu_sim is, which distributions are missing, which modules
#: import, which of the page's files the package has, which files of its metadata are its licence
#: (what ``pip show -f ecu-sim`` lists)
PROBE = """
import importlib, importlib.metadata, importlib.resources, json, sys
dists, modules, vendor = json.loads(sys.argv[1])

def works(call, arg):
    try:
        call(arg)
    except Exception:
        return False
    return True

import ecu_sim
web = importlib.resources.files("ecu_sim.web")
print(json.dumps({
    "ecu_sim": ecu_sim.__file__,
    "missing": [d for d in dists if not works(importlib.metadata.version, d)],
    "imports": {m: works(importlib.import_module, m) for m in modules},
    "vendor": {f: web.joinpath(f).is_file() for f in vendor},
    "licence": [str(f.locate()) for f in importlib.metadata.files("ecu-sim") or () if f.name == "LICENSE"],
}))
"""


def install_block(readme: Path) -> list[str]:
    """The command lines of the README's first shell block: the install line."""
    block = next(shell_blocks(readme))
    return [text for _, text in command_lines(block) if text.strip() and not text.startswith("#")]


#: distributions whose module is not their name made lower case with underscores
IMPORTED_AS = {"can-isotp": "isotp"}


def promised() -> tuple[list[str], list[str]]:
    """The distributions ``[all]`` installs (setup.cfg) and the module each is imported as:
    ``dask[distributed]`` is dask and distributed, can-isotp is isotp."""
    dists: list[str] = []
    modules: list[str] = []
    for extra in sorted(all_extra()):
        for line in extras()[extra]:
            match = re.match(r"([A-Za-z0-9_.-]+)(?:\[([^\]]+)\])?", line)
            assert match, line
            names = [match[1], *(match[2] or "").split(",")]
            dists += [name.strip() for name in names if name.strip()]
            modules += [IMPORTED_AS.get(name.strip(), name.strip().lower().replace("-", "_"))
                        for name in names if name.strip()]
    return sorted(set(dists)), sorted(set(modules))


def test_the_install_block_is_read_from_the_readme() -> None:
    lines = install_block(REPO / "README.md")
    assert any(re.search(r"\bpip install\b.*\[all\]", line) for line in lines), lines


def test_the_promised_packages_are_read_from_setup_cfg() -> None:
    dists, modules = promised()
    assert {"aiohttp", "distributed", "evdev"} <= set(dists)
    assert {"aiohttp", "dask", "distributed", "pythonfmu"} <= set(modules)


@pytest.mark.slow
def test_the_readmes_install_line_installs_ecu_sim_all_and_the_page_from_a_fresh_clone(
        tmp_path: Path) -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, capture_output=True,
                   timeout=300)
    lines = install_block(clone / "README.md")
    # `python3` is the interpreter of this suite (>= 3.11, as setup.cfg requires)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (shims / "python3").chmod(0o755)
    env = {k: v for k, v in clean_env().items() if k not in _LEAKS}
    # no virtual environment of the caller's on PATH, and pip refuses to install outside one: a
    # line that forgets its venv fails here instead of installing into this machine's Python
    path = [folder for folder in env.get("PATH", "/usr/bin:/bin").split(":")
            if not (Path(folder).parent / "pyvenv.cfg").exists()]
    env.update(PATH=":".join([str(shims), *path]), PIP_REQUIRE_VIRTUALENV="1", PIP_QUIET="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    result = subprocess.run(["bash", "-c", "set -e\n" + "\n".join(lines)], cwd=clone, env=env,
                            capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                            stdin=subprocess.DEVNULL, check=False)
    assert result.returncode == 0, f"{lines} exits {result.returncode}:\n{result.stderr[-4000:]}"

    venvs = [path.parent.parent for path in clone.glob("*/bin/ecu-sim")]
    assert len(venvs) == 1, f"the line made no environment with ecu-sim in the clone: {venvs}"
    venv = venvs[0]
    # run from outside the clone, so nothing of the checkout is imported instead of the install
    version = subprocess.run([str(venv / "bin" / "ecu-sim"), "--version"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120, check=False)
    assert version.returncode == 0 and version.stdout.startswith("ecu-sim "), version

    dists, modules = promised()
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", PROBE,
                            json.dumps([dists, modules, VENDOR_FILES])],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert Path(found["ecu_sim"]).is_relative_to(venv), f"ecu_sim not installed in {venv}: {found['ecu_sim']}"
    assert found["missing"] == [], f"[all] left out {found['missing']}"
    broken = [module for module, ok in found["imports"].items() if not ok]
    assert not broken, f"installed by [all] but do not import: {broken}"
    assert all(found["vendor"].values()), f"the page's library is not in the package: {found['vendor']}"
    assert len(found["licence"]) == 1, f"the installed ecu-sim lists no licence file: {found['licence']}"
    assert Path(found["licence"][0]).read_bytes() == (REPO / "LICENSE").read_bytes()
