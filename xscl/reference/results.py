"""Result records and result ids (spec/XSCL.md sections 3.3 and 4)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xscl.reference.timestamps import format_ts


@dataclass(frozen=True)
class DocRef:
    """The (stream, docid, ts) of the document a block matched."""

    stream: str
    docid: str
    ts_micros: int

    def to_json_dict(self) -> dict[str, str]:
        return {"stream": self.stream, "docid": self.docid, "ts": format_ts(self.ts_micros)}


def result_id(query_id: str, docs: Sequence[tuple[str, str]], nodes: Mapping[str, str]) -> str:
    """First 32 hex digits of SHA-256 of the compact JSON ``[qid, [[s, d]...], [[v, n]...]]``."""
    payload = [
        query_id,
        [[stream, docid] for stream, docid in docs],
        [[var, nodes[var]] for var in sorted(nodes)],
    ]
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class ResultRecord:
    """One result of one query: documents per block, join-variable nodes and values, output."""

    query: str
    result_id: str
    docs: tuple[DocRef, ...]
    nodes: tuple[tuple[str, str], ...]
    """(var, node id) for every join variable, sorted by variable."""
    values: tuple[tuple[str, str], ...]
    """(var, normalised string value) for every join variable, sorted by variable."""
    xml: str
    start_micros: int
    end_micros: int

    def to_json_dict(self) -> dict[str, Any]:
        """The result record of spec section 4 (keys in the documented order)."""
        return {
            "query": self.query,
            "result_id": self.result_id,
            "docs": [doc.to_json_dict() for doc in self.docs],
            "nodes": dict(self.nodes),
            "values": dict(self.values),
            "xml": self.xml,
        }

    def to_json_line(self) -> str:
        """One JSON Lines line (no newline), UTF-8 text, compact separators."""
        return json.dumps(self.to_json_dict(), ensure_ascii=False, separators=(",", ":"))

    @property
    def sort_key(self) -> tuple[str, str]:
        return (self.query, self.result_id)
