"""The cases of a campaign: the matrix's cartesian product, the explicit cases, the random draws.

A case is the list of settings the campaign gives it (base first, then its own), as text the
settings loader reads like an INI file's, each with the line it came from. Its id is a hash of
those settings after they are typed by the settings themselves (so ``90`` and ``90.0`` are one
case): the same case gets the same id on every machine, in every worker and after a change to the
code, and a setting the code gains with a default does not change the ids of existing campaigns,
so ``campaign compare`` can match the cases of two versions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecu_sim.campaign.spec import (
    ATTACK_SECTION,
    DRIVER_KEYS,
    DRIVER_SECTION,
    NO_ATTACK,
    PROGRAM_MODE,
    Campaign,
    Program,
    Value,
)
from ecu_sim.errors import ConfigError
from ecu_sim.runs import attacked
from ecu_sim.settings import load as settings_load
from ecu_sim.settings.model import Settings
from ecu_sim.settings.sources import Given, read_ini

#: hex digits of a case id: 64 bits, no collision in any campaign a person runs
ID_DIGITS = 16
#: between a case's id and its run number when the campaign repeats each case
REPEAT_MARK = "-"
#: ``driver.mode = tsc1``: the CCM, sending TSC1 and XBR (``ccm.command = tsc1``)
TSC1_MODE = "tsc1"


def base_id(case_id: str) -> str:
    """A case's id without its run number, from the id alone (a results row has no Case): the
    same for every repetition of the case."""
    return case_id.partition(REPEAT_MARK)[0]


@dataclass(frozen=True)
class Case:
    """One scenario: its id, its settings as ``(section.key, text, origin)``, its position."""

    id: str
    index: int
    values: tuple[tuple[str, Any, str], ...]
    #: the campaign file's folder: relative file names in the settings start there
    folder: str
    config: str | None = None
    settle_band_kph: float = 1.0
    #: the campaign's ``distance_m``: the case ends where its truck has driven this far
    distance_m: float | None = None
    #: the controller under test that works the pedal, when the campaign has a ``[program]``
    program: Program | None = None

    @property
    def base_id(self) -> str:
        """The id without its run number: the same for every repetition of the case."""
        return base_id(self.id)

    def given(self) -> list[Given]:
        """The case's settings for ``ecu_sim.settings.load.build``, after the campaign's INI file."""
        found = read_ini(self.config) if self.config else []
        for dotted, raw, origin in self.values:
            section, key = dotted.split(".", 1)
            if section == ATTACK_SECTION:
                continue
            if section != DRIVER_SECTION:
                found.append(Given(section, key, _resolve_path(raw, self.folder), origin))
            elif key == "mode" and raw == TSC1_MODE:  # the CCM commanding by TSC1 and XBR
                found.append(Given("ccm", "command", "tsc1", origin))
        return found

    def settings(self) -> Settings:
        return settings_load.build(self.given())

    def driver(self) -> tuple[str, float]:
        """``(mode, app_pct)``: the CCM unless the case says otherwise (``tsc1`` is the CCM too,
        its command set by :meth:`given`)."""
        chosen = {dotted.split(".", 1)[1]: raw for dotted, raw, _ in self.values
                  if dotted.startswith(DRIVER_SECTION + ".")}
        mode = str(chosen.get("mode", "ccm" if self.program is None else PROGRAM_MODE))
        return "ccm" if mode == TSC1_MODE else mode, float(chosen.get("app_pct", 0.0))

    def attack(self) -> tuple[tuple[str, ...], int]:
        """The case's attacks as ``--attack`` specs (none for ``none``) and their seed."""
        chosen = {dotted.split(".", 1)[1]: raw for dotted, raw, _ in self.values
                  if dotted.startswith(ATTACK_SECTION + ".")}
        kinds = str(chosen.get("kind", NO_ATTACK))
        specs = tuple(s.strip() for s in kinds.split(";") if s.strip() and s.strip() != NO_ATTACK)
        return specs, int(str(chosen.get("seed", "0")), 0)

    def columns(self) -> dict[str, str]:
        """The case's own settings, as they go into its row of results."""
        return {dotted: _text(raw) for dotted, raw, _ in self.values}


def expand(campaign: Campaign) -> list[Case]:
    """Every case once, in the order the file gives them; a case listed twice runs once. With a
    ``[program]`` that repeats, each case ``repeat`` times, its ids numbered ``ID-1`` .. ``ID-R``."""
    cases: dict[str, Case] = {}
    for own in _own_settings(campaign):
        case = _case(campaign, [*campaign.base, *own], len(cases))
        cases.setdefault(case.id, case)
    repeat = 1 if campaign.program is None else campaign.program.repeat
    if repeat == 1:
        return list(cases.values())
    return [dataclasses.replace(case, id=f"{case.id}{REPEAT_MARK}{run}", index=index * repeat + run - 1)
            for index, case in enumerate(cases.values()) for run in range(1, repeat + 1)]


