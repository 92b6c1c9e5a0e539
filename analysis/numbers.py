"""What counts as a number in the JSON the analysis reads: an int or float, never a bool (JSON's
true/false load as bool, a subclass of int). TypeGuards, so that a checked value is a float to the
type checker as well."""
from __future__ import annotations

import math
from typing import Any, TypeGuard


def number(v: Any) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool)


def finite(v: Any) -> TypeGuard[float]:
    return number(v) and math.isfinite(v)
