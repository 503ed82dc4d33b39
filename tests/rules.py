"""The join rules of spec 1 and 3.2, pinned by hand: small cases with their exact results.

Each ``Rule`` says in itself what it expects: the queries, the documents in arrival
order, and every result as ``(query, docids in block order)`` with the join
values (NFC, outer whitespace stripped). The results were worked out by hand from
the spec, not by running an engine. Every engine's own tests run this table
(``check_rule`` takes what an engine returned, as result records' JSON dicts): the
local engine, the join groups of the Spark job, and the reference itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from xscl.connectors.document import Document

SECOND = 1_000_000


@dataclass(frozen=True)
class Rule:
    """One rule: queries, documents (arrival order) and every expected result."""

    name: str
    queries: str
    docs: tuple[Document, ...]
    #: (query, docids in block order) -> the join variables' values
    expected: Mapping[tuple[str, tuple[str, ...]], Mapping[str, str]]

    def __repr__(self) -> str:
        return self.name


def _item(docid: str, ts: int, xml: str, stream: str = "S") -> Document:
    return Document(stream, docid, ts, xml)


def _a(value: str) -> str:
    return f"<item><a>{value}</a></item>"


#: (query, S document) pairs that join T's decomposed, spaced "café" by value
NFC_JOINS = [
    ("E", "nfc"), ("E", "nfd"), ("E", "spaced"),
    ("A", "nfc"), ("A", "nfd"), ("A", "spaced"),
    ("X", "nfc"), ("X", "nfd"),
]  # fmt: skip
#: spellings of seven, and look-alikes that are not the number 7 (spec 3.1)
SEVENS = {
    "seven": "7", "plus": "+7", "point": "7.0", "dot": "7.", "zeros": "007", "exp": "7e0",
    "spaced": " 7 ", "fullwidth": "\uff17", "arabic": "\u0667", "dollar": "$7", "seventy": "70",
}  # fmt: skip
NOT_SEVEN = {"fullwidth", "arabic", "dollar", "seventy"}

RULES: tuple[Rule, ...] = (
    Rule(
        "followed_by_needs_a_strictly_later_timestamp",
        # d1 and d2 share a timestamp: neither follows the other, whichever came first
        "F: S/item[./a->x] FOLLOWED BY {x = y, INF} S/item[./a->y];"
        "J: S/item[./a->x] JOIN {x = y, 0} S/item[./a->y];",
        (
            _item("d2", 5 * SECOND, _a("v")),
            _item("d1", 5 * SECOND, _a("v")),
            _item("d3", 5 * SECOND + 1, _a("v")),
        ),
        {
            ("F", ("d1", "d3")): {"x": "v", "y": "v"},
            ("F", ("d2", "d3")): {"x": "v", "y": "v"},
            ("J", ("d1", "d2")): {"x": "v", "y": "v"},  # JOIN with window 0: equal times
            ("J", ("d2", "d1")): {"x": "v", "y": "v"},
        },
    ),
    Rule(
        "followed_by_in_a_chain_is_later_than_the_composite_end",
        # (a JOIN b) ends at 2 s: c1 at 1 s and c2 at 2 s do not follow it, c3 at 3 s does
        "C: S/item[./a->x] JOIN {x = y, INF} T/item[./a->y] "
        "FOLLOWED BY {y = z, INF} U/item[./a->z];",
        (
            _item("a", 0, _a("v")),
            _item("b", 2 * SECOND, _a("v"), "T"),
            _item("c1", 1 * SECOND, _a("v"), "U"),
            _item("c2", 2 * SECOND, _a("v"), "U"),
            _item("c3", 3 * SECOND, _a("v"), "U"),
        ),
        {("C", ("a", "b", "c3")): {"x": "v", "y": "v", "z": "v"}},
    ),
    Rule(
        "window_edges_are_inclusive_to_the_microsecond",
        # |t2 - t1| <= T: exactly 2 s joins, 2 s + 1 us does not
        "J: S/item[./a->x] JOIN {x = y, 2s} T/item[./a->y];"
        "F: S/item[./a->x] FOLLOWED BY {x = y, 2s} T/item[./a->y];",
        (
            _item("s", 3 * SECOND, _a("v")),
            _item("t_before", 2 * SECOND, _a("v"), "T"),  # within 2 s, not later
            _item("t_edge", 5 * SECOND, _a("v"), "T"),
            _item("t_past", 5 * SECOND + 1, _a("v"), "T"),
            _item("t_early_edge", 1 * SECOND, _a("v"), "T"),
        ),
        {
            ("J", ("s", "t_before")): {"x": "v", "y": "v"},
            ("J", ("s", "t_edge")): {"x": "v", "y": "v"},
            ("J", ("s", "t_early_edge")): {"x": "v", "y": "v"},
            ("F", ("s", "t_edge")): {"x": "v", "y": "v"},
        },
    ),
    Rule(
        "chain_windows_are_measured_from_the_composite_start",
        # b follows a within 2 s and c follows b within 2 s, but c is 2.5 s after a
        "F: S/item[./a->x] FOLLOWED BY {x = y, 2s} T/item[./a->y] "
        "FOLLOWED BY {y = z, 2s} U/item[./a->z];"
        "J: S/item[./a->x] JOIN {x = y, 2s} T/item[./a->y] JOIN {y = z, 2s} U/item[./a->z];",
        (
            _item("a", 1 * SECOND, _a("v")),
            _item("b", 2 * SECOND, _a("v"), "T"),
            _item("c_late", 3_500_000, _a("v"), "U"),
            _item("c_edge", 3 * SECOND, _a("v"), "U"),
            _item("c_before", 0, _a("v"), "U"),  # JOIN: the span 0..2 s is 2 s
        ),
        {
            ("F", ("a", "b", "c_edge")): {"x": "v", "y": "v", "z": "v"},
            ("J", ("a", "b", "c_edge")): {"x": "v", "y": "v", "z": "v"},
            ("J", ("a", "b", "c_before")): {"x": "v", "y": "v", "z": "v"},
        },
    ),
    Rule(
        "join_is_symmetric_and_blocks_are_ordered",
        # one pattern twice: (d1, d2) and (d2, d1) are two results; S JOIN T and T JOIN S
        # each find their pair whichever document arrived first
        "P: S/item[./a->x] JOIN {x = y, INF} S/item[./a->y];"
        "ST: S/item[./a->x] JOIN {x = y, 1s} T/item[./a->y];"
        "TS: T/item[./a->x] JOIN {x = y, 1s} S/item[./a->y];",
        (
            _item("t", 1 * SECOND, _a("v"), "T"),
            _item("d2", 2 * SECOND, _a("v")),
            _item("d1", 0, _a("v")),
        ),
        {
            ("P", ("d1", "d2")): {"x": "v", "y": "v"},
            ("P", ("d2", "d1")): {"x": "v", "y": "v"},
            ("ST", ("d1", "t")): {"x": "v", "y": "v"},
            ("ST", ("d2", "t")): {"x": "v", "y": "v"},
            ("TS", ("t", "d1")): {"x": "v", "y": "v"},
            ("TS", ("t", "d2")): {"x": "v", "y": "v"},
        },
    ),
    Rule(
        "join_values_are_nfc_with_outer_whitespace_stripped",
        # element, attribute and text() values: NFC and NFD join, outer XML whitespace goes;
        # inner whitespace, no-break spaces, case and compatibility forms stay
        "E: S/item[./a->x] JOIN {x = y, INF} T/item[./a->y];"
        "A: S/item[./@k->x] JOIN {x = y, INF} T/item[./a->y];"
        "X: S/item[./m/text()->x] JOIN {x = y, INF} T/item[./a->y];",
        (
            _item("nfc", 0, "<item k='caf\u00e9'><a>caf\u00e9</a><m>caf\u00e9<i/></m></item>"),
            _item("nfd", 0, "<item k='cafe\u0301'><a>cafe\u0301</a><m>cafe\u0301<i/></m></item>"),
            _item("spaced", 0, "<item k=' caf\u00e9&#10;'><a>\t caf\u00e9\n</a></item>"),
            _item("x_y", 0, "<item k='x y'><a>x y</a><m>x y</m></item>"),
            _item("nbsp", 0, "<item k='\u00a0x'><a>\u00a0x</a></item>"),
            _item("case", 0, "<item k='X'><a>X</a></item>"),
            _item("fi", 0, "<item k='\ufb01'><a>\ufb01</a></item>"),
            _item("t_cafe", 1, "<item><a>\ncafe\u0301 </a></item>", "T"),
            _item("t_x_y", 1, "<item><a>x  y</a></item>", "T"),  # two spaces: not 'x y'
            _item("t_x", 1, "<item><a>x</a></item>", "T"),
            _item("t_fi", 1, "<item><a>fi</a></item>", "T"),
        ),
        {
            (query, (docid, "t_cafe")): {"x": "caf\u00e9", "y": "caf\u00e9"}
            for query, docid in NFC_JOINS
        },
    ),
    Rule(
        "string_literals_compare_in_nfc",
        # a literal typed decomposed is the composed one: both spellings of the value match
        "D: S/item[./a->x = 'cafe\u0301'];C: S/item[./@k = 'caf\u00e9'];",
        (
            _item("nfc", 0, "<item k='caf\u00e9'><a>caf\u00e9</a></item>"),
            _item("nfd", 0, "<item k='cafe\u0301'><a> cafe\u0301</a></item>"),
            _item("plain", 0, "<item k='cafe'><a>cafe</a></item>"),
        ),
        {("D", ("nfc",)): {}, ("D", ("nfd",)): {}, ("C", ("nfc",)): {}, ("C", ("nfd",)): {}},
    ),
    Rule(
        "join_values_of_numbers_are_strings",
        # equality joins compare strings: 7 joins ' 7 ' (whitespace), not +7, 7.0 or 007
        "N: S/item[./a->x] JOIN {x = y, INF} T/item[./a->y];",
        (
            _item("seven", 0, _a("7")),
            _item("plus", 0, _a("+7")),
            _item("point", 0, _a("7.0")),
            _item("zeros", 0, _a("007")),
            _item("t_spaced", 1, _a(" 7 "), "T"),
            _item("t_exp", 1, _a("7e0"), "T"),
        ),
        {("N", ("seven", "t_spaced")): {"x": "7", "y": "7"}},
    ),
    Rule(
        "numeric_literals_compare_numbers",
        # = 7 holds for every spelling of seven, not for digits of other scripts or $7
        "Q: S/item[./a->x = 7];",
        tuple(_item(docid, 0, _a(value)) for docid, value in SEVENS.items()),
        {("Q", (docid,)): {} for docid in SEVENS if docid not in NOT_SEVEN},
    ),
    Rule(
        "empty_values_never_join",
        # empty and blank values match the patterns but never an equality, not even x = x
        "E: S/item[./a->x] JOIN {x = y, INF} S/item[./a->y];"
        "SELF: S/item[./a->x] JOIN {x = x, INF} S/item[./b->y];"
        "ANY: S/item[./a->x] JOIN {TRUE, INF} S/item[./b->y];",
        (
            _item("empty", 0, "<item><a/><b/></item>"),
            _item("blank", 1, "<item><a> \n\t</a><b></b></item>"),
            _item("cr", 2, "<item><a>&#13;</a></item>"),
        ),
        {
            ("ANY", ("blank", "empty")): {},
            ("ANY", ("cr", "empty")): {},
            ("ANY", ("cr", "blank")): {},
            ("ANY", ("empty", "blank")): {},
        },
    ),
    Rule(
        "documents_of_a_match_are_distinct",
        # a document never joins itself, and never fills two blocks of a chain
        "P: S/item[./a->x] JOIN {x = y, INF} S/item[./a->y];"
        "C: S/item[./a->x] JOIN {x = y, INF} S/item[./a->y] JOIN {y = z, INF} S/item[./a->z];",
        (
            _item("one", 0, _a("v")),
            _item("two", 1, _a("v")),
        ),
        {
            ("P", ("one", "two")): {"x": "v", "y": "v"},
            ("P", ("two", "one")): {"x": "v", "y": "v"},
        },
    ),
)


Found = dict[tuple[str, tuple[str, ...]], dict[str, str]]


def found(records: Iterable[Mapping[str, Any]]) -> Found:
    """What an engine returned, in ``Rule.expected``'s shape (a result twice fails)."""
    out: Found = {}
    for record in records:
        key = (record["query"], tuple(d["docid"] for d in record["docs"]))
        assert key not in out, f"{key} found twice"
        out[key] = dict(record["values"])
    return out


def check_rule(rule: Rule, records: Iterable[Mapping[str, Any]]) -> None:
    """An engine's results of ``rule`` (JSON dicts of result records) are exactly its own."""
    assert found(records) == {k: dict(v) for k, v in rule.expected.items()}, rule.name
