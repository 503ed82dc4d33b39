"""The witness rows Stage 1 produces for one document (thesis 6.3.1).

Thesis 6.3.1 shreds the embeddings of each query block into binary relations of
variable bindings. Stage 1 gives, per document, four relations as Python tuples
(``DocumentRows``; the thesis's R_bin and R_doc, R_doc shipped as ``values`` +
``value_nodes`` so that each string value is given once per node):

``bindings`` (R_bin): ``(var1, var2, node1, node2)`` for every required pattern
edge (parent var, child var) and pair of nodes such that ``node1`` is a node of
the parent's definition and ``node2`` a node of the child's reached from
``node1`` by the child's extra steps with all their filters. With ``//`` steps
one ``node2`` may have several ``node1``.

``values``: ``(node, strval)`` once per **distinct node** whose value some
variable requires; ``strval`` is the normalised string value (NFC, outer XML
whitespace stripped). A node matched by many value-required variables (an item
element is typically bound by ~17) carries its string once. Nodes whose value is
empty are **kept** (their existence matters to the templates); the join layer
drops empty values because empty values never join (spec 3.2).

``value_nodes``: ``(var, node)`` for every node of every variable whose value is
required. Joined with ``values`` on ``node`` it gives R_doc's ``(var, node,
strval)``; every ``value_nodes`` row has exactly one ``values`` row and every
``values`` row at least one ``value_nodes`` row.

``matches``: ``(var, node)`` for every node of every variable registered with
``require_nodes`` (existence tests, SELECT output).

Node ids follow spec section 1: ``"N"`` for the N-th element in pre-order (root =
0), ``"N/@qname"`` for an attribute, ``"N/text()[k]"`` for a text node. Row order
is the walk order of the document (deterministic, not part of the contract).
Variable ids are those returned by ``Stage1.register``. A document that cannot be
evaluated raises an ``XmlDocumentError`` and has no rows.

>>> rows = DocumentRows([("1", "x")], [(3, "1")], [], [])
>>> rows.r_doc()
[(3, '1', 'x')]
"""

from __future__ import annotations

from typing import NamedTuple


class DocumentRows(NamedTuple):
    """One document's witness rows (see the module docstring); no document key.

    ``Stage1.evaluate_rows`` returns them to consumers that work document by
    document in Python: the engine and the Spark job's tasks.
    """

    #: ``values``: (node, strval), once per node
    values: list[tuple[str, str]]
    #: ``value_nodes``: (var, node)
    value_nodes: list[tuple[int, str]]
    #: ``matches``: (var, node)
    matches: list[tuple[int, str]]
    #: ``bindings``: (var1, var2, node1, node2)
    bindings: list[tuple[int, int, str, str]]

    def r_doc(self) -> list[tuple[int, str, str]]:
        """The thesis's R_doc rows ``(var, node, strval)``: ``value_nodes`` with ``values``."""
        strval = dict(self.values)
        return [(var, node, strval[node]) for var, node in self.value_nodes]


_ELEMENT_IDS: list[str] = []


def element_ids(count: int) -> list[str]:
    """Interned node ids ``"0"`` .. ``str(count - 1)`` (grown on demand, shared)."""
    if len(_ELEMENT_IDS) < count:
        _ELEMENT_IDS.extend(str(i) for i in range(len(_ELEMENT_IDS), max(count, 1024)))
    return _ELEMENT_IDS
