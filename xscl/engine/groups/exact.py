"""Matches found on digests, checked and completed on the documents' real strings.

Value groups store and join **digests** of string values (``codec``): feed items'
values include whole articles, and a document is stored once per value it is routed
by. A match found on digests is checked here before its record is built: each of its
documents is read back from the spool (``DocumentStore``; its XML is needed for the
output anyway), parsed once (the record builder's trees), and its value nodes get
their real string values from the parsed tree, exactly as Stage 1 computes them
(``xpath.nodes.string_value``: NFC, outer XML whitespace stripped). Then every value
equality of the match is compared on the real strings, so a digest collision can
never make a result. Stage 1 does not run again.

Where it runs: in a value group's batch, once per matched document (cached by its
sequence number for the batch).
"""

from __future__ import annotations

from xscl.engine.groups.routed import DocumentStore
from xscl.engine.matcher import Match
from xscl.engine.output import DocumentTrees
from xscl.engine.state import DocState
from xscl.xpath.nodes import string_value


class ExactDocs:
    """See the module docstring."""

    def __init__(self, documents: DocumentStore, trees: DocumentTrees) -> None:
        self.documents = documents
        self.trees = trees
        self._docs: dict[int, DocState] = {}

    def doc(self, stored: DocState) -> DocState:
        """``stored`` (digests, no XML) with its XML and its real string values."""
        found = self._docs.get(stored.seq)
        if found is None:
            # a published result carries its XML; a spool record's is read back
            xml = stored.xml or self.documents.xml(stored.seq)
            found = DocState(
                stored.stream, stored.docid, stored.ts, xml, stored.seq,
                values={}, value_rows=stored.value_rows, nodes=stored.nodes,
                down=stored.down, up=stored.up,
            )  # fmt: skip
            tree = self.trees.get(found)
            found.values.update((node, string_value(tree.node(node))) for node in stored.values)
            self._docs[stored.seq] = found
        return found

    def match(self, match: Match) -> Match | None:
        """``match`` over the real documents, None if a value equality fails on them."""
        row, docs, nodes = match
        real = tuple(self.doc(d) for d in docs)
        blocks = row.template.blocks
        for a, b in row.template.value_edges:
            left = real[blocks[a]].values.get(nodes[a], "")
            if not left or left != real[blocks[b]].values.get(nodes[b], ""):
                return None
        return row, real, nodes
