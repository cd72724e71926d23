"""Talk J1939 to the nodes on a bus: list them by their address claims, read DM1/DM2 and IDs, send DM11.

The command is a small service tool at address 0xF9 (it claims no address). It asks with J1939
requests and waits --wait seconds for the answers, taking part in the transport protocol for
answers over eight bytes. Exit status 0: answered; 1: a node did not answer, or sent a NACK.

Examples:
  ecu-sim j1939 list --iface vcan0
  ecu-sim j1939 dm1 0x00 --iface vcan0
  ecu-sim j1939 ids 0x11 --iface vcan0
  ecu-sim j1939 clear 0x00 --iface vcan0
"""

from __future__ import annotations

import argparse

from ecu_sim.bus import options as bus_options
from ecu_sim.errors import ConfigError
from ecu_sim.runs import j1939tool as tool
from ecu_sim.runs.j1939tool import J1939Tool
from ecu_sim.settings.values import bus_value, source_address

ACTIONS = ("list", "dm1", "dm2", "ids", "clear")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bus_options.add_arguments(parser)
    parser.add_argument("action", choices=ACTIONS,
                        help="list: the nodes' claims; dm1/dm2: active/previously active DTCs; "
                             "ids: Component, Software and ECU ID; clear: DM11, clear active DTCs")
    parser.add_argument("node", nargs="?", type=source_address, metavar="SA",
                        help="the node's address, e.g. 0x00 (all but list)")
    parser.add_argument("--wait", type=float, default=1.0, metavar="S",
                        help="how long to wait for answers (default 1 s)")


def run(args: argparse.Namespace) -> int:
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
