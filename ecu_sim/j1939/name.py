"""The 64-bit J1939 NAME: who a node is, and which of two claimants keeps an address.

The fields and their bit positions are the Address Claimed message of the layer's DBC, so
cantools packs them (:mod:`ecu_sim.j1939.layouts`). Two NAMEs compare as the 64-bit unsigned
number the eight bytes spell least significant byte first: the lower one wins an address.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ecu_sim.j1939 import layouts

_SIGNALS = {
    "identity_number": "IdentityNumber",
    "manufacturer_code": "ManufacturerCode",
    "ecu_instance": "EcuInstance",
    "function_instance": "FunctionInstance",
    "function": "Function",
    "vehicle_system": "VehicleSystem",
    "vehicle_system_instance": "VehicleSystemInstance",
    "industry_group": "IndustryGroup",
    "arbitrary_address_capable": "ArbitraryAddressCapable",
}
_BITS = {"identity_number": 21, "manufacturer_code": 11, "ecu_instance": 3, "function_instance": 5,
         "function": 8, "vehicle_system": 7, "vehicle_system_instance": 4, "industry_group": 3,
         "arbitrary_address_capable": 1}


@dataclass(frozen=True, order=False)
class Name:
    """The NAME's fields; ``arbitrary_address_capable`` lets a loser claim another address."""

    identity_number: int = 0
    manufacturer_code: int = 0
    ecu_instance: int = 0
    function_instance: int = 0
    function: int = 0
    vehicle_system: int = 0
    vehicle_system_instance: int = 0
    industry_group: int = 0
    arbitrary_address_capable: bool = False

    def __post_init__(self) -> None:
        for field, bits in _BITS.items():
            value = int(getattr(self, field))
            if not 0 <= value < 1 << bits:
                raise ValueError(f"NAME {field} must be 0..{(1 << bits) - 1}, got {value}")

    def to_bytes(self) -> bytes:
        """The eight bytes of Address Claimed (the reserved bit is 0)."""
        values = {_SIGNALS[k]: int(v) for k, v in asdict(self).items()}
        values["Reserved"] = 0
        return layouts.encode(layouts.ADDRESS_CLAIMED, values)

    @classmethod
    def from_bytes(cls, data: bytes) -> Name:
        """The NAME in an Address Claimed payload (``ValueError`` when shorter than eight bytes)."""
        raw = layouts.decode(layouts.ADDRESS_CLAIMED, data)
        fields = {k: raw[signal] for k, signal in _SIGNALS.items()}
        capable = bool(fields.pop("arbitrary_address_capable"))
        return cls(**fields, arbitrary_address_capable=capable)

    @property
    def value(self) -> int:
        """The NAME as one number: what claimants compare."""
        return int.from_bytes(self.to_bytes(), "little")

    def wins_against(self, other: Name) -> bool:
        """Whether this NAME keeps an address that ``other`` claims too (the lower NAME wins)."""
        return self.value < other.value

    def __str__(self) -> str:
        return f"0x{self.value:016X}"
