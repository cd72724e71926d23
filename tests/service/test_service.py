"""sd_notify and logging against a fake service manager: a real Unix datagram socket we listen on."""

from __future__ import annotations

import io
import logging
import os
import socket
import subprocess
import sys
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ecu_sim.errors import ConfigError
from ecu_sim.service.logs import JournalPrefixFormatter, configure_logging, stderr_is_journal
from ecu_sim.service.notify import Notifier
from tests.conftest import HANG_S, clean_env, ecu_sim_command


class FakeManager:
    """The receiving end of NOTIFY_SOCKET, as systemd would hold it."""

    def __init__(self, sock: socket.socket, env_value: str) -> None:
        self.sock = sock
        self.env_value = env_value

    def env(self, **extra: str) -> dict[str, str]:
        return {"NOTIFY_SOCKET": self.env_value, **extra}

    def messages(self) -> list[str]:
        """Everything sent so far; sendto() on a Unix datagram socket is synchronous, so no waiting."""
        found = []
        while True:
            try:
                found.append(self.sock.recv(4096).decode())
            except BlockingIOError:
                return found


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[FakeManager]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = tmp_path / "notify"
    sock.bind(str(path))
    sock.setblocking(False)
    try:
        yield FakeManager(sock, str(path))
    finally:
        sock.close()


@pytest.fixture
def abstract_manager() -> Iterator[FakeManager]:
    name = f"ecu-sim-test/{uuid.uuid4().hex}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.setblocking(False)
    try:
        yield FakeManager(sock, "@" + name)
    finally:
        sock.close()


