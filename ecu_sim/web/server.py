"""The node's page and HTTP API on aiohttp, in a thread and an event loop of their own.

Routes: ``/`` the page and ``/static/`` its files (package data, the plotting library from npm
among them); ``GET /api/state`` the newest snapshot; ``GET /api/signals`` the DBC's messages the
node sends and receives; ``GET /api/ws`` a WebSocket pushing snapshots; ``POST /api/control`` a
control as JSON (ecu_sim.controls); ``GET /api/recording`` the latest stopped recording.

The server never touches the node: it reads the published snapshots (ecu_sim.web.state) and
queues controls, and answers a control once the loop applied it at a tick boundary (200, with
that tick) or said why not (409). A malformed request is answered 4xx with a JSON ``error``
before anything is queued. Each WebSocket has its own sender: a slow client loses only its own
samples. Nothing wakes the server's thread while nobody looks. Downloads are made one at a time
(ecu_sim.web.download)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from ecu_sim.controls.check import Control
from ecu_sim.controls.desk import ControlDesk
from ecu_sim.controls.refusals import ControlError, Refusal
from ecu_sim.errors import ConfigError
from ecu_sim.web.download import Download, error
from ecu_sim.web.guard import RECORDING_ROUTE, Access
from ecu_sim.web.session import Session
from ecu_sim.web.state import Publisher

log = logging.getLogger(__name__)

#: a refused control's HTTP status: a bad request, a conflict with what this node is, a value out of range
REFUSAL_STATUS = {Refusal.MALFORMED: 400, Refusal.NOT_HERE: 409, Refusal.OUT_OF_RANGE: 422}
#: the largest control request body; a control is a few dozen bytes
MAX_BODY = 4096
#: open WebSockets at most; one more is refused (503) rather than slowing the others
MAX_SOCKETS = 256
#: how long a request waits for the loop to apply its control
APPLY_TIMEOUT_S = 5.0
#: how long a request for the next snapshot waits for the loop's next tick before taking the newest
SNAPSHOT_WAIT_S = 5.0
#: encoded snapshots the server keeps for senders that fell behind
SENT_RING = 64
_CSP = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; object-src 'none'"


def static_folder() -> Path:
    """The page's files, package data of ecu_sim.web."""
    return Path(str(resources.files("ecu_sim.web") / "static"))


