"""The node's page in a real browser: Debian's chromium, headless, driven by Selenium through
Debian's chromium-driver, against real ``ecu-sim`` processes on a private bus.

What the page does is checked where it has an effect: on the bus (a python-can listener of the
test decodes the CCM's frames with the profile's DBC) and in a replay of what it downloaded.
Without the browser the tests skip on a developer's machine, and fail under CI (``CI=true``),
where scripts/setup-dev installs it.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from ecu_sim.codec.profile import Profile
from ecu_sim.codec.role import Invalid
from tests.conftest import HANG_S, Node, Udp
from tests.helpers.webnode import Page, recordings_made, replay_download

pytestmark = pytest.mark.slow
pytest.importorskip("aiohttp", reason="the web extra (aiohttp) is not installed")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the test extra) is not installed")

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: a name of another site that resolves to this host: what DNS rebinding makes of an attacker's name
REBIND = "rebind.example"
ARGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--window-size=1400,1000",
        f"--host-resolver-rules=MAP {REBIND} 127.0.0.1")


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder


@pytest.fixture
def browser(downloads: Path) -> Iterator[Any]:
    """Headless chromium; missing, a skip with what to install (a failure under CI)."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        message = (f"the page's browser tests need {CHROMIUM} and {CHROMEDRIVER}: apt-get install chromium "
                   "chromium-driver (scripts/setup-dev does as root)")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ARGS:
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                           {"behavior": "allow", "downloadPath": str(downloads)})
    driver.set_script_timeout(HANG_S)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def ccm(start: Callable[..., Node], udp: Udp) -> Page:
    """A CCM at 90 km/h with its page, and an ECU at 80 km/h on a flat road: the CCM presses the pedal."""
    start(*udp.args(), "--grade", "0", "--initial-speed", "80")
    return Page(start("ccm", *udp.args(), "--set-speed", "90", "--web", "0"))


def until(condition: Callable[[], Any], what: str) -> Any:
    """The first true value of ``condition``, polled; the hang guard bounds it."""
    give_up = time.monotonic() + HANG_S
    while not (value := condition()):
        assert time.monotonic() < give_up, f"{what}: not seen within {HANG_S:g} s"
        time.sleep(0.05)
    return value


def open_page(browser: Any, page: Page) -> None:
    browser.get(page.url)
    until(lambda: browser.execute_script("return window.ecuSim.chartPoints('speed')") is not None,
          "the speed plot's first point")


def click(browser: Any, element_id: str) -> None:
    browser.find_element("id", element_id).click()


def fill(browser: Any, element_id: str, text: str) -> None:
    field = browser.find_element("id", element_id)
    field.clear()
    field.send_keys(text)


class AppFrames:
    """What the CCM's APP frames on the bus carried so far, decoded with the profile's DBC."""

    def __init__(self, udp: Udp) -> None:
        self._app = Profile.load("amp").app
        self.bus = udp.bus()
        self._values: list[float | Invalid] = []

    def __call__(self) -> list[float | Invalid]:
        while (msg := self.bus.recv(0.0)) is not None:
            if self._app.matches(msg.arbitration_id, msg.is_extended_id):
                self._values.append(self._app.decode(msg.data))
        return self._values


@pytest.fixture
def heard(udp: Udp) -> Iterator[AppFrames]:
    listener = AppFrames(udp)
    try:
        yield listener
    finally:
        listener.bus.shutdown()


def test_the_page_loads_and_its_speed_plot_moves(browser: Any, ccm: Page) -> None:
    open_page(browser, ccm)
    first = browser.execute_script("return window.ecuSim.chartPoints('speed')")
    until(lambda: browser.execute_script("return window.ecuSim.chartPoints('speed')") > first,
          "a newer point on the speed plot")
    assert browser.find_element("id", "node").text == "CCM"
    assert browser.find_element("id", "connection").text == "live"


#: the signal list's option for the APP the CCM sends (the amp profile's EEC2 AccelPedalPos1)
APP_OPTION = ("[...document.getElementById('signal-select').options]"
              ".find((o) => o.text.startsWith('tx EEC2') && o.text.endsWith(' AccelPedalPos1'))")
#: the decoded-signal plot's values, with "between" for a point that carries no signals
SIGNAL_VALUES = ("const c = window.ecuSim.state.charts.find((x) => x.spec.id === 'signal');"
                 "return c.chart.data[1].map((v) => v === undefined ? 'between' : v);")


