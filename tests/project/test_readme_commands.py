"""Every ``ecu-sim`` command in the documentation's shell examples is one the program accepts.

The examples are the fenced code blocks of README.md, the documentation's pages (docs/*.md),
deploy/README.md and deploy/*/README.md marked ``sh``, ``bash``, ``shell`` or ``console`` (in a
``console`` block only the ``$ `` lines);
a file that marks none of its blocks (the deploy guides) has its unmarked blocks read as shell.
Each ``ecu-sim`` command in them, after the prompt, ``sudo``, environment assignments, comments,
redirections and line continuations are taken off, must parse with the real command line. Those
that need no hardware, root or network (``simulate`` and ``--version``) are also run, shortened,
and so is every shell line of README.md, of each page and of deploy/README.md that can run here,
in document order.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ecu_sim import cli
from tests.conftest import REPO, clean_env, ecu_sim_command

README = REPO / "README.md"
#: the documentation site's pages (mkdocs.yml)
PAGES = tuple(sorted((REPO / "docs").glob("*.md")))
DEPLOY = REPO / "deploy" / "README.md"
DOCS = (README, *PAGES, DEPLOY, *sorted(REPO.glob("deploy/*/README.md")))
#: the documents whose runnable shell lines run, each in order in a folder of its own
RUN_IN_ORDER = (README, *PAGES, DEPLOY)
SHELL_INFO = frozenset({"sh", "bash", "shell", "console"})
PROGRAM = "ecu-sim"
#: shell operators that end a simple command; redirections drop themselves and their target
SEPARATORS = frozenset({"&", "&&", "|", "||", ";", "(", ")"})
REDIRECTIONS = frozenset({"<", ">", ">>", ">&", "<&", "2>", "2>>", "&>"})
#: programs that run the next word as the command
WRAPPERS = frozenset({"sudo", "env"})
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)")
#: the duration a run example is shortened to, in seconds
SHORT_DURATION = "2"


@dataclass(frozen=True)
class Block:
    path: Path
    info: str
    #: (line number in the file, counting from 1; text without the fence's indentation)
    lines: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class Command:
    """One ``ecu-sim`` invocation found in a document: its arguments after the program name."""

    path: Path
    line: int
    args: tuple[str, ...]
    #: why the line could not be read as shell (an unbalanced quote), else None
    problem: str | None = None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    def __str__(self) -> str:
        return f"{self.where}: {shlex.join([PROGRAM, *self.args])}"


def fenced_blocks(path: Path, text: str) -> Iterator[Block]:
    """The fenced code blocks of a Markdown text, also those indented under a list item."""
    opened: tuple[str, str, str] | None = None  # indentation, fence, info string
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if opened is None:
            if match:
                opened = (match["indent"], match["fence"], match["info"].lower())
                lines = []
            continue
        indent, fence, info = opened
        if match and match["fence"].startswith(fence) and not match["info"]:
            yield Block(path, info, tuple(lines))
            opened = None
        else:
            lines.append((number, line.removeprefix(indent)))


def shell_blocks(path: Path) -> Iterator[Block]:
    blocks = list(fenced_blocks(path, path.read_text(encoding="utf-8")))
    marked = any(block.info in SHELL_INFO for block in blocks)
    for block in blocks:
        if block.info in SHELL_INFO or (not marked and not block.info):
            yield block


def command_lines(block: Block) -> Iterator[tuple[int, str]]:
    """The block's command lines, each continued line joined to its first, prompts taken off."""
    pending: tuple[int, str] | None = None
    for number, raw in block.lines:
        line = raw.strip()
        if pending is None:
            if block.info == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            elif line.startswith("$ "):
                line = line[2:]
            pending = (number, "")
        start, text = pending
        if line.endswith("\\"):
            pending = (start, text + line[:-1] + " ")
            continue
        pending = None
        yield start, text + line