class WebServer:
    """The page and API of one node; a context manager that starts and stops the thread."""

    def __init__(self, host: str, port: int, publisher: Publisher, desk: ControlDesk,
                 check: Callable[[object], Control], signals: list[dict[str, Any]],
                 session: Session | None, access: Access, period_s: float) -> None:
        self.host, self.port = host, port
        self._publisher = publisher
        self._desk, self._check, self._signals = desk, check, signals
        self._session = session
        self._access = access
        self._period_s = period_s
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._problem: str | None = None
        self._stopping: asyncio.Event | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._sent: deque[tuple[int, str]] = deque(maxlen=SENT_RING)
        self._new: asyncio.Event | None = None
        #: requests for the state waiting for the loop's next snapshot
        self._waiting: list[asyncio.Future[dict[str, Any]]] = []
        #: the port bound (the one asked for, or the system's pick for port 0)
        self.bound_port = port

    def __enter__(self) -> WebServer:
        self._thread = threading.Thread(target=self._run, name="ecu-sim web", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._problem is not None:
            self._thread.join()
            raise ConfigError(self._problem)
        return self

    def __exit__(self, *exc: object) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=10.0)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        self._new = asyncio.Event()
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._guard])
        app.router.add_get("/", self._index)
        app.router.add_static("/static/", static_folder(), follow_symlinks=False)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/api/signals", self._signal_list)
        app.router.add_get("/api/ws", self._socket)
        app.router.add_post("/api/control", self._control)
        app.router.add_get(RECORDING_ROUTE, Download(self._session))
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port, backlog=128)
            await site.start()
        except OSError as exc:
            self._problem = (f"--web {self.host}:{self.port}: cannot serve the page there "
                             f"({exc.strerror or exc}); give a free port and an address of this host")
            await runner.cleanup()
            self._started.set()
            return
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.bound_port = int(sockets[0].getsockname()[1])
        self._started.set()
        await self._stopping.wait()
        self._publisher.wake = None
        for socket in list(self._sockets):
            with contextlib.suppress(Exception):
                await socket.close()
        await runner.cleanup()

    @web.middleware
    async def _guard(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        """Host, Origin and the token checked first (ecu_sim.web.guard), JSON errors for every
        failure, and the page's CSP."""
        host = request.headers.get("Host")
        refusal = self._access.host_refusal(host) or self._access.origin_refusal(
            request.method, request.path, request.headers, host or "")
        if refusal is not None:
            return error(403, refusal)
        if not self._access.token_allows(request.path, _token_of(request)):
            return error(401, "this needs the token the node logged at its start: send it as "
                              "'Authorization: Bearer TOKEN' or ?token=TOKEN")
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            reason = ("the body is larger than the largest control"
                      if exc.status == 413 else exc.reason)
            return error(exc.status, f"{reason} ({request.method} {request.path})")
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(static_folder() / "index.html", headers={"Cache-Control": "no-cache"})

    async def _state(self, request: web.Request) -> web.StreamResponse:
        latest = await self._next_snapshot()
        if latest is None:
            return error(503, "the node has not run its first tick yet")
        return web.Response(text=_encode(self._with_recording(latest)), content_type="application/json")

    def _with_recording(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        if self._session is None:
            return snapshot
        return {**snapshot, "recording": self._session.state()}

    async def _signal_list(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"node": self._publisher.name, "messages": self._signals})

    async def _control(self, request: web.Request) -> web.StreamResponse:
        if request.content_type != "application/json":
            return error(415, "a control is sent as JSON: Content-Type: application/json")
        try:
            body = json.loads(await request.text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return error(400, 'the body is not JSON; send one control, e.g. {"set_speed_kph": 85}')
        try:
            control = self._check(body)
        except ControlError as exc:
            return error(REFUSAL_STATUS[exc.refusal], exc.reason)
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[tuple[int | None, str | None]] = loop.create_future()

        def done(tick: int | None, problem: str | None) -> None:
            def settle() -> None:
                if not answer.done():
                    answer.set_result((tick, problem))
            with contextlib.suppress(RuntimeError):  # the server already stopped
                loop.call_soon_threadsafe(settle)

        self._desk.submit(control, done)
        try:
            tick, problem = await asyncio.wait_for(answer, APPLY_TIMEOUT_S)
        except TimeoutError:
            return error(503, "the node's loop did not take the control: it is stopping or stalled")
        if problem is not None:
            return error(409, problem)
        return web.json_response({"applied": control.record(), "tick": tick})

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        if len(self._sockets) >= MAX_SOCKETS:
            return error(503, f"{MAX_SOCKETS} pages are open already")
        # Uncompressed: deflating every snapshot would cost the node's CPU to save a LAN's bytes.
        socket = web.WebSocketResponse(heartbeat=10.0, max_msg_size=MAX_BODY, compress=False)
        await socket.prepare(request)
        self._sockets.add(socket)
        self._watch()
        sender = asyncio.create_task(self._send_to(socket))
        try:
            async for message in socket:  # nothing is read from a page; this notices it leave
                if message.type == WSMsgType.ERROR:
                    break
        finally:
            sender.cancel()
            self._sockets.discard(socket)
            self._unwatch()
        return socket

    async def _next_snapshot(self) -> dict[str, Any] | None:
        """The loop's next snapshot, made for this request (with its status line); the newest
        there is when the loop stops or stalls."""
        arrived: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting.append(arrived)
        self._watch()
        self._publisher.hurry = True
        try:
            return await asyncio.wait_for(arrived, SNAPSHOT_WAIT_S)
        except TimeoutError:
            return self._publisher.latest
        finally:
            if arrived in self._waiting:
                self._waiting.remove(arrived)
            self._unwatch()

    def _watch(self) -> None:
        """Someone looks: the loop builds snapshots at the page's rate and wakes this thread."""
        if self._publisher.wake is None:
            loop = asyncio.get_running_loop()

            def wake() -> None:  # in the loop's thread: never raise into a tick
                with contextlib.suppress(RuntimeError):  # the server's loop closed meanwhile
                    loop.call_soon_threadsafe(self._on_tick)

            self._publisher.wake = wake

    def _unwatch(self) -> None:
        """Nobody looks any more: the loop goes back to a snapshot now and then, unwoken."""
        if not self._sockets and not self._waiting:
            self._publisher.wake = None

    async def _send_to(self, socket: web.WebSocketResponse) -> None:
        """The ring so far, then each new snapshot; a client that fell behind skips what it lost."""
        ring = self._publisher.history()
        last = ring[-1]["tick"] if ring else -1
        try:
            await socket.send_str('{"history":[' + ",".join(_encode(s) for s in ring) + "]}")
            while not socket.closed:
                assert self._new is not None
                await self._new.wait()
                batch = [text for tick, text in list(self._sent) if tick > last]
                if batch:
                    last = self._sent[-1][0]
                    await socket.send_str('{"samples":[' + ",".join(batch) + "]}")
        except (ConnectionError, RuntimeError, asyncio.CancelledError):
            return

    def _on_tick(self) -> None:
        """A tick was published: answer the requests waiting for it, encode what is new once and
        wake every socket's sender."""
        latest = self._publisher.latest
        if latest is not None and latest["status_line"] is not None:  # made for a request
            waiting, self._waiting = self._waiting, []
            for arrived in waiting:
                if not arrived.done():
                    arrived.set_result(latest)
        elif self._waiting:
            self._publisher.hurry = True  # a request came after the loop read it: the next one
        if not self._sockets:
            return
        last = self._sent[-1][0] if self._sent else -1
        fresh: list[dict[str, Any]] = []
        for snapshot in reversed(list(self._publisher.ring)):  # a copy: the loop appends meanwhile
            if snapshot["tick"] <= last or len(fresh) == SENT_RING:
                break
            fresh.append(snapshot)
        if not fresh:
            return
        self._sent.extend((s["tick"], _encode(self._with_recording(s))) for s in reversed(fresh))
        assert self._new is not None
        self._new.set()
        self._new = asyncio.Event()


def _token_of(request: web.Request) -> str:
    """The token a request carries: ``Authorization: Bearer`` first, else ``?token=``."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header[len("Bearer "):].strip()
    return request.query.get("token", "")


def _encode(snapshot: dict[str, Any]) -> str:
    """JSON a browser parses: a value that is not a finite number becomes null."""
    try:
        return json.dumps(snapshot, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(_finite(snapshot), separators=(",", ":"))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
