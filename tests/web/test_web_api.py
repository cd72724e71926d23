"""The node's HTTP API (``--web``), through real ``ecu-sim`` processes on a private bus.

Every control is answered 200 once the loop applied it at a tick boundary, and what it changed is
then in the snapshot; a request that cannot be applied is answered 4xx with a reason and changes
nothing; on an address other than loopback the controls need the token the node logged; a
recording started and stopped through the API replays bit for bit.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import HANG_S, Node, Udp, clean_env, ecu_sim_command, summary_of
from tests.helpers.webnode import PAGE_LINE, Page, on_machine, replay_download

pytestmark = pytest.mark.slow
aiohttp = pytest.importorskip("aiohttp", reason="the web extra (aiohttp) is not installed")


@pytest.fixture
def ccm(start: Callable[..., Node], udp: Udp) -> Iterator[Page]:
    """A CCM with its page on loopback, closing the loop with an ECU on the test's bus."""
    start(*udp.args(), "--grade", "0")
    yield Page(start("ccm", *udp.args(), "--set-speed", "90", "--web", "127.0.0.1:0"))


@pytest.fixture
def ecu(start: Callable[..., Node], udp: Udp) -> Iterator[Page]:
    """An ECU alone with its page on loopback and the J1939 profile (DM1 shows its DTCs)."""
    yield Page(start(*udp.args(), "--profile", "j1939", "--web", "0"))


def _field(pattern: str, line: str) -> str:
    match = re.search(pattern, line)
    assert match is not None, (pattern, line)
    return match.group(1)


def test_the_snapshot_holds_the_figures_of_its_own_ticks_status_line(ccm: Page) -> None:
    state = ccm.state_when(lambda s: s["speed_kph"] is not None)
    line = state["status_line"]
    assert f"{state['speed_kph']:6.2f} km/h" == _field(r"speed +(\d+\.\d+ km/h)", line).rjust(11)
    assert f"set {state['set_speed_kph']:.1f} km/h" in line
    assert f"APP {state['app_pct']:5.1f} %" in line
    assert f"cruise {state['cruise']} |" in line
    counters = state["counters"]
    assert f"rx {counters['rx']} tx {counters['tx']} invalid {counters['invalid']}" in line
    assert f"late {counters['late']} |" in line
    assert line.endswith(state["bus"])
    assert f"SA 0x{state['j1939']['address']:02X}" in line


def test_the_logged_status_line_reads_like_the_snapshots(ccm: Page) -> None:
    """The log's line and the page's come from one function: the same words in the same order."""
    logged = ccm.node.wait_for(r"INFO +ecu_sim: (speed +\d.* cruise on .*)$").group(1)
    state = ccm.state_when(lambda s: s["cruise"] == "on")
    shape = re.sub(r"[-+]?\d+(\.\d+)?", "N", state["status_line"])
    assert re.sub(r"[-+]?\d+(\.\d+)?", "N", logged) == shape


def test_set_speed_is_applied_at_a_tick_and_the_ccm_runs_on_it(ccm: Page) -> None:
    status, answer = ccm.control({"set_speed_kph": 85})
    assert status == 200, answer
    assert answer["applied"] == {"set_speed_kph": 85.0}
    state = ccm.state_when(lambda s: s["tick"] >= answer["tick"])
    assert state["set_speed_kph"] == 85.0
    ccm.node.wait_for(r"set 85\.0 km/h")


def test_with_no_page_open_the_state_is_of_a_tick_after_the_request_came(ccm: Page) -> None:
    """While nobody looks the loop keeps a snapshot only now and then; a request for the state
    waits for a fresh one, so it already holds a control answered before it."""
    status, answer = ccm.control({"set_speed_kph": 85})
    assert status == 200, answer
    state = ccm.state()
    assert state["tick"] >= answer["tick"]
    assert state["set_speed_kph"] == 85.0


def test_cruise_off_releases_the_pedal_and_on_takes_it_again(ccm: Page) -> None:
    ccm.state_when(lambda s: s["cruise"] == "on")
    assert ccm.control({"cruise": False})[0] == 200
    state = ccm.state_when(lambda s: s["cruise"] == "off")
    assert state["app_pct"] == 0.0
    assert ccm.control({"cruise": "on"})[0] == 200
    ccm.state_when(lambda s: s["cruise"] in ("on", "override"))