def simple_commands(line: str) -> Iterator[list[str]]:
    """The words of each simple command of a shell line, without its redirections."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    redirected = False
    for token in lexer:
        if redirected:
            redirected = False
        elif token in REDIRECTIONS:
            redirected = True
        elif token in SEPARATORS:
            yield words
            words = []
        else:
            words.append(token)
    yield words


def program_args(words: list[str]) -> tuple[str, ...] | None:
    """The arguments of an ``ecu-sim`` command after ``sudo`` and ``NAME=value``; None for another program."""
    rest = list(words)
    while rest:
        if rest[0] in WRAPPERS:
            rest.pop(0)
            while rest and rest[0].startswith("-"):  # sudo -E, env -i
                rest.pop(0)
        elif ASSIGNMENT.match(rest[0]):
            rest.pop(0)
        else:
            break
    if not rest or rest[0] != PROGRAM:
        return None
    return tuple(rest[1:])


def commands_in(path: Path) -> Iterator[Command]:
    for block in shell_blocks(path):
        for number, line in command_lines(block):
            try:
                commands = list(simple_commands(line))
            except ValueError as exc:  # shlex: no closing quotation, ...
                if PROGRAM in line:
                    yield Command(path, number, (), problem=f"{line!r} is not a shell command line: {exc}")
                continue
            for words in commands:
                args = program_args(words)
                if args is not None:
                    yield Command(path, number, args)


COMMANDS = [command for doc in DOCS for command in commands_in(doc)]
RUNNABLE = [command for command in COMMANDS
            if command.args[:1] == ("simulate",) or command.args[:1] in (("--version",), ("-V",))]


def shortened(args: tuple[str, ...]) -> list[str]:
    """A simulate example's arguments with a short ``--duration``; any other command's as they are."""
    if args[:1] != ("simulate",):
        return list(args)
    out = [arg for arg in args if not arg.startswith("--duration=")]
    if "--duration" in out:
        out[out.index("--duration") + 1] = SHORT_DURATION
    else:
        out += ["--duration", SHORT_DURATION]
    return out


# -- the extraction itself ------------------------------------------------------------------------


def _commands_of(markdown: str, tmp_path: Path) -> list[tuple[str, ...]]:
    doc = tmp_path / "README.md"
    doc.write_text(markdown, encoding="utf-8")
    return [command.args for command in commands_in(doc)]


def test_prompt_sudo_and_environment_assignments_are_not_part_of_a_command(tmp_path: Path) -> None:
    markdown = "```sh\n$ sudo CAN_INTERFACE=virtual ecu-sim link vcan0 --create\n```\n"
    assert _commands_of(markdown, tmp_path) == [("link", "vcan0", "--create")]


def test_comments_and_redirections_are_not_part_of_a_command(tmp_path: Path) -> None:
    markdown = "```sh\necu-sim simulate --out - > run.csv   # the whole run\n```\n"
    assert _commands_of(markdown, tmp_path) == [("simulate", "--out", "-")]


def test_backslash_continued_lines_are_one_command(tmp_path: Path) -> None:
    markdown = "```bash\necu-sim simulate \\\n    --no-ccm\n```\n"
    assert _commands_of(markdown, tmp_path) == [("simulate", "--no-ccm")]


def test_each_command_of_a_shell_list_is_found(tmp_path: Path) -> None:
    markdown = "```sh\necu-sim --duration 1 & ecu-sim ccm --duration 1; cantools dump x.dbc\n```\n"
    assert _commands_of(markdown, tmp_path) == [("--duration", "1"), ("ccm", "--duration", "1")]


def test_only_prompt_lines_of_a_console_block_are_commands(tmp_path: Path) -> None:
    markdown = "```console\n$ ecu-sim --version\necu-sim 1.0\n```\n"
    assert _commands_of(markdown, tmp_path) == [("--version",)]


def test_unmarked_blocks_are_shell_only_in_a_file_that_marks_none(tmp_path: Path) -> None:
    unmarked = "```\necu-sim [run] [options]\n```\n"
    assert _commands_of(unmarked, tmp_path) == [("[run]", "[options]")]
    assert _commands_of(unmarked + "```sh\necu-sim ccm\n```\n", tmp_path) == [("ccm",)]


def test_a_line_with_an_unbalanced_quote_is_reported_not_skipped(tmp_path: Path) -> None:
    doc = tmp_path / "README.md"
    doc.write_text("```sh\necu-sim --dbc 'my.dbc\n```\n", encoding="utf-8")
    [command] = commands_in(doc)
    assert command.problem is not None and "my.dbc" in command.problem


def test_the_documentation_has_ecu_sim_examples() -> None:
    assert COMMANDS, f"no ecu-sim command found in the shell blocks of {[str(d) for d in DOCS]}"


# -- the documentation's commands -----------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS, ids=[command.where for command in COMMANDS])
def test_every_documented_ecu_sim_command_parses(command: Command,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert command.problem is None, f"{command.where}: {command.problem}"
    try:
        cli.parse_args(command.args)
    except SystemExit as exc:  # argparse: 0 after --help or --version, 2 for a mistake
        message = capsys.readouterr().err.strip().splitlines()  # usage, then the error
        assert exc.code == 0, f"{command}\ndoes not parse: {message[-1] if message else exc.code}"


@pytest.mark.parametrize("command", RUNNABLE, ids=[command.where for command in RUNNABLE])
def test_every_documented_simulate_and_version_command_runs_successfully(command: Command,
                                                                         tmp_path: Path) -> None:
    result = subprocess.run(ecu_sim_command(*shortened(command.args)), capture_output=True, text=True,
                            timeout=120, env=clean_env(), cwd=tmp_path, check=False)
    assert result.returncode == 0, f"{command}\nexits {result.returncode}: {result.stderr.strip()}"


# -- every documented shell line that can run here, run ------------------------------------------

#: why a documented line does not run here (first match wins); every other line must run and exit 0
NOT_HERE = (
    (re.compile(r"\bscripts/test\b"), "runs this very test suite"),
    (re.compile(r"\bscripts/demo\b"), "runs for a minute; tests/project/test_scripts.py runs it for 2 s"),
    (re.compile(r"\bscripts/ci-fresh\b"), "runs the whole CI from a fresh clone, for hours"),
    (re.compile(r"\bscripts/bench\b"),
     "a benchmark of minutes to half an hour (tests/test_bench*.py check its arithmetic)"),
    (re.compile(r"\bmkdocs\b"), "builds this documentation (scripts/test's documentation stage)"),
    (re.compile(r"\b(sudo|ssh|scp|install\.sh|uninstall\.sh|systemctl|journalctl|ansible-playbook)\b"),
     "needs a board, root or another machine (the VM and systemd stages cover it)"),
    (re.compile(r"\becu-sim link\b"), "needs SocketCAN and root (the VM stage covers it)"),
    (re.compile(r"(--iface|-i|-c) v?can\d|\bcan(dump|player|send) "),
     "needs SocketCAN (the VM stage covers it)"),
    (re.compile(r"(-i|--interface) (pcan|kvaser|slcan|gs_usb|socketcand)\b"),
     "needs a CAN adapter or a socketcand server"),
    (re.compile(r"\becu-sim cosim\b(?! --contract)|\bexamples/cosim_"),
     "a co-simulation pair, the server waiting for its peer (tests/cosim/test_cosim_cli.py runs both)"),
    (re.compile(r"\bexamples/acc\.py\b"), "a real-time controller against a running truck for a minute "
                                          "(tests/powertrain/test_acc_example.py runs the pair)"),
    (re.compile(r"\bexamples/detector\.py\b"), "needs the datasets of two attack campaigns "
                                               "(tests/attack/test_detector_example.py runs it)"),
    (re.compile(r"\becu-sim campaign\b"), "minutes of simulation, or a cluster (tests/test_campaign*.py "
                                           "run campaigns through the command line)"),
    (re.compile(r"\becu-sim driver\b"), "needs an input device or a terminal (tests/test_driver*.py and "
                                         "the VM stage cover it)"),
    (re.compile(r"\bpip (wheel|install)\b"), "builds or installs a package from the network"),
    (re.compile(r"\b(modinfo|lsmod|dmesg)\b|\bip -details link show can\d"),
     "reads a board's kernel, drivers and CAN controller (the board stage checks the modules)"),
)
#: programs the runnable lines may use besides ecu-sim, and the Python module each needs
NEEDS_MODULE = {"cantools plot": "matplotlib"}


@dataclass(frozen=True)
class Line:
    path: Path
    number: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.number}"


def documented_lines(path: Path) -> list[Line]:
    return [Line(path, number, text) for block in shell_blocks(path)
            for number, text in command_lines(block) if text.strip() and not text.startswith("#")]


def why_not_here(line: Line) -> str | None:
    for pattern, reason in NOT_HERE:
        if pattern.search(line.text):
            return reason
    for program, module in NEEDS_MODULE.items():
        if program in line.text and importlib.util.find_spec(module) is None:
            return f"needs {module} (pip install {module})"
    return None


SHIM = '''#!{python}
"""The documentation's ecu-sim, shortened: a run lasts {seconds} s, whatever the example says."""
import os, sys
args = sys.argv[1:]
untimed = ("link", "replay", "plot", "export-fmu", "campaign", "dataset", "calibration",
           "--version", "-V", "--help", "-h")
