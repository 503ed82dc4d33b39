"""Rule 3: put every step's predicates in one canonical order and drop duplicates.

Predicates of a step are a conjunction, so their order carries no meaning;
sorting them makes equal definitions compare equal (spec 3.5) and makes the
numbering of generated variables independent of how the user ordered them.
The sort key is the predicate's ``repr`` with every binding erased (so renaming
variables does not reorder), then its full ``repr`` as a tie-break (so the
order is total and deterministic). Exact duplicates and the trivially true
``[.]`` are dropped. A string literal is put in NFC: node values are compared
NFC-normalised (spec 3.1), so ``'cafe\u0301'`` (decomposed) is the predicate
``'caf\u00e9'`` is, and matches what it does. The rule applies at every depth.

>>> from xscl.lang.parser import parse_query
>>> from xscl.lang.printer import format_query
>>> query = parse_query("S//book[./title][./author = 'Ann'][./title][.]")
>>> print(format_query(order_predicates(query)))
S//book[./author = 'Ann'][./title]
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from xscl.lang.ast import (
    ComparisonPredicate,
    PathPredicate,
    Predicate,
    Query,
    RelPath,
    Step,
    StringLiteral,
)
from xscl.lang.normal_form.paths import (
    erase_bindings,
    map_predicate_paths,
    rebuild_step,
    replace_block_steps,
)

_TRIVIAL = PathPredicate(RelPath(()))


@lru_cache(maxsize=65_536)
def predicate_sort_key(predicate: Predicate) -> tuple[str, str]:
    """The canonical sort key of a predicate (see module doc)."""
    return (repr(map_predicate_paths(predicate, erase_bindings)), repr(predicate))


def canonical_predicates(
    predicates: tuple[Predicate, ...] | list[Predicate],
) -> tuple[Predicate, ...]:
    """Sorted, de-duplicated predicates without ``[.]`` (inner paths not touched)."""
    unique = {p for p in predicates if p != _TRIVIAL}
    return tuple(sorted(unique, key=predicate_sort_key))


def nfc_literal(predicate: Predicate) -> Predicate:
    """``predicate`` with its string literal, if any, in NFC (see the module docstring)."""
    if isinstance(predicate, ComparisonPredicate) and isinstance(predicate.literal, StringLiteral):
        value = predicate.literal.value
        composed = value if value.isascii() else unicodedata.normalize("NFC", value)
        if composed != value:
            return ComparisonPredicate(predicate.path, predicate.op, StringLiteral(composed))
    return predicate


@lru_cache(maxsize=65_536)
def order_steps(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """``steps`` with every predicate list, at every depth, in canonical order.

    Cached by value, like ``erase_bindings``.
    """
    return tuple(
        rebuild_step(
            step,
            step.var,
            canonical_predicates(
                [nfc_literal(map_predicate_paths(p, order_steps)) for p in step.predicates]
            ),
        )
        for step in steps
    )


def order_predicates(query: Query) -> Query:
    """Apply ``order_steps`` to every block of ``query``."""
    return replace_block_steps(query, lambda _index, block: order_steps(block.steps))
