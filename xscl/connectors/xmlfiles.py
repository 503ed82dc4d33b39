"""Directories of XML files -> documents: one per file, or one per record element.

* One document per file (default): the file is parsed with the safe parser and its
  root element re-serialized (no XML declaration, no DOCTYPE) as the document.
* One document per record (``record_tag`` set): the file is streamed with lxml
  ``iterparse`` and every element with that local name (any namespace) is one
  document; elements are cleared as soon as they are emitted, so memory stays
  bounded by one record, whatever the file size. Records must not nest.

``ts`` comes from ``ts_path`` (a ``/``-separated path of local names from the
document/record element, the last step may be ``@attr``; the text is RFC 3339, a
number of seconds, or an RFC 822 date) or, when no path is set, from the file's
modification time. ``docid`` comes from ``docid_path`` or the file name relative to
the directory given (``#<n>`` appended, 1-based, in record mode). A file or record
that cannot be used becomes a ``DeadLetter`` and the rest keeps flowing.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import Document, check_stream_name, parse_ts
from xscl.connectors.xmlsafe import MAX_DOCUMENT_BYTES, local_name, safe_parser
from xscl.errors import (
    ConnectorError,
    DocumentTooLargeError,
    RecordPathError,
    TimestampError,
    XmlFileError,
)


@dataclass(frozen=True)
class XmlFileOptions:
    """How to turn XML files into documents (see the module docstring)."""

    stream: str
    record_tag: str | None = None
    ts_path: str | None = None
    docid_path: str | None = None
    suffixes: tuple[str, ...] = (".xml",)
    max_bytes: int = MAX_DOCUMENT_BYTES


def expand_files(
    paths: Iterable[str | Path], suffixes: tuple[str, ...]
) -> Iterator[tuple[Path, str]]:
    """``(file, name)`` for every file argument and every matching file under directories."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for found in sorted(p for p in path.rglob("*") if p.is_file()):
                if found.suffix.lower() in suffixes:
                    yield found, found.relative_to(path).as_posix()
        else:
            yield path, path.name


def value_at(element: etree._Element, path: str) -> str | None:
    """String value at a simple path of local names (last step may be ``@attr``)."""
    node = element
    steps = [s for s in path.strip().split("/") if s and s != "."]
    for position, step in enumerate(steps):
        if step.startswith("@"):
            if position != len(steps) - 1:
                return None
            name = step[1:]
            for key, value in node.attrib.items():
                if local_name(key) == name:
                    return str(value).strip() or None
            return None
        for child in node:
            if local_name(child.tag) == step:
                node = child
                break
        else:
            return None
    text = "".join(str(part) for part in node.itertext()).strip()
    return text or None


def parse_any_ts(text: str, *, source: str, line: int | None) -> int:
    """RFC 3339, a number of seconds since the epoch, or an RFC 822 date -> microseconds."""
    try:
        return parse_ts(text, source=source, line=line)
    except TimestampError:
        pass
    try:
        return parse_ts(float(text) if "." in text else int(text), source=source, line=line)
    except (ValueError, TimestampError):
        pass
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError) as exc:
        raise TimestampError(f"ts {text!r} is not a date", source=source, line=line) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    delta = moment - epoch
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _document(
    element: etree._Element,
    options: XmlFileOptions,
    *,
    source: str,
    default_docid: str,
    mtime_micros: int,
    line: int | None,
) -> Document:
    if options.docid_path:
        docid = value_at(element, options.docid_path)
        if docid is None:
            raise RecordPathError(
                f"no value at docid path {options.docid_path!r}", source=source, line=line
            )
    else:
        docid = default_docid
    if options.ts_path:
        text = value_at(element, options.ts_path)
        if text is None:
            raise RecordPathError(
                f"no value at ts path {options.ts_path!r}", source=source, line=line
            )
        ts = parse_any_ts(text, source=source, line=line)
    else:
        ts = mtime_micros
    xml = str(etree.tostring(element, encoding="unicode", with_tail=False))
    return Document(options.stream, docid, ts, xml, source)


def iter_xml_files(
    paths: Iterable[str | Path], options: XmlFileOptions
) -> Iterator[Document | DeadLetter]:
    """Documents (and dead letters) of every file in ``paths``; see the module docstring."""
    check_stream_name(options.stream)
    for path, name in expand_files(paths, options.suffixes):
        if options.record_tag:
            yield from _records_of(path, name, options)
        else:
            yield _one_document(path, name, options)


def _mtime_micros(path: Path) -> int:
    return os.stat(path).st_mtime_ns // 1000


def _one_document(path: Path, name: str, options: XmlFileOptions) -> Document | DeadLetter:
    source = str(path)
    try:
        size = path.stat().st_size
        if size > options.max_bytes:
            raise DocumentTooLargeError(
                f"file is {size} bytes, above {options.max_bytes}", source=source
            )
        data = path.read_bytes()
        try:
            root = etree.fromstring(data, safe_parser())
        except etree.XMLSyntaxError as exc:
            raise XmlFileError(f"not well-formed: {exc}", source=source, line=exc.lineno) from exc
        if root is None:
            raise XmlFileError("empty document", source=source)
        return _document(
            root,
            options,
            source=source,
            default_docid=name,
            mtime_micros=_mtime_micros(path),
            line=None,
        )
    except ConnectorError as exc:
        return DeadLetter.from_error(exc, stream=options.stream)
    except OSError as exc:
        unreadable = XmlFileError(f"cannot read file: {exc}", source=source)
        return DeadLetter.from_error(unreadable, stream=options.stream)


def _records_of(path: Path, name: str, options: XmlFileOptions) -> Iterator[Document | DeadLetter]:
    source = str(path)
    try:
        mtime = _mtime_micros(path)
        events = etree.iterparse(
            str(path),
            events=("end",),
            tag=f"{{*}}{options.record_tag}",
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
        )
        for index, (_event, element) in enumerate(events, start=1):
            try:
                yield _document(
                    element,
                    options,
                    source=source,
                    default_docid=f"{name}#{index}",
                    mtime_micros=mtime,
                    line=index,
                )
            except ConnectorError as exc:
                yield DeadLetter.from_error(exc, stream=options.stream)
            element.clear(keep_tail=False)
            parent = element.getparent()
            while parent is not None and element.getprevious() is not None:
                del parent[0]
    except etree.XMLSyntaxError as exc:
        error = XmlFileError(f"not well-formed: {exc}", source=source, line=exc.lineno)
        yield DeadLetter.from_error(error, stream=options.stream)
    except OSError as exc:
        unreadable = XmlFileError(f"cannot read file: {exc}", source=source)
        yield DeadLetter.from_error(unreadable, stream=options.stream)
