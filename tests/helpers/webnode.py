"""A node with its page (``--web``), as the page's tests reach it: its address from its log, JSON
requests with the standard library, the recording it lets a page download, the recordings it made
and requests that reach it all at once."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import HANG_S, Node, clean_env

#: the line a node logs once its page is served
PAGE_LINE = r"web: the page is at (http://\S+/)"
#: the line a node logs as it starts making a recording for a download (a process of its own)
MAKING_LINE = r"web: making the recording to tick \d+ for a download"


class Page:
    """The HTTP API of one running node."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.url = node.wait_for(PAGE_LINE).group(1)
        give_up = time.monotonic() + HANG_S
        while self.request("GET", "api/state")[0] == 503:  # served before the loop's first tick
            assert time.monotonic() < give_up, node.log
            time.sleep(0.05)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """The status and body of one request; a 4xx or 5xx is an answer, not an exception."""
        request = urllib.request.Request(self.url + path.lstrip("/"), data=body, method=method,
                                         headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=HANG_S) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def state(self) -> dict[str, Any]:
        status, body = self.request("GET", "api/state")
        assert status == 200, body
        answer = json.loads(body)
        assert isinstance(answer, dict)
        return answer

    def control(self, body: object, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        """POST one control as JSON; the status and the JSON answer."""
        status, answer = self.request("POST", "api/control", json.dumps(body).encode(),
                                      {"Content-Type": "application/json", **(headers or {})})
        return status, json.loads(answer)

    def state_when(self, holds: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first snapshot for which ``holds`` is true: a tick the node reports, not a guess of
        when it comes (bounded by the hang guard)."""
        give_up = time.monotonic() + HANG_S
        while True:
            state = self.state()
            if holds(state):
                return state
            assert time.monotonic() < give_up, f"no such state after {HANG_S:g} s; last: {state}"
            time.sleep(0.05)


def replay_download(data: bytes, folder: Path) -> subprocess.CompletedProcess[str]:
    """Unpack a downloaded recording (a zip of the log and its journal) and ``ecu-sim replay`` it."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        archive.extractall(folder)
    (log,) = [name for name in names if not name.endswith(".ticks")]
    return subprocess.run([sys.executable, "-m", "ecu_sim", "replay", str(folder / log)], capture_output=True,
                          text=True, timeout=HANG_S, env=clean_env(), check=False)


def on_machine(machine: list[str], method: str, url: str, headers: dict[str, str],
               body: dict[str, Any] | None = None) -> int:
    """The status of one request made from inside the machine (the LAN address is only there)."""
    code = ("import json, sys, urllib.request, urllib.error\n"
            f"data = {json.dumps(body).encode() if body is not None else None!r}\n"
            f"request = urllib.request.Request({url!r}, data=data, method={method!r}, headers={headers!r})\n"
            "try:\n    print(urllib.request.urlopen(request, timeout=60).status)\n"
            "except urllib.error.HTTPError as error:\n    print(error.code)\n")
    result = subprocess.run([*machine, sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=HANG_S, env=clean_env(), check=False)
    assert result.returncode == 0, result.stderr
    return int(result.stdout)


def state_on(machine: list[str], url: str) -> dict[str, Any]:
    """The node's snapshot (``GET api/state``) read from inside the machine."""
    code = ("import sys, urllib.request\n"
            f"sys.stdout.write(urllib.request.urlopen({url + 'api/state'!r}, timeout=60).read().decode())\n")
    result = subprocess.run([*machine, sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=HANG_S, env=clean_env(), check=False)
    assert result.returncode == 0, result.stderr
    state = json.loads(result.stdout)
    assert isinstance(state, dict)
    return state


def recordings_made(node: Node) -> int:
    """How many recordings the node started making for downloads in its whole run: counted once
    it stopped, so that no line of its log is still on its way."""
    assert node.stop() == 0, node.log
    return len(re.findall(MAKING_LINE, node.log))


#: run inside the machine: open one connection per request, send every request, say so, and only
#: then read the answers: status and Retry-After of each, in order
_BURST = """
import http.client, json, sys, urllib.parse
url, headers, count = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
parts = urllib.parse.urlsplit(url)
connections = [http.client.HTTPConnection(parts.hostname, parts.port, timeout=60) for _ in range(count)]
for connection in connections:
    connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers)
print("sent", flush=True)
answers = []
for connection in connections:
    response = connection.getresponse()
    response.read()
    answers.append([response.status, response.getheader("Retry-After")])
print(json.dumps(answers))
"""


def at_once_on(machine: list[str], node: Node, url: str, headers: dict[str, str],
               count: int) -> list[tuple[int, str | None]]:
    """``count`` GETs of ``url`` from inside the machine that are all waiting at the node when it
    reads the first: the node is stopped (SIGSTOP) while they are sent and continued after, so
    "at once" does not depend on how busy this machine is. Each answer's status and Retry-After."""
    os.kill(node.process.pid, signal.SIGSTOP)
    try:
        command = [*machine, sys.executable, "-c", _BURST, url, json.dumps(headers), str(count)]
        client = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=clean_env())
        assert client.stdout is not None
        assert client.stdout.readline() == "sent\n", client.communicate(timeout=HANG_S)
    finally:
        os.kill(node.process.pid, signal.SIGCONT)
    printed, problem = client.communicate(timeout=HANG_S)
    assert client.returncode == 0, problem
    return [(int(status), retry) for status, retry in json.loads(printed)]