def test_a_chosen_signal_is_plotted_from_the_whole_snapshots_without_gaps_between(
        browser: Any, ccm: Page) -> None:
    """The CCM's APP, sent every tick, is in every whole snapshot: its plot has a value at each
    and is drawn across the points between them (undefined), never broken (null)."""
    open_page(browser, ccm)
    until(lambda: browser.execute_script(f"return {APP_OPTION} !== undefined"),
          "the APP the CCM sends, to choose")
    browser.execute_script("const s = document.getElementById('signal-select');"
                           f"s.value = {APP_OPTION}.value; s.dispatchEvent(new Event('change'));")
    until(lambda: sum(isinstance(v, float | int) for v in browser.execute_script(SIGNAL_VALUES)) >= 3,
          "three decoded values on the signal's plot")
    shown = browser.execute_script(SIGNAL_VALUES)
    plotted = shown[next(i for i, v in enumerate(shown) if isinstance(v, float | int)):]
    assert "between" in plotted and None not in plotted


def test_the_set_speed_set_in_the_page_is_what_the_ccm_drives_to_on_the_bus(
        browser: Any, ccm: Page, heard: AppFrames) -> None:
    """Below 90 km/h the CCM presses the pedal; a set speed of 60 km/h from the page, below the
    truck's 80 km/h, makes the APP it sends on the bus fall to 0 %."""
    open_page(browser, ccm)
    until(lambda: any(isinstance(v, float) and v > 0.0 for v in heard()), "APP above 0 % on the bus")
    fill(browser, "set-speed", "60")
    click(browser, "set-speed-apply")
    until(lambda: "applied" in browser.find_element("id", "message").text, "the page's answer")
    ccm.state_when(lambda s: s["set_speed_kph"] == 60.0)
    until(lambda: heard()[-3:] == [0.0, 0.0, 0.0], "APP 0 % on the bus")


def test_a_fault_switched_in_the_page_shows_in_the_frames_on_the_bus(
        browser: Any, ccm: Page, heard: AppFrames) -> None:
    open_page(browser, ccm)
    fill(browser, "fault", "not_available")
    click(browser, "fault-on")
    until(lambda: Invalid.NOT_AVAILABLE in heard(), "APP not available on the bus")
    switched = len(heard())
    click(browser, "fault-off")
    until(lambda: [v for v in heard()[switched:] if isinstance(v, float)][-3:], "APP values again")


def test_a_recording_made_in_the_page_downloads_and_replays_bit_for_bit(
        browser: Any, ccm: Page, downloads: Path, tmp_path: Path) -> None:
    open_page(browser, ccm)
    click(browser, "record-start")
    until(lambda: "recording since" in browser.find_element("id", "recording-state").text, "recording")
    fill(browser, "set-speed", "84")
    click(browser, "set-speed-apply")
    started = ccm.state()["tick"]
    ccm.state_when(lambda s: s["tick"] > started + 20)
    click(browser, "record-stop")
    link = until(lambda: (lambda e: e if e.is_displayed() else None)(browser.find_element("id", "download")),
                 "the download link")
    link.click()
    zipped = until(lambda: [p for p in downloads.glob("*.zip")], "the downloaded recording")
    until(lambda: not list(downloads.glob("*.crdownload")), "the download's end")
    replayed = replay_download(zipped[0].read_bytes(), tmp_path / "replay")
    assert replayed.returncode == 0, replayed.stderr
    assert "bit for bit" in replayed.stdout
    assert 'control {"set_speed_kph":84.0}' in next((tmp_path / "replay").glob("*.ticks")).read_text()


def test_chromium_is_debians_own(browser: Any) -> None:
    """The browser the tests drive is the distribution's, not one downloaded by a test tool."""
    assert shutil.which("chromium") == CHROMIUM
    assert browser.capabilities["browserName"] == "chrome"


#: another site's page: its script tries to set the node's speed and to read its WebSocket, and
#: says in ``window.attack`` what came of each
HOSTILE = """<!doctype html><title>another site</title><script>
const node = new URL("NODE");
const body = JSON.stringify({set_speed_kph: 60});
window.attack = {};
fetch(new URL("api/control", node), {method: "POST", headers: {"Content-Type": "application/json"}, body})
  .then((r) => { window.attack.fetch = `answered ${r.status}`; }, () => { window.attack.fetch = "failed"; });
fetch(new URL("api/control", node),
      {method: "POST", mode: "no-cors", headers: {"Content-Type": "application/json"}, body})
  .then(() => { window.attack.blind = "sent"; }, () => { window.attack.blind = "failed"; });
const socket = new WebSocket(`ws://${node.host}/api/ws`);
socket.onmessage = () => { window.attack.socket = "read"; };
socket.onclose = () => { window.attack.socket = window.attack.socket || "refused"; };
</script>"""


