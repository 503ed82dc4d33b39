"""Where the documents of a keyed chain go (``placements.KEYED``: three or more blocks
joined through one class of equal values, as ``A {a = b} B {b = c} C``).

Every document of a keyed match holds the match's **key value** at a node of the key
class (``placements.key_class``). So a document is stored under the label ``L`` of
each key value it holds, in that label's group, and probes it there: the newest
document of a match finds every other one stored in the same group, and the match is
found there once, as a two-block match is in its owner edge's group.

A **hot** key label ``L`` (one the groups reported, ``engine.routing``) is spread by
"store everywhere, probe one": a document routed after ``L`` turned hot is stored
under the value's **spread label** ``H`` in the group of every salt of ``L``, and
probes ``L`` in ``L``'s own group (salt 0) and ``H`` in its own salt's group
(``groups.keyed_chains`` says why each match is still found exactly once). A hot key
costs ``salts`` stored copies of each of its new documents (docs/architecture.md,
"Chains keyed by a value").

Where it runs: in the Spark job's source tasks (routing) and its value groups, once
per document (pure functions).

>>> key_label("3f2a"), is_key_label("#3f2a"), is_key_label("3f2a")
('#3f2a', True, False)
>>> spread_label("3f2a"), is_spread_label("#*3f2a"), is_spread_label(key_label("3f2a"))
('#*3f2a', True, False)
>>> key_value(spread_label("3f2a")), spread_label("3f2a") != key_label("3f2a")
('3f2a', True)
"""

from __future__ import annotations

#: A key label starts with this: a value group's values are hex digests, and time
#: labels start with ``time_buckets.LABEL_PREFIX``, never with it.
KEY_PREFIX = "#"
#: A spread label starts with this: a digest never holds ``*``, so a spread label is
#: never a key label of another value, a value or a time label.
SPREAD_PREFIX = "#*"


def key_label(value: str) -> str:
    """The label a document holding key value ``value`` (a digest) is stored under."""
    return KEY_PREFIX + value


def spread_label(value: str) -> str:
    """The label a document holding ``value`` is stored under, in every salt's group,
    once ``key_label(value)`` is hot."""
    return SPREAD_PREFIX + value


def is_key_label(label: str) -> bool:
    """Whether ``label`` is a key label or a spread label."""
    return label.startswith(KEY_PREFIX)


def is_spread_label(label: str) -> bool:
    return label.startswith(SPREAD_PREFIX)


def key_value(label: str) -> str:
    """The value (a digest) of a key label or a spread label.

    >>> key_value(key_label("3f2a"))
    '3f2a'
    """
    if is_spread_label(label):
        return label[len(SPREAD_PREFIX) :]
    return label[len(KEY_PREFIX) :]