if not args or args[0] not in untimed:
    if "--duration" in args:
        args[args.index("--duration") + 1] = "{seconds}"
    else:
        args += ["--duration", "{seconds}"]
os.execv("{python}", ["{python}", "-m", "ecu_sim", *args])
'''


def scenario_block() -> Block:
    """The documented scenario file (the block with ``seed = 7``), from whichever document holds it."""
    return next(block for doc in DOCS for block in fenced_blocks(doc, doc.read_text(encoding="utf-8"))
                if any(text.strip() == "seed = 7" for _, text in block.lines))


def example_folder(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A working folder that looks like the checkout, with the shortened ecu-sim first on PATH."""
    shims = tmp_path / "bin"
    shims.mkdir()
    shim = shims / PROGRAM
    shim.write_text(SHIM.format(python=sys.executable, seconds=SHORT_DURATION))
    shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    for name in ("ecu_sim", "dbc", "scripts", "deploy", "systemd", "examples"):
        (work / name).symlink_to(REPO / name)
    (work / "docs").mkdir()  # a writable docs/, where the picture of docs/watching.md is made
    # the scenario file the fault example names, as the page that holds it shows it
    (work / "dropouts.txt").write_text("\n".join(text for _, text in scenario_block().lines) + "\n")
    env = {**clean_env(), "PATH": f"{shims}:{Path(sys.executable).parent}:{clean_env().get('PATH', '')}"}
    return work, env


@pytest.mark.slow
@pytest.mark.parametrize("doc", RUN_IN_ORDER, ids=[str(doc.relative_to(REPO)) for doc in RUN_IN_ORDER])
def test_every_documented_shell_line_that_can_run_here_runs_in_order_and_exits_0(
        doc: Path, tmp_path: Path) -> None:
    """In document order, in one folder, so a replay finds the recording an earlier line made."""
    work, env = example_folder(tmp_path)
    ran = []
    for line in documented_lines(doc):
        if why_not_here(line) is not None:
            continue
        result = subprocess.run(["bash", "-c", line.text], capture_output=True, text=True, timeout=300,
                                env=env, cwd=work, check=False)
        assert result.returncode == 0, f"{line.where}: {line.text}\nexits {result.returncode}: " \
                                       f"{result.stderr}"
        assert "Traceback" not in result.stderr, f"{line.where}: {result.stderr}"
        ran.append(line.where)
    assert ran or doc != README  # the project's README has runnable examples


def test_each_documented_line_that_does_not_run_here_says_why() -> None:
    lines = [line for doc in RUN_IN_ORDER for line in documented_lines(doc)]
    skipped = {line.where: why_not_here(line) for line in lines if why_not_here(line)}
    runnable = [line.text for line in lines if line.where not in skipped]
    assert runnable and all(skipped.values())
    # the replay of the recording an earlier example of the same page makes
    assert any(text.startswith("ecu-sim replay ecu.log") for text in runnable)
    for doc in RUN_IN_ORDER:
        texts = [line.text for line in documented_lines(doc)]
        replays = [n for n, text in enumerate(texts) if text.startswith("ecu-sim replay ecu.log")]
        records = [n for n, text in enumerate(texts) if "--record ecu.log" in text]
        assert not replays or (records and records[0] < replays[0]), \
            f"{doc.relative_to(REPO)}: replays ecu.log before any line of it records ecu.log"


def test_the_scenario_file_the_fault_example_names_is_documented() -> None:
    assert any(text.strip() == "seed = 7" for _, text in scenario_block().lines)


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_code_block_of_a_page_names_its_language(page: Path) -> None:
    """An unmarked block would be read as shell (the rule for the deploy guides) and run."""
    blocks = list(fenced_blocks(page, page.read_text(encoding="utf-8")))
    unmarked = [block.lines[0][0] - 1 for block in blocks if not block.info and block.lines]
    assert not unmarked, f"{page.relative_to(REPO)}: the blocks opened at lines {unmarked} name no language"
