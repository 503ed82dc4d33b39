"""Channels: one line for the results of many queries that share one match (RUMOR).

Hong (2009) ch. 5 shares work between queries with m-ops whose outputs are
*channels* (§5.3): a tuple produced once for every query that shares it, with a
membership component naming those queries. A result part does the same for the
records of one match (same documents, nodes, values and output XML): the records of
the ~180 queries that share one pair of items in the heavy 100k workload
(docs/benchmarks.md) were ~180 copies of the same ~17 KB of XML.

A plain line is a spec section 4 record (``{"query":…,"result_id":…,…,"xml":…}``).
A channel line starts with its membership, ``[query, result_id]`` per member in the
order the records were made, then what every member shares::

    {"channel":[["Q1","<id1>"],["Q2","<id2>"]],"docs":[…],"nodes":{…},"values":{…},
     "xml_body":"…"}

``xml_body`` is the output XML between ``<result query="…">`` and ``</result>``: the
only per-query part of a result's XML is that tag (spec section 4), rebuilt from the
member's query id (``result_tag``). Each member decodes to exactly the record its
plain line holds, fields in the same order; a part may mix both kinds of line, and a
part written before channels (plain lines only) reads as before.

>>> line = channel_line(
...     [("Q1", "a1"), ("Q2", "b2")], '[{"stream":"S","docid":"d","ts":"1970-01-01T00:00:01Z"}]',
...     '{"x":"0"}', '{"x":"v"}', "<item/>")
>>> line[:40]
b'{"channel":[["Q1","a1"],["Q2","b2"]],"do'
>>> for record in line_records(line):
...     print(record["query"], record["result_id"], record["xml"])
Q1 a1 <result query="Q1"><item/></result>
Q2 b2 <result query="Q2"><item/></result>
>>> line_members(line)
[('Q1', 'a1'), ('Q2', 'b2')]
>>> line_members(b'{"query":"Q1","result_id":"a1"}') is None
True

Where it runs: the encoding, in the tasks that stage result parts (``record_lines``);
the decoding, in every reader of result parts (``results.read``, ``results.part_index``,
``results.parts`` for Parquet). Pure functions: nothing is pickled.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

#: How a channel line starts (a plain line starts ``{"query":``).
CHANNEL_START = b'{"channel":'
#: The membership of a channel line: a JSON array of [query, result_id] pairs, read
#: without parsing the shared XML after it (a quote inside a JSON string is escaped,
#: so the first ``]],"docs":`` ends the array).
CHANNEL_MEMBERS = re.compile(rb'\{"channel":(\[\[.*?\]\]),"docs":')
#: The closing tag of every result's XML.
RESULT_END = "</result>"

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_ATTRIBUTE_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\t": "&#9;",
        "\n": "&#10;",
        "\r": "&#13;",
    }
)


@lru_cache(maxsize=1 << 16)
def result_tag(query: str) -> str:
    """``<result query="…">`` as lxml serialises it (the encoder shares a record's XML
    only when it starts with exactly this, so a mismatch costs sharing, never bytes).

    >>> result_tag('a&"b')
    '<result query="a&amp;&quot;b">'
    """
    return f'<result query="{query.translate(_ATTRIBUTE_ESCAPES)}">'


def shared_xml(query: str, xml_parts: Sequence[str]) -> tuple[str, ...] | None:
    """The pieces of a result's XML after its query's tag and before ``</result>``
    (what members of a channel share); None when the XML is not shaped so.

    >>> shared_xml("Q", ('<result query="Q">', "<a/>", "<b/>", "</result>"))
    ('<a/>', '<b/>')
    >>> shared_xml("Q", ('<result query="Q"><a/></result>',))
    ('<a/>',)
    """
    tag = result_tag(query)
    if len(xml_parts) >= 2 and xml_parts[0] == tag and xml_parts[-1] == RESULT_END:
        return tuple(xml_parts[1:-1])
    if len(xml_parts) == 1:
        xml = xml_parts[0]
        if (
            len(xml) >= len(tag) + len(RESULT_END)
            and xml.startswith(tag)
            and xml.endswith(RESULT_END)
        ):
            return (xml[len(tag) : -len(RESULT_END)],)
    return None


def channel_line(
    members: Sequence[tuple[str, str]], docs: str, nodes: str, values: str, xml_body: str
) -> bytes:
    """A channel line from JSON texts of the shared fields (the writers build the same
    bytes from cached pieces: ``engine.json_lines.JsonLineEncoder.encode_channel``)."""
    head = '{"channel":' + _dumps([list(m) for m in members])
    tail = f',"docs":{docs},"nodes":{nodes},"values":{values},"xml_body":{_dumps(xml_body)}}}\n'
    return (head + tail).encode("utf-8")


def line_members(line: bytes) -> list[tuple[str, str]] | None:
    """The (query, result_id) of each member of a channel line, reading only its
    membership; None for a plain line."""
    if not line.startswith(CHANNEL_START):
        return None
    found = CHANNEL_MEMBERS.match(line)
    members = json.loads(found.group(1)) if found is not None else json.loads(line)["channel"]
    return [(str(query), str(result_id)) for query, result_id in members]


def line_records(line: bytes | str) -> list[dict[str, Any]]:
    """The spec section 4 records of one part line: itself, or each channel member's.

    Raises ``ValueError`` when the line is not JSON (or a channel line lacks a field:
    ``KeyError``/``TypeError``, which readers report as they report a bad line).
    """
    record: dict[str, Any] = json.loads(line)
    if not isinstance(record, dict) or "channel" not in record:
        return [record]  # a plain line (or another writer's JSON, read as before)
    members = record["channel"]
    docs, nodes, values = record["docs"], record["nodes"], record["values"]
    body = record["xml_body"]
    return [
        {
            "query": query,
            "result_id": result_id,
            "docs": [dict(doc) for doc in docs],
            "nodes": dict(nodes),
            "values": dict(values),
            "xml": result_tag(query) + body + RESULT_END,
        }
        for query, result_id in members
    ]
