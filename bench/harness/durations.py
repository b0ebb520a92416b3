"""Durations as the command lines write them: "500ms", "5s", "1.5s", "2m", "1h"."""

import re

from .console import UsageError

_UNITS = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000}


def to_ms(text, zero_allowed=False):
    """Milliseconds of TEXT (rounded); "0" only when zero_allowed; UsageError otherwise."""
    if zero_allowed and text == "0":
        return 0
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)", text or "")
    if not match:
        raise UsageError(f"bad duration {text}")
    return int(float(match.group(1)) * _UNITS[match.group(2)] + 0.5)
