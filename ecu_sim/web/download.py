"""``GET /api/recording``: the latest stopped recording, made for each download, one at a time.

Each download makes its recording in a process of its own (ecu_sim.io.spool), seconds of a
single-core board's CPU for a long session. A request that comes while one is being made is
answered at once (503, with ``Retry-After``) rather than queued behind it: queued, twenty requests
would still cost twenty recordings, side by side as far as the thread pool goes. The guard
(ecu_sim.web.guard) has already refused a request without the token or from another site's page,
so nothing of theirs starts a process.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from aiohttp import web

from ecu_sim.errors import OutputError
from ecu_sim.web.session import Session

log = logging.getLogger(__name__)


class Download:
    """The route's handler for one node's session (None: the node makes no recording). Its state
    is the server's event loop's alone, so it needs no lock."""

    def __init__(self, session: Session | None) -> None:
        self._session = session
        #: when the download being made was asked for (time.monotonic), None while none is
        self._making_since: float | None = None
        #: how long the latest download took to make: what a request meanwhile is told to wait
        self._made_in_s = 0.0

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        session = self._session
        span = None if session is None else session.span
        if session is None or span is None:
            return error(404, 'no recording was stopped yet: POST {"record": "start"}, then '
                              '{"record": "stop"}')
        if self._making_since is not None:
            return self._busy(time.monotonic() - self._making_since)
        self._making_since = time.monotonic()  # before the first await: no other request sees it free
        log.info("web: making the recording to tick %d for a download by %s", span.stop_tick, request.remote)
        try:
            made = await asyncio.get_running_loop().run_in_executor(None, session.download)
        except OutputError as exc:  # the process that makes it from the spool failed
            return error(500, str(exc))
        finally:
            self._made_in_s = time.monotonic() - self._making_since
            self._making_since = None
        if made is None:
            return error(404, "no recording was stopped yet")
        name, data = made
        return web.Response(body=data, content_type="application/zip",
                            headers={"Content-Disposition": f'attachment; filename="{name}"'})

    def _busy(self, making_s: float) -> web.Response:
        """When to ask again, in whole seconds: what the latest download took, less what this one
        has taken so far, at least a second."""
        wait = max(1, math.ceil(self._made_in_s - making_s))
        answer = error(503, f"a recording is being made for another download (for {making_s:.0f} s "
                            f"now); the node makes one at a time: ask again in {wait} s")
        answer.headers["Retry-After"] = str(wait)
        return answer


def error(status: int, reason: str) -> web.Response:
    """An answer of the API that says what went wrong: a JSON ``error``."""
    return web.json_response({"error": reason}, status=status)
