"""Durations as options and parameters give them (``--allowed-lateness 10m``,
``--retention 30d``, ``--history 7d``, the API's ``history``), in microseconds."""

from __future__ import annotations

import re
from decimal import Decimal

from xscl.lang.ast import UNIT_MICROS

__all__ = ["parse_duration"]

_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d)?\s*$")


def parse_duration(text: str) -> int:
    """``'90s'``, ``'1h'``, ``'250ms'`` (no unit = seconds) -> microseconds.

    Raises ``ValueError`` with a message fit for argparse.
    """
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 5m, 1h, 2d, 250ms)")
    amount, unit = match.group(1), match.group(2) or "s"
    return int(Decimal(amount) * UNIT_MICROS[unit])
