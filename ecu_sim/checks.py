"""The check every parameter set starts with: each field is a finite number.

Parameters arrive from INI files, environment variables and the command line; the physics checks
that follow (mass > 0, gains >= 0, ...) only make sense once every value is a real number.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any


def non_finite_fields(params: Any) -> list[str]:
    """One sentence per field of the dataclass ``params`` that is not a finite int or float; a
    field declared ``bool`` is a switch, not a number, so it is not asked to be one."""
    found: list[str] = []
    for f in fields(params):
        if f.type in (bool, "bool"):
            continue
        value = getattr(params, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            found.append(f"{f.name} must be a number (got {value!r})")
        elif not math.isfinite(value):
            found.append(f"{f.name} must be a finite number (got {value!r})")
    return found
