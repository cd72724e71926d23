"""A node's J1939 network part: the :mod:`ecu_sim.j1939` layer on the node's port and tick.

The node hands each received frame to the part first; the part keeps what the layer handles
(requests, claims, transport) and the node never counts it as another message. At each tick the
node tells the part whether its input is missing or flagged in error, the part adds the bus-off
state and the injected ``dtc`` faults, ticks the layer and sends what it returns through the
port. The DTCs a node can set:

- its input missing past the input timeout: the input's SPN (91 APP for the ECU, 84 speed for
  the CCM) with FMI 9, abnormal update rate;
- its input arriving as the error indicator: the same SPN with FMI 19, received network data in
  error;
- the controller bus-off: SPN 639 (J1939 network #1) with FMI 14;
- ``--fault dtc=SPN:FMI@window``: that DTC while the window lasts.

Beside the layer the part holds the node's UDS server on ISO-TP (:mod:`ecu_sim.member.diagnostics`,
``[diagnostics]``): it takes the frames addressed to the node on PGN 0xDA00 and 0xDB00 and sends
its answers at the part's tick. With no tester it has nothing due, so the part's ticks are
skipped as before.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, Final

import can

from ecu_sim import __version__
from ecu_sim.bus.port import Port
from ecu_sim.bus.state import ControllerState
from ecu_sim.bus.transmit import FrameFactory
from ecu_sim.codec.nm import node_attributes
from ecu_sim.codec.role import RoleCodec
from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import DTC_KIND, Fault
from ecu_sim.j1939.claim import ClaimState
from ecu_sim.j1939.dm import Dtc
from ecu_sim.j1939.dm19 import DM19_PGN, NodeCalibration, dm19
from ecu_sim.j1939.ident import DELIMITER, Identification
from ecu_sim.j1939.ids import NULL_ADDRESS, pgn_of, source_address_of
from ecu_sim.j1939.name import Name
from ecu_sim.j1939.network import J1939Network, NetworkConfig
from ecu_sim.member.application import APPLICATION_NOT_VALID, Application, Calibrated, build_application
from ecu_sim.member.diagnostics import NodeSide, build_endpoint, identification_dids
from ecu_sim.member.environment import NodeEnvironment
from ecu_sim.member.memory_access import MemoryAccessSlot
from ecu_sim.runtime.ticks import ticks_in
from ecu_sim.settings.diagnostics import DiagnosticsSettings
from ecu_sim.settings.model import J1939Settings
from ecu_sim.uds.endpoint import DiagnosticEndpoint

log = logging.getLogger(__name__)

FMI_ABNORMAL_UPDATE_RATE: Final = 9
FMI_NETWORK_DATA_IN_ERROR: Final = 19
BUS_OFF: Final = Dtc(639, 14)
#: J1939 functions the nodes are by default: engine, cruise control
_FUNCTIONS: Final = {"ECU": 0, "CCM": 17}
#: default NAME fields: an identity number prefix of ecu-sim's own, the on-highway industry group
_IDENTITY_PREFIX: Final = 0xEC500
_ON_HIGHWAY: Final = 1
#: the amp profile keeps its testbed bus as it is unless told otherwise
_QUIET_PROFILES: Final = frozenset({"amp"})


class NetworkPart:
    """The layer, the port it sends on, and what sets the node's DTCs."""

    def __init__(self, network: J1939Network, port: Port, new_frame: FrameFactory, input_spn: int,
                 dtc_windows: list[tuple[Dtc, int, int | None]],
                 diagnostics: tuple[DiagnosticEndpoint, NodeSide] | None = None,
                 application: Application | None = None, access: MemoryAccessSlot | None = None) -> None:
        self.network = network
        self.memory_access = access or MemoryAccessSlot()  # J1939-73's, empty without a memory
        #: the node's calibration memory and the image its application runs (None: it has none)
        self.application = application
        #: the node's UDS server and what the node lends it (None: ``[diagnostics] enabled = no``)
        self.diagnostics: DiagnosticEndpoint | None = None
        self.side: NodeSide | None = None
        if diagnostics is not None:
            self.diagnostics, self.side = diagnostics
        self._port = port
        self._new_frame = new_frame
        self._input_spn = input_spn
        self._dtc_windows = dtc_windows
        #: the node's latest payload of its periodic message, for a request for it
        self.latest: bytes | None = None
        #: the address the node's periodic frames carry (the DBC's); they stop if the claim moves
        self._home = network.address
        self._moved_warned = False
        #: the port's episodes of foreign frames with our identifier, as far as handled
        self._episodes = 0
        #: the claim stands at the home address: the node's frames may go (the check of every tick,
        #: read by the node's send before it asks may_send)
        self.open = False
        #: ticks a peer starting with this node is silent while it claims (see InputNode.finish_tick)
        self.startup_ticks = network.claim.delay_ticks
        #: the node may skip the part's tick before this one while its input is there and the
        #: port has no new alert: nothing is due, pending, received or in a DTC window's edge
        self.due_from = 0
        #: the port's alerts as far as this part looked at them
        self.alerts_seen = port.alerts
        #: the vehicle's speed the node knew at its last tick (NaN: none), which the diagnostics'
        #: conditions read; the node writes it each tick (a store, not a call)
        self.speed_kph = math.nan
        #: DTCs the node's control functions hold active (a TSC1 sender timed out, an XBR stream lost)
        self.extra: frozenset[Dtc] = frozenset()

    def receive(self, msg: can.Message) -> bool:
        """True when the frame is the layer's (taken), False when it is for the node."""
        if not msg.is_extended_id:
            return False
        taken = self.network.receive(msg.arbitration_id, msg.data) or (
            self.diagnostics is not None and self.diagnostics.receive(msg.arbitration_id, msg.data)) or \
            self.memory_access.receive(msg.arbitration_id, msg.data)
        if taken:
            self.due_from = 0
        return taken

    def may_send(self, tick: int) -> bool:
        """The claim stands, and at the address the node's frames carry: after losing it to a lower
        NAME the node holds another address, and its periodic frames, whose identifiers the DBC
        fixes, would speak for an address it does not own, so they stop."""
        if self.open:
            return True
        if self.side is not None and self.side.silenced:
            return False  # CommunicationControl: the application messages are held back
        if self.application is not None and self.application.boot:
            return False  # boot mode: no application runs
        network = self.network
        if network.address == self._home:
            allowed = network.may_send(tick)
            self.open = allowed and network.claim.state is not ClaimState.CLAIMING
            return allowed
        if network.address == NULL_ADDRESS:
            return False  # it could not claim: silent, as the claim logged
        if not self._moved_warned:
            self._moved_warned = True
            log.warning("J1939 address 0x%02X lost; the node now holds 0x%02X, and its periodic frames "
                        "(sent from 0x%02X as the DBC says) stop; give it a free address with "
                        "--address or [j1939] address", self._home, network.address, self._home)
        return False

    def tick(self, tick: int, input_missing: bool, input_error: bool) -> None:
        """The layer's tick with the node's conditions; the node skips it while :attr:`due_from`
        lies ahead, its input is there and the port has no new alert."""
        self.alerts_seen = self._port.alerts
        conditions = {dtc for dtc, start, end in self._dtc_windows
                      if start <= tick and (end is None or tick < end)} if self._dtc_windows else set()
        if input_error:
            conditions.add(Dtc(self._input_spn, FMI_NETWORK_DATA_IN_ERROR))
        elif input_missing:
            conditions.add(Dtc(self._input_spn, FMI_ABNORMAL_UPDATE_RATE))
        if self._port.controller_state is ControllerState.BUS_OFF:
            conditions.add(BUS_OFF)
        if self.extra:
            conditions |= self.extra
        application = self.application
        if application is not None and application.boot:
            conditions.add(APPLICATION_NOT_VALID)
        side = self.side
        if side is not None and side.dtcs_held:
            conditions = {dtc for dtc, _ in self.network.dtcs.active()}  # ControlDTCSetting off
        episodes = self._port.own.episodes
        if episodes != self._episodes:
            self._episodes = episodes
            self.network.address_in_use()
            if self.network.claim.state is ClaimState.CLAIMED:  # the port warned of the frames
                log.warning("another node sends under our J1939 address 0x%02X: an address "
                            "conflict (J1939-81); Address Claimed sent again", self.network.address)
        send, new_frame = self._port.send, self._new_frame
        self.memory_access.tick(tick)  # its frames go with the layer's of this tick
        for can_id, data in self.network.tick(tick, conditions):
            send(new_frame(can_id, data, True))
        if self.diagnostics is not None:
            answers = self.diagnostics.tick(tick)
            if answers:
                self.network.sent_beside(answers)
                for can_id, data in answers:
                    send(new_frame(can_id, data, True))
        if application is not None and application.follow():
            conditions.add(APPLICATION_NOT_VALID)  # an erase began: boot mode from now on
        self.open = False  # the claim may have moved: may_send looks again
        self.due_from = self._due_from(tick, conditions)

    def _due_from(self, tick: int, conditions: set[Dtc]) -> int:
        """The next tick the part must run: the next one while a condition holds (a DM11 may clear
        its DTC, which the next tick sets again), else when the layer or a DTC window's edge is due."""
        if conditions:
            return tick + 1
        edges = [edge for _, start, end in self._dtc_windows for edge in (start, end)
                 if edge is not None and edge > tick]
        if self.diagnostics is not None:
            edges.append(self.diagnostics.next_due(tick))
        return min([self.network.quiet_until, self.memory_access.next_due(tick), *edges])

    def switch_dtc(self, dtc: Dtc, on: bool, tick: int) -> bool:
        """A ``dtc`` fault turned on or off from ``tick`` on while the node runs (``--web``): a
        window like a scheduled one, so the layer ticks it the same way. False: it was not off
        (on) or not on (off), and nothing changed."""
        windows = self._dtc_windows
        open_at = [i for i, (known, _, end) in enumerate(windows) if known == dtc and end is None]
        if on == bool(open_at):
            return False
        if on:
            windows.append((dtc, tick, None))
        else:
            index = open_at[0]
            windows[index] = (dtc, windows[index][1], tick)
        self.due_from = 0
        return True

    def active_dtcs(self) -> list[tuple[Dtc, int]]:
        """The active DTCs with their occurrence counts, as DM1 sends them."""
        return self.network.dtcs.active()

    def hold(self, dtcs: frozenset[Dtc]) -> None:
        """The DTCs the node's control functions hold active from this tick on (replacing the last)."""
        if dtcs != self.extra:
            self.extra = dtcs
            self.due_from = 0

    def broadcast(self, pgn: int, payload: bytes) -> None:
        """A message of the node's over eight bytes to everyone, by BAM from the part's next tick."""
        self.network.broadcast(pgn, payload)
        self.due_from = 0

    def status_text(self) -> str:
        return self.network.status_text()


