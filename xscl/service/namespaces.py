"""Per-client subscription ids: each API client names its subscriptions in a namespace
of its own, so two clients may both use ``W1`` and neither learns of the other's.

A client's id is kept in the registry, and is the job's query id (its results, its
feed, its cursors), as ``<client>~<id>``: ``~`` is in neither a query id
(``[A-Za-z_][A-Za-z0-9_.-]*``, XSCL-P006) nor a client name (``[A-Za-z0-9_.-]``,
``api.tokens``), so the pair is recovered uniquely. The command line and admin tokens
use the global namespace ``""``: registry ids as they are, plain ids and any client's
``<client>~<id>`` alike.

>>> registry_id("alice", "W1"), registry_id("", "W1")
('alice~W1', 'W1')
>>> local_id("alice", "alice~W1"), local_id("bob", "alice~W1"), local_id("", "alice~W1")
('W1', None, 'alice~W1')
>>> bool(REGISTRY_ID.fullmatch("alice~W1")), bool(QUERY_ID.fullmatch("alice~W1"))
(True, False)
"""

from __future__ import annotations

import re

#: Between a client's name and its own id in a registry id.
SEPARATOR = "~"
#: An id as a client names its own subscription (the language's query id, bounded).
QUERY_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,199}")
#: An id in the registry: a plain one, or a client's ``<client>~<id>``.
REGISTRY_ID = re.compile(r"(?:[A-Za-z0-9_.-]{1,64}~)?[A-Za-z_][A-Za-z0-9_.-]{0,199}")


def registry_id(namespace: str, qid: str) -> str:
    """The registry's id of ``qid`` as named in ``namespace`` ("" : the global one)."""
    return f"{namespace}{SEPARATOR}{qid}" if namespace else qid


def local_id(namespace: str, rid: str) -> str | None:
    """Registry id ``rid`` as ``namespace`` names it; None when it is not in it."""
    if not namespace:
        return rid
    prefix = namespace + SEPARATOR
    return rid[len(prefix) :] if rid.startswith(prefix) else None
