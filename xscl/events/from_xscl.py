"""PUBLISHed XSCL results as CEL events (docs/cel.md 10.1).

A result of an XSCL query that PUBLISHes stream ``P`` is an event of ``P``:
its attributes are the query's join variables' values (the record's
``values``) and its SELECTed variables' values (the ``<var name="x">``
children of its XML; a join variable keeps its ``values`` entry), all strings;
start = end = the result's end time (its latest document's ``ts``). The schema
of ``P`` for CEL is the sorted union of those variables over every XSCL query
that PUBLISHes it, so a CEL file reads ``P`` without declaring it.

>>> from xscl.lang.parser import parse_file
>>> queries = parse_file("Q: SELECT t FROM S//item[./author->a][./title->t] "
...                      "JOIN{a = b, 1h} S//item[./author->b] PUBLISH Same").queries
>>> xscl_catalog(queries)
{'Same': ('a', 'b', 't')}
>>> record = {"query": "Q", "values": {"a": "ann", "b": "ann"},
...           "docs": [{"stream": "S", "docid": "1", "ts": "2024-01-01T10:00:00Z"},
...                    {"stream": "S", "docid": "2", "ts": "2024-01-01T10:30:00Z"}],
...           "xml": '<result query="Q"><var name="t">Hello</var></result>'}
>>> event = result_event(record, "Same")
>>> sorted(event.attrs.items()), event.start == event.end
([('a', 'ann'), ('b', 'ann'), ('t', 'Hello')], True)

**Channels** (Hong 2009 §5.3, §5.4.4; ``xscl.events.channels``): PUBLISHed streams of
one schema are sharable (produced by one m-op, XSCL's shared join processor), so a
job's engines declare them as channels (``xscl_channels``), and one match that is a
result of several queries PUBLISHing different streams (a result part's channel
line, ``results.channels``) is one CEL tuple of all those streams
(``line_events``), processed once instead of once per stream.

>>> xscl_channels({"P": ("a",), "Q": ("a",), "R": ("b",)})
{'xscl:P': (('a',), ('P', 'Q'))}
>>> other = dict(record, query="Q2", xml='<result query="Q2"><var name="t">Hello</var></result>')
>>> [type(e).__name__ for e in line_events([record, other], {"Q": "Same", "Q2": "Also"})]
['ChannelEvent']
>>> line_events([record, other], {"Q": "Same", "Q2": "Also"})[0].streams
('Same', 'Also')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lxml import etree

from xscl.connectors.document import parse_ts
from xscl.events.channels import ChannelEvent
from xscl.events.envelope import Event
from xscl.lang.ast import Query
from xscl.reference.joins import join_variables

__all__ = ["line_events", "published_streams", "result_event", "xscl_catalog", "xscl_channels"]


def published_streams(queries: Iterable[Query]) -> dict[str, str]:
    """XSCL query id -> the stream it PUBLISHes, for the queries that PUBLISH."""
    return {q.qid: q.publish for q in queries if q.publish is not None}


def xscl_catalog(queries: Iterable[Query]) -> dict[str, tuple[str, ...]]:
    """Each PUBLISHed XSCL stream -> its CEL schema (join and SELECT variables, sorted)."""
    names: dict[str, set[str]] = {}
    for query in queries:
        if query.publish is not None:
            names.setdefault(query.publish, set()).update(
                join_variables(query) | set(query.select or ())
            )
    return {stream: tuple(sorted(attrs)) for stream, attrs in sorted(names.items())}


_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)


def _selected(xml: str) -> dict[str, str]:
    """The ``<var name="x">`` children of a ``SELECT x, ...`` result's XML (their text)."""
    try:
        root = etree.fromstring(xml.encode("utf-8"), _PARSER)
    except (etree.XMLSyntaxError, ValueError):
        return {}
    return {
        str(child.get("name")): "".join(str(t) for t in child.itertext())
        for child in root
        if child.tag == "var" and child.get("name")
    }


def result_event(record: Mapping[str, Any], stream: str) -> Event:
    """The CEL event of one XSCL result record (spec section 4) of a query PUBLISHing ``stream``."""
    end = max(parse_ts(doc["ts"]) for doc in record["docs"])
    attrs: dict[str, Any] = _selected(str(record.get("xml") or ""))
    attrs.update(record.get("values") or {})
    return Event(stream, end, end, attrs)


def xscl_channels(
    catalog: Mapping[str, tuple[str, ...]],
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Channel name -> (schema, streams): the PUBLISHed XSCL streams of the catalog
    grouped by schema, for the groups of two streams or more (``Engine.declare_channel``).
    """
    by_schema: dict[tuple[str, ...], list[str]] = {}
    for stream, schema in sorted(catalog.items()):
        by_schema.setdefault(tuple(schema), []).append(stream)
    return {
        f"xscl:{streams[0]}": (schema, tuple(streams))
        for schema, streams in by_schema.items()
        if len(streams) > 1
    }


def line_events(
    records: Iterable[Mapping[str, Any]], streams: Mapping[str, str]
) -> list[Event | ChannelEvent]:
    """The CEL events of one result line's records (``results.read.part_lines``):
    records of queries PUBLISHing (``streams``: query -> stream) different streams
    with one interval and one set of attributes make one ``ChannelEvent``; the
    others are plain events, in order. Decoded, the same events as ``result_event``
    of each record."""
    tuples: dict[tuple[int, int, str], tuple[Event, list[str]]] = {}
    for record in records:
        stream = streams.get(str(record["query"]))
        if stream is None:
            continue
        event = result_event(record, stream)
        key = (event.start, event.end, repr(sorted(event.attrs.items())))
        found = tuples.get(key)
        if found is None:
            tuples[key] = (event, [stream])
        elif stream not in found[1]:
            found[1].append(stream)
    return [
        event
        if len(members) == 1
        else ChannelEvent(tuple(members), event.start, event.end, event.attrs)
        for event, members in tuples.values()
    ]
