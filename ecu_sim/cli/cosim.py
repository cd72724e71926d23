"""Co-simulation: the ECU in virtual time, stepped over UDP by a peer (Simulink, CARLA, a test rig).

Each request says how many ticks to run and carries the peer's inputs (and, in the CAN encoding,
its CAN frames); the answer carries the outputs at the last tick (and the ECU's frames). The
byte layouts are in docs/cosim.md; --contract prints the order of the values.
Examples:
  ecu-sim cosim --contract csv                # what each double of a datagram means
  ecu-sim cosim --listen 127.0.0.1:47000 --grade 0
  python3 examples/cosim_pi_peer.py --connect 127.0.0.1:47000
"""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from ecu_sim.cli import common
from ecu_sim.errors import ConfigError, EcuSimError
from ecu_sim.faults import injector
from ecu_sim.faults.spec import FaultSchedule
from ecu_sim.runtime.cores import usable_cores
from ecu_sim.runtime.loop import TickObserver
from ecu_sim.runtime.ticks import ticks_in

if TYPE_CHECKING:
    import can

    from ecu_sim.runtime.loop import Node

log = logging.getLogger("ecu_sim")

DEFAULT_LISTEN = "127.0.0.1:47000"
DEFAULT_PEER_TIMEOUT_S = 10.0
#: long enough for a peer in a tight loop to send its next request, short enough that a slow peer
#: costs little CPU per step
DEFAULT_BUSY_POLL_S = 0.001


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_common(parser, sources=("app",), tx_mode=False)
    common.add_ecu_options(parser)
    common.timeout_options(parser, "app")
    group = parser.add_argument_group("co-simulation")
    group.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                       help=f"UDP address to answer on (default {DEFAULT_LISTEN}; port 0: any free one, "
                            "logged)")
    group.add_argument("--peer-timeout", type=float, default=DEFAULT_PEER_TIMEOUT_S, metavar="S",
                       help="end the run when the peer sends nothing for S seconds after its first "
                            f"request (default {DEFAULT_PEER_TIMEOUT_S:g})")
    group.add_argument("--busy-poll", type=float, metavar="S",
                       help="after each answer, poll for the next request without blocking for up to S "
                            f"seconds, which makes lockstep steps faster at the cost of a busy core "
                            f"(default {DEFAULT_BUSY_POLL_S:g} where the process may run on more than "
                            "one core, else 0; 0 turns it off)")
    group.add_argument("--contract", choices=("csv", "json"), metavar="csv|json",
                       help="print what each double of a request and an answer means, and exit")
    group.add_argument("--fault", action="append", default=[], metavar="SPEC",
                       help="a fault in what the ECU sends, as for 'ecu-sim run' (repeatable)")
    common.add_diag_script_options(parser)
    common.add_attack_options(parser)


def parse_address(text: str, option: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as a socket address; ConfigError names the option."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{option} {text!r}: expected HOST:PORT, e.g. 127.0.0.1:47000")
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    from ecu_sim.controls.planned import ByName
    from ecu_sim.cosim.server import CosimServer
    from ecu_sim.cosim.stepper import Stepper
    from ecu_sim.runs import attacked, diagnosed
    from ecu_sim.runs.prepare import load_vehicle_route, prepare

    settings, profile = prepare(common.settings(args))
    if args.contract is not None:
        from ecu_sim.cosim.contract import contract

        spec = contract(profile, settings.vehicle.preset)
        sys.stdout.write(spec.as_csv() if args.contract == "csv" else spec.as_json())
        return 0
    if not args.peer_timeout > 0:
        raise ConfigError(f"--peer-timeout must be > 0 s (got {args.peer_timeout:g})")
    busy_poll_s = _busy_poll(args.busy_poll)
    host, port = parse_address(args.listen, "--listen")
    schedule = FaultSchedule.load(tuple(args.fault), None, None) if args.fault else None
    if schedule is not None:
        injector.check(schedule.faults, profile.speed, settings.run.resolved_period_s)
    duration = settings.run.duration_s
    setup = common.attack_setup(args, "cosim")
    # checked before the socket is bound, so a bad attack is one line and nothing listens
    attacks = None if setup is None else attacked.plan(setup, settings, profile, duration)

    def attacker(stack: ExitStack, open_bus: Callable[[], can.BusABC]) -> Node:
        assert setup is not None and attacks is not None
        return attacked.attacker(stack, open_bus, setup, settings, attacks)

    script = diagnosed.script(settings, duration)  # checked before the socket is bound, as attacks

    def tester(stack: ExitStack, open_bus: Callable[[], can.BusABC]) -> Node:
        assert script is not None
        return diagnosed.tester(stack, open_bus, settings, script)
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0][0]
        sock = socket.socket(family, socket.SOCK_DGRAM)
        sock.bind((host, port))
    except OSError as exc:
        raise EcuSimError(f"cannot listen on udp {args.listen}: {exc.strerror or exc}; choose another "
                          "--listen address or port") from None
    controls: list[ByName] = []

    def watch(stepper: Stepper) -> list[TickObserver]:
        """--control's controls at their ticks, and the peer's by name before its next tick."""
        controls.append(ByName(settings.ahead(), stepper.built, profile.speed))
        return controls[0].observers()

    with sock, Stepper(settings, profile, load_vehicle_route(settings), schedule, watch,
                        attacker=None if attacks is None else attacker,
                        tester=None if script is None else tester) as stepper:
        duration = settings.run.duration_s
        server = CosimServer(sock, stepper, args.peer_timeout,
                             None if duration is None else max(1, ticks_in(duration, stepper.period_s)),
                             busy_poll_s, controls[0])
        bound = sock.getsockname()
        log.info("cosim: listening on udp %s:%d, profile %s, period %g s, %d inputs, %d outputs, "
                 "busy poll %g ms", bound[0], bound[1], profile.name, stepper.period_s,
                 len(stepper.contract.inputs), len(stepper.contract.outputs), busy_poll_s * 1e3)
        previous = {sig: signal.signal(sig, lambda signum, frame: server.stop())
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            why = server.serve()
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
        log.info("cosim ended: %s; %d ticks, %s | %s", why, stepper.next_tick, server.stats.text(),
                 stepper.ecu.counters_text())
    return 0


def _busy_poll(given: float | None) -> float:
    """``--busy-poll``, or its default: a single core must not be spent polling while the peer,
    which needs that core to send the next request, waits for it."""
    if given is None:
        return DEFAULT_BUSY_POLL_S if usable_cores() > 1 else 0.0
    if not 0.0 <= given <= 1.0:
        raise ConfigError(f"--busy-poll must be within 0..1 s (got {given:g}); 0 turns it off")
    return given
