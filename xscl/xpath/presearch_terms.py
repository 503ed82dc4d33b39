"""What a function predicate needs to find in a document: its presearch terms.

Lucene Monitor and Elasticsearch's percolator index stored queries by the
terms they require; a document is turned into a query over that index and
only the candidate queries are verified.  Here a *term* is ``(source,
literal)``: the literal must occur in the string value of a source of the
context element, ``(kind, name, mode)``, the kind one of

* ``"self"`` (name ``""``): the element's string value, which holds the
  string value of every descendant element and text node (``.``,
  ``string()``, ``text()``, ``a/b``, ``.//c``, ``*``);
* ``"child"``: its children of that local name (``title``, ``./n0:title``,
  ``child::title``; the namespace is not checked: a superset);
* ``"attribute"``: its attributes of that local name (``@href``; ``"*"`` for
  ``@*``);

and the mode ``"exact"`` (the value as written, compared as the verifier
compares it) or ``"folded"`` (literal and value folded,
:func:`xscl.xpath.fold.fold`: when the predicate applies ``lower-case``,
``upper-case`` or ``normalize-space``, or matches with the ``i`` flag).

A predicate's terms are a set one of which must occur whenever the predicate
holds (an OR), or ``None`` ("always a candidate").  They are derived from
the elementpath token tree, once per template
(:mod:`xscl.xpath.function_template`), as a small *plan* whose literals are
filled in per definition:

* ``contains``, ``starts-with``, ``ends-with`` (two arguments) of a source,
  over any of ``string``, ``data`` (exact) and ``lower-case``, ``upper-case``,
  ``normalize-space`` (folded: the fold erases what they change), and
  ``=``/``eq`` between a source and a literal: the literal;
* ``matches`` (two or three arguments): the regex's necessary factors
  (:mod:`xscl.xpath.regex_factors`); flag ``x`` gives none;
* ``or``: the union of its branches' terms (none if a branch has none);
  ``and``: either branch's terms are necessary, the more selective is kept;
* ``not``, ``!=``, any other function or path: none.

>>> from elementpath import XPath2Parser
>>> plan = term_plan(XPath2Parser().parse(
...     "contains(lower-case(*:title), $xscl_literal_0) or matches(@href, 'rust(lang)?')"))
>>> sorted(instantiate(plan, ("Kotlin",)))
[(('attribute', 'href', 'exact'), 'rust'), (('child', 'title', 'folded'), 'kotlin')]
>>> instantiate(term_plan(XPath2Parser().parse("not(contains(., 'x'))")), ()) is None
True
"""

from __future__ import annotations

from typing import Any

from xscl.xpath.fold import fold
from xscl.xpath.function_template import placeholder_index
from xscl.xpath.regex_factors import required_factors

#: (kind, name, mode): see the module docstring
Source = tuple[str, str, str]
Term = tuple[Source, str]
Terms = frozenset[Term]
#: where a value is read, before the mode is known: (kind, name, transformed)
_Place = tuple[str, str, bool]

_SELF: _Place = ("self", "", False)

#: a literal of the plan: an index into the definition's literals, or the text itself
LiteralRef = int | str

#: ``("atom", source, literal)``, ``("regex", source, pattern, flags)``,
#: ``("and", plans)``, ``("or", plans)``, or ``None`` (no terms)
Plan = tuple[Any, ...] | None

_TRANSFORMS = frozenset({"lower-case", "upper-case", "normalize-space"})
_TRANSPARENT = frozenset({*_TRANSFORMS, "string", "data"})
_CONTAINMENT = frozenset({"contains", "starts-with", "ends-with"})
_DOWNWARD_AXES = frozenset({"child", "descendant", "descendant-or-self", "self"})


def _name_test(token: Any) -> str | None:
    """The local name of an element name test (``title``, ``*:title``, ``n0:title``), else
    ``"*"`` for a wildcard test, else None."""
    symbol = token.symbol
    if symbol == "(name)":
        return str(token.value)
    if symbol == "*" and len(token) == 0:
        return "*"
    if symbol == ":" and len(token) == 2:
        local = token[1]
        if local.symbol == "(name)":
            return str(local.value)
        if local.symbol == "*":
            return "*"
    return None


def _downward(token: Any) -> bool:
    """Whether ``token`` selects only the context element, its descendant elements or
    their text nodes (so each selected string value lies in the element's)."""
    symbol = token.symbol
    if symbol in (".", "text") or _name_test(token) is not None:
        return True
    if symbol in ("/", "//") and len(token) == 2:
        return _downward(token[0]) and _downward(token[1])
    if symbol == "[" and len(token) >= 1:
        return _downward(token[0])
    if symbol in _DOWNWARD_AXES and len(token) == 1:
        return _downward(token[0])
    return symbol == "(" and len(token) == 1 and _downward(token[0])


