"""Our table of UDS numbers is udsoncan's: the services' identifiers and the response codes."""

from __future__ import annotations

from udsoncan import services
from udsoncan.Response import Response

from ecu_sim.uds.codes import Nrc, Service


def test_service_identifiers_are_udsoncans() -> None:
    by_name = {name.replace("_", "").lower(): sid for name, sid in Service.__members__.items()}
    theirs = {name.lower(): getattr(services, name)._sid for name in dir(services)
              if isinstance(getattr(services, name), type) and hasattr(getattr(services, name), "_sid")}
    assert {name: theirs[name] for name in by_name} == by_name


def test_response_codes_are_udsoncans() -> None:
    code = Response.Code
    theirs = {
        name.replace("_", "").lower(): value for name, value in vars(code).items()
        if isinstance(value, int) and not name.startswith("_")}
    ours = {name.replace("_", "").lower(): int(value) for name, value in Nrc.__members__.items()}
    assert {name: theirs[name] for name in ours} == ours
