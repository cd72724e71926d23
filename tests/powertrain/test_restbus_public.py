"""A J1939 DBC not written here runs as a restbus: cantools' own test DBC ``tests/files/dbc/j1939.dbc``,
fetched at test time from the cantools sdist on PyPI (the version installed here) and never copied
into this repository.

That DBC has two nodes, Node1 at 0x01 and Node2 at 0x02, each sending one message. It gives neither
message a cycle time, and its default send type is ``noMsgSendType``: by the restbus rules
(docs/whole-truck.md) both messages go on request only. Over a simulated minute each node claims
its address and sends nothing unasked; a Request gets each message from its node.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import can
import cantools
import pytest
from cantools.database.can import Database

from tests.conftest import Cli
from tests.helpers.powertrainrig import CONTROLLER, global_request, rig, settings

MEMBER = "tests/files/dbc/j1939.dbc"
RUN = ("--vehicle", "class6", "--profile", "j1939", "--network", "powertrain", "--grade", "0")
ADDRESS_CLAIMED_PGN, REQUESTED_AT = 0xEE00, 300


def pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=10.0).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def public_dbc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The DBC out of ``pip download --no-binary :all: cantools==<installed>`` (pip's cache or PyPI)."""
    folder = tmp_path_factory.mktemp("cantools-sdist")
    version = cantools.__version__
    fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                              "--quiet", f"cantools=={version}", "-d", str(folder)],
                             capture_output=True, text=True, timeout=600, check=False)
    if fetched.returncode != 0:
        if not pypi_reachable():
            pytest.skip(f"PyPI cannot be reached to fetch the cantools {version} sdist and its j1939.dbc")
        pytest.fail(f"pip download cantools=={version} failed: {fetched.stderr.strip()}")
    (sdist,) = folder.glob("cantools-*.tar.gz")
    with tarfile.open(sdist) as archive:
        data = archive.extractfile(f"cantools-{version}/{MEMBER}")
        assert data is not None
        path = folder / "j1939.dbc"
        path.write_bytes(data.read())
    yield path


def database(path: Path) -> Database:
    loaded = cantools.database.load_file(str(path))
    assert isinstance(loaded, Database)
    return loaded


def addresses(path: Path) -> dict[str, int]:
    """Each sending node's NmStationAddress, as cantools reads the DBC."""
    db = database(path)
    senders = {sender for m in db.messages for sender in m.senders}
    return {n.name: int(n.dbc.attributes["NmStationAddress"].value) for n in db.nodes
            if n.name in senders and n.dbc is not None}


def recorded_minute(cli_main: Cli, channel: str, dbc: Path, folder: Path) -> list[can.Message]:
    log = folder / "public.log"
    result = cli_main("-i", "virtual", "-c", channel, *RUN, "--restbus", str(dbc), "--duration", "60",
                      "--record", str(log))
    assert result.status == 0, result.err
    return list(can.LogReader(str(log)))


def test_the_public_dbc_has_several_sending_nodes_and_no_cycle_times(public_dbc: Path) -> None:
    db = database(public_dbc)
    assert len(addresses(public_dbc)) >= 2
    assert all(m.cycle_time is None and m.send_type == "noMsgSendType" for m in db.messages)


def test_each_node_of_the_public_dbc_claims_its_address_and_sends_nothing_unasked(
        public_dbc: Path, cli_main: Cli, virtual_time: None, virtual_channel: str, tmp_path: Path) -> None:
    frames = recorded_minute(cli_main, virtual_channel, public_dbc, tmp_path)
    claimed = {m.arbitration_id & 0xFF for m in frames
               if (m.arbitration_id >> 8) & 0x3FF00 == ADDRESS_CLAIMED_PGN}
    assert set(addresses(public_dbc).values()) <= claimed
    ids = {m.frame_id for m in database(public_dbc).messages}
    assert not [m for m in frames if m.arbitration_id in ids]


def test_a_request_gets_each_message_of_the_public_dbc_from_its_node(public_dbc: Path) -> None:
    db = database(public_dbc)
    asked = [(m, addresses(public_dbc)[m.senders[0]]) for m in db.messages]
    pgns = [(m.frame_id >> 8) & (0x3FF00 if (m.frame_id >> 16) & 0xFF < 240 else 0x3FFFF) for m, _ in asked]
    r = rig(lambda k: [global_request(pgn, address) for pgn, (_, address) in zip(pgns, asked, strict=True)]
            if k == REQUESTED_AT else [], settings(restbus=(str(public_dbc),)))
    r.run(REQUESTED_AT + 3)
    for (message, address), pgn in zip(asked, pgns, strict=True):
        answers = [h for h in r.controller.from_address(address, pgn) if h.tick > REQUESTED_AT]
        assert [h.tick for h in answers] == [REQUESTED_AT + 1], message.name
        destination = (answers[0].msg.arbitration_id >> 8) & 0xFF
        assert pgn >= 0xF000 or destination == CONTROLLER  # a PDU1 message answers the one who asked
        decoded = message.decode(bytes(answers[0].msg.data), decode_choices=False, scaling=False)
        assert decoded == {s.name: -1 for s in message.signals}  # no start value: not available (all ones)
