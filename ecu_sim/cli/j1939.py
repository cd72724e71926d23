"""Talk J1939 to the nodes on a bus: list them by their address claims, read DM1/DM2 and IDs, send DM11.

The command is a small service tool at address 0xF9 (it claims no address). It asks with J1939
requests and waits --wait seconds for the answers, taking part in the transport protocol for
answers over eight bytes. Exit status 0: answered; 1: a node did not answer, or sent a NACK.

Examples:
  ecu-sim j1939 list --iface vcan0
  ecu-sim j1939 dm1 0x00 --iface vcan0
  ecu-sim j1939 ids 0x11 --iface vcan0
  ecu-sim j1939 clear 0x00 --iface vcan0
  ecu-sim j1939 mem read 0x00 --spatial 0 --length 8 --iface vcan0
  ecu-sim j1939 mem write 0x00 --spatial 0 --data 0000000000005640 --iface vcan0

``mem read`` and ``mem write`` are J1939-73 memory access (DM14/DM15/DM16) with the seed and key
of ``--key-algorithm`` (the node's ``[diagnostics] key_algorithm``; docs/diagnostics.md says how
the two-byte key is made from it). Exit status 1 also when the node refused: it says why.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ecu_sim.bus import options as bus_options
from ecu_sim.calibration.layout import AREA_START
from ecu_sim.errors import ConfigError
from ecu_sim.runs import j1939tool as tool
from ecu_sim.runs.j1939mem import MemoryAccessError, MemoryClient, Where
from ecu_sim.runs.j1939tool import J1939Tool
from ecu_sim.settings.values import bus_value, source_address
from ecu_sim.uds.security import load_algorithm

ACTIONS = ("list", "dm1", "dm2", "ids", "clear", "mem")
MEMORY_OPERATIONS = ("read", "write")


def _node_or_operation(text: str) -> int | str:
    """The node's address, or after ``mem`` the operation."""
    return text if text in MEMORY_OPERATIONS else source_address(text)


