"""What one query asked of the shared Stage 1, so that removing it gives it back.

Stage 1 counts registrations of a definition itself, but its requirements
(values, nodes, pattern-edge pairs) are plain sets shared by every query. The
engine hands each query a ``Stage1Claims`` while registering it: the claims
pass every call on to Stage 1, remember it, and count each requirement across
queries (``counts`` is shared by the engine). ``release`` undoes one query's
calls: a requirement no other query holds is released, and each definition is
unregistered once per registration, so an unsubscribed query stops costing
Stage 1 work (automaton states, emitted rows).

Example::

    claims = Stage1Claims(stage1, counts)
    var = claims.register(definition); claims.require_value(var)
    ...
    claims.release()      # Stage 1 as if the query had never been added
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Protocol

from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1

#: A requirement as one int (the key of the shared counts): a var id's value or nodes,
#: or a pattern edge's pair, ``requirement`` below
Requirement = int

#: the kind of a claim, in a code's low two bits
_VALUE, _NODES, _PAIR, _DEFINITION = range(4)
#: a pair's parent id sits above its child id's 32 bits (var ids count the definitions
#: Stage 1 ever registered, from 1: far below 2**29, which keeps a pair's code in 64 bits)
_CHILD_BITS = 32


def requirement(kind: int, var_id: int, child_id: int = 0) -> Requirement:
    """A claim as one int: ``var_id`` (and a pair's ``child_id``) above its kind's two
    bits (``_VALUE``, ``_NODES``, ``_PAIR``, ``_DEFINITION``).

    >>> requirement(_PAIR, 3, 7) == ((3 << 32 | 7) << 2 | _PAIR)
    True
    >>> _decoded(requirement(_PAIR, 3, 7)), _decoded(requirement(_VALUE, 5))
    ((2, 3, 7), (0, 5, 0))
    """
    return (var_id << _CHILD_BITS | child_id) << 2 | kind if kind == _PAIR else var_id << 2 | kind


def _decoded(code: int) -> tuple[int, int, int]:
    """(kind, var id or parent id, child id or 0) of a ``requirement``."""
    kind, rest = code & 3, code >> 2
    if kind == _PAIR:
        return kind, rest >> _CHILD_BITS, rest & ((1 << _CHILD_BITS) - 1)
    return kind, rest, 0


class Stage1Requests(Protocol):
    """The registration calls a query's parts make (Stage 1 or its claims)."""

    def register(self, definition: VarDef) -> int: ...
    def require_value(self, var_id: int) -> None: ...
    def require_nodes(self, var_id: int) -> None: ...
    def require_pair(self, parent_id: int, child_id: int) -> None: ...


class Stage1Claims:
    """One query's registrations and requirements (see the module docstring).

    They are kept as one array of ints (``requirement``), read only when the query is
    removed: a list of definitions and a list of requirement tuples per query were
    about 970 bytes and 13 objects per subscription of a Python worker's build, which
    every forked worker shares with its daemon (docs/benchmarks.md, "Where a
    worker's memory goes")."""

    __slots__ = ("codes", "counts", "stage1")

    def __init__(self, stage1: Stage1, counts: Counter[Requirement]) -> None:
        self.stage1 = stage1
        self.counts = counts
        self.codes = array("q")

    def register(self, definition: VarDef) -> int:
        var_id = self.stage1.register(definition)
        self.codes.append(requirement(_DEFINITION, var_id))
        return var_id

    def require_value(self, var_id: int) -> None:
        self._claim(requirement(_VALUE, var_id))
        self.stage1.require_value(var_id)

    def require_nodes(self, var_id: int) -> None:
        self._claim(requirement(_NODES, var_id))
        self.stage1.require_nodes(var_id)

    def require_pair(self, parent_id: int, child_id: int) -> None:
        self._claim(requirement(_PAIR, parent_id, child_id))
        self.stage1.require_pair(parent_id, child_id)

    def _claim(self, code: Requirement) -> None:
        self.counts[code] += 1
        self.codes.append(code)

    def release(self) -> None:
        """Give back every claim (requirements first, then the registrations)."""
        stage1 = self.stage1
        definitions: list[int] = []
        for code in self.codes:
            kind, var_id, child_id = _decoded(code)
            if kind == _DEFINITION:
                definitions.append(var_id)
                continue
            self.counts[code] -= 1
            if self.counts[code] > 0:
                continue
            del self.counts[code]
            if kind == _PAIR:
                stage1.release_pair(var_id, child_id)
            elif kind == _VALUE:
                stage1.release_value(var_id)
            else:
                stage1.release_nodes(var_id)
        for var_id in definitions:
            stage1.unregister(stage1.definition(var_id))
        self.codes = array("q")
