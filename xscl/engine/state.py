"""The join state of the local engine: R_docTS, R_doc and R_bin (thesis 6.3.1, Algorithm 2).

Stage 1 hands over Arrow relations (``WitnessBatch``) per document; the engine
keeps them as per-document hash maps, because every later access is a probe by
(document, var pair, node): ``down[(var1, var2)][node1] -> [node2]`` and
``up[(var1, var2)][node2] -> [node1]`` are R_bin hashed both ways, ``values``
is Stage 1's ``values`` relation (node -> strval, once per node),
``value_rows`` R_doc's (var, node, strval) rows rebuilt from ``value_nodes``
and ``nodes[var]`` the bound nodes of each variable (from every relation). A
measured note: probing Python dicts per tuple was faster than re-running
pyarrow joins for the one-document deltas the engine sees (see
docs/architecture.md).

Example::

    doc = DocState.from_witnesses("S", "d1", ts, xml, seq, batch)
    doc.down[(x1, x2)]["0"]  ->  ["2", "3"]      # book 0 has authors 2 and 3
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xscl.xpath.witness import WitnessBatch


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

    @classmethod
    def from_witnesses(
        cls, stream: str, docid: str, ts: int, xml: str, seq: int, batch: WitnessBatch
    ) -> DocState:
        """Index the witness rows of one document (Algorithm 2 for that document)."""
        return cls.from_rows(stream, docid, ts, xml, seq, DocWitness.of(batch))

    @classmethod
    def from_rows(
        cls, stream: str, docid: str, ts: int, xml: str, seq: int, witness: DocWitness
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


@dataclass(frozen=True)
class DocWitness:
    """One document's witness rows as Python tuples: R_doc, matches and R_bin.

    R_doc comes as Stage 1 emits it: ``values`` holds each node's string once,
    ``value_nodes`` the (var, node) rows of value-required variables.

    What the engine stores; built from Stage 1's Arrow relations (``of``) or, in
    the Spark job, from the list columns the executors computed.
    """

    #: (node, strval), once per node
    values: list[tuple[str, str]]
    #: (var, node) of value-required variables: every node is in ``values``
    value_nodes: list[tuple[int, str]]
    #: (var, node)
    matches: list[tuple[int, str]]
    #: (var1, var2, node1, node2)
    bindings: list[tuple[int, int, str, str]]

    @classmethod
    def of(cls, batch: WitnessBatch) -> DocWitness:
        """The rows of a one-document ``WitnessBatch``."""
        return cls(
            list(zip(*_columns(batch.values, ("node", "strval")), strict=True)),
            list(zip(*_columns(batch.value_nodes, ("var", "node")), strict=True)),
            list(zip(*_columns(batch.matches, ("var", "node")), strict=True)),
            list(zip(*_columns(batch.bindings, ("var1", "var2", "node1", "node2")), strict=True)),
        )


def _columns(batch: Any, names: tuple[str, ...]) -> list[list[Any]]:
    if batch.num_rows == 0:
        return [[] for _ in names]
    return [batch.column(name).to_pylist() for name in names]
