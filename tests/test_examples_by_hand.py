"""The examples' ``expected-results.jsonl``, every record checked by hand.

The files are written by ``xscl run --engine reference`` (every engine's tests compare
with them). This test says what each record must be, worked out from the spec and the
example's documents, not from any engine: which documents match and why, the join
variables' nodes (elements numbered in pre-order from 0, spec 1) and values, the
output XML (SELECT *: copies of the elements each block's first step matched; SELECT
x: one ``<var>`` per variable, spec 3.4) and the result id (spec 3.3's formula).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _records(example: str) -> list[dict[str, Any]]:
    lines = (EXAMPLES / example / "expected-results.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in lines.splitlines() if line]


def _documents(example: str) -> dict[str, dict[str, str]]:
    lines = (EXAMPLES / example / "documents.jsonl").read_text(encoding="utf-8")
    return {d["docid"]: d for d in map(json.loads, lines.splitlines()) if d}


def _result_id(query: str, docs: list[dict[str, str]], nodes: dict[str, str]) -> str:
    """Spec 3.3: SHA-256 of the compact JSON [query, [[stream, docid]...], [[var, node]...]]."""
    blocks = [[d["stream"], d["docid"]] for d in docs]
    payload = [query, blocks, [[v, nodes[v]] for v in sorted(nodes)]]
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _record(
    query: str, docs: list[dict[str, str]], nodes: dict[str, str], values: dict[str, str], xml: str
) -> dict[str, Any]:
    refs = [{"stream": d["stream"], "docid": d["docid"], "ts": d["ts"]} for d in docs]
    return {
        "query": query,
        "result_id": _result_id(query, refs, nodes),
        "docs": refs,
        "nodes": nodes,
        "values": values,
        "xml": xml,
    }


def test_thesis_example_records_by_hand() -> None:
    docs = _documents("thesis")
    d1, d2 = docs["d1"], docs["d2"]
    # d1: announcement 0, publisher 1, book 2, title 3, author 4 (John Hebeler), author 5
    # (Danny Ayers), category 6, isbn 7; d2: blog 0, title 1, author 2, category 3.
    # d2 is 40 minutes after d1: within Q1's hour and Q2's day. Q3 needs two blogs.
    # SELECT *: the first steps are //book and //blog, so the book (not the
    # announcement) and the blog are copied; the XML is written as in the documents.
    book = d1["xml"][d1["xml"].index("<book>") : d1["xml"].index("</book>") + 7]
    output = f"{book}{d2['xml']}</result>"
    expected = [
        _record(
            "Q1", [d1, d2],
            {"x2": "5", "x3": "3", "x5": "2", "x6": "1"},
            {"x2": "Danny Ayers", "x3": "Semantic Web Programming",
             "x5": "Danny Ayers", "x6": "Semantic Web Programming"},
            '<result query="Q1">' + output,
        ),
        _record(
            "Q2", [d1, d2],
            {"x2": "5", "x5": "2", "x7": "6", "x8": "3"},
            {"x2": "Danny Ayers", "x5": "Danny Ayers", "x7": "Semantic Web", "x8": "Semantic Web"},
            '<result query="Q2">' + output,
        ),
    ]  # fmt: skip
    assert _records("thesis") == expected


def test_rss_example_records_by_hand() -> None:
    docs = _documents("rss")
    tls = docs["tag:news.example,2026:tls-resumption"]  # 11-03 07:15, Mara Lind
    backup = docs["tag:news.example,2026:backup-agents"]  # 11-05 18:00, Mara Lind
    gw_news = docs["tag:news.example,2026:acme-gw-94"]  # 11-06 11:30, Tom Okafor
    adv07, adv08 = docs["acme-2026-07"], docs["acme-2026-08"]  # 11-02 08:00, 11-05 15:30
    gw = docs["acme-gw-9.4"]  # 11-06 10:00, category 'release', not an Advisory
    # vendor items: item 0, title 1, link 2, guid 3, dc:creator 4, category 5 (the CVE)...
    # news entries: entry 0, title 1, id 2, link 3, author 4, name 5, category 6 (the CVE)...
    busy_xml = f'<result query="busy_author">{tls["xml"]}{backup["xml"]}</result>'
    busy_nodes = {"a1": "5", "a2": "5"}
    busy = _record(
        "busy_author", [tls, backup], busy_nodes, {"a1": "Mara Lind", "a2": "Mara Lind"}, busy_xml
    )
    # the busy pair, published: docid = its result id, ts = its end (backup's)
    published = {"stream": "busy_authors", "docid": busy["result_id"], "ts": backup["ts"]}
    expected = [
        # each advisory's CVE is a later entry's category term within 3 days (07: 23 h
        # 15 min; 08: 2 h 30 min); the other CVE, 'tls', 'backup', 'security' never meet
        _record(
            "advisory_coverage", [adv07, tls], {"cve": "5", "term": "6/@term"},
            {"cve": "CVE-2026-41122", "term": "CVE-2026-41122"},
            f'<result query="advisory_coverage">{adv07["xml"]}{tls["xml"]}</result>',
        ),
        _record(
            "advisory_coverage", [adv08, backup], {"cve": "5", "term": "6/@term"},
            {"cve": "CVE-2026-41377", "term": "CVE-2026-41377"},
            f'<result query="advisory_coverage">{adv08["xml"]}{backup["xml"]}</result>',
        ),
        # Mara Lind again after 58 h 45 min (within 72 h); Tom Okafor has one entry
        busy,
        # the busy pair (ends 11-05 18:00), then the release 16 h later; TRUE: no join nodes
        _record(
            "busy_then_release", [published, gw], {}, {},
            f'<result query="busy_then_release">{busy_xml}{gw["xml"]}</result>',
        ),
        # only the release notes share a link (vendor link 2 = news link 3's href), 1 h 30
        # min apart; SELECT t, u copies the title and the link
        _record(
            "crosspost", [gw, gw_news], {"u": "2", "v": "3/@href"},
            {"u": "https://acme.example/releases/9.4", "v": "https://acme.example/releases/9.4"},
            '<result query="crosspost"><var name="t"><title>Release notes: Acme Gateway 9.4'
            '</title></var><var name="u"><link>https://acme.example/releases/9.4</link></var>'
            "</result>",
        ),
    ]  # fmt: skip
    assert _records("rss") == expected