def _source(token: Any) -> _Place | None:
    """Where the value of ``token`` is found in the context element, or None."""
    symbol = token.symbol
    if symbol in _TRANSPARENT or symbol == "(":
        if len(token) == 0 and symbol in ("normalize-space", "string"):
            return ("self", "", symbol == "normalize-space")
        inner = _source(token[0]) if len(token) == 1 else None
        if inner is None or symbol not in _TRANSFORMS:
            return inner
        return (inner[0], inner[1], True)
    if symbol in ("@", "attribute") and len(token) == 1:
        name = _name_test(token[0])
        return ("attribute", name, False) if name is not None else None
    name = _name_test(token)
    if name is not None:
        return ("child", name, False) if name != "*" else _SELF
    if symbol == "child" and len(token) == 1:
        name = _name_test(token[0])
        if name is not None and name != "*":
            return ("child", name, False)
    if symbol == "/" and len(token) == 2 and token[0].symbol == ".":
        return _source(token[1]) if _name_test(token[1]) is not None else _SELF
    return _SELF if _downward(token) else None


def _literal(token: Any) -> LiteralRef | None:
    if token.symbol == "(string)":
        return str(token.value)
    if token.symbol == "$" and len(token) == 1:
        return placeholder_index(str(token[0].value))
    return None


def _function(token: Any) -> Any:
    """The function token of ``fn:name(...)``, else ``token``."""
    if token.symbol == ":" and len(token) == 2 and token[0].value == "fn":
        return token[1]
    return token


def term_plan(token: Any) -> Plan:
    """The plan of a compiled (template) expression's terms; None: always a candidate."""
    token = _function(token)
    symbol = token.symbol
    if symbol in ("(", "boolean") and len(token) == 1:
        return term_plan(token[0])
    if symbol in ("and", "or") and len(token) == 2:
        left, right = term_plan(token[0]), term_plan(token[1])
        if symbol == "or" and (left is None or right is None):
            return None
        return (symbol, (left, right))
    if symbol in _CONTAINMENT and len(token) == 2:
        source, literal = _source(token[0]), _literal(token[1])
        return None if source is None or literal is None else ("atom", source, literal)
    if symbol == "matches" and len(token) in (2, 3):
        source, pattern = _source(token[0]), _literal(token[1])
        flags = _literal(token[2]) if len(token) == 3 else ""
        if source is None or pattern is None or flags is None:
            return None
        return ("regex", source, pattern, flags)
    if symbol in ("=", "eq") and len(token) == 2:
        for value, literal_token in ((token[0], token[1]), (token[1], token[0])):
            source, literal = _source(value), _literal(literal_token)
            if source is not None and literal is not None:
                return ("atom", source, literal)
    return None


def _value(ref: LiteralRef, literals: tuple[str, ...]) -> str:
    return literals[ref] if isinstance(ref, int) else ref


def _score(terms: Terms | None) -> int:
    """How selective terms are: the length of their shortest literal (-1: none)."""
    return -1 if terms is None else min(len(literal) for _, literal in terms)


def _terms(place: _Place, strings: frozenset[str] | None, folded: bool) -> Terms | None:
    """The terms of one source (folded, or exact); a literal holding another is dropped
    (the shorter one occurs whenever it does)."""
    if strings is None:
        return None
    literals = {fold(s) for s in strings} if folded else set(strings)
    if "" in literals:
        return None
    source = (place[0], place[1], "folded" if folded else "exact")
    return frozenset(
        (source, s) for s in literals if not any(o != s and o in s for o in literals)
    )


def instantiate(plan: Plan, literals: tuple[str, ...]) -> Terms | None:
    """The terms of one definition: ``plan`` with its ``literals`` filled in."""
    if plan is None:
        return None
    kind = plan[0]
    if kind == "atom":
        place = plan[1]
        return _terms(place, frozenset({_value(plan[2], literals)}), place[2])
    if kind == "regex":
        place = plan[1]
        pattern, flags = _value(plan[2], literals), _value(plan[3], literals)
        if "x" in flags:
            return None
        return _terms(place, required_factors(pattern), place[2] or "i" in flags)
    left, right = (instantiate(p, literals) for p in plan[1])
    if kind == "or":
        return None if left is None or right is None else left | right
    return left if _score(left) >= _score(right) else right


def best_terms(choices: list[Terms | None]) -> Terms | None:
    """Of the terms of predicates that must all hold, the most selective (None: none).

    >>> own = ("self", "", "exact")
    >>> best_terms([None, frozenset({(own, "ab")}), frozenset({(own, "abc")})])
    frozenset({(('self', '', 'exact'), 'abc')})
    """
    best: Terms | None = None
    for terms in choices:
        if _score(terms) > _score(best):
            best = terms
    return best
