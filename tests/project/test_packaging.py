"""The wheel a user installs: built without warnings about its own configuration, and carrying the
built-in message profiles, which a checkout keeps in the top-level dbc/ folder; the wheel and the
sdist carry the licence's text."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from ecu_sim.codec.profile import RESTBUS_DBCS
from tests.conftest import HANG_S, REPO, clean_env


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel of this tree, and what pip said while building it."""
    folder = tmp_path_factory.mktemp("wheel")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(folder),
                             str(REPO)], capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = folder.glob("ecu_sim-*.whl")
    return wheel, result.stdout + result.stderr


@pytest.mark.slow
def test_building_the_package_raises_no_warning_about_its_own_configuration(built: tuple[Path, str]) -> None:
    """setuptools warns about a package configuration that leaves out a folder holding data: such
    a warning is the project's own and must not reach a user's first run."""
    _, output = built
    assert "is absent from the `packages` configuration" not in output
    assert "SetuptoolsDeprecationWarning" not in output


@pytest.mark.slow
def test_the_installed_wheel_finds_the_profiles_of_the_dbc_folder(built: tuple[Path, str],
                                                                   tmp_path: Path) -> None:
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    # the unpacked wheel first on the path, run from elsewhere: nothing of the checkout is seen
    probe = ("from ecu_sim.codec import profile; "
             "print(profile.available_profiles(), profile.Profile.load('j1939').dbc_path)")
    env = {**clean_env(), "PYTHONPATH": str(tmp_path / "site")}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S,
                            cwd=tmp_path, env=env, check=False)
    assert result.returncode == 0, result.stderr
    # the folder's restbus DBCs (--fms's) travel with it but are no profiles
    names = sorted(path.stem for path in (REPO / "dbc").glob("*.dbc") if path.stem not in RESTBUS_DBCS)
    assert (tmp_path / "site" / "ecu_sim" / "dbc" / "fms.dbc").is_file()
    assert result.stdout.startswith(f"{names} {tmp_path / 'site' / 'ecu_sim' / 'dbc'}"), result.stdout


@pytest.mark.slow
def test_the_installed_wheel_carries_the_class6_engines_fuel_map(built: tuple[Path, str],
                                                                  tmp_path: Path) -> None:
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    probe = ("import ecu_sim.vehicle.fuel_data as d; "
             "from ecu_sim.vehicle.class6 import Class6Model, Class6Params; "
             "print(d.__file__, Class6Model(Class6Params()).initial(0.0).fuel_rate_lph > 0.0)")
    env = {**clean_env(), "PYTHONPATH": str(tmp_path / "site")}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S,
                            cwd=tmp_path, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(tmp_path / "site" / "ecu_sim" / "vehicle" / "fuel_data.py"), "True"]


@pytest.mark.slow
def test_the_wheel_carries_the_page_and_its_plotting_library_from_npm(built: tuple[Path, str]) -> None:
    """The page's third-party JavaScript comes from npm into the wheel at build time (setup.py
    build_web), never from the repository: it is not tracked, yet the wheel has it."""
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert {"ecu_sim/web/static/index.html", "ecu_sim/web/static/app.js",
            "ecu_sim/web/static/vendor/uPlot.iife.min.js", "ecu_sim/web/static/vendor/uPlot.min.css"} <= names
    tracked = subprocess.run(["git", "ls-files", "ecu_sim/web/static/vendor"], cwd=REPO, capture_output=True,
                             text=True, check=False)
    assert tracked.stdout == ""


@pytest.mark.slow
def test_the_wheel_carries_the_licence_text(built: tuple[Path, str]) -> None:
    """setup.cfg's ``license = MIT`` names the licence; its text travels in the wheel's metadata."""
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        licences = [name for name in archive.namelist()
                    if ".dist-info/" in name and name.rsplit("/", 1)[-1] == "LICENSE"]
        assert len(licences) == 1, archive.namelist()
        assert archive.read(licences[0]) == (REPO / "LICENSE").read_bytes()


@pytest.mark.slow
def test_the_sdist_carries_the_licence_text(tmp_path: Path) -> None:
    """Built by setuptools' own PEP 517 hook, as any build frontend calls it."""
    build = ("import sys; from setuptools import build_meta; "
             "print(build_meta.build_sdist(sys.argv[1]))")
    result = subprocess.run([sys.executable, "-c", build, str(tmp_path)], cwd=REPO, capture_output=True,
                            text=True, timeout=600, env=clean_env(), check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    (sdist,) = tmp_path.glob("ecu[-_]sim-*.tar.gz")  # older setuptools keep the dash
    with tarfile.open(sdist) as archive:
        licence = archive.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/LICENSE")
        assert licence is not None
        assert licence.read() == (REPO / "LICENSE").read_bytes()
