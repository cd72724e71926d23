"""A bus behind the network that does not answer: a run starts, retries with backoff, and says so
in a line or two, never in a flood of a library's warnings.

A real ``ecu-sim`` process against python-can's socketcand client; the server is a minimal
socketcand (its handshake, then whatever the node sends is read and dropped) started on the port
the node is already retrying.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from ecu_sim.service.logs import RepeatLimit
from tests.conftest import Node, run_cli


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class FakeSocketcand:
    """socketcand's greeting and replies, enough for python-can to open the bus."""

    def __init__(self, port: int) -> None:
        self.server = socket.create_server(("127.0.0.1", port))
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # the node may hang up at any point
            conn.sendall(b"< hi >")
            for reply in (b"< ok >", b"< ok >"):  # to "< open can0 >" and "< rawmode >"
                if not conn.recv(1024):
                    return
                conn.sendall(reply)
            while conn.recv(4096):
                pass

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def socketcand_port() -> Iterator[tuple[int, Callable[[], FakeSocketcand]]]:
    port = free_port()
    servers: list[FakeSocketcand] = []

    def start() -> FakeSocketcand:
        servers.append(FakeSocketcand(port))
        return servers[-1]

    yield port, start
    for server in servers:
        server.close()


def bus_args(port: int) -> list[str]:
    return ["-i", "socketcand", "-c", "can0", "--bus-kwargs", "host=127.0.0.1", f"port={port}"]


@pytest.mark.slow
def test_a_refused_socketcand_port_is_one_warning_and_the_run_goes_on(
        socketcand_port: tuple[int, Callable[[], FakeSocketcand]]) -> None:
    port, _ = socketcand_port
    result = run_cli(*bus_args(port), "--duration", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert sum("unreachable" in line for line in lines) == 1, result.stderr
    assert len(lines) < 10, result.stderr  # the start, a status line a second, the summary
    assert "bus down (reconnecting)" in lines[-1]


@pytest.mark.slow
def test_a_socketcand_server_that_comes_up_later_is_connected_with_the_ports_backoff(
        socketcand_port: tuple[int, Callable[[], FakeSocketcand]], start: Callable[..., Node]) -> None:
    port, serve = socketcand_port
    node = start(*bus_args(port))
    node.wait_for(r"bus unreachable .*retrying with backoff")
    serve()
    node.wait_for(r"bus back after [\d.]+ s")
    assert node.stop() == 0, node.log


def test_a_librarys_repeated_warning_is_written_once_per_interval_with_a_count() -> None:
    now = [0.0]
    limit = RepeatLimit(interval_s=10.0, clock=lambda: now[0])
    written: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            written.append(record.getMessage())

    handler = Collect()
    handler.addFilter(limit)
    library = logging.getLogger("can.interfaces.example")
    library.addHandler(handler)
    library.propagate = False
    try:
        for step in range(2500):  # 25 s of a warning every 10 ms
            now[0] = step * 0.01
            library.warning("Failed to connect to server: %s", "Connection refused")
    finally:
        library.removeHandler(handler)
        library.propagate = True
    assert written == ["Failed to connect to server: Connection refused",
                       "Failed to connect to server: Connection refused (and 999 more like it in "
                       "the last 10 s)",
                       "Failed to connect to server: Connection refused (and 999 more like it in "
                       "the last 10 s)"]
