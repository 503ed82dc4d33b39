"""What a function predicate needs to find in a document: its presearch terms.

Lucene Monitor and Elasticsearch's percolator index stored queries by the
terms they require; a document is turned into a query over that index and
only the candidate queries are verified.  Here a *term* is ``(source,
literal)``: the folded literal (:func:`xscl.xpath.fold.fold`) must occur in
the folded string value of a source of the context element, one of

* ``("self", "")``: the element's string value, which holds the string value
  of every descendant element and text node (``.``, ``string()``,
  ``text()``, ``a/b``, ``.//c``, ``*``);
* ``("child", name)``: its children of that local name (``title``,
  ``./n0:title``, ``child::title``; the namespace is not checked: a superset);
* ``("attribute", name)``: its attributes of that local name (``@href``;
  ``"*"`` for ``@*``).

A predicate's terms are a set one of which must occur whenever the predicate
holds (an OR), or ``None`` ("always a candidate").  They are derived from
the elementpath token tree, once per template
(:mod:`xscl.xpath.function_template`), as a small *plan* whose literals are
filled in per definition:

* ``contains``, ``starts-with``, ``ends-with`` (two arguments) of a source,
  over any of ``lower-case``, ``upper-case``, ``normalize-space``, ``string``,
  ``data`` (the fold erases what they change), and ``=``/``eq`` between a
  source and a literal: the literal;
* ``matches`` (two or three arguments): the regex's necessary factors
  (:mod:`xscl.xpath.regex_factors`); flag ``x`` gives none;
* ``or``: the union of its branches' terms (none if a branch has none);
  ``and``: either branch's terms are necessary, the more selective is kept;
* ``not``, ``!=``, any other function or path: none.

>>> from elementpath import XPath2Parser
>>> plan = term_plan(XPath2Parser().parse(
...     "contains(lower-case(*:title), $xscl_literal_0) or matches(@href, 'rust(lang)?')"))
>>> sorted(instantiate(plan, ("Kotlin",)))
[(('attribute', 'href'), 'rust'), (('child', 'title'), 'kotlin')]
>>> instantiate(term_plan(XPath2Parser().parse("not(contains(., 'x'))")), ()) is None
True
"""

from __future__ import annotations

from typing import Any

from xscl.xpath.fold import fold
from xscl.xpath.function_template import placeholder_index
from xscl.xpath.regex_factors import required_factors

Source = tuple[str, str]
Term = tuple[Source, str]
Terms = frozenset[Term]

SELF: Source = ("self", "")

#: a literal of the plan: an index into the definition's literals, or the text itself
LiteralRef = int | str

#: ``("atom", source, literal)``, ``("regex", source, pattern, flags)``,
#: ``("and", plans)``, ``("or", plans)``, or ``None`` (no terms)
Plan = tuple[Any, ...] | None

_TRANSPARENT = frozenset({"lower-case", "upper-case", "normalize-space", "string", "data"})
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


def _source(token: Any) -> Source | None:
    """Where the value of ``token`` is found in the context element, or None."""
    symbol = token.symbol
    if symbol in _TRANSPARENT or symbol == "(":
        if len(token) == 0 and symbol in ("normalize-space", "string"):
            return SELF
        return _source(token[0]) if len(token) == 1 else None
    if symbol in ("@", "attribute") and len(token) == 1:
        name = _name_test(token[0])
        return ("attribute", name) if name is not None else None
    name = _name_test(token)
    if name is not None:
        return ("child", name) if name != "*" else SELF
    if symbol == "child" and len(token) == 1:
        name = _name_test(token[0])
        if name is not None and name != "*":
            return ("child", name)
    if symbol == "/" and len(token) == 2 and token[0].symbol == ".":
        return _source(token[1]) if _name_test(token[1]) is not None else SELF
    return SELF if _downward(token) else None


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


def _folded(source: Source, strings: frozenset[str] | None) -> Terms | None:
    """The terms of one source, each folded; a literal holding another is dropped (the
    shorter one occurs whenever it does)."""
    if strings is None:
        return None
    folded = {fold(s) for s in strings}
    if "" in folded:
        return None
    return frozenset(
        (source, s) for s in folded if not any(o != s and o in s for o in folded)
    )


def instantiate(plan: Plan, literals: tuple[str, ...]) -> Terms | None:
    """The terms of one definition: ``plan`` with its ``literals`` filled in."""
    if plan is None:
        return None
    kind = plan[0]
    if kind == "atom":
        return _folded(plan[1], frozenset({_value(plan[2], literals)}))
    if kind == "regex":
        pattern, flags = _value(plan[2], literals), _value(plan[3], literals)
        if "x" in flags:
            return None
        return _folded(plan[1], required_factors(pattern))
    left, right = (instantiate(p, literals) for p in plan[1])
    if kind == "or":
        return None if left is None or right is None else left | right
    return left if _score(left) >= _score(right) else right


def best_terms(choices: list[Terms | None]) -> Terms | None:
    """Of the terms of predicates that must all hold, the most selective (None: none).

    >>> best_terms([None, frozenset({(SELF, "ab")}), frozenset({(SELF, "abc")})])
    frozenset({(('self', ''), 'abc')})
    """
    best: Terms | None = None
    for terms in choices:
        if _score(terms) > _score(best):
            best = terms
    return best
