"""``[j1939]``: the ECU or CCM as a J1939 network member, and the network the ECU process hosts."""

from __future__ import annotations

from dataclasses import dataclass

#: ``[j1939] network``: the ECU as one J1939 node, or the powertrain as four
NETWORKS = ("single", "powertrain")
POWERTRAIN = "powertrain"


@dataclass(frozen=True)
class J1939Settings:
    """The node as a J1939 network member: its NAME, its address, whether it claims, its IDs.

    Unset (None) values come from the DBC's node attributes (``NmStationAddress``, ``NmJ1939*``),
    else from the node's own frame identifier and ecu-sim's defaults.
    """

    #: None: on, except for the amp profile, whose testbed bus carries its two frames only
    address_claim: bool | None = None
    address: int | None = None
    identity_number: int | None = None
    manufacturer_code: int | None = None
    function: int | None = None
    function_instance: int | None = None
    ecu_instance: int | None = None
    vehicle_system: int | None = None
    vehicle_system_instance: int | None = None
    industry_group: int | None = None
    arbitrary_address_capable: bool | None = None
    #: Component ID, Software ID and ECU ID as their fields separated by ``*`` (make*model*serial*unit)
    component_id: str | None = None
    software_id: str | None = None
    ecu_id: str | None = None
    #: single: the ECU is one J1939 node; powertrain: engine, transmission, brakes and retarder,
    #: each its own node, at a 10 ms base tick (class6 on the j1939 profile only; docs/j1939.md)
    network: str = "single"
    #: source addresses whose TSC1 the engine and the retarder accept; empty: any
    tsc1_sources: tuple[str, ...] = ()
    #: DBC files whose nodes the process sends as the rest of the bus (``--network powertrain``)
    restbus: tuple[str, ...] = ()

    def accepted_tsc1_sources(self) -> frozenset[int] | None:
        """The addresses ``tsc1_sources`` names, None for any (checked by :meth:`problems`)."""
        return frozenset(int(a, 0) for a in self.tsc1_sources) if self.tsc1_sources else None

    def problems(self) -> list[str]:
        found = []
        if self.address is not None and not 0 <= self.address <= 253:
            found.append(f"address must be 0..253 (got {self.address})")
        if self.network not in NETWORKS:
            found.append(f"network must be single or powertrain (got {self.network!r})")
        for text in self.tsc1_sources:
            try:
                valid = 0 <= int(text, 0) <= 253
            except ValueError:
                valid = False
            if not valid:
                found.append(f"tsc1_sources must list J1939 source addresses 0..253, decimal or 0x hex "
                             f"(got {text!r})")
        for key in ("component_id", "software_id", "ecu_id"):
            text = getattr(self, key)
            if text is not None and not text.isascii():
                found.append(f"{key} must be ASCII text (got {text!r})")
        return found
