"""The presearch index never loses a match (issue 34, docs/architecture.md Stage 1).

Hypothesis writes function predicates (``contains``/``starts-with``/
``ends-with``/``=`` over ``lower-case``, ``upper-case``, ``normalize-space``,
``string``; ``matches`` with alternation, classes, anchors, quantifiers and
flags; nested ``and``/``or``/``not``) whose literals hold regex
metacharacters, quotes, whitespace, the empty string, case pairs that only
Unicode case rules relate (``ß``/``SS``, ``İ``/``i``, ``ı``/``I``, final
``ς``) and NFC/NFD spellings, and documents made of the same pieces.  The
local engine with the presearch on, with it off, and ``xscl.reference``
(which shares no code with Stage 1) must give the same results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.workloads import reference_records
from xscl.connectors.document import Document
from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries
from xscl.xpath.fold import fold
from xscl.xpath.presearch_terms import instantiate, term_plan

#: pieces of literals and of document text: words, case pairs, NFC/NFD,
#: regex metacharacters, quotes and whitespace
PIECES = [
    "rust",
    "Rust",
    "RUST",
    "go",
    "Go lang",
    "straße",
    "STRASSE",
    "İstanbul",
    "istanbul",
    "ıSTANBUL",
    "ΣΑΣ",
    "σας",
    "café",
    "cafe\u0301",
    "a.b",
    "(x)",
    "[y]",
    "1+1",
    "*",
    "?",
    "^",
    "$",
    "|",
    "\\",
    "'",
    '"',
    "it's",
    " ",
    "  ",
    "\t",
    "\n",
]
SOURCES = [
    "title",
    "./title",
    "description",
    "category",
    ".",
    "string(.)",
    "text()",
    "@lang",
    "lower-case(title)",
    "upper-case(description)",
    "normalize-space(title)",
    "normalize-space()",
]
FLAGS = ["", "i", "s", "m", "x", "im"]
SETTINGS = examples(120)


def quoted(text: str) -> str:
    """An XPath string literal (``'`` doubled inside)."""
    return "'" + text.replace("'", "''") + "'"


literal_text = st.lists(st.sampled_from(PIECES), max_size=3).map("".join)


def regex_escape(text: str) -> str:
    """``text`` as an XPath regex matching itself."""
    return "".join("\\" + c if c in "\\|.-^?*+{}()[]$" else c for c in text)


def quantified(atom_and_quantifier: tuple[str, str]) -> str:
    atom, quantifier = atom_and_quantifier
    if not quantifier:
        return atom
    if atom in (".", "\\d", "\\s", "\\w") or atom.startswith("["):
        return atom + quantifier
    return f"({atom}){quantifier}"


@st.composite
def regexes(draw: Any) -> str:
    """A valid XPath regex: escaped words, classes, ``.``/``\\d``/``\\s``, quantified
    atoms, alternation, optional groups and anchors (never a repeated group that
    holds an unbounded quantifier, which validation refuses)."""
    atom = st.one_of(
        literal_text.filter(bool).map(regex_escape),
        st.sampled_from(["[abc]", "[Rr]", "[a-z]", "[^x]", ".", "\\d", "\\s", "\\w"]),
    )
    piece = st.tuples(atom, st.sampled_from(["", "", "?", "*", "+", "{1,2}", "+?"])).map(
        quantified
    )
    branch = st.lists(piece, min_size=1, max_size=3).map("".join)
    body = st.lists(branch, min_size=1, max_size=3).map("|".join)
    text = draw(body)
    if draw(st.booleans()):
        text = f"({text})"
    if draw(st.booleans()):
        text = "^" + text
    if draw(st.booleans()):
        text = text + "$"
    return text


@st.composite
def atoms(draw: Any) -> str:
    source = draw(st.sampled_from(SOURCES))
    kind = draw(st.sampled_from(["contains", "starts-with", "ends-with", "=", "==", "matches"]))
    if kind == "matches":
        flags = draw(st.sampled_from(FLAGS))
        tail = f", {quoted(flags)}" if flags else ""
        return f"matches({source}, {quoted(draw(regexes()))}{tail})"
    literal = quoted(draw(literal_text))
    if kind == "=":  # in boolean(): XSCL reads a bare [path = literal] as its own comparison
        return f"boolean({source} = {literal})"
    if kind == "==":
        return f"boolean({literal} = {source})"
    return f"{kind}({source}, {literal})"


def predicates() -> st.SearchStrategy[str]:
    return st.recursive(
        atoms(),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(
                lambda t: f"{t[0]} {t[1]} ({t[2]})"
            ),
            inner.map(lambda p: f"not({p})"),
        ),
        max_leaves=4,
    )


