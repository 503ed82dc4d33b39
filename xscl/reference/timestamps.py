"""Event-time parsing and formatting for the reference evaluator (spec/XSCL.md sections 1 and 4).

Timestamps are integers: microseconds since 1970-01-01T00:00:00Z (UTC).

* Input (`ts` of the document envelope): an RFC 3339 date-time string
  (``YYYY-MM-DDTHH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]``; ``T`` may be ``t`` or a
  space, ``Z`` may be ``z``; no offset means UTC) or a JSON number of seconds
  since the epoch. Digits finer than a microsecond are truncated (towards the
  past: floor). Leap seconds (``:60``), date-only strings, numeric strings,
  booleans, NaN/Infinity and instants outside years 1..9999 are rejected.
* Output (result records): RFC 3339 in UTC with ``Z``; the fraction is written
  with exactly six digits when the microseconds are non-zero and omitted
  otherwise (``2006-06-01T10:00:00Z``, ``2006-06-01T10:00:00.000250Z``).
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation

from xscl.errors import TimestampError

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MIN_MICROS = (date(1, 1, 1).toordinal() - _EPOCH_ORDINAL) * MICROS_PER_DAY
_MAX_MICROS = (date(9999, 12, 31).toordinal() - _EPOCH_ORDINAL + 1) * MICROS_PER_DAY - 1

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?"
)


def parse_ts(value: object) -> int:
    """Microseconds since the epoch for an envelope `ts` (string or number).

    Raises ``TimestampError`` (``XSCL-C003``, the code every engine gives a bad ts).
    """
    if isinstance(value, bool):
        raise TimestampError(f"ts must be an RFC 3339 string or a number, not {value!r}")
    if isinstance(value, str):
        return _parse_rfc3339(value)
    if isinstance(value, (int, Decimal, float)):
        return _parse_seconds(value)
    raise TimestampError(f"ts must be an RFC 3339 string or a number, not {type(value).__name__}")


def _parse_seconds(value: int | Decimal | float) -> int:
    try:
        seconds = Decimal(value) if not isinstance(value, float) else Decimal(repr(value))
        if not seconds.is_finite():
            raise TimestampError(f"ts {value!r} is not a finite number")
        micros = int((seconds * MICROS_PER_SECOND).to_integral_value(rounding="ROUND_FLOOR"))
    except InvalidOperation as exc:
        raise TimestampError(f"ts {value!r} is not a number of seconds") from exc
    return _check_range(micros, value)


def _parse_rfc3339(text: str) -> int:
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise TimestampError(f"ts {text!r} is not an RFC 3339 date-time")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction, zulu, sign, off_h, off_m = match.group(7, 8, 9, 10, 11)
    try:
        ordinal = date(year, month, day).toordinal()
    except ValueError as exc:
        raise TimestampError(f"ts {text!r}: {exc}") from exc
    if hour > 23 or minute > 59 or second > 59:
        raise TimestampError(f"ts {text!r}: time of day out of range (leap seconds unsupported)")
    micros_of_second = int((fraction or "").ljust(6, "0")[:6])
    offset_minutes = 0
    if sign is not None:
        if int(off_h) > 23 or int(off_m) > 59:
            raise TimestampError(f"ts {text!r}: UTC offset out of range")
        offset_minutes = (int(off_h) * 60 + int(off_m)) * (1 if sign == "+" else -1)
    del zulu  # "Z" and no offset both mean UTC
    seconds_of_day = hour * 3600 + minute * 60 + second - offset_minutes * 60
    micros = (
        (ordinal - _EPOCH_ORDINAL) * MICROS_PER_DAY
        + seconds_of_day * MICROS_PER_SECOND
        + micros_of_second
    )
    return _check_range(micros, text)


def _check_range(micros: int, original: object) -> int:
    if not _MIN_MICROS <= micros <= _MAX_MICROS:
        raise TimestampError(f"ts {original!r} is outside years 1..9999")
    return micros


def format_ts(micros: int) -> str:
    """RFC 3339 UTC text of a timestamp (see the module docstring for the exact form)."""
    days, rest = divmod(micros, MICROS_PER_DAY)
    day = date.fromordinal(_EPOCH_ORDINAL + days)
    seconds, fraction = divmod(rest, MICROS_PER_SECOND)
    hour, seconds = divmod(seconds, 3600)
    minute, second = divmod(seconds, 60)
    text = f"{day.isoformat()}T{hour:02d}:{minute:02d}:{second:02d}"
    if fraction:
        text += f".{fraction:06d}"
    return text + "Z"
