"""Hypothesis strategies for random *valid* XSCL ASTs (reusable by other test folders).

``queries()`` draws one ``Query``; ``query_files()`` a ``QueryFile`` whose queries
carry the file's namespaces and whose unlabeled queries have the positional
ids ``qN`` that the parser assigns. Everything drawn satisfies
``parse(format(ast)) == ast``: names avoid reserved keywords where the grammar
forbids them (streams, variables) and ``--`` (a comment start), while element
names may be keywords, string literals hold quotes, ``--``, ``;`` and brackets.

Import as ``from tests.lang_parse.strategies import queries, query_files``
(the folder's conftest.py puts the repository root on ``sys.path``).
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import cache

from hypothesis import strategies as st

from xscl.lang.ast import (
    Block,
    ComparisonPredicate,
    Equality,
    FunctionPredicate,
    JoinOp,
    NodeKind,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    Predicate,
    Query,
    QueryFile,
    RelPath,
    Step,
    StringLiteral,
    Window,
)
from xscl.lang.parser import KEYWORDS

__all__ = [
    "FUNCTION_EXPRESSIONS",
    "blocks",
    "identifiers",
    "namespace_maps",
    "predicates",
    "queries",
    "query_files",
    "steps",
    "variables",
    "windows",
]

#: Valid XPath function predicates (kept as text by the parser).
FUNCTION_EXPRESSIONS: tuple[str, ...] = (
    "contains(./title, 'spark')",
    "starts-with(@href, 'https')",
    "not(./x)",
    "count(./author) > 2",
    "ends-with(lower-case(string(.)), 'a]b')",
    'matches(., "^(a|b)+$")',
    "exists(.//p[@id = 'it''s'])",
    "empty(text())",
    "contains(concat(./a, \"--\"), ';')",
)


def _no_comment(name: str) -> bool:
    return "--" not in name


def _not_keyword(name: str) -> bool:
    return name.upper() not in KEYWORDS


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_DIGITS = "0123456789"


def _names(first: str, rest: str, max_tail: int) -> st.SearchStrategy[str]:
    return st.builds(
        str.__add__,
        st.sampled_from(first),
        st.text(alphabet=st.sampled_from(rest), max_size=max_tail),
    )


#: Stream names and query ids: ``[A-Za-z_][A-Za-z0-9_.-]*``, no keyword, no ``--``.
identifiers = (
    _names(_LETTERS, _LETTERS + _DIGITS + ".-", 6).filter(_no_comment).filter(_not_keyword)
)

#: Variables ``[A-Za-z_][A-Za-z0-9_']*`` (quotes inside, like ``x5'``), no keyword.
variables = _names(_LETTERS, _LETTERS + _DIGITS + "'", 4).filter(_not_keyword)

#: Element/attribute local names: keywords allowed (``S//from``), some non-ASCII letters.
local_names = st.one_of(
    _names(_LETTERS + "é", _LETTERS + _DIGITS + ".-é", 6).filter(_no_comment),
    st.sampled_from(["text", "from", "and", "INF", "JOIN", "as", "contains", "item"]),
)

prefixes = _names("abcdefghijklmnopqrstuvwyz", "abcdefghijklmnopqrstuvwxyz0123456789", 3)

#: Namespace bindings (sorted by prefix, as the parser produces them).
namespace_maps = st.dictionaries(
    prefixes,
    st.builds(
        "http://{}.org/{}".format,
        st.text(alphabet=st.sampled_from("abcxyz"), min_size=1, max_size=6),
        st.text(alphabet=st.sampled_from("ab09\"'"), max_size=4),
    ),
    max_size=3,
).map(lambda d: tuple(sorted(d.items())))

string_values = st.one_of(
    st.text(alphabet=st.sampled_from("ab '\"-;[](){}\n\t,é"), max_size=12),
    st.sampled_from(["", "'", "''", '"', "--", "a -- b", "it's", "x'; S//y"]),
)

numbers = st.one_of(
    st.integers(-(10**6), 10**6).map(Decimal),
    st.decimals(min_value=-1000, max_value=1000, places=3, allow_nan=False, allow_infinity=False),
    st.sampled_from([Decimal("1E+3"), Decimal("-0"), Decimal("0.000"), Decimal("12.50")]),
)

literals = st.one_of(st.builds(StringLiteral, string_values), st.builds(NumberLiteral, numbers))


_KIND_VALUES: tuple[NodeKind, ...] = ("element", "element", "wildcard", "attribute", "text")
_KINDS = st.sampled_from(_KIND_VALUES)
_AXES = st.sampled_from(["/", "//"])
_OPTIONAL_VAR = st.one_of(st.none(), variables)
_PREDICATE_KINDS = st.sampled_from(["path", "path", "compare", "function"])
_COMPARE_OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
_FUNCTIONS = st.sampled_from(FUNCTION_EXPRESSIONS)

# Strategies are cached per (prefixes, depth): building hypothesis strategy objects
# per draw costs far more than drawing from them.


@cache
def node_tests(prefix_list: tuple[str, ...]) -> st.SearchStrategy[NodeTest]:
    """Element (maybe prefixed), ``*``, attribute (maybe ``xml:``) or ``text()`` tests."""
    prefix_choice = st.one_of(st.none(), st.sampled_from(prefix_list)) if prefix_list else st.none()

    @st.composite
    def draw_test(draw: st.DrawFn) -> NodeTest:
        kind = draw(_KINDS)
        if kind in ("wildcard", "text"):
            return NodeTest(kind)
        prefix = draw(prefix_choice)
        if kind == "attribute" and prefix is None and draw(st.booleans()):
            prefix = "xml"  # always bound
        return NodeTest(kind, draw(local_names), prefix)

    return draw_test()


@cache
def steps(prefix_list: tuple[str, ...] = (), depth: int = 2) -> st.SearchStrategy[Step]:
    """One step; nested predicates up to ``depth`` levels."""
    preds = (
        st.lists(predicates(prefix_list, depth - 1), max_size=depth).map(tuple)
        if depth > 0
        else st.just(())
    )
    return st.builds(Step, _AXES, node_tests(prefix_list), _OPTIONAL_VAR, preds)


@cache
def rel_paths(prefix_list: tuple[str, ...], depth: int) -> st.SearchStrategy[RelPath]:
    return st.builds(RelPath, st.lists(steps(prefix_list, depth), max_size=2).map(tuple))


@cache
def predicates(prefix_list: tuple[str, ...] = (), depth: int = 1) -> st.SearchStrategy[Predicate]:
    """Path, comparison or function predicates; paths nest ``depth`` more levels."""
    paths = rel_paths(prefix_list, depth)
    return st.one_of(
        st.builds(PathPredicate, paths),
        st.builds(ComparisonPredicate, paths, _COMPARE_OPS, literals),
        st.builds(FunctionPredicate, _FUNCTIONS),
    )


@cache
def blocks(prefix_list: tuple[str, ...] = ()) -> st.SearchStrategy[Block]:
    return st.builds(Block, identifiers, st.lists(steps(prefix_list), max_size=3).map(tuple))


windows = st.one_of(
    st.just(Window(None)),
    st.builds(
        Window,
        st.one_of(
            st.integers(0, 10**5).map(Decimal),
            st.decimals(min_value=0, max_value=10**4, places=2, allow_nan=False).map(abs),
        ),
        st.sampled_from(["ms", "s", "m", "h", "d"]),
    ),
)

join_ops = st.builds(
    JoinOp,
    st.sampled_from(["JOIN", "FOLLOWED BY"]),
    st.lists(st.builds(Equality, variables, variables), max_size=3).map(tuple),
    windows,
)


_SELECTS = st.one_of(st.none(), st.lists(variables, min_size=1, max_size=3).map(tuple))
_PUBLISHES = st.one_of(st.none(), identifiers)


@st.composite
def queries(
    draw: st.DrawFn,
    namespaces: tuple[tuple[str, str], ...] | None = None,
    qid: str | None = None,
    explicit_id: bool = True,
) -> Query:
    """A valid query; its id is ``qid`` if given, else a drawn label."""
    if namespaces is None:
        namespaces = draw(namespace_maps)
    prefix_list = tuple(p for p, _ in namespaces)
    n_blocks = draw(st.integers(1, 4))
    block = blocks(prefix_list)
    return Query(
        qid=qid if qid is not None else draw(identifiers),
        blocks=tuple(draw(block) for _ in range(n_blocks)),
        ops=tuple(draw(join_ops) for _ in range(n_blocks - 1)),
        select=draw(_SELECTS),
        publish=draw(_PUBLISHES),
        namespaces=namespaces,
        explicit_id=explicit_id,
    )


@st.composite
def query_files(draw: st.DrawFn, max_queries: int = 3) -> QueryFile:
    """A file of 1..max_queries queries: unique labels, or the positional ``qN`` ids."""
    namespaces = draw(namespace_maps)
    count = draw(st.integers(1, max_queries))
    labels = draw(
        st.lists(
            identifiers.filter(lambda s: re.fullmatch(r"q[0-9]+", s) is None),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    result = []
    for position, label in enumerate(labels, start=1):
        explicit = draw(st.booleans())
        qid = label if explicit else f"q{position}"
        result.append(draw(queries(namespaces, qid=qid, explicit_id=explicit)))
    return QueryFile(namespaces, tuple(result))
