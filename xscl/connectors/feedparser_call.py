"""The one feedparser call of the connectors: a feed's bytes in, feedparser's result out.

It is ``feedparser.parse`` for bytes that are already in memory (never a URL or a
file name, so never the network), with one difference: every text is read as the
document's encoding says. feedparser converts the bytes to UTF-8 (by the HTTP
charset, the XML declaration, a byte order mark, ...) and then, because its parsers
are told the text is ``'utf-8'``, "repairs" every text that reads as UTF-8 bytes
decoded as ISO-8859-1: a feed declared ``iso-8859-1`` holding the bytes ``C3 A9``
would say ``café`` in its normalized items and ``cafÃ©`` in its raw ones (lxml, and
every XML parser, reads the declaration). One document must not have two texts, so
the parsers here are told ``'utf8'``, the same codec under a name feedparser's repair
does not test. What remains of feedparser's own reading: the C1 controls U+0080 to
U+009F are read as the windows-1252 characters those bytes are there (``€``, ``“``,
...), while the raw form keeps the controls the declaration names (docs/language.md).

HTML sanitizing and URI rewriting inside HTML content are off: the engine only matches
text (HTML stays escaped text in ``<summary>``/``<content>``), and they triple
feedparser's time (measured over the 370 files of ``feeds-*``: 119 s with, 40 s
without, on a loaded 2-core machine). Sinks that render HTML must sanitize it
themselves. Links (``<link>``, ``<id>``, ...) are still resolved against
``xml:base`` and ``base_url`` by feedparser.

>>> data = b'<?xml version="1.0" encoding="iso-8859-1"?><rss version="2.0"><channel>'
>>> data += b'<item><title>caf\\xc3\\xa9</title></item></channel></rss>'
>>> feedparser_parse(data).entries[0].title
'cafÃ©'
"""

from __future__ import annotations

import contextlib
import io
import xml.sax
from typing import Any

from feedparser.api import PREFERRED_XML_PARSERS, LooseFeedParser, StrictFeedParser
from feedparser.encodings import convert_to_utf8
from feedparser.sanitizer import replace_doctype
from feedparser.urls import make_safe_absolute_uri
from feedparser.util import FeedParserDict

#: UTF-8 under the name feedparser's parsers do not "repair" (see the module doc).
_DECLARED_READING = "utf8"


def feedparser_parse(
    data: bytes, *, content_type: str | None = None, base_url: str | None = None
) -> Any:
    """feedparser's result for ``data`` (see the module docstring).

    ``content_type`` (an HTTP ``Content-Type``) and ``base_url`` (to resolve relative
    links) come from the fetch when there is one.
    """
    headers: dict[str, str] = {}
    if content_type:
        headers["content-type"] = content_type
    if base_url:
        headers["content-location"] = base_url
    result = FeedParserDict(bozo=False, entries=[], feed=FeedParserDict(), headers=headers)
    if not data:
        return result
    text = convert_to_utf8(result["headers"], data, result)
    strict = bool(result["encoding"])
    result["version"], text, entities = replace_doctype(text)
    location = headers.get("content-location", "")
    baseuri = make_safe_absolute_uri("", location) or make_safe_absolute_uri(location) or ""
    parser: Any = None
    if strict:
        parser = StrictFeedParser(baseuri, None, _DECLARED_READING)
        _switch_off_rewriting(parser)
        sax = xml.sax.make_parser(PREFERRED_XML_PARSERS)
        sax.setFeature(xml.sax.handler.feature_namespaces, 1)
        with contextlib.suppress(xml.sax.SAXNotSupportedException):
            sax.setFeature(xml.sax.handler.feature_external_ges, 0)
        sax.setContentHandler(parser)
        sax.setErrorHandler(parser)
        source = xml.sax.xmlreader.InputSource()
        source.setByteStream(io.BytesIO(text))
        try:
            sax.parse(source)
        except xml.sax.SAXException as exc:
            result["bozo"] = 1
            result["bozo_exception"] = parser.exc or exc
            strict = False
    if not strict:
        parser = LooseFeedParser(baseuri, None, _DECLARED_READING, entities)
        _switch_off_rewriting(parser)
        parser.feed(text.decode("utf-8", "replace"))
    result["feed"] = parser.feeddata
    result["entries"] = parser.entries
    result["version"] = result["version"] or parser.version
    result["namespaces"] = parser.namespaces_in_use
    return result


def _switch_off_rewriting(parser: Any) -> None:
    parser.resolve_relative_uris = False
    parser.sanitize_html = False
