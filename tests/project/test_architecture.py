"""The layout is the architecture: each stage imports only what it builds on, with no import cycle.

The rule is the stage table of docs/architecture.md: a row per subpackage of ecu_sim, whose
"depends on" column names (as ``stage/``) every stage it imports. The table is the one place the
arrows are written, so the documentation cannot drift from the imports: a new import of another
stage fails here until the table says so, and a stage the table names but the code no longer
imports fails too.

The length and cycle rules hold for the benchmark (bench/) as well: it is code the project keeps
like the runtime, and a cycle or a long module there costs the same to read and to change.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: the packages the rules cover; the stage rule is ecu_sim's alone
PACKAGES = ("ecu_sim", "bench")
#: the shared vocabulary every stage may use
SHARED = {"ecu_sim.errors", "ecu_sim.checks"}
#: a row of the stage table: | `stage/` | its one job | depends on |
ROW = re.compile(r"^\| `(?P<stage>[a-z0-9_]+)/` \|(?P<job>[^|]*)\|(?P<depends>.*)\|\s*$")
STAGE_NAMED = re.compile(r"`([a-z0-9_]+)/`")


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
    """The ecu_sim stage a module is in; "" for a module of another package or the top level."""
    parts = module.split(".")
    if parts[0] != "ecu_sim" or len(parts) < 2:
        return ""
    return parts[1] if (ROOT / "ecu_sim" / parts[1]).is_dir() else ""


@functools.cache
def stages() -> frozenset[str]:
    """The subpackages of ecu_sim that hold code; ``dbc`` holds only data."""
    return frozenset(path.parent.name for path in (ROOT / "ecu_sim").glob("*/__init__.py")) - {"dbc"}


@functools.cache
def documented() -> dict[str, frozenset[str]]:
    """docs/architecture.md's stage table: each stage and the stages its row says it depends on."""
    table = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        row = ROW.match(line)
        if row is not None:
            table[row["stage"]] = frozenset(STAGE_NAMED.findall(row["depends"]))
    return table


@functools.cache
def imported_stages() -> dict[str, frozenset[str]]:
    """Each stage and the other stages its modules import (SHARED and the top level aside)."""
    found: dict[str, set[str]] = {name: set() for name in stages()}
    for name, path in modules().items():
        own = stage(name)
        if not own:
            continue
        found[own].update(stage(imported) for imported in imports_of(path) - SHARED)
    return {name: frozenset(others - {name, ""}) for name, others in found.items()}


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_is_longer_than_350_lines(name: str) -> None:
    lines = modules()[name].read_text(encoding="utf-8").count("\n")
    assert lines <= 350, f"{name} has {lines} lines: split it so each module keeps one job"


def test_the_stage_table_has_a_row_for_every_stage_and_no_other() -> None:
    assert set(documented()) == stages()


@pytest.mark.parametrize("name", sorted(stages()))
def test_a_stage_imports_only_the_stages_its_row_names(name: str) -> None:
    extra = imported_stages()[name] - documented().get(name, frozenset())
    assert not extra, (f"ecu_sim/{name}/ imports {sorted(extra)}, which its row in docs/architecture.md "
                       "does not name: add them there if the arrow is right, or move the code")


@pytest.mark.parametrize("name", sorted(stages()))
def test_a_stage_row_names_only_stages_it_imports(name: str) -> None:
    stale = documented().get(name, frozenset()) - imported_stages()[name]
    assert not stale, (f"docs/architecture.md says ecu_sim/{name}/ depends on {sorted(stale)}; "
                       "it imports none of them")


TESTS = ROOT / "tests"
#: the test folders that are not a stage's: the repository as a whole, the VM stages, shared rigs
OTHER_TEST_FOLDERS = frozenset({"project", "socketcan", "system", "helpers"})


def test_every_test_module_is_in_the_folder_of_a_stage_or_of_the_repository() -> None:
    folders = stages() | OTHER_TEST_FOLDERS
    misplaced = [str(path.relative_to(TESTS)) for path in TESTS.rglob("test_*.py")
                 if path.parent == TESTS or path.relative_to(TESTS).parts[0] not in folders]
    assert misplaced == [], "put each test module in tests/STAGE/ (its stage's) or tests/project/"


def test_the_tests_shared_rigs_are_apart_from_the_tests() -> None:
    rigs = [str(path.relative_to(TESTS)) for path in TESTS.rglob("*.py")
            if not path.name.startswith("test_") and path.name not in ("__init__.py", "conftest.py")
            and path.relative_to(TESTS).parts[0] != "helpers"]
    assert rigs == [], "a module the tests share belongs in tests/helpers/"


def cycle_in(graph: dict[str, frozenset[str]]) -> list[str]:
    """A cycle of ``graph`` as the names along it, or [] when it has none; a package's
    ``__init__`` importing its own modules is no cycle."""
    visiting: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> list[str]:
        if name in visiting:
            return [*visiting[visiting.index(name):], name]
        if name in done:
            return []
        visiting.append(name)
        for other in sorted(graph[name]):
            if not other.startswith(name + ".") and (found := visit(other)):
                return found
        visiting.pop()
        done.add(name)
        return []

    return next((found for name in sorted(graph) if (found := visit(name))), [])


def test_no_stages_import_each_other_in_a_circle() -> None:
    assert cycle_in(imported_stages()) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert cycle_in({name: frozenset(imports_of(path) - {name}) for name, path in modules().items()}) == []
