"""``ecu-sim diag``: a UDS tester for people, udsoncan's client over can-isotp on the bus the node
is on: identifiers, DTCs, and the reflash of a calibration image file.

udsoncan and can-isotp are the optional extra ``diag`` (a board never installs them): the
command asks :func:`require` before it imports the client.
"""

from __future__ import annotations

from ecu_sim.errors import ConfigError, needs_extra


def require() -> None:
    """ConfigError naming the extra when udsoncan or can-isotp is not installed."""
    try:
        import isotp  # noqa: F401
        import udsoncan  # noqa: F401
    except ImportError:
        raise ConfigError(needs_extra("ecu-sim diag", "udsoncan and can-isotp", "diag")) from None