def test_a_pedal_override_drives_the_ecu_until_released(ecu: Page) -> None:
    assert ecu.state()["app_pct"] is None  # no APP on the bus: coasting
    status, answer = ecu.control({"pedal_override": 40})
    assert status == 200, answer
    state = ecu.state_when(lambda s: s["tick"] >= answer["tick"])
    assert (state["app_pct"], state["pedal_override_pct"]) == (40.0, 40.0)
    assert ecu.control({"pedal_override": None})[0] == 200
    ecu.state_when(lambda s: s["app_pct"] is None and s["pedal_override_pct"] is None)


def _sends_speed(state: dict[str, Any]) -> bool:
    """Whether the tick's frames the node sent hold its speed message (CCVS1, by its DBC name)."""
    return any(key.startswith("CCVS1 ") for key in state["signals"]["tx"])


def _after(tick: int) -> Callable[[dict[str, Any]], bool]:
    return lambda state: bool(state["tick"] > tick)


def test_a_fault_switched_on_changes_the_frames_and_off_ends_it(ecu: Page) -> None:
    ecu.state_when(_sends_speed)
    status, answer = ecu.control({"fault": "silent", "on": True})
    assert status == 200, answer
    silent = [ecu.state_when(_after(tick)) for tick in range(answer["tick"], answer["tick"] + 10, 3)]
    assert all(s["faults"] == ["silent"] and not _sends_speed(s) for s in silent)
    assert ecu.control({"fault": "silent", "on": False})[0] == 200
    ecu.state_when(lambda s: _sends_speed(s) and s["faults"] == [])


def test_a_dtc_fault_is_an_active_dtc_with_its_spn_fmi_and_occurrences(ecu: Page) -> None:
    assert ecu.control({"fault": "dtc=84:2", "on": True})[0] == 200
    state = ecu.state_when(lambda s: any(d["spn"] == 84 for d in s["j1939"]["dtcs"]))
    assert {"spn": 84, "fmi": 2, "occurrences": 1} in state["j1939"]["dtcs"]
    assert ecu.control({"fault": "dtc=84:2", "on": False})[0] == 200
    ecu.state_when(lambda s: all(d["spn"] != 84 for d in s["j1939"]["dtcs"]))


