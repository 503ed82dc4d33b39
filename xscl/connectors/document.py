"""The ``Document`` envelope every connector produces, and its JSONL form (spec section 4).

A document is one event of a stream (spec section 1): ``stream``, ``docid`` (unique
within the stream; the first delivery wins), ``ts_micros`` (event time as integer UTC
microseconds since the epoch: Spark's precision) and the XML text. Connectors may add
where it came from (``source``, e.g. the feed URL) and a few string metadata fields.

JSONL envelope, one per line, UTF-8::

    {"stream": "S", "docid": "d1", "ts": "2006-06-01T10:00:00Z", "xml": "<book/>"}

``ts`` is RFC 3339 (``T`` or a space between date and time, ``Z`` or ``±HH:MM``; no
offset means UTC) or a JSON number of seconds since the epoch. Digits finer than a
microsecond are truncated (towards the past), numbers are read exactly (as decimals,
never through a binary float). Written envelopes use ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import IO, Any

from xscl.connectors.dead_letters import DeadLetter
from xscl.errors import (
    ConnectorError,
    EnvelopeFieldError,
    EnvelopeSyntaxError,
    StreamNameError,
    TimestampError,
)

STREAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MIN_MICROS = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
_MAX_MICROS = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z
_RFC3339 = re.compile(
    r"(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[Tt ]"
    r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:\.(?P<frac>\d+))?"
    r"(?P<tz>[Zz]|[+-]\d{2}:\d{2})?\Z"
)


@dataclass(frozen=True)
class Document:
    """One document of a stream; see the module docstring."""

    stream: str
    docid: str
    ts_micros: int
    xml: str
    source: str | None = None
    meta: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: read from a spool: the newest ``ts_micros`` of every record before it (None: the
    #: first record, or a spool written before records carried it); not part of equality
    newest_before: int | None = field(default=None, hash=False, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        """The deduplication key (spec section 1: same stream and docid = same document)."""
        return (self.stream, self.docid)

    @property
    def ts(self) -> str:
        """``ts_micros`` as RFC 3339 UTC text."""
        return format_ts(self.ts_micros)


def check_stream_name(name: str, *, source: str | None = None, line: int | None = None) -> str:
    """Return ``name`` if it is a valid stream name, else raise ``StreamNameError``."""
    if not STREAM_NAME.match(name):
        raise StreamNameError(f"invalid stream name {name!r}", source=source, line=line)
    return name


def format_ts(ts_micros: int) -> str:
    """RFC 3339 UTC text of integer microseconds (fraction only when non-zero)."""
    moment = _EPOCH + dt.timedelta(microseconds=ts_micros)
    text = f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def parse_ts(value: object, *, source: str | None = None, line: int | None = None) -> int:
    """Integer UTC microseconds of an RFC 3339 string or a number of seconds.

    Raises ``TimestampError`` (``XSCL-C003``) for anything else, including booleans,
    non-finite numbers and instants outside years 1..9999.
    """
    if isinstance(value, bool):
        raise TimestampError(
            f"ts must be a string or number, got {value!r}", source=source, line=line
        )
    if isinstance(value, (int, Decimal, float)):
        try:
            seconds = Decimal(value) if not isinstance(value, Decimal) else value
            micros = int((seconds * 1_000_000).to_integral_value(rounding="ROUND_FLOOR"))
        except (InvalidOperation, ValueError, OverflowError) as exc:
            raise TimestampError(
                f"ts {value!r} is not a finite number", source=source, line=line
            ) from exc
        return _check_range(micros, value, source, line)
    if not isinstance(value, str):
        raise TimestampError(
            f"ts must be a string or number, got {type(value).__name__}", source=source, line=line
        )
    match = _RFC3339.match(value.strip())
    if not match:
        raise TimestampError(
            f"ts {value!r} is not RFC 3339 (e.g. 2006-06-01T10:00:00Z)", source=source, line=line
        )
    frac = (match["frac"] or "")[:6].ljust(6, "0")
    tz = match["tz"]
    offset = dt.timedelta(0)
    if tz and tz not in ("Z", "z"):
        sign = -1 if tz[0] == "-" else 1
        hours, minutes = int(tz[1:3]), int(tz[4:6])
        if hours > 23 or minutes > 59:
            raise TimestampError(f"ts {value!r} has an invalid offset", source=source, line=line)
        offset = sign * dt.timedelta(hours=hours, minutes=minutes)
    try:
        second = int(match["s"])
        leap = second == 60  # RFC 3339 allows a leap second; fold it onto :59.999999
        naive = dt.datetime(
            int(match["y"]),
            int(match["mo"]),
            int(match["d"]),
            int(match["h"]),
            int(match["mi"]),
            59 if leap else second,
            int(frac),
        )
        if leap:
            naive = naive.replace(microsecond=999_999)
    except ValueError as exc:
        raise TimestampError(f"ts {value!r}: {exc}", source=source, line=line) from exc
    delta = naive.replace(tzinfo=dt.timezone.utc) - _EPOCH - offset
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return _check_range(micros, value, source, line)


def _check_range(micros: int, value: object, source: str | None, line: int | None) -> int:
    if not _MIN_MICROS <= micros <= _MAX_MICROS:
        raise TimestampError(f"ts {value!r} is outside years 1..9999", source=source, line=line)
    return micros


def to_envelope(doc: Document) -> dict[str, Any]:
    """The JSON object of a document (``source``/``meta`` only when set)."""
    out: dict[str, Any] = {"stream": doc.stream, "docid": doc.docid, "ts": doc.ts, "xml": doc.xml}
    if doc.source is not None:
        out["source"] = doc.source
    if doc.meta:
        out["meta"] = dict(doc.meta)
    return out


def envelope_line(doc: Document) -> str:
    """One JSONL line (no trailing newline) for ``doc``."""
    return json.dumps(to_envelope(doc), ensure_ascii=False, separators=(",", ":"))


#: A byte that is not UTF-8, as ``surrogateescape`` decodes it.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_problem(exc: ValueError) -> str:
    """What ``json.loads`` found wrong in one JSONL line, placed by column.

    ``str(exc)`` says ``line 1 column 5 (char 4)``: the line within the one-line
    text, always 1, next to the file line the dead letter names.
    """
    if isinstance(exc, json.JSONDecodeError):
        if exc.lineno == 1:
            return f"{exc.msg} at column {exc.colno}"
        return f"{exc.msg} at character {exc.pos + 1}"
    return str(exc)


def parse_envelope(text: str, *, source: str | None = None, line: int | None = None) -> Document:
    """Parse one JSONL envelope line; raise a ``ConnectorError`` saying what is wrong.

    A line read with ``surrogateescape`` that holds bytes which are not UTF-8 is not
    JSON text (RFC 8259 8.1): ``XSCL-C001`` naming the first such byte and its column.
    """
    undecodable = _UNDECODABLE.search(text)
    if undecodable is not None:
        at = undecodable.start() + 1
        byte = ord(undecodable.group()) - 0xDC00
        raise EnvelopeSyntaxError(
            f"not UTF-8 text: byte 0x{byte:02X} at column {at}", source=source, line=line, column=at
        )
    try:
        obj = json.loads(text, parse_float=Decimal, parse_constant=_reject_constant)
    except ValueError as exc:
        column = exc.colno if isinstance(exc, json.JSONDecodeError) and exc.lineno == 1 else None
        raise EnvelopeSyntaxError(
            f"not valid JSON: {json_problem(exc)}", source=source, line=line, column=column
        ) from exc
    if not isinstance(obj, dict):
        raise EnvelopeSyntaxError(
            f"expected a JSON object, got {type(obj).__name__}", source=source, line=line
        )
    return envelope_to_document(obj, source=source, line=line)


def envelope_to_document(
    obj: Mapping[str, Any], *, source: str | None = None, line: int | None = None
) -> Document:
    """Validate a decoded envelope object and build the ``Document``."""
    for name in ("stream", "docid", "ts", "xml"):
        if name not in obj:
            raise EnvelopeFieldError(f"missing field {name!r}", source=source, line=line)
    stream, docid, xml = obj["stream"], obj["docid"], obj["xml"]
    if not isinstance(stream, str):
        raise EnvelopeFieldError("field 'stream' must be a string", source=source, line=line)
    check_stream_name(stream, source=source, line=line)
    if isinstance(docid, int) and not isinstance(docid, bool):
        docid = str(docid)
    if not isinstance(docid, str) or not docid:
        raise EnvelopeFieldError(
            "field 'docid' must be a non-empty string", source=source, line=line
        )
    if not isinstance(xml, str):
        raise EnvelopeFieldError("field 'xml' must be a string", source=source, line=line)
    ts_micros = parse_ts(obj["ts"], source=source, line=line)
    doc_source = obj.get("source")
    if doc_source is not None and not isinstance(doc_source, str):
        raise EnvelopeFieldError("field 'source' must be a string", source=source, line=line)
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise EnvelopeFieldError(
            "field 'meta' must be an object of strings", source=source, line=line
        )
    return Document(stream, docid, ts_micros, xml, doc_source, meta)


def read_envelopes(
    lines: Iterable[str], *, source: str | None = None
) -> Iterator[Document | DeadLetter]:
    """Documents of JSONL ``lines``; a bad line becomes a ``DeadLetter`` and reading goes on.

    Blank lines are skipped. Line numbers in dead letters are 1-based.
    """
    for _, item in read_numbered_envelopes(lines, source=source):
        yield item


def read_numbered_envelopes(
    lines: Iterable[str], *, source: str | None = None
) -> Iterator[tuple[int, Document | DeadLetter]]:
    """``read_envelopes`` with each item's 1-based line number (blank lines count).

    A caller that dead-letters a document later (late, bad XML) names this line,
    the one a dead letter of ``read_envelopes`` would name, not the item's index.
    """
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            yield number, parse_envelope(text, source=source, line=number)
        except ConnectorError as exc:
            known = _known_fields(text)
            yield number, DeadLetter.from_error(exc, stream=known["stream"], docid=known["docid"])


def read_envelope_file(path: str | Path) -> Iterator[Document | DeadLetter]:
    """``read_envelopes`` over a UTF-8 file; undecodable bytes make that line a dead letter."""
    for _, item in read_numbered_envelope_file(path):
        yield item


def read_numbered_envelope_file(path: str | Path) -> Iterator[tuple[int, Document | DeadLetter]]:
    """``read_numbered_envelopes`` over a UTF-8 file (see ``read_envelope_file``)."""
    with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as handle:
        yield from read_numbered_envelopes(handle, source=str(path))


def _known_fields(text: str) -> dict[str, str | None]:
    """Best-effort stream/docid of a rejected line, for the dead letter (none of a line
    that is not UTF-8: what it says cannot be read)."""
    if _UNDECODABLE.search(text):
        return {"stream": None, "docid": None}
    try:
        obj = json.loads(text, parse_float=Decimal)
    except ValueError:
        return {"stream": None, "docid": None}
    if not isinstance(obj, dict):
        return {"stream": None, "docid": None}
    stream, docid = obj.get("stream"), obj.get("docid")
    return {
        "stream": stream if isinstance(stream, str) else None,
        "docid": str(docid)
        if isinstance(docid, (str, int)) and not isinstance(docid, bool)
        else None,
    }


def write_envelopes(docs: Iterable[Document], handle: IO[str]) -> int:
    """Write ``docs`` as JSONL to ``handle``; return how many were written."""
    count = 0
    for doc in docs:
        handle.write(envelope_line(doc))
        handle.write("\n")
        count += 1
    return count