def booting(part: NetworkPart) -> bool:
    """The node's application does not run: its memory holds none valid (boot mode)."""
    return part.application is not None and part.application.boot


def build_network(kind: str, env: NodeEnvironment, sends: RoleCodec, input_spn: int,
                  faults: tuple[Fault, ...],
                  periodic: Mapping[int, Callable[[], bytes | None]] | None = None,
                  diagnostics: DiagnosticsSettings | None = None,
                  vin: str | None = None,
                  calibration: Calibrated | None = None) -> NetworkPart | None:
    """The part of node ``kind`` (ECU or CCM); None when its frame is not a 29-bit J1939 one.
    ``periodic``: the node's other periodic messages by PGN, each sent once on request;
    ``diagnostics``: its UDS server's settings, ``vin`` the VIN it reads out;
    ``calibration``: its start image and restart, from which the part makes its memory and
    application (DM19, the software identification, boot mode)."""
    if not sends.is_extended_id:
        log.info("%s: its frame has an 11-bit identifier: no J1939 network part", kind)
        return None
    settings = env.settings
    values = {**node_attributes(env.profile.database, list(sends.message.senders or [])),
              **{f.name: getattr(settings, f.name) for f in fields(settings)
                 if getattr(settings, f.name) is not None}}
    address = int(values.get("address", source_address_of(sends.frame_id)))
    part: NetworkPart
    requestable = {**(periodic or {}), pgn_of(sends.frame_id): lambda: part.latest}
    windows = [(Dtc(*f.dtc), ticks_in(f.start_s, env.period_s),
                None if f.end_s is None else ticks_in(f.end_s, env.period_s))
               for f in faults if f.kind == DTC_KIND and f.dtc is not None]
    part = _part(kind, address, values, env, input_spn, windows, requestable, diagnostics, vin, calibration)
    return part