def test_a_recording_started_and_stopped_replays_bit_for_bit(ccm: Page, tmp_path: Path) -> None:
    assert ccm.control({"record": "start"})[0] == 200
    assert ccm.control({"set_speed_kph": 84})[0] == 200
    assert ccm.control({"fault": "drop=0.5", "on": True})[0] == 200
    assert ccm.control({"pedal_override": 30})[0] == 200
    started = ccm.state()["tick"]
    ccm.state_when(lambda s: s["tick"] > started + 20)
    status, answer = ccm.control({"record": "stop"})
    assert status == 200, answer
    status, data = ccm.request("GET", "api/recording")
    assert status == 200, data
    replayed = replay_download(data, tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "bit for bit" in replayed.stdout
    journal = next(tmp_path.glob("*.ticks")).read_text()
    assert 'control {"set_speed_kph":84.0}' in journal
    assert 'control {"fault":"drop=0.5","on":true}' in journal


def test_the_pages_own_recording_does_not_hear_the_nodes_frames_back(ccm: Page) -> None:
    """Without --record the download's sent frames carry the time they were handed over: the node
    leaves its own frames in the kernel, as a node that records nothing does."""
    state = ccm.state_when(lambda s: s["counters"]["tx"] > 0 and s["counters"]["rx"] > 0)
    assert state["counters"]["echo"] == 0


def test_with_record_the_page_records_what_the_bus_hands_back(
        start: Callable[..., Node], udp: Udp, tmp_path: Path) -> None:
    """--record keeps its bytes with --web: the node hears its frames back to log their bus time."""
    start(*udp.args(), "--grade", "0")
    page = Page(start("ccm", *udp.args(), "--web", "127.0.0.1:0", "--record", str(tmp_path / "run.log")))
    page.state_when(lambda s: s["counters"]["echo"] > 0)


def test_with_web_record_off_the_page_makes_no_recording_to_start(
        start: Callable[..., Node], udp: Udp, tmp_path: Path) -> None:
    config = tmp_path / "web.ini"
    config.write_text("[run]\nweb = 127.0.0.1:0\nweb_record = no\n")
    page = Page(start("ccm", *udp.args(), "--config", str(config)))
    status, answer = page.control({"record": "start"})
    assert (status, "makes no recording" in answer["error"]) == (409, True)
    assert "recording" not in page.state()


def test_no_recording_to_download_before_one_was_stopped(ccm: Page) -> None:
    status, body = ccm.request("GET", "api/recording")
    assert status == 404
    assert "record" in json.loads(body)["error"]


BAD_CONTROLS: list[tuple[object, int, str]] = [
    ({"set_speed_kph": "fast"}, 400, "finite number"),
    ({"set_speed_kph": True}, 400, "finite number"),
    ({"set_speed_kph": 1e9}, 422, "range"),
    ({"pedal_override": 101}, 422, "0..100"),
    ({"cruise": 3}, 400, "true or false"),
    ({"warp": 9}, 400, "unknown control"),
    ({"set_speed_kph": 80, "cruise": True}, 400, "one control"),
    ({"fault": "meltdown", "on": True}, 400, "unknown fault"),
    ({"fault": "drop=0.5@10-20", "on": True}, 400, "no window"),
    ({"fault": "drop=0.5"}, 400, '"on"'),
    ({"record": "pause"}, 400, "start"),
    ([{"set_speed_kph": 80}], 400, "JSON object"),
]


@pytest.mark.parametrize(("body", "status", "reason"), BAD_CONTROLS)
def test_a_bad_control_is_refused_with_its_reason_and_changes_nothing(
        ccm: Page, body: object, status: int, reason: str) -> None:
    answer_status, answer = ccm.control(body)
    assert (answer_status, reason in answer["error"]) == (status, True), answer
    assert ccm.state()["set_speed_kph"] == 90.0


def test_a_control_of_the_ccm_sent_to_the_ecu_says_it_is_the_ccms(ecu: Page) -> None:
    status, answer = ecu.control({"set_speed_kph": 80})
    assert status == 409
    assert "control of the CCM" in answer["error"]


def test_a_body_that_is_not_json_or_too_big_is_refused(ccm: Page) -> None:
    status, body = ccm.request("POST", "api/control", b"{set_speed", {"Content-Type": "application/json"})
    assert (status, "not JSON" in json.loads(body)["error"]) == (400, True)
    plain = {"Content-Type": "text/plain"}
    status, body = ccm.request("POST", "api/control", b'{"set_speed_kph": 80}', plain)
    assert status == 415
    big = json.dumps({"set_speed_kph": 80, "pad": "x" * 10000}).encode()
    status, body = ccm.request("POST", "api/control", big, {"Content-Type": "application/json"})
    assert (status, "error" in json.loads(body)) == (413, True)
    assert ccm.state()["set_speed_kph"] == 90.0


def test_signals_lists_the_dbc_messages_the_node_sends_and_receives(ccm: Page) -> None:
    status, body = ccm.request("GET", "api/signals")
    assert status == 200
    messages = {m["name"]: m for m in json.loads(body)["messages"]}
    assert messages["EEC2"]["sent"] and not messages["CCVS1"]["sent"]
    assert any(s["name"] == "WheelBasedVehicleSpeed" for s in messages["CCVS1"]["signals"])


def test_the_page_and_its_plotting_library_are_served_from_the_node(ccm: Page) -> None:
    status, page = ccm.request("GET", "")
    assert status == 200 and b"uPlot.iife.min.js" in page
    status, library = ccm.request("GET", "static/vendor/uPlot.iife.min.js")
    assert status == 200 and b"uPlot" in library
    assert b"http://" not in page and b"https://" not in page  # nothing from elsewhere


async def _received(url: str, samples: int) -> list[list[dict[str, Any]]]:
    """The samples an open page receives, message by message, until ``samples``."""
    async with aiohttp.ClientSession() as session, session.ws_connect(url + "api/ws") as socket:
        assert "history" in json.loads((await socket.receive(timeout=HANG_S)).data)
        batches: list[list[dict[str, Any]]] = []
        while sum(map(len, batches)) < samples:
            batches.append(json.loads((await socket.receive(timeout=HANG_S)).data)["samples"])
        return batches


async def _batches(url: str, samples: int) -> list[list[int]]:
    """The ticks of the samples an open page receives, message by message, until ``samples``."""
    return [[sample["tick"] for sample in batch] for batch in await _received(url, samples)]


def test_an_open_page_receives_every_snapshot_made_while_it_looks(ccm: Page) -> None:
    """Five a second on the CCM's 10 Hz loop: every other tick, none left out of the batches."""
    ticks = [tick for batch in asyncio.run(_batches(ccm.url, 12)) for tick in batch]
    assert [b - a for a, b in itertools.pairwise(ticks)] == [2] * (len(ticks) - 1)


def test_an_open_page_is_sent_its_snapshots_in_batches(ccm: Page) -> None:
    """The server's thread is woken for several snapshots at once, not for each."""
    batches = asyncio.run(_batches(ccm.url, 12))
    assert max(map(len, batches)) > 1


async def _storm(url: str) -> None:
    """100 WebSockets, half of them dropped mid-stream, and a bounded flood of requests."""
    async with aiohttp.ClientSession() as session:
        sockets = [await session.ws_connect(url + "api/ws") for _ in range(100)]
        for socket in sockets:
            await socket.receive(timeout=HANG_S)
        for socket in sockets[::2]:  # gone without a close handshake
            transport = socket._response.connection.transport
            assert transport is not None
            transport.abort()

        async with aiohttp.ClientSession() as flood:  # its own connections: at most 100 at a time

            async def get() -> int:
                async with flood.get(url + "api/state") as response:
                    await response.read()
                    return int(response.status)

            statuses = await asyncio.gather(*(get() for _ in range(500)))
        assert set(statuses) == {200}
        for socket in sockets[1::2]:
            message = await socket.receive(timeout=HANG_S)
            assert "samples" in json.loads(message.data)
            await socket.close()


def test_the_node_keeps_ticking_through_100_sockets_drops_and_a_flood(ccm: Page) -> None:
    before = ccm.state()["tick"]
    asyncio.run(_storm(ccm.url))
    ccm.state_when(lambda s: s["tick"] > before + 10)
    assert ccm.control({"set_speed_kph": 86})[0] == 200
    assert ccm.node.stop() == 0, ccm.node.log
    assert summary_of(ccm.node.log).ticks > before


def test_a_node_without_web_never_imports_the_server() -> None:
    probe = ("import runpy, sys\n"
             "sys.argv = ['ecu-sim', '--duration', '0.3', '-i', 'virtual']\n"
             "try:\n    runpy.run_module('ecu_sim', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith(('aiohttp', 'ecu_sim.web'))))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S,
                            env=clean_env(), check=False)
    assert result.stdout.strip() == "[]", result.stderr


def test_without_aiohttp_web_names_the_extra_to_install(udp: Udp) -> None:
    probe = ("import runpy, sys\nsys.modules['aiohttp'] = None\n"
             f"sys.argv = ['ecu-sim', *{udp.args()!r}, '--web', '0', '--duration', '1']\n"
             "runpy.run_module('ecu_sim', run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_S,
                            env=clean_env(), check=False)
    assert result.returncode == 2, result.stderr
    assert "pip install 'ecu-sim[web]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_port_that_is_not_a_port_is_refused_before_the_bus_opens(udp: Udp) -> None:
    result = subprocess.run(ecu_sim_command(*udp.args(), "--web", "0.0.0.0:http", "--duration", "1"),
                            capture_output=True, text=True, timeout=HANG_S, env=clean_env(), check=False)
    assert result.returncode == 2
    assert "expected HOST:PORT or PORT" in result.stderr
    assert " on udp_multicast" not in result.stderr


def test_off_loopback_controls_need_the_logged_token_and_reading_does_not(
        lan_node: tuple[Page, str, list[str]]) -> None:
    page, token, machine = lan_node
    json_type = {"Content-Type": "application/json"}
    control = page.url + "api/control"
    assert on_machine(machine, "GET", page.url + "api/state", {}) == 200
    assert on_machine(machine, "POST", control, json_type, {"pedal_override": 10}) == 401
    assert on_machine(machine, "POST", control, {**json_type, "Authorization": "Bearer wrong"},
                       {"pedal_override": 10}) == 401
    assert on_machine(machine, "POST", control, {**json_type, "Authorization": f"Bearer {token}"},
                       {"pedal_override": 10}) == 200
    release = {"pedal_override": None}
    assert on_machine(machine, "POST", f"{control}?token={token}", json_type, release) == 200


def test_with_web_read_needs_token_the_state_needs_it_too_but_not_the_page(
        machine: list[str], start: Callable[..., Node], tmp_path: Path) -> None:
    config = tmp_path / "web.ini"
    config.write_text("[run]\nweb = 10.74.163.1:8080\nweb_read_needs_token = yes\n")
    node = start("--config", str(config), inside=machine)
    token = node.wait_for(r"need the token (\S+) ").group(1)
    url = node.wait_for(r"web: the page is at (http://\S+/)").group(1)
    assert on_machine(machine, "GET", url + "api/state", {}) == 401
    assert on_machine(machine, "GET", f"{url}api/state?token={token}", {}) == 200
    assert on_machine(machine, "GET", url + "static/app.js", {}) == 200


async def _history_and_samples(url: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What a page that opens receives: the history, then the first batch of samples."""
    async with aiohttp.ClientSession() as session, session.ws_connect(url + "api/ws") as socket:
        history = json.loads((await socket.receive(timeout=HANG_S)).data)["history"]
        samples = json.loads((await socket.receive(timeout=HANG_S)).data)["samples"]
        return history, samples


@pytest.fixture
def unwatched(start: Callable[..., Node], udp: Udp) -> list[dict[str, Any]]:
    """The history a page that opens gets from a CCM nobody looked at for three seconds (its
    status line comes once a second), without the points it made for that page as it opened
    (every other tick, made before the history was copied on a loaded machine)."""
    start(*udp.args(), "--grade", "0")
    node = start("ccm", *udp.args(), "--set-speed", "90", "--web", "127.0.0.1:0")
    url = node.wait_for(PAGE_LINE).group(1)
    node.wait_for(r"INFO +ecu_sim: speed", nth=3)
    history, _ = asyncio.run(_history_and_samples(url))
    while history and history[-1]["tick"] % 10:
        history.pop()
    return history


def test_while_nobody_looks_the_history_gets_a_point_a_second(unwatched: list[dict[str, Any]]) -> None:
    ticks = [point["tick"] for point in unwatched]
    assert len(ticks) >= 2 and {b - a for a, b in itertools.pairwise(ticks)} == {10}


def test_a_point_made_while_nobody_looks_carries_its_own_ticks_time(unwatched: list[dict[str, Any]]) -> None:
    """Not the time the page opened: each point's stamp, less its tick's time and lateness, is the
    run's start, the same for all (stamped when the page opened, a point a second older would
    seem to start a second later); a busy machine's late ticks are taken out by their lateness."""
    starts = [p["timestamp"] - p["t_s"] - p["lateness_ms"] / 1000 for p in unwatched]
    assert len(starts) >= 2 and max(starts) - min(starts) < 0.5


def test_a_point_made_while_nobody_looks_holds_the_figures_and_nothing_decoded(
        unwatched: list[dict[str, Any]]) -> None:
    point = unwatched[-1]
    assert point["speed_kph"] is not None and point["set_speed_kph"] == 90.0
    assert "signals" not in point and "status_line" not in point


def test_every_batch_a_page_receives_holds_a_decoded_snapshot_without_the_status_line(ccm: Page) -> None:
    for batch in asyncio.run(_received(ccm.url, 9)):
        whole = [s for s in batch if "signals" in s]
        assert whole and all(s["signals"]["rx"] and s["status_line"] is None for s in whole)


def test_the_points_between_a_pages_decoded_snapshots_hold_the_figures_alone(ccm: Page) -> None:
    """What the plots draw at the page's rate; the frames wait for the batch's decoded snapshot."""
    points = [s for batch in asyncio.run(_received(ccm.url, 9)) for s in batch if "signals" not in s]
    assert points and all(p["speed_kph"] is not None and "counters" not in p for p in points)


def test_a_request_for_the_state_gets_a_snapshot_with_its_status_line_while_a_page_is_open(ccm: Page) -> None:
    async def state_beside_a_page() -> dict[str, Any]:
        async with aiohttp.ClientSession() as session, session.ws_connect(ccm.url + "api/ws") as socket:
            await socket.receive(timeout=HANG_S)
            async with session.get(ccm.url + "api/state") as response:
                answer = await response.json()
                assert isinstance(answer, dict)
                return answer

    state = asyncio.run(state_beside_a_page())
    assert state["status_line"].startswith("speed ")
