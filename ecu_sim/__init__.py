"""ecu-sim: a J1939 truck ECU simulator and cruise control module on a CAN bus.

``ecu_sim.__version__`` is the installed distribution's version, read from its metadata when first
asked for, so importing the package (every command does) never pays for ``importlib.metadata``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

#: the distribution name, as installed by pip and shown by ``ecu-sim --version``
DISTRIBUTION = "ecu-sim"
#: the version when no metadata is installed (e.g. the source tree on ``sys.path``): a valid PEP 440
#: version that sorts before every release
UNKNOWN_VERSION = "0+unknown"

if TYPE_CHECKING:
    __version__: str


def installed_version() -> str:
    """The version of the installed ``ecu-sim`` distribution, else :data:`UNKNOWN_VERSION`."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


if not TYPE_CHECKING:

    def __getattr__(name: str) -> str:
        if name == "__version__":
            return installed_version()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