def build_member(kind: str, function: int, address: int, env: NodeEnvironment, nodes: list[str],
                 periodic: Mapping[int, Callable[[], bytes | None]],
                 attributes: Mapping[str, int] | None = None,
                 diagnostics: DiagnosticsSettings | None = None, vin: str | None = None,
                 calibration: Calibrated | None = None) -> NetworkPart:
    """The part of a node the ECU hosts beside its own (``--network powertrain``): NAME and
    address from the DBC's attributes of ``nodes`` (the node's; ``attributes`` instead when
    the node is another DBC's, a restbus node), ``function`` by default; ``[j1939]`` gives it
    only whether to claim and its identification strings. ``diagnostics``: as for
    :func:`build_network` (a restbus node has none)."""
    given = node_attributes(env.profile.database, nodes) if attributes is None else attributes
    values: dict[str, Any] = {**given}
    if env.settings.address_claim is not None:
        values["address_claim"] = env.settings.address_claim
    values.setdefault("function", function)
    values["address"] = address
    return _part(kind, address, values, env, 0, [], dict(periodic), diagnostics, vin, calibration)


def _part(kind: str, address: int, values: Mapping[str, Any], env: NodeEnvironment, input_spn: int,
          windows: list[tuple[Dtc, int, int | None]],
          requestable: Mapping[int, Callable[[], bytes | None]],
          diagnostics: DiagnosticsSettings | None, vin: str | None,
          calibration: Calibrated | None) -> NetworkPart:
    defaults = _name_defaults(kind, address)
    fields_of_name = {key: int(values.get(key, default)) for key, default in defaults.items()}
    capable = bool(fields_of_name.pop("arbitrary_address_capable"))
    name = Name(**fields_of_name, arbitrary_address_capable=capable)
    claim = values.get("address_claim", env.profile.name not in _QUIET_PROFILES)
    application = None if calibration is None else build_application(
        calibration, None if diagnostics is None else diagnostics.state_dir, address)
    reported = None if application is None else application.reported
    identification = _identification(kind, env.settings, reported)
    config = NetworkConfig(name, address, bool(claim), identification)
    if application is not None:
        requestable = {**requestable, DM19_PGN: lambda: dm19((application.reported,))}
    network = J1939Network(config, env.period_s, requestable, on_message=(slot := MemoryAccessSlot()).heard)
    log.debug("%s: J1939 address 0x%02X, NAME %s, address claim %s", kind, address, name,
              "on" if claim else "off")
    served = None
    part: NetworkPart
    if diagnostics is not None and diagnostics.enabled:
        def applied() -> None:  # the application restarted: SOFT names the image it runs now
            if application is not None:
                network.identify(_identification(kind, env.settings, application.reported))
            part.open, part.due_from = False, 0  # boot mode may have begun or ended: look again

        side = NodeSide(kind, network.dtcs, identification_dids(identification, name.identity_number, vin),
                        lambda: part.speed_kph, application, applied)
        try:
            served = (build_endpoint(kind, address, diagnostics, env.period_s, side), side)
            slot.fill(kind, address, diagnostics, env.period_s, side, network)
        except ValueError as exc:
            raise ConfigError(f"[diagnostics] {exc}") from None
    part = NetworkPart(network, env.port, env.new_frame, input_spn, windows, served, application, slot)
    return part


