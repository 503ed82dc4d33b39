"""Which function-predicate candidates of a transition to verify at an element.

A DFA transition's candidates whose predicates the automaton cannot group
by path (function predicates, several predicates) used to be verified one
by one, so an element cost one elementpath evaluation per subscription.
Two implementations of one protocol, :class:`CandidateScreen`, decide which
to verify:

* :class:`Presearch` (the default) indexes each candidate by its presearch
  terms (:mod:`xscl.xpath.presearch_terms`: a literal that must occur in a
  source of the element whenever the candidate holds), per source, in one
  multi-pattern matcher (:class:`~xscl.xpath.literal_matcher.LiteralMatcher`).
  At an element each source's value (folded or as written) is scanned once,
  and only the
  candidates whose literal was found, plus those without terms, are
  returned.  The cost per element grows with the matched candidates, not
  with the subscriptions (Lucene Monitor's presearcher; Hong 2009 section
  6.3 asks Stage 1 to share work across queries).
* :class:`EveryCandidate` returns them all (the behaviour without an index,
  for comparison: ``Stage1(presearch=False)``).

Either way the returned candidates are then verified by the exact evaluator
(elementpath), so the index only ever saves work: it can return too many
candidates, never too few (the fold keeps every literal the verifier could
accept, :mod:`xscl.xpath.fold`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from lxml import etree

from xscl.xpath.fold import fold
from xscl.xpath.literal_matcher import LiteralMatcher
from xscl.xpath.nodes import attribute_items, raw_string_value, split_name
from xscl.xpath.presearch_terms import Source, Terms

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

#: separates the values of one source (never in XML text, kept by the fold)
_SEPARATOR = "\x00"


def raw_source_value(element: etree._Element, source: Source) -> str:
    """The string values a source offers, as the verifier sees them, joined by NUL.

    >>> item = etree.fromstring('<item a="x"><title>Rust</title><b>1</b><title>Go</title></item>')
    >>> [raw_source_value(item, (kind, name, "exact"))
    ...  for kind, name in (("self", ""), ("child", "title"), ("attribute", "a"))]
    ['Rust1Go', 'Rust\\x00Go', 'x']
    """
    kind, name, _mode = source
    if kind == "self":
        return (element.text or "") if not len(element) else raw_string_value(element)
    if kind == "child":
        return _SEPARATOR.join(
            (child.text or "") if not len(child) else raw_string_value(child)
            for child in element
            if child.tag.__class__ is str and split_name(child.tag)[1] == name
        )
    return _SEPARATOR.join(
        value
        for key, value in attribute_items(element)
        if name == "*" or split_name(key)[1] == name
    )


class SourceValues:
    """Source values of one document's elements (folded in mode ``"folded"``), each
    computed at most once."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[tuple[etree._Element, Source], str] = {}

    def value(self, element: etree._Element, source: Source) -> str:
        key = (element, source)
        value = self._values.get(key)
        if value is None:
            value = raw_source_value(element, source)
            if source[2] == "folded":
                value = fold(value)
            self._values[key] = value
        return value


class CandidateScreen(Protocol[T_co]):
    """Chooses, among a transition's candidates, those to verify at one element."""

    def candidates(self, element: etree._Element, values: SourceValues) -> Sequence[T_co]: ...


class EveryCandidate(Generic[T]):
    """Every candidate is verified (no index)."""

    __slots__ = ("_members",)

    def __init__(self, members: Sequence[T], terms_of: Callable[[T], Terms | None]) -> None:
        self._members = tuple(members)

    def candidates(self, element: etree._Element, values: SourceValues) -> Sequence[T]:
        return self._members


class Presearch(Generic[T]):
    """Candidates indexed by their terms: those whose literal occurs, and those without."""

    __slots__ = ("_always", "_sources")

    def __init__(self, members: Sequence[T], terms_of: Callable[[T], Terms | None]) -> None:
        self._always: list[T] = []
        by_source: dict[Source, dict[str, list[T]]] = {}
        for member in members:
            terms = terms_of(member)
            if terms is None:
                self._always.append(member)
                continue
            for source, literal in terms:
                by_source.setdefault(source, {}).setdefault(literal, []).append(member)
        #: per source: its matcher and, per literal index, the members it admits
        self._sources: list[tuple[Source, LiteralMatcher, list[list[T]]]] = [
            (source, LiteralMatcher(list(literals)), list(literals.values()))
            for source, literals in by_source.items()
        ]

    def candidates(self, element: etree._Element, values: SourceValues) -> Sequence[T]:
        found = list(self._always)
        for source, matcher, members_of in self._sources:
            haystack = values.value(element, source)
            if haystack:
                for index in set(matcher.found(haystack)):
                    found.extend(members_of[index])
        return list(dict.fromkeys(found)) if len(found) > 1 else found


#: how a transition's screen is built from its candidates and their terms
ScreenFactory = Callable[[Sequence[T], Callable[[T], "Terms | None"]], CandidateScreen[T]]