#: another site's page: it asks for the node's recording as an image and by a fetch whose answer
#: it cannot read, both GETs a browser sends from any site without an Origin
HOSTILE_DOWNLOAD = """<!doctype html><title>another site</title><script>
window.attack = {};
const image = new Image();
image.onload = () => { window.attack.image = "loaded"; };
image.onerror = () => { window.attack.image = "answered"; };
image.src = new URL("api/recording", "NODE").href;
fetch(new URL("api/recording", "NODE"), {mode: "no-cors"})
  .then(() => { window.attack.blind = "sent"; }, () => { window.attack.blind = "failed"; });
</script>"""


@contextlib.contextmanager
def serving(page: bytes) -> Iterator[str]:
    """The address of another site on this host (another port: another origin) serving ``page``."""

    class Hostile(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join(HANG_S)


@pytest.fixture
def other_site(ccm: Page) -> Iterator[str]:
    """Another site serving HOSTILE against the CCM."""
    with serving(HOSTILE.replace("NODE", ccm.url).encode()) as address:
        yield address


def attack(browser: Any, what: str) -> Any:
    return until(lambda: browser.execute_script(f"return window.attack && window.attack.{what}"),
                 f"the other site's {what}")


def test_another_sites_page_can_neither_set_the_speed_nor_read_the_websocket(
        browser: Any, ccm: Page, other_site: str) -> None:
    browser.get(other_site)
    assert attack(browser, "fetch") == "failed"
    assert attack(browser, "socket") == "refused"
    assert attack(browser, "blind") == "sent"  # an answer the site cannot read; nothing applied
    assert ccm.state()["set_speed_kph"] == 90.0


def test_the_nodes_own_page_keeps_working_beside_another_sites(
        browser: Any, ccm: Page, other_site: str) -> None:
    browser.get(other_site)
    attack(browser, "socket")
    open_page(browser, ccm)
    until(lambda: browser.find_element("id", "connection").text == "live", "the page's WebSocket")
    fill(browser, "set-speed", "84")
    click(browser, "set-speed-apply")
    until(lambda: "applied" in browser.find_element("id", "message").text, "the page's answer")
    ccm.state_when(lambda s: s["set_speed_kph"] == 84.0)


def test_another_sites_image_and_fetch_of_the_recording_make_none_and_the_nodes_page_still_downloads(
        browser: Any, ccm: Page, downloads: Path) -> None:
    """Each download makes the recording in a process of its own: another site's page cannot make
    the browser load the node with them, and the node's own page downloads as before."""
    for action in ("start", "stop"):
        assert ccm.control({"record": action})[0] == 200
    with serving(HOSTILE_DOWNLOAD.replace("NODE", ccm.url).encode()) as address:
        browser.get(address)
        assert attack(browser, "image") == "answered"  # refused: no picture
        assert attack(browser, "blind") == "sent"  # an answer the site cannot read
    open_page(browser, ccm)
    link = until(lambda: (lambda e: e if e.is_displayed() else None)(browser.find_element("id", "download")),
                 "the download link")
    link.click()
    until(lambda: list(downloads.glob("*.zip")), "the downloaded recording")
    until(lambda: not list(downloads.glob("*.crdownload")), "the download's end")
    assert recordings_made(ccm.node) == 1


def test_a_page_that_reaches_the_node_by_a_rebound_name_cannot_read_or_drive_it(
        browser: Any, ccm: Page) -> None:
    """The browser resolves another site's name to this host, as after DNS rebinding: its script
    runs in that site's origin, for which the node is now the same origin."""
    browser.get(f"http://{REBIND}:{urlsplit(ccm.url).port}/")
    assert "uPlot" not in browser.page_source
    answers = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const control = fetch("api/control", {method: "POST", headers: {"Content-Type": "application/json"},
                                              body: JSON.stringify({set_speed_kph: 60})});
        Promise.all([fetch("api/state"), control]).then((r) => done(r.map((a) => a.status)),
                                                        (e) => done(String(e)));""")
    assert answers == [403, 403]
    assert ccm.state()["set_speed_kph"] == 90.0