@st.composite
def items(draw: Any) -> str:
    def text() -> str:
        return draw(literal_text).replace("&", "&amp;").replace("<", "&lt;")

    categories = "".join(f"<category>{text()}</category>" for _ in range(draw(st.integers(0, 2))))
    lang = text().replace('"', "&quot;").replace("\n", "&#10;").replace("\t", "&#9;")
    return (
        f'<item lang="{lang}"><title>{text()}</title>'
        f"<description>{text()}<b>{text()}</b>{text()}</description>{categories}</item>"
    )


@st.composite
def documents(draw: Any) -> list[Document]:
    count = draw(st.integers(1, 4))
    docs = []
    for i in range(count):
        body = "".join(draw(st.lists(items(), min_size=1, max_size=3)))
        docs.append(Document("F", f"d{i}", i, f"<channel>{body}</channel>"))
    return docs


def query_text(expressions: Sequence[str]) -> str:
    return "".join(f"Q{i}: F//item[{e}];\n" for i, e in enumerate(expressions))


def canonical(records: Sequence[dict[str, Any]]) -> set[str]:
    return {json.dumps(r, sort_keys=True) for r in records}


def engine_records(text: str, docs: Sequence[Document], presearch: bool) -> set[str]:
    engine = LocalEngine(parse_queries(text), presearch=presearch)
    return canonical([r.to_json_dict() for r in engine.process(docs)])


@SETTINGS
@given(expressions=st.lists(predicates(), min_size=1, max_size=6), docs=documents())
def test_presearch_on_off_and_reference_agree(
    expressions: list[str], docs: list[Document]
) -> None:
    text = query_text(expressions)
    expected = canonical(reference_records(text, docs))
    assert engine_records(text, docs, presearch=True) == expected
    assert engine_records(text, docs, presearch=False) == expected


@SETTINGS
@given(source=st.sampled_from(SOURCES[:3]), literal=literal_text, docs=documents())
def test_keyword_subscriptions_with_metacharacters_agree(
    source: str, literal: str, docs: list[Document]
) -> None:
    """Many keyword predicates over one source (one index), the empty literal included."""
    words = sorted({literal, literal.upper(), literal.lower(), "", *PIECES[:12]})
    text = query_text([f"contains({source}, {quoted(w)})" for w in words])
    expected = canonical(reference_records(text, docs))
    assert engine_records(text, docs, presearch=True) == expected


def test_terms_cover_every_match_of_their_regex() -> None:
    """A regex's necessary factors occur (folded) in the text of every match it finds."""
    from elementpath import XPath2Parser

    parser = XPath2Parser()
    samples = ["Rust weekly", "RUST   WEEKLY", "rusty weeks", "trust", "weekly rust"]
    for pattern, flags in [("r(u|o)st\\s+weekly", "i"), ("^[Rr]ust", ""), ("wee(k|d)", "")]:
        expression = f"matches(., {quoted(pattern)}, '{flags}')"
        terms = instantiate(term_plan(parser.parse(expression)), ())
        assert terms is not None
        for sample in samples:
            if re.search(pattern, sample, re.I if "i" in flags else 0):
                assert any(literal in fold(sample) for _, literal in terms), (pattern, sample)
