"""The join state of the local engine: R_docTS, R_doc and R_bin (thesis 6.3.1, Algorithm 2).

Stage 1 hands over one document's witness rows (``DocumentRows``, from
``Stage1.evaluate_rows``); the engine keeps them as per-document hash maps,
because every later access is a probe by (document, var pair, node):
``down[(var1, var2)][node1] -> [node2]`` and ``up[(var1, var2)][node2] ->
[node1]`` are R_bin hashed both ways, ``values`` is Stage 1's ``values``
relation (node -> strval, once per node), ``value_rows`` R_doc's (var, node,
strval) rows rebuilt from ``value_nodes`` and ``nodes[var]`` the bound nodes of
each variable (from every relation). Probing dicts per tuple beat joining Arrow
tables for the one-document deltas the engine sees (docs/architecture.md).

>>> from xscl.xpath import DocumentRows
>>> rows = DocumentRows([("0", "b")], [(1, "0")], [], [(1, 2, "0", "2"), (1, 2, "0", "3")])
>>> doc = DocState.from_rows("S", "d1", 0, "<book/>", 1, rows)
>>> doc.down[(1, 2)]["0"], doc.value_rows      # book 0 has authors 2 and 3
(['2', '3'], [(1, '0', 'b')])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from xscl.xpath.witness import DocumentRows


@dataclass(eq=False)
class DocState:
    """One stored document and its witnesses (identity-hashed)."""

    stream: str
    docid: str
    ts: int
    xml: str
    seq: int
    values: dict[str, str] = field(default_factory=dict)
    value_rows: list[tuple[int, str, str]] = field(default_factory=list)
    nodes: dict[int, list[str]] = field(default_factory=dict)
    down: dict[tuple[int, int], dict[str, list[str]]] = field(default_factory=dict)
    up: dict[tuple[int, int], dict[str, list[str]]] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.stream, self.docid)

    @cached_property
    def strings(self) -> frozenset[str]:
        """Every string value the document's bound nodes have (computed once, on first
        use): a probe skips a document lacking a value its block must equal."""
        return frozenset(self.values.values())

    @classmethod
    def from_rows(
        cls, stream: str, docid: str, ts: int, xml: str, seq: int, witness: DocumentRows
    ) -> DocState:
        """Index one document's witness rows, however they were computed."""
        doc = cls(stream, docid, ts, xml, seq)
        node_sets: dict[int, dict[str, None]] = {}

        def note(var: int, node: str) -> None:
            node_sets.setdefault(var, {})[node] = None

        values = doc.values
        values.update(witness.values)
        for var, node in witness.value_nodes:
            doc.value_rows.append((var, node, values[node]))
            note(var, node)
        for var, node in witness.matches:
            note(var, node)
        for var1, var2, node1, node2 in witness.bindings:
            doc.down.setdefault((var1, var2), {}).setdefault(node1, []).append(node2)
            doc.up.setdefault((var1, var2), {}).setdefault(node2, []).append(node1)
            note(var1, node1)
            note(var2, node2)
        doc.nodes = {var: list(found) for var, found in node_sets.items()}
        return doc
