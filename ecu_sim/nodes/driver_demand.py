"""What the cruise control module hears of the driver, and the rules a real cruise control follows.

The driver node (``ecu-sim driver``) sends the accelerator pedal in the APP message under its own
source address, the brake pedal position and the cruise commands where the DBC has them. The CCM
takes them in beside its speed input and decides, tick by tick, what it sends as APP:

- override: while cruise is on, the higher of the two demands wins, the driver's pedal or the
  controller's; while the driver's pedal is the higher, the controller's integral is frozen, so
  cruise takes over where it left off when the pedal is released instead of from a wound-down state;
- brake: any brake pedal travel (or the cancel command) turns cruise off; the CCM then passes the
  driver's pedal through, and the controller starts from a clean state when cruise comes back;
- resume: the resume command turns cruise back on at the same set speed, once the brake is released
  and the speed is known.

Frames count at the tick as every other input does (ecu_sim.nodes.input): a value handled before tick
``k`` is used from tick ``k`` for the hold, and a command counts once, at the tick after its first frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import can

from ecu_sim.codec.driver import DriverRoles
from ecu_sim.codec.role import Invalid, RoleCodec
from ecu_sim.runtime.held import HeldInput

#: identifiers remembered as the driver's or not; bounded against a flood of random identifiers
_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class DriverView:
    """The driver's demand at one tick, as the CCM heard it."""

    pedal_pct: float = 0.0
    braking: bool = False
    resume: bool = False
    cancel: bool = False


#: what the CCM hears while no driver has sent a frame
NO_DRIVER = DriverView()


def engaged_after(engaged: bool, view: DriverView, speed_known: bool) -> bool:
    """Whether cruise is on after this tick's driver input: brake and cancel win over resume."""
    if view.braking or view.cancel:
        return False
    if view.resume and speed_known:
        return True
    return engaged


class DriverDemand:
    """The driver's frames on the CCM's port: the pedal held like any input, commands as edges."""

    def __init__(self, app: RoleCodec, roles: DriverRoles, hold_ticks: int) -> None:
        self._app = app
        self._brake = roles.brake
        self._commands = [(name, codec) for name, codec in (("resume", roles.resume),
                                                            ("cancel", roles.cancel)) if codec is not None]
        self._codecs = [app, *roles.present()]
        self._std_cache: dict[int, bool] = {}
        self._ext_cache: dict[int, bool] = {}
        self.pedal = HeldInput(hold_ticks)
        self.brake = HeldInput(hold_ticks)
        self._last: dict[str, bool] = {}
        self._pending: set[str] = set()
        #: the driver's frames taken
        self.frames = 0

    def take(self, msg: can.Message, tick: int) -> bool:
        """Handle ``msg`` if it is one of the driver's frames (the CCM's own APP never gets here)."""
        ident, extended, data = msg.arbitration_id, msg.is_extended_id, msg.data
        cache = self._ext_cache if extended else self._std_cache
        known = cache.get(ident)
        if known is None:  # one lookup per frame of the rest of the bus, as the codecs' own caches
            known = any(codec.matches(ident, extended) for codec in self._codecs)
            if len(cache) >= _CACHE_MAX:
                cache.clear()
            cache[ident] = known
        if not known or msg.is_remote_frame:
            return False
        taken = False
        if self._app.matches(ident, extended):
            self._hold(self.pedal, self._app.decode(data), tick)
            taken = True
        if self._brake is not None and self._brake.matches(ident, extended):
            self._hold(self.brake, self._brake.decode(data), tick)
            taken = True
        for name, codec in self._commands:
            if codec.matches(ident, extended):
                pressed = codec.decode(data) == 1.0
                if pressed and not self._last.get(name, False):
                    self._pending.add(name)
                self._last[name] = pressed
                taken = True
        self.frames += taken
        return taken

    @staticmethod
    def _hold(held: HeldInput, value: float | Invalid, tick: int) -> None:
        if isinstance(value, float):
            held.update(value, tick, None)
        elif value in (Invalid.NOT_AVAILABLE, Invalid.ERROR_INDICATOR):
            held.clear()

    def view(self, tick: int) -> DriverView:
        """The demand at ``tick``; each command counts at one tick only."""
        if not self.frames:
            return NO_DRIVER  # the common case: no driver on the bus, every tick of a simulation
        pending, self._pending = self._pending, set()
        brake = self.brake.get(tick)
        return DriverView(self.pedal.get(tick) or 0.0, brake is not None and brake > 0.0,
                          "resume" in pending, "cancel" in pending)