@pytest.fixture
def no_systemd_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behave as on a venv without python3-systemd, whatever this machine has installed."""
    for name in ("systemd", "systemd.daemon", "systemd.journal"):
        monkeypatch.setitem(sys.modules, name, None)


# -- notifications -------------------------------------------------------------------------------


def test_ready_status_stopping_are_sent(manager: FakeManager) -> None:
    notifier = Notifier(manager.env())
    assert notifier.enabled
    notifier.ready()
    notifier.status("speed 80.0 km/h, APP 12 %")
    notifier.stopping()
    assert manager.messages() == ["READY=1", "STATUS=speed 80.0 km/h, APP 12 %", "STOPPING=1"]


def test_ready_can_carry_a_first_status(manager: FakeManager) -> None:
    Notifier(manager.env()).ready("bus open")
    assert manager.messages() == ["READY=1\nSTATUS=bus open"]


def test_status_with_newlines_stays_one_assignment(manager: FakeManager) -> None:
    """A newline would start a new VAR= line and could smuggle in e.g. READY=1 or WATCHDOG=1."""
    Notifier(manager.env()).status("line one\nREADY=1")
    assert manager.messages() == ["STATUS=line one READY=1"]


def test_abstract_socket_name(abstract_manager: FakeManager) -> None:
    notifier = Notifier(abstract_manager.env())
    notifier.ready()
    assert abstract_manager.messages() == ["READY=1"]


def test_without_notify_socket_everything_is_a_no_op(manager: FakeManager) -> None:
    notifier = Notifier({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())})
    assert not notifier.enabled
    assert notifier.watchdog_interval_s() is None
    notifier.ready()
    notifier.status("x")
    notifier.kick(1.0)
    notifier.stopping()
    assert manager.messages() == []


def test_unusable_notify_socket_never_raises(tmp_path: Path) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "missing"), "WATCHDOG_USEC": "1000000"})
    notifier.ready()
    notifier.kick(0.0)
    notifier.stopping()


def test_unsupported_address_form_disables_notifications() -> None:
    assert not Notifier({"NOTIFY_SOCKET": "vsock:2:1234"}).enabled


# -- watchdog ------------------------------------------------------------------------------------


def test_watchdog_interval_is_half_the_timeout_for_our_pid(manager: FakeManager) -> None:
    notifier = Notifier(manager.env(WATCHDOG_USEC="2000000", WATCHDOG_PID=str(os.getpid())))
    assert notifier.watchdog_interval_s() == pytest.approx(1.0)


def test_watchdog_without_pid_applies_to_us(manager: FakeManager) -> None:
    notifier = Notifier(manager.env(WATCHDOG_USEC="3000000"))
    assert notifier.watchdog_interval_s() == pytest.approx(1.5)


def test_watchdog_for_another_pid_is_not_ours(manager: FakeManager) -> None:
    notifier = Notifier(manager.env(WATCHDOG_USEC="2000000", WATCHDOG_PID=str(os.getpid() + 1)))
    assert notifier.watchdog_interval_s() is None
    notifier.kick(0.0)
    notifier.kick(5.0)
    assert manager.messages() == []


def test_explicit_pid_argument_is_compared(manager: FakeManager) -> None:
    env = manager.env(WATCHDOG_USEC="2000000", WATCHDOG_PID="4242")
    assert Notifier(env, pid=4242).watchdog_interval_s() == pytest.approx(1.0)
    assert Notifier(env, pid=4243).watchdog_interval_s() is None


@pytest.mark.parametrize("usec", ["", "0", "-5", "soon"])
def test_watchdog_off_when_timeout_missing_or_invalid(manager: FakeManager, usec: str) -> None:
    env = manager.env(WATCHDOG_USEC=usec) if usec else manager.env()
    notifier = Notifier(env)
    assert notifier.watchdog_interval_s() is None
    notifier.kick(100.0)
    assert manager.messages() == []


def test_kick_rate_limited_to_the_interval(manager: FakeManager) -> None:
    notifier = Notifier(manager.env(WATCHDOG_USEC="2000000", WATCHDOG_PID=str(os.getpid())))
    sent: list[tuple[float, str]] = []
    for tick in range(31):  # 3 s of a 10 Hz loop
        now = 100.0 + tick * 0.1
        notifier.kick(now)
        sent.extend((round(now, 1), m) for m in manager.messages())
    assert sent == [(100.0, "WATCHDOG=1"), (101.0, "WATCHDOG=1"), (102.0, "WATCHDOG=1"),
                    (103.0, "WATCHDOG=1")]


def test_first_kick_goes_out_at_once(manager: FakeManager) -> None:
    notifier = Notifier(manager.env(WATCHDOG_USEC="10000000"))
    notifier.kick(0.0)
    assert manager.messages() == ["WATCHDOG=1"]


def test_clock_going_backwards_kicks_rather_than_starves(manager: FakeManager) -> None:
    notifier = Notifier(manager.env(WATCHDOG_USEC="2000000"))
    notifier.kick(50.0)
    notifier.kick(10.0)
    assert manager.messages() == ["WATCHDOG=1", "WATCHDOG=1"]


# -- systemd-python, when installed --------------------------------------------------------------


def _fake_systemd(monkeypatch: pytest.MonkeyPatch, **modules: types.ModuleType) -> None:
    package = types.ModuleType("systemd")
    package.__path__ = []
    monkeypatch.setitem(sys.modules, "systemd", package)
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, f"systemd.{name}", module)
        setattr(package, name, module)


def test_systemd_python_is_used_when_importable(monkeypatch: pytest.MonkeyPatch,
                                                 manager: FakeManager) -> None:
    calls: list[str] = []

    def notify(status: str, *args: Any, **kwargs: Any) -> bool:
        calls.append(status)
        return True

    daemon = types.ModuleType("systemd.daemon")
    daemon.notify = notify  # type: ignore[attr-defined]
    _fake_systemd(monkeypatch, daemon=daemon)
    monkeypatch.setenv("NOTIFY_SOCKET", manager.env_value)
    monkeypatch.setenv("WATCHDOG_USEC", "2000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    notifier = Notifier()
    notifier.ready()
    notifier.kick(1.0)
    notifier.stopping()
    assert calls == ["READY=1", "WATCHDOG=1", "STOPPING=1"]
    assert manager.messages() == []


def test_library_can_be_refused(monkeypatch: pytest.MonkeyPatch, manager: FakeManager) -> None:
    daemon = types.ModuleType("systemd.daemon")
    daemon.notify = lambda status, *args, **kwargs: pytest.fail("library used")  # type: ignore[attr-defined]
    _fake_systemd(monkeypatch, daemon=daemon)
    monkeypatch.setenv("NOTIFY_SOCKET", manager.env_value)
    Notifier(use_library=False).ready()
    assert manager.messages() == ["READY=1"]


def test_foreign_systemd_package_is_ignored(monkeypatch: pytest.MonkeyPatch, manager: FakeManager) -> None:
    """A ``systemd`` package without ``daemon.notify`` (not systemd-python) falls back to the socket."""
    _fake_systemd(monkeypatch, daemon=types.ModuleType("systemd.daemon"))
    monkeypatch.setenv("NOTIFY_SOCKET", manager.env_value)
    Notifier().ready()
    assert manager.messages() == ["READY=1"]


def test_without_systemd_python_the_socket_is_used(monkeypatch: pytest.MonkeyPatch, manager: FakeManager,
                                                   no_systemd_python: None) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", manager.env_value)
    Notifier().ready()
    assert manager.messages() == ["READY=1"]


# -- logging -------------------------------------------------------------------------------------


@pytest.fixture
def root_logger() -> Iterator[logging.Logger]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield root
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _record(level: int, message: str, exc_info: Any = None) -> logging.LogRecord:
    return logging.LogRecord("ecu_sim.ecu", level, __file__, 1, message, None, exc_info)


@pytest.mark.parametrize(("level", "prefix"), [
    (logging.DEBUG, "<7>"), (logging.INFO, "<6>"), (logging.WARNING, "<4>"),
    (logging.ERROR, "<3>"), (logging.CRITICAL, "<2>"), (25, "<4>"),
])
def test_prefix_format(level: int, prefix: str) -> None:
    assert JournalPrefixFormatter().format(_record(level, "bus open")) == f"{prefix}ecu_sim.ecu: bus open"


def test_every_line_of_a_traceback_keeps_the_priority() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        exc_info = sys.exc_info()
    lines = JournalPrefixFormatter().format(_record(logging.ERROR, "tick failed", exc_info)).splitlines()
    assert len(lines) > 3
    assert all(line.startswith("<3>") for line in lines)
    assert lines[-1] == "<3>RuntimeError: boom"


def _journal_stream_of(handle: Any) -> str:
    info = os.fstat(handle.fileno())
    return f"{info.st_dev}:{info.st_ino}"


def test_journal_stream_must_match_stderr(tmp_path: Path) -> None:
    with open(tmp_path / "err", "w") as stream, open(tmp_path / "other", "w") as other:
        assert stderr_is_journal({"JOURNAL_STREAM": _journal_stream_of(stream)}, stream)
        assert not stderr_is_journal({"JOURNAL_STREAM": _journal_stream_of(other)}, stream)
        assert not stderr_is_journal({}, stream)
        assert not stderr_is_journal({"JOURNAL_STREAM": "garbage"}, stream)


def test_prefixed_lines_when_stderr_is_the_journal(tmp_path: Path, root_logger: logging.Logger,
                                                   no_systemd_python: None) -> None:
    with open(tmp_path / "err", "w") as stream:
        mode = configure_logging("info", environ={"JOURNAL_STREAM": _journal_stream_of(stream)},
                                 stream=stream)
        logging.getLogger("ecu_sim.test").warning("late tick")
        logging.getLogger("ecu_sim.test").debug("hidden")
    assert mode == "prefix"
    assert (tmp_path / "err").read_text() == "<4>ecu_sim.test: late tick\n"


def test_human_format_elsewhere(root_logger: logging.Logger, no_systemd_python: None) -> None:
    stream = io.StringIO()
    assert configure_logging("DEBUG", environ={"JOURNAL_STREAM": "1:2"}, stream=stream) == "human"
    logging.getLogger("ecu_sim.test").debug("details")
    line = stream.getvalue()
    assert "DEBUG" in line and "ecu_sim.test: details" in line and not line.startswith("<")


def test_journal_handler_used_when_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             root_logger: logging.Logger) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    class JournalHandler(logging.Handler):
        def __init__(self, **fields: Any) -> None:
            super().__init__()
            self.fields = fields

        def emit(self, record: logging.LogRecord) -> None:
            sent.append((self.format(record), self.fields))

    journal = types.ModuleType("systemd.journal")
    journal.JournalHandler = JournalHandler  # type: ignore[attr-defined]
    _fake_systemd(monkeypatch, journal=journal)
    with open(tmp_path / "err", "w") as stream:
        env = {"JOURNAL_STREAM": _journal_stream_of(stream)}
        assert configure_logging("info", environ=env, stream=stream) == "journal"
        logging.getLogger("ecu_sim.test").info("ready")
        # asked for explicitly, even when stderr goes elsewhere
        assert configure_logging("info", journal=True, environ={}, stream=io.StringIO()) == "journal"
    assert sent == [("ecu_sim.test: ready", {"SYSLOG_IDENTIFIER": "ecu-sim"})]


def test_journal_asked_without_systemd_python_falls_back_to_prefixes(
        root_logger: logging.Logger, no_systemd_python: None) -> None:
    stream = io.StringIO()
    assert configure_logging("info", journal=True, environ={}, stream=stream) == "prefix"
    logging.getLogger("ecu_sim.test").error("bus off")
    assert stream.getvalue() == "<3>ecu_sim.test: bus off\n"


def test_reconfiguring_replaces_the_handler(root_logger: logging.Logger, no_systemd_python: None) -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("info", environ={}, stream=first)
    configure_logging("warning", environ={}, stream=second)
    logging.getLogger("ecu_sim.test").warning("once")
    assert first.getvalue() == ""
    assert second.getvalue().count("once") == 1
    assert root_logger.level == logging.WARNING


def test_unknown_level_is_a_config_error(root_logger: logging.Logger) -> None:
    with pytest.raises(ConfigError, match="verbose"):
        configure_logging("verbose")


# -- a real process under a fake service manager ---------------------------------------------------


def test_a_running_node_is_ready_with_a_status_kicks_the_watchdog_and_says_stopping(
        manager: FakeManager, virtual_channel: str) -> None:
    """The whole protocol as systemd sees it from a real ``ecu-sim`` process.

    READY=1 must carry the first STATUS=: systemd shows a unit as active the moment READY=1 arrives,
    and ``systemctl status`` would otherwise show no status until the next second. The first kick
    goes out with the first tick; how many follow depends on how the ticks fell in real time (one
    per 0.2 s here, half of WATCHDOG_USEC), which test_kick_rate_limited_to_the_interval checks
    on a given clock.
    """
    env = {**clean_env(), **manager.env(WATCHDOG_USEC="400000")}
    done = subprocess.run(ecu_sim_command("-i", "virtual", "-c", virtual_channel, "--duration", "0.5"),
                          capture_output=True, text=True, timeout=HANG_S, env=env, check=False)
    assert done.returncode == 0, done.stderr
    sent = manager.messages()
    ready = [m for m in sent if "READY=1" in m.splitlines()]
    assert len(ready) == 1
    assert any(line.startswith("STATUS=speed ") for line in ready[0].splitlines())
    assert "WATCHDOG=1" in sent and sent.index(ready[0]) < sent.index("WATCHDOG=1")
    assert sent[-1].splitlines()[0] == "STOPPING=1"
