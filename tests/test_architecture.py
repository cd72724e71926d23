"""The layout is the architecture: each stage imports only what it builds on, with no import cycle.

The length and cycle rules hold for the benchmark (bench/) as well: it is code the project keeps
like the runtime, and a cycle or a long module there costs the same to read and to change.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the packages the rules cover; the stage rule (ALLOWED) is ecu_sim's alone
PACKAGES = ("ecu_sim", "bench")
#: the shared vocabulary every stage may use
SHARED = {"ecu_sim.errors", "ecu_sim.checks"}
#: stage -> the stages it may import (besides itself and SHARED)
ALLOWED = {
    "vehicle": set(),
    "control": set(),
    # the powertrain ECUs' control functions (TSC1, XBR, retarder): ticks, J1939's own DTCs and
    # the engine's torque curves
    "powertrain": {"runtime", "j1939", "vehicle"},
    "j1939": {"runtime"},
    "runtime": set(),
    "pedals": set(),
    "codec": {"j1939"},
    "faults": {"codec", "runtime", "bus"},
    "settings": {"faults", "runtime", "vehicle", "control"},
    "fmi": {"vehicle"},
    "cosim": {"bus", "codec", "faults", "nodes", "runtime", "settings", "vehicle", "control", "j1939"},
    # reads a run's outputs (io/) and draws them; a journal's log is replayed (runs/) and the
    # replayed node's state comes from nodes/
    "plot": {"io", "runs", "nodes", "faults"},
    "campaign": {"settings", "runs", "runtime", "bus", "vehicle"},
}


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of every package in PACKAGES, by its dotted name."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports_of(path: Path) -> set[str]:
    """The modules of PACKAGES a module imports, wherever in it the import stands.

    An import inside a function, or under ``if TYPE_CHECKING:``, runs later or never, but the module
    depends on what it names all the same: counting it keeps a cycle from hiding behind a lazy import.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names & modules().keys()


def stage(module: str) -> str:
    """The ecu_sim stage a module is in; "" for a module of another package."""
    parts = module.split(".")
    return parts[1] if parts[0] == "ecu_sim" and len(parts) > 1 else ""


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_is_longer_than_350_lines(name: str) -> None:
    lines = modules()[name].read_text(encoding="utf-8").count("\n")
    assert lines <= 350, f"{name} has {lines} lines: split it so each module keeps one job"


@pytest.mark.parametrize("name", sorted(m for m in modules() if stage(m) in ALLOWED))
def test_a_stage_imports_only_the_stages_it_builds_on(name: str) -> None:
    own = stage(name)
    for imported in imports_of(modules()[name]):
        if imported in SHARED or stage(imported) == own:
            continue
        assert stage(imported) in ALLOWED[own], f"{name} imports {imported}"


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = {name: imports_of(path) - {name} for name, path in modules().items()}
    visiting: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        assert name not in visiting, "import cycle: " + " -> ".join([*visiting[visiting.index(name):], name])
        visiting.append(name)
        for imported in sorted(graph[name]):
            if imported.startswith(name + "."):
                continue  # a package's __init__ importing its own modules is no cycle
            visit(imported)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
