"""The driver's optional signals, found in the DBC by SPN: brake pedal position and cruise commands.

They are optional: a DBC without them (the ``amp`` profile) still has a driver, who then only
works the accelerator. Which signal plays a role is decided by its J1939 ``SPN`` attribute, as
for speed and APP, so a customer's DBC with these parameters works unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ecu_sim.codec.profile import Profile, is_j1939_database
from ecu_sim.codec.role import RoleCodec
from ecu_sim.codec.spn import optional_carrier
from ecu_sim.errors import ConfigError

SPN_BRAKE_PEDAL_POSITION: Final = 521
SPN_CRUISE_DISABLE_COMMAND: Final = 5603
SPN_CRUISE_RESUME_COMMAND: Final = 5604


@dataclass(frozen=True)
class DriverRoles:
    """The codecs of the driver's optional signals; None where the DBC has no such signal."""

    brake: RoleCodec | None
    cancel: RoleCodec | None
    resume: RoleCodec | None

    @classmethod
    def of(cls, profile: Profile) -> DriverRoles:
        return cls(*(_optional(profile, spn) for spn in (
            SPN_BRAKE_PEDAL_POSITION, SPN_CRUISE_DISABLE_COMMAND, SPN_CRUISE_RESUME_COMMAND)))

    def present(self) -> list[RoleCodec]:
        return [codec for codec in (self.brake, self.cancel, self.resume) if codec is not None]


def _optional(profile: Profile, spn: int) -> RoleCodec | None:
    database = profile.database
    found = optional_carrier(database, spn, profile.dbc_path, "the driver needs exactly one")
    if found is None:
        return None
    message, signal = found
    try:
        return RoleCodec(message, signal, is_j1939=message.protocol == "j1939" or
                         is_j1939_database(database))
    except ValueError as exc:
        raise ConfigError(f"{profile.dbc_path}: signal {message.name}.{signal.name} (SPN {spn}) "
                          f"cannot be sent by the driver: {exc}") from None
