"""A recording as a replay reads it: the tick journal, the log files in order, the recorded settings.

A run made with ``--record FILE`` left the frames in ``FILE`` (and the files its rotation closed)
and the tick journal in ``FILE.ticks`` (:mod:`ecu_sim.io.journal`). A log that cannot be read at
all (a damaged file) is a ConfigError naming the file and the frame.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import can
from can.io.blf import BLFParseError

from ecu_sim.cruise.modes import ControllerSettings
from ecu_sim.errors import ConfigError
from ecu_sim.faults.spec import Fault, FaultSchedule
from ecu_sim.io import journal, mcap_format
from ecu_sim.io.journal import TickRecord
from ecu_sim.settings.model import (
    CcmSettings,
    FmsSettings,
    J1939Settings,
    ProfileSettings,
    RunSettings,
    Settings,
    VehicleSettings,
)
from ecu_sim.vehicle.params import TruckParams
from ecu_sim.vehicle.route import GradeSchedule

log = logging.getLogger(__name__)

#: what python-can's readers raise on a damaged file: bad hex, a bad checksum or zlib stream, ...
READ_ERRORS = (ValueError, EOFError, IndexError, KeyError, OSError, struct.error, zlib.error,
               BLFParseError)


@dataclass
class Recording:
    path: str
    head: dict[str, Any]
    ticks: list[TickRecord]
    #: the log files in the order they were written: rotated parts, then FILE itself
    files: list[str]
    #: frames received after the last tick (the journal's ``end`` line); None: a run that was
    #: killed before it could stop, or a journal of version 1, which has no such line
    trailing: int | None = None
    #: where :meth:`frames` is: the file and the number of the frame it yielded last
    at: tuple[str, int] = ("", 0)
    #: tick index -> the controls a person applied right before it (the journal's control lines)
    controls: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """The recorded node: ``ecu`` or ``ccm``."""
        return str(self.head["node"])

    @property
    def directions_kept(self) -> bool:
        """Whether every received frame is marked received (version 1 kept echoes marked sent)."""
        return bool(self.head["version"] >= 2)

    def route(self) -> GradeSchedule | None:
        points = self.head.get("route")
        return GradeSchedule.from_points(points) if points else None

    def schedule(self) -> FaultSchedule:
        recorded = self.head["faults"]
        return FaultSchedule(tuple(Fault(**{**f, "dtc": tuple(f["dtc"]) if f.get("dtc") else None})
                                   for f in recorded["faults"]), recorded["seed"])

    def frames(self) -> Iterator[can.Message]:
        """The logged frames of all files in order; ConfigError names a file that cannot be read."""
        for name in self.files:
            number = 0
            try:
                mcap = name.lower().endswith(mcap_format.SUFFIX)
                with mcap_format.FrameReader(name) if mcap else can.LogReader(name) as reader:
                    for msg in reader:
                        number += 1
                        self.at = (name, number)
                        yield msg
            except READ_ERRORS as exc:
                kind = type(exc)
                reason = (kind.__name__ if kind.__module__ == "builtins"
                          else f"{kind.__module__}.{kind.__name__}")
                part = "" if name == self.path else f" (part of the recording {self.path})"
                raise ConfigError(
                    f"{name}{part}: frame {number + 1} cannot be read ({reason}: {exc}); the file "
                    f"is damaged or not in the format its suffix says, so there is nothing to "
                    f"replay: record the run again") from None


def load(path: str) -> Recording:
    """Read the tick journal of the recording ``path``; ConfigError says what is wrong."""
    if path.lower().endswith(mcap_format.SUFFIX):
        if not os.path.isfile(path):
            raise ConfigError(f"the recording {path} does not exist")
        inside = mcap_format.read_journal(path)
        return Recording(path, inside.head, inside.ticks, [path], inside.trailing, controls=inside.controls)
    read = journal.read(journal.journal_path(path), path)
    folder = os.path.dirname(path)
    files = [os.path.join(folder, part) for part in read.parts] + [path]
    for name in files:
        if not os.path.isfile(name):
            raise ConfigError(f"the recording {path} lacks its log file {name}")
    return Recording(path, read.head, read.ticks, files, read.trailing, controls=read.controls)


def settings_of(recording: Recording, dbc: str | None = None) -> Settings:
    """The recorded settings; ``dbc`` replaces the DBC path (a recording moved elsewhere)."""
    recorded = recording.head["settings"]
    try:
        profile = ProfileSettings(**recorded["profile"])
        settings = Settings(profile=profile if dbc is None else dataclasses.replace(profile, dbc=dbc),
                            truck=TruckParams(**recorded["truck"]),
                            vehicle=VehicleSettings(**recorded.get("vehicle", {})),
                            controller=ControllerSettings(**recorded["controller"]),
                            run=RunSettings(**recorded["run"]),
                            j1939=J1939Settings(**recorded.get("j1939", {})),
                            ccm=CcmSettings(**recorded.get("ccm", {})),
                            fms=_fms(recorded.get("fms", {})))
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{journal.journal_path(recording.path)}, line 1: settings this ecu-sim "
                          f"does not know ({exc}); replay with the version that recorded it") from None
    _check_road(recording, settings)
    checksum = recording.head.get("dbc", {}).get("sha256")
    path = settings.profile.dbc
    if path is None:
        return settings
    if dbc is None and not os.path.isfile(path):
        raise ConfigError(f"{recording.path} was recorded with the DBC {path}, which is not there any "
                          f"more; give the file with that content (sha256 {checksum or 'unknown'}) "
                          f"where it is now: `ecu-sim replay {recording.path} --dbc PATH`")
    if checksum != journal.file_checksum(path):
        log.warning("%s is not the DBC file the recording was made with (its checksum differs from "
                    "sha256 %s); the replay may differ", path, checksum)
    return settings


def _fms(recorded: dict[str, Any]) -> FmsSettings:
    """The recorded ``[fms]``, its start totals a tuple again (JSON gives a list)."""
    return FmsSettings(**{**recorded, "start_totals": tuple(recorded.get("start_totals", ()))})


def _check_road(recording: Recording, settings: Settings) -> None:
    """A road is read again from its file: it must be there, and should be the same."""
    name, checksum = settings.run.grade_file, recording.head.get("road_sha256")
    if checksum is None or name is None:
        return
    if not os.path.isfile(name):
        raise ConfigError(f"{recording.path} was recorded on the route {name}, which is not there any "
                          f"more; put the file with that content (sha256 {checksum}) back at that path")
    if journal.file_checksum(name) != checksum:
        log.warning("%s is not the route file the recording was made with (its checksum differs from "
                    "sha256 %s); the replay may differ", name, checksum)
