"""Rule 1: replace namespace prefixes by their URIs, so identity does not depend on prefixes.

Two files may bind different prefixes to one namespace, or one prefix to two
namespaces; a variable's canonical identity (spec 3.5) must follow the URI.

* **Name tests.** ``NodeTest.prefix`` is replaced by the Clark form ``"{uri}"``
  (braces included; a prefix as written never contains ``{``). Unprefixed tests
  stay unprefixed: they match by local name in any namespace (spec 3.1).
* **Function predicates.** Declared prefixes used in the XPath text are renamed
  ``n0``, ``n1``, ... in order of first use, and the text is preceded by one XPath
  comment per binding, ``(:xmlns n0="uri":)``, so the expression is
  self-contained: ``function_namespaces`` reads the map back for evaluation.
  String literals and comments are left untouched; prefixes that the query does
  not declare (``fn:``, ``xs:``) are left as they are.

>>> from xscl.lang.parser import parse_query
>>> atom = (("a", "http://www.w3.org/2005/Atom"),)
>>> query = parse_query('S//a:entry[contains(a:title, "x")]', namespaces=atom)
>>> step = qualify_namespaces(query).blocks[0].steps[0]
>>> step.test.prefix
'{http://www.w3.org/2005/Atom}'
>>> step.predicates[0].expression
'(:xmlns n0="http://www.w3.org/2005/Atom":) contains(n0:title, "x")'

A prefix the query does not declare raises ``XsclValidationError`` XSCL-V008
(``xscl.lang.validation`` reports it with its position before this rule runs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote, unquote

from xscl.errors import XsclValidationError
from xscl.lang.ast import FunctionPredicate, NodeTest, Predicate, Query, Step
from xscl.lang.normal_form.paths import (
    PathRewrite,
    map_predicate_paths,
    rebuild_step,
    replace_block_steps,
)
from xscl.lang.parser import (  # the ``xml`` prefix is always bound (spec 2)
    XML_NAMESPACE,
    xpath_comment_end,
)

# Tokens of an XPath expression, scanned left to right: those that may not be
# rewritten (string literals, comments, which nest, variable references) and whole
# names, so a name is only ever matched from its first character: in ``a-b:c`` the
# prefix is ``a-b`` (XPath's longest match), while after ``)``, a digit or a space a
# ``-`` is the operator and ``sum(a:n)-a:m`` has the prefix ``a`` twice. A name is a
# prefix when ':' and a name start character (or '*') follow, so the axis separator
# '::' is not taken for one.
_XPATH_TOKEN = re.compile(
    r"""(?P<string>"(?:[^"]|"")*"|'(?:[^']|'')*')"""
    r"""|(?P<comment>\(:)"""
    r"""|(?P<variable>\$[^\W\d][\w.\-]*(?::[^\W\d][\w.\-]*)?)"""
    r"""|(?P<name>[^\W\d][\w.\-]*)(?P<colon>:(?=[^\W\d]|\*))?""",
    re.DOTALL,
)
_BINDING_COMMENT = re.compile(r'\(:xmlns ([A-Za-z_][\w.\-]*)="([^"]*)":\)\s*')


def namespace_map(query: Query) -> dict[str, str]:
    """The prefixes bound for ``query``: its declarations plus ``xml``."""
    bound = dict(query.namespaces)
    bound.setdefault("xml", XML_NAMESPACE)
    return bound


def clark_prefix(uri: str) -> str:
    """The value ``NodeTest.prefix`` takes in normal form for a namespace URI."""
    return "{" + uri + "}"


def qualify_namespaces(query: Query) -> Query:
    """Rewrite every prefix of ``query``'s blocks to its namespace URI (see module doc)."""
    bound = namespace_map(query)

    def rewrite(steps: tuple[Step, ...]) -> tuple[Step, ...]:
        return tuple(_qualify_step(step, bound, query.qid, rewrite) for step in steps)

    return replace_block_steps(query, lambda _index, block: rewrite(block.steps))


def _qualify_step(step: Step, bound: Mapping[str, str], qid: str, rewrite: PathRewrite) -> Step:
    test = step.test
    if test.prefix is not None and not test.prefix.startswith("{"):
        uri = bound.get(test.prefix)
        if uri is None:
            raise XsclValidationError.from_code(
                "XSCL-V008",
                f"unknown namespace prefix {test.prefix!r}",
                qid=qid,
                line=step.span.line if step.span else None,
                column=step.span.column if step.span else None,
                expected=("a prefix bound by DECLARE NAMESPACE",),
            )
        test = NodeTest(test.kind, test.local, clark_prefix(uri))
    predicates: list[Predicate] = []
    for predicate in step.predicates:
        if isinstance(predicate, FunctionPredicate):
            predicates.append(FunctionPredicate(qualify_function_text(predicate.expression, bound)))
        else:
            predicates.append(map_predicate_paths(predicate, rewrite))
    return rebuild_step(step, step.var, tuple(predicates), test)


def qualify_function_text(expression: str, bound: Mapping[str, str]) -> str:
    """Rename the declared prefixes of an XPath expression canonically (see module doc)."""
    if _BINDING_COMMENT.match(expression):
        return expression  # already qualified
    canonical: dict[str, str] = {}  # uri -> canonical prefix

    def substitute(match: re.Match[str]) -> str:
        prefix = match.group("name")
        if prefix is None or match.group("colon") is None or prefix not in bound:
            return match.group(0)
        uri = bound[prefix]
        if uri not in canonical:
            canonical[uri] = f"n{len(canonical)}"
        return canonical[uri] + ":"

    pieces: list[str] = []
    position = 0
    while match := _XPATH_TOKEN.search(expression, position):
        pieces.append(expression[position : match.start()])
        if match.group("comment") is not None:  # comments nest: kept whole
            end = xpath_comment_end(expression, match.start()) or len(expression)
            pieces.append(expression[match.start() : end])
            position = end
            continue
        pieces.append(substitute(match))
        position = match.end()
    body = "".join(pieces) + expression[position:]
    if not canonical:
        return expression
    header = "".join(
        f'(:xmlns {p}="{quote(uri, safe=":/#?&=@+,;~")}":)' for uri, p in canonical.items()
    )
    return f"{header} {body}"


def function_namespaces(expression: str) -> dict[str, str]:
    """The namespace map a normal-form function predicate needs (``{}`` if none).

    Stage 1 passes it to ``elementpath`` together with the expression.
    """
    found: dict[str, str] = {}
    position = 0
    while match := _BINDING_COMMENT.match(expression, position):
        found[match.group(1)] = unquote(match.group(2))
        position = match.end()
    return found
