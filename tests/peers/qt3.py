"""W3C's QT3 test suite (``../shared/data/qt3-subset``) as XSCL function predicates.

A QT3 test case is an XPath expression ``C`` with an expected result. The cases this
runs are those XPath 2.0 applies to (their spec dependencies name ``XP20``, or none)
that need no environment (no source document, no variables, no collations) and whose
result is one of: ``assert-true``, ``assert-false``, ``assert-eq``,
``assert-deep-eq``, ``assert-string-value``, ``assert-empty``, ``assert-count``,
``assert-type``, ``assert-permutation`` (as sets of as many items), ``error``, or
``all-of`` / ``any-of`` of those (``assert`` and ``assert-xml`` are not run). Each
becomes a predicate ``P`` that holds exactly when the result is right, and two queries
over one document ``<root/>`` of stream ``S``::

    S/root[boolean(P)]      must match, and
    S/root[not(P)]          must not,

except for an expected error, where neither may match (an error makes a function
predicate false, docs/language.md), or the query may be refused (a static error).
So every case runs through both engines' whole path: the parser, validation, the
normal form and Stage 1 for ``--engine local``, the reference's own evaluation.

Differences from QT3 that are known (elementpath's, or XSCL's by design) are listed,
with their reasons, in ``known/qt3.txt``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from xscl.connectors.document import Document
from xscl.engine import LocalEngine
from xscl.lang.ast import Query
from xscl.lang.parser import parse_file
from xscl.lang.validation import validate_all
from xscl.reference import evaluate, make_document

_NS = {"q": "http://www.w3.org/2010/09/qt-fots-catalog"}
#: The outcomes of a case's two queries: ``holds`` (the first matches, the second not),
#: ``fails`` (the reverse) and ``error`` (neither matches, or the query is refused).
Outcome = str
_SIMPLE = (
    "assert-true", "assert-false", "assert-eq", "assert-deep-eq", "assert-string-value",
    "assert-empty", "assert-count", "assert-type", "assert-permutation",
)  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One QT3 test case as XSCL: its predicate and the outcomes it allows."""

    name: str
    predicate: str
    expected: frozenset[Outcome]


def _xp20(dependencies: Sequence[etree._Element]) -> bool | None:
    """Whether spec dependencies include XPath 2.0 (None: they say nothing)."""
    specs = " ".join(d.get("value", "") for d in dependencies if d.get("type") == "spec")
    return None if not specs else any(s in ("XP20", "XP20+") for s in specs.split())


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _assertion(result: etree._Element, expression: str) -> str | None:
    """The predicate that holds when ``expression``'s result satisfies ``result`` (one
    of ``_SIMPLE``), or None for an assertion this does not translate."""
    kind = etree.QName(result).localname
    value = (result.text or "").strip()
    if kind == "assert-true":
        return f"deep-equal(({expression}), true())"
    if kind == "assert-false":
        return f"deep-equal(({expression}), false())"
    if kind == "assert-eq":  # eq, where NaN equals NaN (QT3's rule)
        return (
            f"(({expression}) eq ({value})) or "
            f"((({expression}) ne ({expression})) and (({value}) ne ({value})))"
        )
    if kind == "assert-deep-eq":
        return f"deep-equal(({expression}), ({value}))"
    if kind == "assert-empty":
        return f"empty(({expression}))"
    if kind == "assert-count":
        return f"count(({expression})) eq {value}"
    if kind == "assert-type":
        return f"({expression}) instance of {value}"
    if kind == "assert-permutation":  # the same items in any order (as sets, and as many)
        return (
            f"count(({expression})) eq count(({value})) and "
            f"(every $w in ({value}) satisfies (some $g in ({expression}) satisfies "
            f"deep-equal($g, $w))) and (every $g in ({expression}) satisfies "
            f"(some $w in ({value}) satisfies deep-equal($g, $w)))"
        )
    if kind == "assert-string-value":
        got = f"string-join(for $i in ({expression}) return string($i), ' ')"
        want = _quoted(result.text or "")
        if result.get("normalize-space") == "true":
            got, want = f"normalize-space({got})", f"normalize-space({want})"
        return f"{got} eq {want}"
    return None


