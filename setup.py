"""The packaging rules setup.cfg cannot state: the top-level ``dbc/`` folder is ``ecu_sim.dbc``, and
the page's third-party JavaScript (``web/package.json``, locked) comes from npm at build time into
``ecu_sim/web/static/vendor/``, never from the repository and never from the internet at run time."""

import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

from setuptools import Command, find_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
WEB = ROOT / "web"
VENDOR = ROOT / "ecu_sim" / "web" / "static" / "vendor"
#: file of an npm package -> its name in the package data
VENDORED = {"uplot/dist/uPlot.iife.min.js": "uPlot.iife.min.js", "uplot/dist/uPlot.min.css": "uPlot.min.css",
            "uplot/LICENSE": "uPlot.LICENSE"}


class BuildWeb(Command):
    """``npm ci`` in web/ and copy the page's libraries into the package (skipped when up to date)."""

    description = "fetch the page's JavaScript from npm (web/package-lock.json) into the package"
    user_options: ClassVar[list[tuple[str, str | None, str]]] = []

    def initialize_options(self) -> None:
        pass

    def finalize_options(self) -> None:
        pass

    def run(self) -> None:
        lock = WEB / "package-lock.json"
        targets = [VENDOR / name for name in VENDORED.values()]
        built = lock.stat().st_mtime if lock.exists() else 0.0  # an sdist carries the files built
        if all(t.exists() and t.stat().st_mtime >= built for t in targets):
            return
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("building ecu-sim needs npm (Node.js) to fetch the page's plotting library "
                             "(web/package-lock.json): install it (Debian: apt install npm) and build again")
        result = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=WEB,
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise SystemExit(f"npm ci in {WEB} failed (the page's plotting library):\n"
                             f"{result.stderr[-2000:]}")
        VENDOR.mkdir(parents=True, exist_ok=True)
        for source, name in VENDORED.items():
            shutil.copyfile(WEB / "node_modules" / source, VENDOR / name)


class BuildPy(build_py):
    """The package's modules and data, after the page's libraries are in place."""

    def run(self) -> None:
        self.run_command("build_web")
        super().run()


setup(
    packages=[*find_packages(include=["ecu_sim", "ecu_sim.*"]), "ecu_sim.dbc"],
    package_dir={"ecu_sim.dbc": "dbc"},
    cmdclass={"build_web": BuildWeb, "build_py": BuildPy},
)
