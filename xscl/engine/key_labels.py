"""Where the documents of a keyed chain go (``placements.KEYED``: three or more blocks
joined through one class of equal values, as ``A {a = b} B {b = c} C``).

Every document of a keyed match holds the match's **key value** at a node of the key
class (``placements.key_class``). So a document is stored under the label of each
key value it holds, in that label's group, and probes it there: the newest document
of a match finds every other one stored in the same group, and the match is found
there once, as a two-block match is in its owner edge's group.

A key label is never spread over salts when it turns hot: a match needs all its
documents in one group, and salts would put them in several. A busy key value stays
in one group, as every chain was before (docs/architecture.md, "Chains keyed by a
value").

>>> key_label("3f2a"), is_key_label("#3f2a"), is_key_label("3f2a")
('#3f2a', True, False)
"""

from __future__ import annotations

#: A key label starts with this: a value group's values are hex digests, and time
#: labels start with ``time_buckets.LABEL_PREFIX``, never with it.
KEY_PREFIX = "#"


def key_label(value: str) -> str:
    """The label a document holding key value ``value`` (a digest) is stored under."""
    return KEY_PREFIX + value


def is_key_label(label: str) -> bool:
    return label.startswith(KEY_PREFIX)


def key_value(label: str) -> str:
    """The value (a digest) of a key label.

    >>> key_value(key_label("3f2a"))
    '3f2a'
    """
    return label[len(KEY_PREFIX) :]