def _name_defaults(kind: str, address: int) -> dict[str, int]:
    """A NAME unique per node and address, so two ecu-sim nodes never tie, and never all zeros
    (the Linux kernel's J1939 stack reads NAME 0 as "no NAME"): on-highway equipment, the
    node's J1939 function, an identity number of ecu-sim's own prefix and the address."""
    return {"identity_number": _IDENTITY_PREFIX | address, "manufacturer_code": 0,
            "function": _FUNCTIONS.get(kind, 255), "function_instance": 0, "ecu_instance": 0,
            "vehicle_system": 0, "vehicle_system_instance": 0, "industry_group": _ON_HIGHWAY,
            "arbitrary_address_capable": 0}


def _identification(kind: str, settings: J1939Settings,
                    calibration: NodeCalibration | None) -> Identification:
    def split(text: str | None, default: list[str]) -> list[str]:
        items = default if text is None else text.split(DELIMITER)
        return items[:-1] if items and items[-1] == "" and text is not None else items

    make, model, serial, unit = [*split(settings.component_id, ["ecu-sim", kind, "", ""]), "", "", "", ""][:4]
    ecu = [*split(settings.ecu_id, ["", "", "", kind, "ecu-sim"]), "", "", "", "", ""]
    software = tuple(split(settings.software_id, [f"ecu-sim {__version__}"]))
    if calibration is not None and calibration.named:  # an image given to it, not its built-in one
        software += (f"calibration {calibration.calibration_id}",)
    return Identification(make=make, model=model, serial=serial, unit=unit, software=software,
                          ecu_part=ecu[0], ecu_serial=ecu[1], ecu_location=ecu[2], ecu_type=ecu[3],
                          ecu_manufacturer=ecu[4])
