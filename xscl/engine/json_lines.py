"""Result records as JSON Lines bytes, escaping each shared piece of output XML once.

A ``SELECT *`` result carries its documents' elements (spec 3.4), and every
result of the same documents carries the same ones: escaping them again for each
result dominated writing results on the feed benchmark (docs/benchmarks.md).
JSON string escaping works character by character, so the escape of a
concatenation is the concatenation of the escapes: ``JsonLineEncoder`` keeps the
escaped UTF-8 of each large piece (``ResultRecord.xml_parts``; the strings are
the engine's cached serialisations, whose hash CPython keeps) and joins bytes.
The line is byte-identical to ``json.dumps(record.to_json_dict(),
ensure_ascii=False, separators=(",", ":"))`` plus a newline (tested).

``encode_channel`` writes the records of one match for many queries as one channel
line (``xscl.results.channels``: the format, and its decoding), from the same caches.

Example::

    encoder = JsonLineEncoder()
    handle.write(encoder.encode(record))     # b'{"query":"Q1",...,"xml":"<result ..."}\\n'
    handle.write(encoder.encode_channel(records, body))  # b'{"channel":[["Q1","..."],...'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring

from xscl.connectors.document import format_ts
from xscl.engine.output import ResultRecord
from xscl.engine.pieces import PieceCache

#: Pieces shorter than this are escaped each time (a lookup would cost as much).
MIN_CACHED_CHARS = 512
#: Escaped bytes kept before the cache starts over.
DEFAULT_CACHE_BYTES = 64 * 2**20
#: Document lists (as JSON) kept before that cache starts over.
_DOCS_CAPACITY = 4096


#: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` without building an
#: encoder per call (six calls per record)
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _escaped(text: str) -> bytes:
    """The JSON string body of ``text`` (no quotes), UTF-8 (what ``json.dumps`` writes
    for a string with ``ensure_ascii=False``)."""
    body: str = encode_basestring(text)
    return body[1:-1].encode("utf-8")


class JsonLineEncoder:
    """Encodes result records as JSON lines; see the module docstring. One per writer."""

    def __init__(self, cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self._pieces = PieceCache(cache_bytes)
        self._docs: dict[tuple[tuple[str, str, int], ...], bytes] = {}

    def encode(self, record: ResultRecord) -> bytes:
        """One line, newline included."""
        parts = record.xml_parts if record.xml_parts is not None else (record.xml,)
        return b"".join(
            (
                b'{"query":',
                _dumps(record.query).encode("utf-8"),
                b',"result_id":',
                _dumps(record.result_id).encode("utf-8"),
                b',"docs":',
                self._docs_json(record),
                b',"nodes":',
                _dumps(dict(record.nodes)).encode("utf-8"),
                b',"values":',
                _dumps(dict(record.values)).encode("utf-8"),
                b',"xml":"',
                *map(self._piece, parts),
                b'"}\n',
            )
        )

    def encode_channel(self, records: Sequence[ResultRecord], xml_body: Sequence[str]) -> bytes:
        """One channel line (``results.channels``) for ``records``, which share their
        documents, nodes, values and ``xml_body`` (their XML without the query's
        ``<result>`` tag); newline included."""
        first = records[0]
        members = [[record.query, record.result_id] for record in records]
        return b"".join(
            (
                b'{"channel":',
                _dumps(members).encode("utf-8"),
                b',"docs":',
                self._docs_json(first),
                b',"nodes":',
                _dumps(dict(first.nodes)).encode("utf-8"),
                b',"values":',
                _dumps(dict(first.values)).encode("utf-8"),
                b',"xml_body":"',
                *map(self._piece, xml_body),
                b'"}\n',
            )
        )

    def _docs_json(self, record: ResultRecord) -> bytes:
        docs = self._docs.get(record.docs)
        if docs is None:  # results of the same documents share it
            if len(self._docs) >= _DOCS_CAPACITY:
                self._docs.clear()
            refs = [{"stream": s, "docid": d, "ts": format_ts(t)} for s, d, t in record.docs]
            docs = self._docs[record.docs] = _dumps(refs).encode("utf-8")
        return docs

    def _piece(self, text: str) -> bytes:
        if len(text) < MIN_CACHED_CHARS:
            return _escaped(text)
        return self._pieces.get(text, _escaped)
