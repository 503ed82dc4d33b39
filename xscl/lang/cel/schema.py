"""Output schemas of CEL's constructs: the automatic renaming of thesis 4.2.2 (docs/cel.md 3.6).

These rules are part of the language, so the validator, the reference
evaluator and the engine all use these functions; they say which attribute
names a construct outputs and in which order, nothing about evaluation.

``R NEXT S``: when R and S share a name, *every* attribute ``a`` of R becomes
``a_1``; S's names are kept.

>>> next_schema(("Name", "Price"), ("Name", "Price", "Volume"))
('Name_1', 'Price_1', 'Name', 'Price', 'Volume')
>>> next_schema(("IBMPrice",), ("Name", "Price"))
('IBMPrice', 'Name', 'Price')

``R FOLD{..., aggs} S``: the *iterated* attributes are S's plus the aggregates'
names; each attribute of R that is iterated keeps R's value as ``a_1``, its
latest value as ``a``; the others keep their name (Example 17's schema):

>>> fold_schema(("Name", "Price", "Volume", "cnt"), ("Name", "Price", "Volume"), ("cnt",))
('Name_1', 'Price_1', 'Volume_1', 'cnt_1', 'Name', 'Price', 'Volume', 'cnt')
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["duplicates", "first_name", "fold_iterated", "fold_schema", "next_schema"]

Schema = tuple[str, ...]


def _renamed(attr: str) -> str:
    """``attr_1``, one shared string per name (schemas repeat across many queries)."""
    return sys.intern(f"{attr}_1")


def next_schema(left: Sequence[str], right: Sequence[str]) -> Schema:
    """The output names of ``left NEXT right`` (may hold duplicates: see ``duplicates``)."""
    if set(left).isdisjoint(right):
        return (*left, *right)
    return (*(_renamed(a) for a in left), *right)


def fold_iterated(right: Sequence[str], agg_names: Sequence[str]) -> Schema:
    """FOLD's iterated attributes: the second input's, then aggregates not among them."""
    return (*right, *(a for a in agg_names if a not in right))


def first_name(attr: str, iterated: Sequence[str]) -> str:
    """The output name of the first input's ``attr`` in a FOLD iterating ``iterated``."""
    return _renamed(attr) if attr in iterated else attr


def fold_schema(left: Sequence[str], right: Sequence[str], agg_names: Sequence[str]) -> Schema:
    """The output names of ``left FOLD{..., aggs} right``: the first input's, then the iterated."""
    iterated = fold_iterated(right, agg_names)
    return (*(first_name(a, iterated) for a in left), *iterated)


def duplicates(names: Sequence[str]) -> list[str]:
    """Names that occur more than once, in first-occurrence order.

    >>> duplicates(("a", "b", "a", "a"))
    ['a']
    """
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for name in names:
        if name in seen:
            repeated[name] = None
        seen.add(name)
    return list(repeated)
