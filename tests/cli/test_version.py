"""``ecu-sim --version`` and ``ecu_sim.__version__``: the installed distribution's version, cheaply."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

import ecu_sim
from ecu_sim import cli
from tests.conftest import clean_env, run_cli

#: the bus and codec libraries: a start that only prints the version has no use for them
HEAVY_MODULES = ("can", "cantools", "msgpack", "pyroute2")


def test_version_option_prints_the_program_name_and_the_installed_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ecu-sim {metadata.version('ecu-sim')}\n"


def test_short_version_option_prints_what_the_long_one_does(capsys: pytest.CaptureFixture[str]) -> None:
    printed = []
    for option in ("-V", "--version"):
        with pytest.raises(SystemExit) as exit_:
            cli.parse_args([option])
        assert exit_.value.code == 0
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] == f"ecu-sim {ecu_sim.__version__}\n"


def test_version_option_imports_neither_the_bus_nor_the_codec_libraries() -> None:
    code = ("import sys\n"
            "from ecu_sim.cli import main\n"
            "try:\n"
            "    main(['--version'])\n"
            "except SystemExit:\n"
            "    pass\n"
            f"print(sorted(name for name in sys.modules if name.split('.')[0] in {HEAVY_MODULES!r}))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env=clean_env(), check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def test_importing_the_package_does_not_read_its_metadata() -> None:
    code = "import sys, ecu_sim.cli\nprint('importlib.metadata' in sys.modules)\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env=clean_env(), check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_package_version_is_the_installed_distributions() -> None:
    assert ecu_sim.__version__ == metadata.version("ecu-sim")


def test_package_version_without_installed_metadata_is_0_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert ecu_sim.__version__ == "0+unknown"
