"""``--web``, wired into a real-time run: the address, the token, the session recording, the server.

On a loopback address anyone on the host may use the page, as anyone there may send frames on the
host-local bus. On any other address the controls need a token made at the start and logged once
(``[run] web_read_needs_token`` puts the plots and the state behind it too). On every address
the page answers only to the names it is served by and to its own page's origin
(ecu_sim.web.guard), so another site's page in a browser on the host cannot drive it.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import logging
import os
import secrets
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from cantools.database.can import Database

from ecu_sim.codec.profile import Profile
from ecu_sim.codec.spn import SignalLayout
from ecu_sim.controls import planned
from ecu_sim.controls.check import check
from ecu_sim.controls.desk import ControlDesk
from ecu_sim.errors import ConfigError, needs_extra
from ecu_sim.io.recorder import Recorder
from ecu_sim.io.signals import TickView
from ecu_sim.io.spool import Spool
from ecu_sim.nodes.factory import Built, NodeKind
from ecu_sim.runtime.loop import LoopStats, TickObserver
from ecu_sim.settings.model import Settings
from ecu_sim.web.guard import is_loopback

if TYPE_CHECKING:
    from ecu_sim.web.session import Session

log = logging.getLogger("ecu_sim")

DEFAULT_HOST = "127.0.0.1"
#: the formats whose files only grow, so the download can be a prefix of them
DOWNLOADABLE = (".log", ".asc")


def parse_address(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPv6]:PORT`` -> (host, port); the host defaults to loopback."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or DEFAULT_HOST
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise ConfigError(f"--web {text!r}: expected HOST:PORT or PORT, e.g. 8080 (127.0.0.1:8080) or "
                          "0.0.0.0:8080 for every address of the board")
    return host, number


def session_settings(settings: Settings, stack: ExitStack) -> Settings:
    """The settings of a web run: a recording from tick 0 (a temporary one unless ``--record``),
    unless ``[run] web_record`` is off; called before the bus opens, so a mistaken address is
    found first."""
    assert settings.run.web is not None
    parse_address(settings.run.web)
    if not settings.run.web_record:
        return settings
    record = settings.record
    if record.file is None:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="ecu-sim-web-"))
        path = os.path.join(folder, "session.log")
        return dataclasses.replace(settings, record=dataclasses.replace(record, file=path))
    if not record.file.lower().endswith(DOWNLOADABLE) or record.max_bytes:
        raise ConfigError(f"--web records the session to download it from the page, which needs a "
                          f"single .log or .asc file (got --record {record.file}"
                          f"{' with --record-max-bytes' if record.max_bytes else ''})")
    return settings


def serve(stack: ExitStack, kind: NodeKind, built: Built, profile: Profile, settings: Settings,
          stats: LoopStats, view: TickView, line: Callable[[], str], bus_state: Callable[[], str],
          recorder: Recorder | Spool | None) -> list[TickObserver]:
    """Start the server for ``built``; the observers that publish its ticks and apply its controls."""
    try:
        from ecu_sim.web.server import WebServer
    except ImportError as exc:
        raise ConfigError(needs_extra("--web", "aiohttp", "web")) from exc
    from ecu_sim.web.guard import access_for
    from ecu_sim.web.state import Publisher

    assert settings.run.web is not None
    host, port = parse_address(settings.run.web)
    period = settings.run.resolved_period_s
    session = None if recorder is None or not settings.run.web_record else _session(recorder)
    # the one desk of the run: the page's controls, and those written ahead (--control)
    ahead = planned.plan(settings.ahead(), built, profile.speed) if settings.controls.apply else None
    desk = ControlDesk(built, journal=None if recorder is None else recorder.control,
                       marks=None if session is None else session.mark, planned=ahead)
    publisher = Publisher(kind.value, built, view, stats, line, bus_state, period)

    checked = functools.partial(check, built=built, speed=profile.speed, period_s=period)
    token = None if is_loopback(host) else secrets.token_urlsafe(18)
    access = access_for(host, token, settings.run.web_read_needs_token, settings.run.web_allowed_hosts)
    server = stack.enter_context(WebServer(host, port, publisher, desk, checked,
                                           signal_list(profile.database, kind.frame_ids(profile, settings)),
                                           session, access, period))
    # The server's libraries are many objects that live as long as the run: out of the collector's
    # reach, so a full collection does not scan them again (an unfrozen one stalled ticks).
    gc.collect()
    gc.freeze()
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{server.bound_port}/"
    if token is None:
        log.info("web: the page is at %s (loopback: no token)", url)
    else:
        log.info("web: the page is at %s; controls%s need the token %s (%s?token=%s or "
                 "'Authorization: Bearer %s')", url,
                 " and reading" if access.read_needs_token else "", token, url, token, token)
    return [publisher, desk]


def _session(recorder: Recorder | Spool) -> Session:
    """The page's recording: its spool, or the recorder of the person's own file (``--record``)."""
    from ecu_sim.web.session import Session, flushed

    return Session(recorder.path, recorder.cut if isinstance(recorder, Spool) else flushed(recorder))


def signal_list(database: Database, own_ids: list[int]) -> list[dict[str, Any]]:
    """The DBC's messages with their signals, and whether this node sends each one."""
    own = {ident & 0x3FFFF00 for ident in own_ids} | set(own_ids)
    return [{"name": message.name, "frame_id": message.frame_id,
             "sent": message.frame_id in own or (message.frame_id & 0x3FFFF00) in own,
             "signals": [_entry(SignalLayout.of(signal)) for signal in message.signals]}
            for message in database.messages]


def _entry(layout: SignalLayout) -> dict[str, Any]:
    """A signal as the page lists it: what a person needs to pick it for a plot."""
    return {"name": layout.name, "unit": layout.unit, "minimum": layout.minimum, "maximum": layout.maximum}
