"""Documents and the JSON Lines document envelope (spec/XSCL.md sections 1 and 4).

``read_envelopes`` turns envelope lines into ``Document`` objects and
dead-letter records. It never stops on bad input: a line that is not UTF-8 or
not JSON, an envelope with missing/ill-typed fields, a bad ``ts``, malformed,
too large or too deep XML, or (with an allowed lateness) a late document becomes
one ``DeadLetter`` and reading continues. The record is the one every engine writes
(``xscl.connectors.dead_letters``: the public output format, like the error codes);
what goes in it is decided here.

Decisions: blank lines are skipped (they are not documents); envelope keys other
than ``stream``/``docid``/``ts``/``xml`` are ignored; ``docid`` must be a
non-empty string. A re-delivered ``(stream, docid)`` is ignored (first delivery
wins, spec 1) and counted, whatever its content, also when the first delivery was
dead-lettered for its XML or its lateness (the spool, which the streaming job reads,
keeps only the first delivery too); an envelope without a valid stream name or
``ts`` is not a delivery, so its docid may come again. With an
allowed lateness L, a document whose ts is older than ``max ts of the documents
delivered so far (file order) - L`` is dead-lettered with reason ``late``; a
delivered document is one with a valid envelope that is not a re-delivery, whether
its XML was accepted or not (a late one cannot raise the max).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any

from lxml import etree

from xscl.connectors.dead_letters import DeadLetter
from xscl.errors import TimestampError, XmlDocumentError
from xscl.reference.timestamps import parse_ts
from xscl.reference.xmltree import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, DocTree, parse_xml

STREAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")

@dataclass(frozen=True)
class Document:
    """One event: a parsed XML document of a stream with its event time (UTC microseconds)."""

    stream: str
    docid: str
    ts_micros: int
    xml: str
    tree: etree._ElementTree = field(compare=False, repr=False)

    @cached_property
    def index(self) -> DocTree:
        """The node index of the tree (built once, on first use)."""
        return DocTree(self.tree)

    @property
    def key(self) -> tuple[str, str]:
        return (self.stream, self.docid)


def make_document(
    stream: str,
    docid: str,
    ts: object,
    xml: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Document:
    """Build a Document, parsing ``ts`` (RFC 3339 text, seconds, or int micros) and the XML.

    An ``int`` ``ts`` given here is taken as microseconds (this is the API for
    programmatic use); envelope numbers are seconds and go through ``parse_ts``.
    Raises ``TimestampError`` or ``XmlDocumentError`` (both ``ValueError``).
    """
    ts_micros = ts if isinstance(ts, int) and not isinstance(ts, bool) else parse_ts(ts)
    tree = parse_xml(xml, max_bytes=max_bytes, max_depth=max_depth)
    return Document(stream, docid, ts_micros, xml, tree)


@dataclass
class EnvelopeStats:
    """Counters of one ``read_envelopes`` call."""

    lines: int = 0
    accepted: int = 0
    duplicates: int = 0
    dead_letters: int = 0
    late: int = 0


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number here")


def read_envelopes(
    lines: Iterable[str | bytes],
    *,
    allowed_lateness_micros: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    stats: EnvelopeStats | None = None,
) -> tuple[list[Document], list[DeadLetter]]:
    """Read envelope lines (file order = arrival order) into documents and dead letters."""
    stats = stats if stats is not None else EnvelopeStats()
    documents: list[Document] = []
    dead: list[DeadLetter] = []
    seen: set[tuple[str, str]] = set()
    max_ts: int | None = None

    def reject(line: int, stream: str | None, docid: str | None, reason: str, code: str) -> None:
        dead.append(DeadLetter(None, line, stream, docid, reason, code))
        stats.dead_letters += 1

    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                stats.lines += 1
                column = len(raw[: exc.start].decode("utf-8")) + 1
                reason = f"line is not UTF-8 text: byte 0x{raw[exc.start]:02X} at column {column}"
                reject(number, None, None, reason, "XSCL-C001")
                continue
        else:
            text = raw
        if not text.strip():
            continue
        stats.lines += 1
        try:
            envelope = json.loads(text, parse_float=Decimal, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            # placed within the line: str(exc) says "line 1", next to the file's line number
            where = f"column {exc.colno}" if exc.lineno == 1 else f"character {exc.pos + 1}"
            reason = f"line is not valid JSON: {exc.msg} at {where}"
            reject(number, None, None, reason, "XSCL-C001")
            continue
        except ValueError as exc:
            reject(number, None, None, f"line is not valid JSON: {exc}", "XSCL-C001")
            continue
        if not isinstance(envelope, dict):
            reject(number, None, None, "line is not a JSON object", "XSCL-C001")
            continue
        stream, docid, ts, xml = (envelope.get(k) for k in ("stream", "docid", "ts", "xml"))
        stream_s = stream if isinstance(stream, str) else None
        docid_s = docid if isinstance(docid, str) else None
        problem = _envelope_problem(stream, docid, ts, xml)
        if problem is not None:
            reject(number, stream_s, docid_s, problem, "XSCL-C002")
            continue
        assert isinstance(stream, str) and isinstance(docid, str) and isinstance(xml, str)
        if not STREAM_NAME.fullmatch(stream):
            reject(number, stream, docid, f"invalid stream name {stream!r}", "XSCL-C004")
            continue
        if (stream, docid) in seen:
            stats.duplicates += 1
            continue
        try:
            ts_micros = parse_ts(ts)
        except TimestampError as exc:
            reject(number, stream, docid, exc.message, exc.code)
            continue
        # delivered: a later copy is a re-delivery, whatever becomes of this one
        seen.add((stream, docid))
        try:
            tree = parse_xml(xml, max_bytes=max_bytes, max_depth=max_depth)
        except XmlDocumentError as exc:
            reject(number, stream, docid, exc.message, exc.code)
            # it was delivered: its ts counts toward lateness like any other (docs/language.md)
            max_ts = ts_micros if max_ts is None else max(max_ts, ts_micros)
            continue
        if (
            allowed_lateness_micros is not None
            and max_ts is not None
            and ts_micros < max_ts - allowed_lateness_micros
        ):
            stats.late += 1
            reject(number, stream, docid, "late", "XSCL-R008")
            continue
        max_ts = ts_micros if max_ts is None else max(max_ts, ts_micros)
        documents.append(Document(stream, docid, ts_micros, xml, tree))
        stats.accepted += 1
    return documents, dead


def _envelope_problem(stream: object, docid: object, ts: object, xml: object) -> str | None:
    missing = [
        name
        for name, value in (("stream", stream), ("docid", docid), ("ts", ts), ("xml", xml))
        if value is None
    ]
    if missing:
        return f"envelope field(s) missing: {', '.join(missing)}"
    if not isinstance(stream, str):
        return "envelope field 'stream' must be a string"
    if not isinstance(docid, str) or not docid:
        return "envelope field 'docid' must be a non-empty string"
    if not isinstance(xml, str):
        return "envelope field 'xml' must be a string"
    return None
