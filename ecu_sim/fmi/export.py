"""``ecu-sim export-fmu``: pack the truck model into an FMU with PythonFMU.

The FMU carries its own copy of the modules the model needs (the vehicle package and the two
shared modules it imports), read from this installation, so what the importing tool runs is the
model ``ecu-sim simulate`` runs, and the host needs PythonFMU's Python but not ecu-sim.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ecu_sim.errors import ConfigError, needs_extra

PACKAGE = Path(__file__).resolve().parent.parent
#: what the model imports, relative to the package: nothing that needs python-can or cantools
BUNDLED = ("__init__.py", "checks.py", "errors.py", "vehicle/__init__.py", "vehicle/model.py",
           "vehicle/params.py", "vehicle/route.py", "vehicle/class6.py", "vehicle/class6_state.py",
           "vehicle/neutral.py", "vehicle/engine.py", "vehicle/transmission.py", "vehicle/fuel.py",
           "vehicle/fuel_data.py", "vehicle/cat3126e_fuel.csv")
SCRIPT = Path(__file__).resolve().parent / "ecu_sim_truck.py"


def export(destination: str) -> Path:
    """Write the FMU to ``destination`` (a ``.fmu`` path); ConfigError when it cannot be."""
    if not destination.endswith(".fmu"):
        raise ConfigError(f"export-fmu {destination!r}: the file name must end in .fmu")
    try:
        from pythonfmu.builder import FmuBuilder
    except ImportError:
        raise ConfigError(needs_extra("export-fmu", "PythonFMU", "fmi")) from None
    target = Path(destination)
    if not target.parent.is_dir():
        raise ConfigError(f"export-fmu {destination!r}: the directory {target.parent} does not exist")
    with tempfile.TemporaryDirectory(prefix="ecu-sim-fmu-") as temp:
        package = Path(temp) / "ecu_sim"
        for name in BUNDLED:
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PACKAGE / name, package / name)
        try:
            return Path(FmuBuilder.build_FMU(SCRIPT, dest=target, project_files=[package]))
        except OSError as exc:
            raise ConfigError(f"cannot write {destination}: {exc.strerror or exc}") from None
