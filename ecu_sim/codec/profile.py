"""Message profiles: which DBC describes the bus, and which of its signals carry speed and pedal position.

Everything about the wire (IDs, bit positions, scale, offset, limits) lives in the DBC so that switching
between the AMP testbed layout and the SAE J1939-71 layout, or a customer's own DBC, needs no code change.
This module only decides *which* signal plays which role; ecu_sim.codec.role turns that signal into a
codec.
"""

from __future__ import annotations

import importlib.resources
import importlib.resources.abc
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import cantools
import cantools.database
from cantools.database.can import Database, Message, Signal

from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import required_carrier
from ecu_sim.errors import ConfigError
from ecu_sim.j1939.ids import format_id

DEFAULT_PROFILE: Final = "amp"
DEFAULT_PERIOD_S: Final = 0.1
SPN_WHEEL_BASED_VEHICLE_SPEED: Final = 84
SPN_ACCELERATOR_PEDAL_POSITION_1: Final = 91

_ROLE_OPTIONS: Final = {"speed": "--speed-signal", "app": "--app-signal"}
_ROLE_SPNS: Final = {"speed": SPN_WHEEL_BASED_VEHICLE_SPEED, "app": SPN_ACCELERATOR_PEDAL_POSITION_1}
#: where a source tree keeps the built-in DBCs: the top-level dbc/ beside the ecu_sim package
_SOURCE_TREE_DBC: Final = Path(__file__).resolve().parents[2] / "dbc"
_ROLE_DESCRIPTIONS: Final = {
    "speed": "wheel-based vehicle speed",
    "app": "accelerator pedal position 1",
}


def _builtin_dir() -> importlib.resources.abc.Traversable:
    """The built-in DBCs of this very package.

    In a source tree (a checkout, installed editable or only put on PYTHONPATH, or a commit
    exported for a comparison) they are the ``dbc/`` folder beside the package, so each tree
    reads its own; an installed ecu-sim carries them as the package ``ecu_sim.dbc``.
    """
    if (_SOURCE_TREE_DBC / "__init__.py").is_file():
        return _SOURCE_TREE_DBC
    return importlib.resources.files("ecu_sim.dbc")


#: built-in DBCs that are a restbus (``--fms``), not a profile of the ECU's own frames
RESTBUS_DBCS: Final = frozenset({"fms"})


def builtin_restbus(name: str) -> str:
    """The path of a built-in restbus DBC (``fms``)."""
    return str(_builtin_dir() / f"{name}.dbc")


def available_profiles() -> list[str]:
    """Names of the DBC files shipped with the package, for help texts and error messages."""
    try:
        entries = list(_builtin_dir().iterdir())
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        return []
    return sorted(name for e in entries if e.name.endswith(".dbc") and e.is_file()
                  and (name := e.name.removesuffix(".dbc")) not in RESTBUS_DBCS)


def is_j1939_database(database: Database) -> bool:
    """Vector-style J1939 databases may declare the protocol only at database level."""
    if database.dbc is None:
        return False
    attribute = database.dbc.attributes.get("ProtocolType")
    return attribute is not None and str(attribute.value).upper() == "J1939"


def _parse_failure(where: str, exc: Exception) -> ConfigError:
    return ConfigError(
        f"{where} is not a valid DBC file: {exc}. Fix the file (cantools dump shows where parsing stops) "
        f"or choose a built-in profile with --profile {'/'.join(available_profiles()) or 'NAME'}."
    )


def _load_builtin(name: str) -> tuple[str, Database]:
    known = available_profiles()
    if name not in known:
        listing = ", ".join(known) if known else "none (the package's dbc/ folder is missing: reinstall)"
        raise ConfigError(
            f"unknown profile {name!r}; known profiles: {listing}. "
            "To use your own DBC file, pass --dbc PATH instead."
        )
    resource = _builtin_dir() / f"{name}.dbc"
    where = str(resource)
    try:
        text = resource.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read built-in profile {name!r} at {where}: {exc}; reinstall ecu-sim"
        ) from exc
    try:
        database = cantools.database.load_string(text, database_format="dbc", strict=False)
    except Exception as exc:  # the DBC parser raises many unrelated types for malformed input
        raise _parse_failure(where, exc) from exc
    assert isinstance(database, Database)
    return where, database


def _load_user(dbc_path: str) -> tuple[str, Database]:
    path = Path(dbc_path)
    if not path.is_file():
        what = "is a directory, not a DBC file" if path.is_dir() else "does not exist"
        raise ConfigError(f"DBC file {dbc_path} {what}; check the --dbc PATH.")
    try:
        # strict=False: real-world J1939 DBCs often have overlapping or oversized signals elsewhere in
        # the file; only the two role signals need to be sound, and RoleCodec checks those.
        database = cantools.database.load_file(path, database_format="dbc", strict=False)
    except OSError as exc:
        raise ConfigError(
            f"cannot read DBC file {dbc_path}: {exc.strerror or exc}; check the --dbc PATH."
        ) from exc
    except Exception as exc:  # the DBC parser raises many unrelated types for malformed input
        raise _parse_failure(dbc_path, exc) from exc
    assert isinstance(database, Database)
    return dbc_path, database


