"""A Linux input device (a pedal set, a wheel, a joystick) read through python-evdev.

The device is opened non-blocking and read once a tick: every event queued since the last tick
is taken, the newest axis value wins, and a button tapped and released between two ticks still
counts as pressed at the next one. evdev is an optional extra (``driver``); without it the
command says what to install instead of failing on an import.
"""

from __future__ import annotations

import errno
import importlib
from dataclasses import dataclass
from types import ModuleType, TracebackType
from typing import Any

from ecu_sim.errors import EXIT_UNAVAILABLE, ConfigError, EcuSimError, needs_extra
from ecu_sim.pedals.reading import Calibration, PedalReading


class MissingExtraError(EcuSimError):
    """An optional package the chosen feature needs is not installed (sysexits: unavailable)."""

    exit_status = EXIT_UNAVAILABLE


def load_evdev() -> ModuleType:
    try:
        return importlib.import_module("evdev")
    except ImportError:
        raise MissingExtraError(needs_extra("reading an input device", "python-evdev", "driver",
                                            "or use the keyboard: leave out --device")) from None


@dataclass(frozen=True)
class Axis:
    """An absolute axis by its evdev name (ABS_GAS, ABS_Z, ...) and its optional calibration."""

    name: str
    released: int | None = None
    pressed: int | None = None


def _code(ecodes: Any, name: str, prefix: str, path: str) -> int:
    code = ecodes.ecodes.get(name.upper())
    if not isinstance(code, int) or not name.upper().startswith(prefix):
        raise ConfigError(f"{name!r} is not an evdev {prefix}* name (e.g. {prefix}"
                          f"{'GAS' if prefix == 'ABS_' else 'SOUTH'}); `ecu-sim driver --list` shows "
                          f"what {path} has")
    return code


def _open(evdev: ModuleType, path: str) -> Any:
    try:
        return evdev.InputDevice(path)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            hint = "add yourself to the 'input' group (then log in again) or run as root"
        elif exc.errno == errno.ENOENT:
            hint = "`ecu-sim driver --list` shows the input devices with absolute axes"
        else:
            hint = "check the device is an input event device (/dev/input/eventN)"
        raise ConfigError(f"cannot open input device {path}: {exc.strerror or exc}; {hint}") from None


class DeviceSource:
    """The pedal (and optionally the brake and two buttons) of one input device; a context manager."""

    def __init__(self, path: str, pedal: Axis, brake: Axis | None = None,
                 resume_key: str | None = None, cancel_key: str | None = None) -> None:
        evdev = load_evdev()
        ecodes = evdev.ecodes
        self._ev_abs, self._ev_key = ecodes.EV_ABS, ecodes.EV_KEY
        self.device = _open(evdev, path)
        try:
            axes = dict(self.device.capabilities(absinfo=True).get(self._ev_abs, []))
            self._axes: dict[int, tuple[str, Calibration]] = {}
            self._raw: dict[int, int] = {}
            for role, axis in (("app", pedal), ("brake", brake)):
                if axis is not None:
                    self._add_axis(ecodes, axes, role, axis, path)
            self._keys: dict[int, str] = {
                _code(ecodes, name, "BTN_" if name.upper().startswith("BTN_") else "KEY_", path): role
                for role, name in (("resume", resume_key), ("cancel", cancel_key)) if name is not None}
        except BaseException:
            self.device.close()
            raise
        self._held: set[str] = set()
        self._tapped: set[str] = set()

    def _add_axis(self, ecodes: Any, axes: dict[int, Any], role: str, axis: Axis, path: str) -> None:
        code = _code(ecodes, axis.name, "ABS_", path)
        if code not in axes:
            names = ", ".join(_name(ecodes.ABS, c) for c in sorted(axes)) or "none"
            raise ConfigError(f"input device {path} has no axis {axis.name.upper()}; its absolute "
                              f"axes: {names}")
        info = axes[code]
        released = info.min if axis.released is None else axis.released
        pressed = info.max if axis.pressed is None else axis.pressed
        self._axes[code] = (role, Calibration(released, pressed))
        self._raw[code] = info.value

    def __enter__(self) -> DeviceSource:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.device.close()

    def read(self) -> PedalReading:
        """Take every queued event, then the reading: newest axis values, buttons held or tapped."""
        self._tapped.clear()
        while (event := self.device.read_one()) is not None:
            if event.type == self._ev_abs and event.code in self._raw:
                self._raw[event.code] = event.value
            elif event.type == self._ev_key and event.code in self._keys:
                role = self._keys[event.code]
                if event.value:
                    self._held.add(role)
                    self._tapped.add(role)
                else:
                    self._held.discard(role)
        percent = {role: cal.percent(self._raw[code]) for code, (role, cal) in self._axes.items()}
        pressed = self._held | self._tapped
        return PedalReading(percent.get("app", 0.0), percent.get("brake", 0.0),
                        "resume" in pressed, "cancel" in pressed)


def _name(table: dict[int, Any], code: int) -> str:
    name = table.get(code, str(code))
    return name if isinstance(name, str) else "/".join(name)


def list_devices() -> list[str]:
    """One paragraph per input device with absolute axes: its path, name, axes and buttons."""
    evdev = load_evdev()
    ecodes = evdev.ecodes
    found: list[str] = []
    for path in sorted(evdev.list_devices()):
        try:
            device = evdev.InputDevice(path)
        except OSError as exc:
            found.append(f"{path}: cannot open ({exc.strerror or exc})")
            continue
        try:
            capabilities, name = device.capabilities(absinfo=True), device.name
        finally:
            device.close()
        axes = capabilities.get(ecodes.EV_ABS, [])
        if not axes:
            continue
        lines = [f"{path}: {name}"]
        lines += [f"  {_name(ecodes.ABS, code)}  {info.min}..{info.max} (now {info.value})"
                  for code, info in axes]
        keys = capabilities.get(ecodes.EV_KEY, [])
        if keys:
            lines.append("  buttons: " + " ".join(_name(ecodes.bytype[ecodes.EV_KEY], k) for k in keys))
        found.append("\n".join(lines))
    return found
