"""Value-join normal form and canonical variable identity (spec 3.3 and 3.5, thesis 6.3-6.4).

``normalize(query)`` applies small pure rewrite rules, one module each, in this
order (each rule's docstring states it with an executable before/after example):

1. ``qualify_namespaces``        prefixes -> namespace URIs (identity follows the URI);
2. ``fold_existential_bindings`` bindings whose subtree holds no variable that
                                 matters (join or SELECT) are erased: plain filters;
3. ``order_predicates``          predicates sorted and de-duplicated at every step
                                 (after 2, so erased names do not affect the order);
4. ``number_generated_branches`` every unbound branching point gets ``_b<i>_<k>``
                                 (after 3, so ``k`` does not depend on written order);
5. ``canonical_definitions``     each block -> a tree of variables with ``VarDef``s,
                                 ``exists`` and ``first_step``;
6. ``orient_equalities``         value joins oriented, de-duplicated, sorted; ops.

Rules 1-4 are ``Query -> Query``; 5 and 6 build the ``NormalQuery`` (``model.py``).
``normalize`` first checks what it relies on (``structural_errors`` without the
XPath parse) and raises the first problem as ``XsclValidationError``.

Decisions: a user binding on the path *above* a variable that matters is kept
as a tree node (as ``model.py``'s example keeps ``x1``, and as the thesis's join
graph does); the graph minor of thesis 6.4.2 (``xscl.templates``) drops it when
it is not needed. Qualified name tests carry ``"{uri}"`` in ``NodeTest.prefix``;
function predicates carry their own namespace map (``function_namespaces``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from xscl.lang.ast import Query
from xscl.lang.normal_form.canonical_definitions import canonical_block
from xscl.lang.normal_form.fold_existential_bindings import fold_existential_bindings
from xscl.lang.normal_form.model import (
    NormalBlock,
    NormalEquality,
    NormalOp,
    NormalQuery,
    PatternVar,
    VarDef,
)
from xscl.lang.normal_form.number_generated_branches import number_generated_branches
from xscl.lang.normal_form.order_predicates import order_predicates
from xscl.lang.normal_form.orient_equalities import normal_ops, orient_equalities
from xscl.lang.normal_form.paths import query_bindings
from xscl.lang.normal_form.qualify_namespaces import (
    clark_prefix,
    function_namespaces,
    qualify_namespaces,
)

__all__ = [
    "QUERY_RULES",
    "NormalBlock",
    "NormalEquality",
    "NormalOp",
    "NormalQuery",
    "PatternVar",
    "VarDef",
    "canonical_variables",
    "clark_prefix",
    "function_namespaces",
    "normalize",
]

#: The ``Query -> Query`` rules, in the order ``normalize`` applies them.
QUERY_RULES: tuple[Callable[[Query], Query], ...] = (
    qualify_namespaces,
    fold_existential_bindings,
    order_predicates,
    number_generated_branches,
)


def normalize(query: Query) -> NormalQuery:
    """The value-join normal form of a query (see the module docstring for the rules)."""
    from xscl.lang.validation import structural_errors  # validation imports this package

    problems = structural_errors(query, check_functions=False)
    if problems:
        raise problems[0]
    rewritten = query
    for rule in QUERY_RULES:
        rewritten = rule(rewritten)
    user_vars = {step.var for _index, step in query_bindings(query)}
    generated = {
        step.var
        for _index, step in query_bindings(rewritten)
        if step.var is not None and step.var not in user_vars
    }
    blocks = tuple(
        canonical_block(index, block, generated) for index, block in enumerate(rewritten.blocks)
    )
    block_of = {var.name: block.index for block in blocks for var in block.variables}
    return NormalQuery(
        query=query,
        blocks=blocks,
        ops=normal_ops(query),
        equalities=orient_equalities(query, block_of),
    )


def canonical_variables(
    queries: Iterable[Query | NormalQuery],
) -> dict[VarDef, list[tuple[str, str]]]:
    """Every variable definition with the ``(qid, variable)`` pairs that use it.

    Pairs are in input order of the queries, then the variables' pre-order; a
    definition with more than one pair is shared (computed and stored once).
    """
    shared: dict[VarDef, list[tuple[str, str]]] = {}
    for item in queries:
        normal = item if isinstance(item, NormalQuery) else normalize(item)
        for block in normal.blocks:
            for var in block.variables:
                shared.setdefault(var.definition, []).append((normal.qid, var.name))
    return shared