def _translate(name: str, expression: str, result: etree._Element) -> Case | None:
    kind = etree.QName(result).localname
    if kind == "error":
        return Case(name, f"boolean(({expression}))", frozenset({"error"}))
    if kind in _SIMPLE:
        predicate = _assertion(result, expression)
        return None if predicate is None else Case(name, predicate, frozenset({"holds"}))
    if kind not in ("all-of", "any-of"):
        return None
    parts = [p for p in result if isinstance(p.tag, str)]
    errors = [p for p in parts if etree.QName(p).localname == "error"]
    asserted = [_assertion(p, expression) for p in parts if p not in errors]
    if any(a is None for a in asserted) or (errors and kind == "all-of"):
        return None
    expected = {"holds"} | ({"error"} if errors else set())
    if not asserted:
        return Case(name, f"boolean(({expression}))", frozenset({"error"}))
    joiner = " and " if kind == "all-of" else " or "
    predicate = joiner.join(f"({a})" for a in asserted if a is not None)
    return Case(name, predicate, frozenset(expected))


def load_cases(root: Path) -> Iterator[Case]:
    """Every case of the suite at ``root`` this can run, in catalog order."""
    catalog = etree.parse(str(root / "catalog.xml")).getroot()
    for test_set in catalog.iterfind("q:test-set", _NS):
        path = root / test_set.get("file", "")
        if not path.is_file():
            continue
        cases = etree.parse(str(path)).getroot()
        set_xp20 = _xp20(cases.findall("q:dependency", _NS))
        for case in cases.iterfind("q:test-case", _NS):
            dependencies = case.findall("q:dependency", _NS)
            applies = _xp20(dependencies)
            if not (set_xp20 if applies is None and set_xp20 is not None else applies is not False):
                continue
            if any(d.get("type") != "spec" for d in dependencies):
                continue
            environment = case.find("q:environment", _NS)
            if environment is not None and environment.get("ref") != "empty":
                continue
            test, result = case.find("q:test", _NS), case.find("q:result", _NS)
            outcome = [] if result is None else [r for r in result if isinstance(r.tag, str)]
            if test is None or test.get("file") or len(outcome) != 1:
                continue
            expression = (test.text or "").strip()
            if not expression:  # an empty expression cannot be a predicate
                continue
            translated = _translate(case.get("name", ""), expression, outcome[0])
            if translated is not None:
                yield translated


DOCUMENT = "<root/>"


def _queries(cases: Sequence[Case]) -> list[Query]:
    """The valid queries of every case, each case parsed on its own (a case that does
    not parse as XSCL cannot disturb the next)."""
    queries: list[Query] = []
    for i, case in enumerate(cases):
        text = (
            f"c{i}p: S/root[boolean({case.predicate})];\n"
            f"c{i}n: S/root[not({case.predicate})];\n"
        )
        valid, _invalid = validate_all(list(parse_file(text).queries), text=text)
        queries.extend(valid)
    return queries


def run(cases: Sequence[Case]) -> dict[str, dict[str, Outcome]]:
    """Per engine (``local``, ``reference``), each case's outcome by name."""
    valid = _queries(cases)
    matched = {
        "local": _local_matches(valid),
        "reference": {
            r.query for r in evaluate(valid, [make_document("S", "d", 0, DOCUMENT)])
        },
    }
    outcomes: dict[str, dict[str, Outcome]] = {}
    for engine, found in matched.items():
        outcomes[engine] = {}
        for i, case in enumerate(cases):
            positive, negative = f"c{i}p" in found, f"c{i}n" in found
            outcome = "holds" if positive and not negative else "fails" if negative else "error"
            outcomes[engine][case.name] = "both" if positive and negative else outcome
    return outcomes


def _local_matches(queries: Sequence[Query]) -> set[str]:
    """The ids of the queries that match, each query registered on its own engine (a
    query Stage 1 refuses at registration is refused alone)."""
    found: set[str] = set()
    document = Document("S", "d", 0, DOCUMENT)
    for query in queries:
        try:
            engine = LocalEngine([query])
        except ValueError:  # XSCL-X012 and kin: refused, as a static error
            continue
        found.update(r.query for r in engine.process([document]))
    return found