def _own_settings(campaign: Campaign) -> Iterator[list[Value]]:
    if campaign.matrix:
        for combination in itertools.product(*([Value(v.dotted, item, v.line) for item in v.value]
                                               for v in campaign.matrix)):
            yield list(combination)
    yield from (list(case) for case in campaign.cases)
    rng = random.Random(campaign.random_seed)
    for _ in range(campaign.random_count):
        yield [Value(v.dotted, _draw(rng, v.value), v.line) for v in campaign.random]
    if not (campaign.matrix or campaign.cases or campaign.random_count):
        yield []  # the base alone is one case


def _draw(rng: random.Random, distribution: dict[str, list[Any]]) -> Any:
    kind, args = next(iter(distribution.items()))
    if kind == "uniform":
        return rng.uniform(float(args[0]), float(args[1]))
    if kind == "integers":
        return rng.randint(int(args[0]), int(args[1]))
    return rng.choice(args)


def _case(campaign: Campaign, values: Sequence[Value], index: int) -> Case:
    merged: dict[str, Value] = {}
    for value in values:  # a case's own value replaces the base's
        merged.pop(value.dotted, None)
        merged[value.dotted] = value
    folder = str(campaign.folder.resolve())
    config = None if campaign.config is None else str((campaign.folder / campaign.config).resolve())
    listed = tuple((v.dotted, _raw(v.value), campaign.where(v)) for v in merged.values())
    draft = Case("", index, listed, folder, config, campaign.settle_band_kph, campaign.distance_m,
                 campaign.program)
    _check_driver(draft, campaign)
    _check_attack(draft)
    settings = draft.settings()  # ConfigError names the key and line of a bad value
    return dataclasses.replace(draft, id=case_id(draft, settings))


def _check_attack(case: Case) -> None:
    origins = {dotted: origin for dotted, _, origin in case.values}
    try:
        specs, _ = case.attack()
    except ValueError:
        raise ConfigError(f"{origins.get('attack.seed')}: attack.seed must be an integer") from None
    attacked.check(specs, f"{origins.get('attack.kind')}: attack.kind")


def _check_driver(case: Case, campaign: Campaign) -> None:
    for dotted, raw, origin in case.values:
        section, key = dotted.split(".", 1)
        if section != DRIVER_SECTION:
            continue
        allowed = DRIVER_KEYS[key]
        if allowed is not None and raw not in allowed:
            raise ConfigError(f"{origin}: driver.{key} must be one of {', '.join(allowed)} (got {raw!r})")
        if key == "mode" and (raw == PROGRAM_MODE) != (campaign.program is not None):
            raise ConfigError(f"{origin}: " + (
                "driver.mode = program needs a [program] table with the controller's command"
                if raw == PROGRAM_MODE else
                f"driver.mode = {raw}, but the campaign's [program] works the pedal of every case"))
        if allowed is None:
            try:
                pct = float(raw)
            except ValueError:
                pct = -1.0
            if not 0 <= pct <= 100:
                raise ConfigError(f"{origin}: driver.{key} must be a number within 0..100 (got {raw!r})")


def case_id(case: Case, settings: Settings) -> str:
    """A hash of the case's settings as the settings type them; see the module docstring."""
    typed: dict[str, Any] = {}
    for dotted, raw, _ in case.values:
        section, key = dotted.split(".", 1)
        value = raw if section in (DRIVER_SECTION, ATTACK_SECTION) else getattr(getattr(settings, section),
                                                                                 key, raw)
        typed[dotted] = list(value) if isinstance(value, tuple) else value
    if typed.get("driver.mode", "ccm") != "pedal":
        typed.pop("driver.app_pct", None)  # meaningless without a constant pedal
    if typed.get("driver.mode") in ("ccm", PROGRAM_MODE):
        del typed["driver.mode"]  # the default (the program's, with one), written out or not
    if "driver.app_pct" in typed:
        typed["driver.app_pct"] = float(typed["driver.app_pct"])
    text = json.dumps(typed, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=ID_DIGITS // 2).hexdigest()


def _raw(value: Any) -> Any:
    """A TOML value as the settings loader reads text: lists as lists of words, the rest as text."""
    if isinstance(value, list):
        return [str(item) for item in value]
    return _text(value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return str(value)


def _resolve_path(raw: Any, folder: str) -> Any:
    """A relative file name that exists next to the campaign file, made absolute; any other value
    unchanged, so a case runs the same wherever its worker's current directory is."""
    if isinstance(raw, str) and raw and not Path(raw).is_absolute() and (Path(folder) / raw).is_file():
        return str(Path(folder) / raw)
    return raw
