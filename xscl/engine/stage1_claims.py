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

from collections import Counter
from typing import Protocol

from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1

#: ("value" | "nodes", var) or ("pair", parent, child)
Requirement = tuple[str, int] | tuple[str, int, int]


class Stage1Requests(Protocol):
    """The registration calls a query's parts make (Stage 1 or its claims)."""

    def register(self, definition: VarDef) -> int: ...
    def require_value(self, var_id: int) -> None: ...
    def require_nodes(self, var_id: int) -> None: ...
    def require_pair(self, parent_id: int, child_id: int) -> None: ...


class Stage1Claims:
    """One query's registrations and requirements (see the module docstring)."""

    def __init__(self, stage1: Stage1, counts: Counter[Requirement]) -> None:
        self.stage1 = stage1
        self.counts = counts
        self.definitions: list[VarDef] = []
        self.requirements: list[Requirement] = []

    def register(self, definition: VarDef) -> int:
        var_id = self.stage1.register(definition)
        self.definitions.append(definition)
        return var_id

    def require_value(self, var_id: int) -> None:
        self._claim(("value", var_id))
        self.stage1.require_value(var_id)

    def require_nodes(self, var_id: int) -> None:
        self._claim(("nodes", var_id))
        self.stage1.require_nodes(var_id)

    def require_pair(self, parent_id: int, child_id: int) -> None:
        self._claim(("pair", parent_id, child_id))
        self.stage1.require_pair(parent_id, child_id)

    def _claim(self, requirement: Requirement) -> None:
        self.counts[requirement] += 1
        self.requirements.append(requirement)

    def release(self) -> None:
        """Give back every claim (requirements first, then the registrations)."""
        for requirement in self.requirements:
            self.counts[requirement] -= 1
            if self.counts[requirement] > 0:
                continue
            del self.counts[requirement]
            if requirement[0] == "pair":
                self.stage1.release_pair(requirement[1], requirement[2])  # type: ignore[misc]
            elif requirement[0] == "value":
                self.stage1.release_value(requirement[1])
            else:
                self.stage1.release_nodes(requirement[1])
        for definition in self.definitions:
            self.stage1.unregister(definition)
        self.requirements.clear()
        self.definitions.clear()