def _number(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number, decimal or 0x hex (got {text!r})") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bus_options.add_arguments(parser)
    parser.add_argument("action", choices=ACTIONS,
                        help="list: the nodes' claims; dm1/dm2: active/previously active DTCs; "
                             "ids: Component, Software and ECU ID; clear: DM11, clear active DTCs")
    parser.add_argument("node", nargs="?", type=_node_or_operation, metavar="SA",
                        help="the node's address, e.g. 0x00 (all but list); after mem: read or write")
    parser.add_argument("mem_node", nargs="?", type=source_address, metavar="MEM_SA",
                        help="mem read|write: the node's address")
    parser.add_argument("--wait", type=float, default=1.0, metavar="S",
                        help="how long to wait for answers (default 1 s)")
    memory = parser.add_argument_group("mem read|write")
    memory.add_argument("--address", type=_number, default=AREA_START,
                        help=f"a direct pointer: the address (default 0x{AREA_START:X}, where the "
                             "calibration area starts)")
    memory.add_argument("--spatial", type=_number, metavar="POINTER",
                        help="a directed-spatial pointer instead: bytes from the first calibration parameter")
    memory.add_argument("--length", type=_number, default=8, help="read: how many bytes (default 8)")
    memory.add_argument("--data", help="write: the bytes in hex, e.g. 0000000000005640")
    memory.add_argument("--file", type=Path, help="write: the bytes of this file instead of --data")
    memory.add_argument("--level", type=_number, default=7, help="the user level (default 7)")
    memory.add_argument("--key-algorithm", metavar="MODULE:FUNCTION",
                        help="the node's key algorithm (default: ecu-sim's documented one)")


def run(args: argparse.Namespace) -> int:
    if args.action == "mem":
        return _memory(args)
    if isinstance(args.node, str):
        raise ConfigError(f"{args.node!r} is an operation of `ecu-sim j1939 mem`, not a node's address")
    if args.action != "list" and args.node is None:
        raise ConfigError(f"ecu-sim j1939 {args.action} needs the node's address, e.g. "
                          f"`ecu-sim j1939 {args.action} 0x00 --iface vcan0`")
    options = bus_options.resolve_bus_options(args, {}, bus_value)
    with bus_options.open_bus(options) as bus:
        client = tool.J1939Tool(bus)
        if args.action == "list":
            return _list(client, args.wait)
        if args.action == "ids":
            return _ids(client, args.node, args.wait)
        pgn = tool.DIAGNOSTICS[args.action]
        answer = client.ask(pgn, args.node, args.wait)
        if answer is None:
            print(f"0x{args.node:02X}: no answer within {args.wait:g} s")
            return 1
        if answer.acknowledgement is not None:
            word = {0: "ACK", 1: "NACK", 2: "access denied", 3: "cannot respond"}
            print(f"0x{args.node:02X}: {word.get(answer.acknowledgement, str(answer.acknowledgement))}")
            return 0 if answer.acknowledgement == 0 else 1
        assert answer.data is not None
        print(f"0x{args.node:02X} {args.action.upper()}: {tool.describe_dtcs(answer.data)}")
        return 0


def _list(client: J1939Tool, wait_s: float) -> int:
    claims = client.claims(wait_s)
    for address, name in sorted(claims.items()):
        print(f"0x{address:02X}  NAME {name}  function {name.function} identity {name.identity_number} "
              f"manufacturer {name.manufacturer_code} industry group {name.industry_group}"
              f"{' arbitrary address capable' if name.arbitrary_address_capable else ''}")
    if not claims:
        print(f"no node claimed an address within {wait_s:g} s")
    return 0 if claims else 1


def _ids(client: J1939Tool, node: int, wait_s: float) -> int:
    status = 0
    for pgn, title in tool.IDENTIFICATION.items():
        answer = client.ask(pgn, node, wait_s)
        if answer is None or answer.data is None:
            print(f"0x{node:02X} {title}: {'NACK' if answer else 'no answer'}")
            status = 1
        else:
            print(f"0x{node:02X} {title}: {tool.describe_identification(pgn, answer.data)}")
    return status


def _memory(args: argparse.Namespace) -> int:
    operation, node = args.node, args.mem_node
    if operation not in MEMORY_OPERATIONS or node is None:
        raise ConfigError("ecu-sim j1939 mem needs read or write and the node's address, e.g. "
                          "`ecu-sim j1939 mem read 0x00 --spatial 0 --length 8 --iface vcan0`")
    data = b""
    if operation == "write":
        data = _data_of(args)
    try:
        algorithm = load_algorithm(args.key_algorithm)
    except ValueError as exc:
        raise ConfigError(f"--key-algorithm: {exc}") from None
    where = Where(args.address) if args.spatial is None else Where(args.spatial, spatial=True)
    options = bus_options.resolve_bus_options(args, {}, bus_value)
    with bus_options.open_bus(options) as bus:
        client = MemoryClient(tool.J1939Tool(bus), node, algorithm, args.level, args.wait)
        try:
            if operation == "read":
                print(f"0x{node:02X}: {client.read(where, args.length).hex()}")
            else:
                client.write(where, data)
                print(f"0x{node:02X}: {len(data)} bytes written")
        except MemoryAccessError as exc:
            print(exc)
            return 1
    return 0


def _data_of(args: argparse.Namespace) -> bytes:
    if (args.data is None) == (args.file is None):
        raise ConfigError("ecu-sim j1939 mem write needs the bytes: --data HEX or --file FILE")
    if args.file is not None:
        try:
            return bytes(args.file.read_bytes())
        except OSError as exc:
            raise ConfigError(f"--file {args.file}: {exc.strerror}") from None
    try:
        return bytes.fromhex(args.data)
    except ValueError:
        raise ConfigError(f"--data must be bytes in hex, e.g. 0000000000005640 (got {args.data!r})") from None