def _resolve_role(where: str, database: Database, role: str, override: str | None) -> tuple[Message, Signal]:
    option = _ROLE_OPTIONS[role]
    if override is not None:
        message_name, dot, signal_name = override.partition(".")
        if not dot or not message_name or not signal_name:
            raise ConfigError(
                f"{option} {override!r}: expected MESSAGE.SIGNAL, e.g. CCVS1.WheelBasedVehicleSpeed."
            )
        try:
            message = database.get_message_by_name(message_name)
        except KeyError:
            names = ", ".join(sorted(m.name for m in database.messages)) or "none"
            raise ConfigError(
                f"{option} {override!r}: {where} has no message {message_name!r}; its messages are: {names}."
            ) from None
        try:
            signal = message.get_signal_by_name(signal_name)
        except KeyError:
            names = ", ".join(s.name for s in message.signals) or "none"
            raise ConfigError(
                f"{option} {override!r}: message {message_name} in {where} has no signal {signal_name!r}; "
                f"its signals are: {names}."
            ) from None
        return message, signal

    spn = _ROLE_SPNS[role]
    return required_carrier(
        database, spn, where, f" ({_ROLE_DESCRIPTIONS[role]})",
        add=f'Add the SPN signal attribute (BA_ "SPN" SG_ <id> <signal> {spn};) or name the signal with '
            f"{option} MESSAGE.SIGNAL.",
        choose=f"Choose one with {option} MESSAGE.SIGNAL.",
    )


@dataclass(frozen=True, slots=True, eq=False)
class Profile:
    """A loaded DBC with its two role codecs and the transmit period, ready for the ECU and the CCM.

    ``period_s`` is the speed message's ``GenMsgCycleTime`` (100 ms without one): the default loop
    period of every node, which ``--period`` or ``[run] period_s`` overrides.
    """

    name: str
    dbc_path: str
    database: Database
    speed: RoleCodec
    app: RoleCodec
    period_s: float

    @classmethod
    def load(
        cls,
        name: str = DEFAULT_PROFILE,
        dbc_path: str | None = None,
        speed_signal: str | None = None,
        app_signal: str | None = None,
    ) -> Profile:
        """Load a built-in profile by ``name``, or any DBC file by ``dbc_path`` (then ``name`` is unused).

        Roles are found by SPN so any J1939 DBC works unchanged; the ``*_signal`` overrides
        (``MESSAGE.SIGNAL``) cover DBCs without SPN attributes or with several candidates.
        """
        if dbc_path is not None:
            where, database = _load_user(dbc_path)
            profile_name = Path(dbc_path).stem
        else:
            where, database = _load_builtin(name)
            profile_name = name
        j1939_db = is_j1939_database(database)

        codecs: dict[str, RoleCodec] = {}
        for role, override in (("speed", speed_signal), ("app", app_signal)):
            message, signal = _resolve_role(where, database, role, override)
            is_j1939 = message.protocol == "j1939" or j1939_db
            try:
                codecs[role] = RoleCodec(message, signal, is_j1939=is_j1939)
            except ValueError as exc:
                raise ConfigError(
                    f"{where}: signal {message.name}.{signal.name} cannot carry the "
                    f"{_ROLE_DESCRIPTIONS[role]}: {exc}. Choose another with {_ROLE_OPTIONS[role]} "
                    "MESSAGE.SIGNAL."
                ) from exc

        speed, app = codecs["speed"], codecs["app"]
        if (speed.frame_id, speed.is_extended_id) == (app.frame_id, app.is_extended_id):
            ident = format_id(speed.frame_id, speed.is_extended_id)
            raise ConfigError(
                f"{where}: the speed signal {speed.message_name}.{speed.signal_name} and the APP signal "
                f"{app.message_name}.{app.signal_name} are both in frame {ident}. The ECU sends speed and "
                "the CCM sends APP, and each node ignores the frame it sends itself, so they need two "
                "different messages: choose them with --speed-signal and --app-signal MESSAGE.SIGNAL."
            )
        # The DBC's cycle time of the speed message is the loop period unless --period or
        # [run] period_s says otherwise (ecu_sim.settings.load.load).
        cycle_ms = speed.message.cycle_time
        period_s = cycle_ms / 1000.0 if cycle_ms is not None and cycle_ms > 0 else DEFAULT_PERIOD_S
        return cls(
            name=profile_name,
            dbc_path=where,
            database=database,
            speed=speed,
            app=app,
            period_s=period_s,
        )
