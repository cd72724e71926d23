"""What must change on an interface, decided from its state alone, with no netlink access.

A controller has to be taken down to change it, and the kernel checks most values only once it is
down; a mistake in a systemd unit's LINK_ARGS would then bounce a working bus on every start
attempt. So everything that can be decided and refused from the state the driver reports is
decided here first, and :mod:`ecu_sim.link.apply` only carries the result out. Being pure, the
rules can be tested one by one with hand-built states.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

from ecu_sim.bus.state import ControllerState
from ecu_sim.link.errors import LinkError, LinkUnsupportedError
from ecu_sim.link.state import BittimingConst, LinkState

IFNAMSIZ = 16
_NAME_RE = re.compile(rf"^[^\s/:]{{1,{IFNAMSIZ - 1}}}$")

#: ISO 11898-1: the nominal (arbitration) bit rate of a CAN bus is at most 1 Mbit/s.
MAX_BITRATE = 1_000_000
#: IFLA_CAN_RESTART_MS is a u32 in milliseconds.
MAX_RESTART_MS = 0xFFFFFFFF
#: the kernel's CAN_CALC_MAX_ERROR: a bit rate the clock misses by more than 5.0 % is refused (EDOM)
_MAX_BITRATE_ERROR_PERMILLE = 50
#: the ctrlmode names ecu_sim can set, as the kernel (and pyroute2) spells them -> as ``ecu-sim link`` does
CTRLMODE_OPTIONS = {"berr_reporting": "--berr-reporting", "listenonly": "--listen-only"}


@dataclass(frozen=True)
class LinkSettings:
    """Controller settings; ``None`` means "leave as it is", both when asked for and when planned."""

    bitrate: int | None = None
    restart_ms: int | None = None
    berr_reporting: bool | None = None
    listen_only: bool | None = None

    @property
    def any_set(self) -> bool:
        return any(getattr(self, setting.name) is not None for setting in fields(self))


@dataclass(frozen=True)
class Plan:
    """A decision kept as data, so the rules can be checked without anything being sent.

    The kernel takes settings only from a controller that is down, so the applier goes down, sends
    ``change`` in one request and comes back up. ``change`` holds only what differs, which is what
    makes a repeated command send nothing; ``report`` is what the user is told, empty then too.
    """

    change: LinkSettings = field(default_factory=LinkSettings)
    take_down: bool = False
    bring_up: bool = False
    report: tuple[str, ...] = ()


def check_name(name: str) -> None:
    """Refuse a name the kernel never accepts, so the mistake is not reported as a missing interface."""
    if not _NAME_RE.match(name) or name in (".", ".."):
        raise LinkError(f"{name!r} is not a valid interface name: at most {IFNAMSIZ - 1} characters, "
                        "no spaces, '/' or ':'")


def check_settings(bitrate: int | None = None, restart_ms: int | None = None) -> None:
    """Refuse values no controller accepts, before any netlink request (and without pyroute2)."""
    if bitrate is not None and not 0 < bitrate <= MAX_BITRATE:
        raise LinkError(f"bitrate must be a positive number of bit/s up to {MAX_BITRATE} (CAN's limit; "
                        f"J1939: 250000 or 500000), not {bitrate}")
    if restart_ms is not None and not 0 <= restart_ms <= MAX_RESTART_MS:
        raise LinkError("restart-ms must be 0 (no automatic restart) or a delay in ms "
                        f"(at most {MAX_RESTART_MS}), not {restart_ms}")


def closest_bitrate(clock_hz: int, bitrate: int, btc: BittimingConst) -> int | None:
    """The bit rate the kernel would settle on for ``bitrate``, or ``None`` when no prescaler fits.

    The search of the kernel's can_calc_bittiming(), without the sample point, which only chooses
    between equally good rates: every time-quantum count the controller allows, its prescaler
    rounded as the kernel rounds it.
    """
    best: int | None = None
    brp_inc = max(btc.brp_inc, 1)
    for tseg in range((btc.tseg1_max + btc.tseg2_max) * 2 + 1, (btc.tseg1_min + btc.tseg2_min) * 2 - 1, -1):
        tsegall = 1 + tseg // 2  # CAN_SYNC_SEG + tseg1 + tseg2
        brp = clock_hz // (tsegall * bitrate) + tseg % 2
        brp = (brp // brp_inc) * brp_inc
        if brp < btc.brp_min or brp > btc.brp_max or brp == 0:
            continue
        reached = clock_hz // (brp * tsegall)
        if best is None or abs(bitrate - reached) < abs(bitrate - best):
            best = reached
    return best


def _check_against_controller(state: LinkState, wanted: LinkSettings) -> None:
    """What the kernel would refuse only after the link is down (EDOM, EINVAL, EOPNOTSUPP), refused now.

    Checked only against limits the driver reports; a driver that reports none is left to the kernel.
    """
    name, bitrate = state.name, wanted.bitrate
    if bitrate is not None and bitrate != state.bitrate:
        if state.bitrate_max is not None and bitrate > state.bitrate_max:
            raise LinkError(f"cannot configure {name}: its transceiver allows at most {state.bitrate_max} "
                            f"bit/s, not {bitrate}")
        if state.bittiming_const is not None and state.clock_hz:
            reached = closest_bitrate(state.clock_hz, bitrate, state.bittiming_const)
            if reached is None or abs(bitrate - reached) * 1000 // bitrate > _MAX_BITRATE_ERROR_PERMILLE:
                closest = f"; the closest it reaches is {reached} bit/s" if reached else ""
                raise LinkError(f"cannot configure {name}: its {state.clock_hz} Hz clock cannot produce "
                                f"{bitrate} bit/s within the kernel's 5% tolerance{closest}; use a standard "
                                "rate (J1939: 250000 or 500000)")
        elif state.bitrate_const and bitrate not in state.bitrate_const:
            raise LinkError(f"cannot configure {name}: its driver supports only the bit rates "
                            f"{', '.join(map(str, state.bitrate_const))}, not {bitrate}")
    if state.supported_ctrlmodes is not None:
        for mode, on in (("berr_reporting", wanted.berr_reporting), ("listenonly", wanted.listen_only)):
            if on and mode not in state.supported_ctrlmodes:
                raise LinkUnsupportedError(f"cannot configure {name}: its controller does not support "
                                           f"{CTRLMODE_OPTIONS[mode]} (supported modes: "
                                           f"{', '.join(sorted(state.supported_ctrlmodes)) or 'none'})")


def _onoff(value: bool) -> str:
    return "on" if value else "off"


def plan_configure(state: LinkState, wanted: LinkSettings) -> Plan:
    """Change only what differs and leave the link up.

    Nothing is sent when the controller already has these settings and is up, so a systemd
    ExecStartPre can run this on every start without bouncing a working bus. The kernel refuses
    settings on a running controller (EBUSY), so a change on an up controller takes it down first.
    """
    check_settings(wanted.bitrate, wanted.restart_ms)
    brought_up = () if state.up else ("brought up",)
    if not state.is_controller:
        if wanted.any_set:
            raise LinkUnsupportedError(
                f"{state.name} is a {state.kind or 'non-CAN'} interface, not a CAN controller: bit rate, "
                "restart-ms, berr-reporting and listen-only only apply to real CAN hardware")
        return Plan(bring_up=not state.up, report=brought_up)
    _check_against_controller(state, wanted)
    change = LinkSettings(
        bitrate=wanted.bitrate if wanted.bitrate != state.bitrate else None,
        restart_ms=wanted.restart_ms if wanted.restart_ms != state.restart_ms else None,
        berr_reporting=wanted.berr_reporting if wanted.berr_reporting != state.berr_reporting else None,
        listen_only=wanted.listen_only if wanted.listen_only != state.listen_only else None,
    )
    report: list[str] = []
    if change.bitrate is not None:
        report.append(f"bitrate {state.bitrate or 'unset'} -> {change.bitrate}")
    if change.restart_ms is not None:
        report.append(f"restart-ms {state.restart_ms} -> {change.restart_ms}")
    if change.berr_reporting is not None:
        report.append(f"berr-reporting {_onoff(change.berr_reporting)}")
    if change.listen_only is not None:
        report.append(f"listen-only {_onoff(change.listen_only)}")
    return Plan(change=change, take_down=change.any_set and state.up, bring_up=change.any_set or not state.up,
                report=(*report, *brought_up))


def plan_vcan(state: LinkState) -> Plan:
    """An existing vcan only needs to be up; any other kind of interface is never replaced.

    Deleting a real adapter's can0 because someone typed ``--create`` would take the truck's bus away.
    """
    if state.kind != "vcan":
        raise LinkError(f"{state.name} already exists and is a {state.kind or 'non-virtual'} interface, "
                        "not a vcan; pick another name or delete it first")
    return Plan(bring_up=True, report=("brought up",)) if not state.up else Plan()


def plan_restart(state: LinkState) -> bool:
    """Whether to send a restart: only a bus-off controller needs one, so it is safe in LINK_ARGS.

    The kernel restarts only an up controller with no automatic restart that is bus-off; the
    first two are refused here with advice, since the kernel's own answer (EINVAL) says neither.
    """
    name = state.name
    if not state.is_controller:
        raise LinkUnsupportedError(f"{name} is a {state.kind or 'non-CAN'} interface, not a CAN "
                                   "controller: it has no bus-off state to restart from")
    if not state.up:
        raise LinkError(f"{name} is down, so there is no bus-off to restart from; bringing it up "
                        f"(`sudo ip link set {name} up`) starts the controller afresh")
    if state.controller_state is not ControllerState.BUS_OFF:
        return False
    if state.restart_ms:
        raise LinkError(f"{name} restarts itself {state.restart_ms} ms after a bus-off (restart-ms "
                        f"{state.restart_ms}) and the kernel refuses a manual restart then; if it "
                        "stays bus-off the bus itself is at fault (wiring, termination, bit rate)")
    return True
