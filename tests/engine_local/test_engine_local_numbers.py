"""Numeric literal comparisons (spec 3.1): the local engine, the reference, and by hand.

A value is a number when it is in the ``xs:double`` lexical space other than
``NaN`` (signs, ``7.``, ``.5``, exponents, ``INF``/``+INF``/``-INF``, ASCII digits
only); anything else (``NaN``, ``1,000``, ``0x10``, ``$5``, fullwidth or
Arabic-Indic digits, the empty string) makes every numeric comparison false,
``!=`` included.  Stage 1 (``xscl.xpath``) and the reference parse numbers each
on their own; these tests hold both to the same result sets and to results
checked by hand.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from xscl import reference
from xscl.connectors.document import Document
from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries

#: docid -> the value of the item's ``price`` child and ``v`` attribute
VALUES: dict[str, str] = {
    "plus7": "+7",
    "neg_half": "-0.5",
    "seven_dot": "7.",
    "dot_five": ".5",
    "exp": "1e3",
    "exp_neg": "2.5E-2",
    "thousand": "1000",
    "inf": "INF",
    "plus_inf": "+INF",
    "neg_inf": "-INF",
    "spaced": " \t12\n ",  # outer XML whitespace is stripped: 12
    "nan": "NaN",
    "inf_lower": "inf",
    "infinity": "Infinity",
    "comma": "1,000",
    "hex": "0x10",
    "dollar": "$5",
    "underscore": "1_000",
    "fullwidth": "\uff17",  # FULLWIDTH DIGIT SEVEN
    "arabic_indic": "\u0667",  # ARABIC-INDIC DIGIT SEVEN
    "devanagari": "\u0967\u0966",  # DEVANAGARI 1 0
    "empty": "",
}

DOCS = [
    Document("S", docid, i * 1_000_000, f'<item v="{value}"><price>{value}</price></item>')
    for i, (docid, value) in enumerate(VALUES.items())
]

NUMBERS = {"plus7", "neg_half", "seven_dot", "dot_five", "exp", "exp_neg", "thousand"}
NUMBERS |= {"inf", "plus_inf", "neg_inf", "spaced"}

#: (predicate operator and literal, the docids that hold): checked by hand
EXPECTED: list[tuple[str, set[str]]] = [
    ("> 5", {"plus7", "seven_dot", "exp", "thousand", "inf", "plus_inf", "spaced"}),
    (">= 7", {"plus7", "seven_dot", "exp", "thousand", "inf", "plus_inf", "spaced"}),
    ("= 7", {"plus7", "seven_dot"}),
    ("= 7.000", {"plus7", "seven_dot"}),
    ("= 1000", {"exp", "thousand"}),  # 1e3 = 1000 exactly
    ("!= 1000", NUMBERS - {"exp", "thousand"}),  # never a value that is no number
    ("< 0", {"neg_half", "neg_inf"}),
    ("<= 0.5", {"neg_half", "dot_five", "exp_neg", "neg_inf"}),
    ("< 0.025", {"neg_half", "neg_inf"}),
    ("<= 0.025", {"neg_half", "exp_neg", "neg_inf"}),
    ("= 12", {"spaced"}),
    ("> 99999999999999999999999999999999", {"inf", "plus_inf"}),
    ("< -99999999999999999999999999999999", {"neg_inf"}),
    ("= 16", set()),  # 0x10 is not a number
    ("= 5", set()),  # nor is $5
    ("!= 7", NUMBERS - {"plus7", "seven_dot"}),  # fullwidth/Arabic-Indic 7 are not numbers
]

#: where the compared value is: a child, an attribute, the bound node itself
FORMS = {
    "child": "S//item->x[./price {cmp}]",
    "attribute": "S//item->x[@v {cmp}]",
    "self": "S//item->x[./price[. {cmp}]]",
    "bound": "SELECT x FROM S//item[./price->x {cmp}]",
}


def canonical(records: Sequence[object]) -> set[str]:
    return {json.dumps(r.to_json_dict(), sort_keys=True) for r in records}  # type: ignore[attr-defined]


def docids_by_query(records: Sequence[object]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for record in records:
        data = record.to_json_dict()  # type: ignore[attr-defined]
        found.setdefault(data["query"], set()).add(data["docs"][0]["docid"])
    return found


def queries() -> str:
    lines = []
    for form, pattern in FORMS.items():
        for i, (cmp, _) in enumerate(EXPECTED):
            lines.append(f"{form}{i}: {pattern.format(cmp=cmp)}")
    return ";\n".join(lines)


def run_reference(text: str) -> list[object]:
    docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in DOCS]
    return list(reference.evaluate(list(parse_queries(text)), docs))


def run_local(text: str) -> list[object]:
    return list(LocalEngine(parse_queries(text)).process(DOCS))


def test_all_queries_at_once_agree_and_match_the_hand_checked_results() -> None:
    """Every query in one engine: same-path literals share Stage 1's literal index."""
    text = queries()
    local, ref = run_local(text), run_reference(text)
    assert canonical(local) == canonical(ref)
    for got in (docids_by_query(local), docids_by_query(ref)):
        for form in FORMS:
            for i, (cmp, expected) in enumerate(EXPECTED):
                assert got.get(f"{form}{i}", set()) == expected, (form, cmp)


@pytest.mark.parametrize(("cmp", "expected"), EXPECTED, ids=[c for c, _ in EXPECTED])
@pytest.mark.parametrize("form", list(FORMS))
def test_each_query_alone(form: str, cmp: str, expected: set[str]) -> None:
    """One query per engine: the comparison is checked on its own, not through a group."""
    text = f"q: {FORMS[form].format(cmp=cmp)}"
    local, ref = run_local(text), run_reference(text)
    assert canonical(local) == canonical(ref)
    assert docids_by_query(local).get("q", set()) == expected


def test_string_literals_still_compare_strings() -> None:
    text = (
        "a: S//item->x[./price = 'INF']; b: S//item->x[./price < '1'];"
        " c: S//item->x[./price > 5]"
    )
    local, ref = run_local(text), run_reference(text)
    assert canonical(local) == canonical(ref)
    got = docids_by_query(local)
    assert got["a"] == {"inf"}
    # code-point order: '', '$5', '+7', '+INF', '-0.5', '-INF', '.5', '0x10' sort below '1'
    # (the stripped ' \t12' is '12', above it)
    below_one = {"empty", "dollar", "plus7", "plus_inf", "neg_half", "neg_inf", "dot_five", "hex"}
    assert got["b"] == below_one
    assert got["c"] == EXPECTED[0][1]


def test_join_on_a_compared_variable() -> None:
    """A variable bound in a numerically compared path joins on its string value."""
    text = "j: S//item[./price->p > 5] JOIN {p=q, INF} T//item[./price->q]"
    docs = [*DOCS, Document("T", "t1", 0, "<item><price>1e3</price></item>")]
    docs.append(Document("T", "t2", 0, "<item><price>INF</price></item>"))
    ref_docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    ref = reference.evaluate(list(parse_queries(text)), ref_docs)
    local = LocalEngine(parse_queries(text)).process(docs)
    assert canonical(local) == canonical(ref)
    pairs = {(r.docs[0].docid, r.docs[1].docid) for r in ref}
    assert pairs == {("exp", "t1"), ("inf", "t2")}  # equality joins compare strings
