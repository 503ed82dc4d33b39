"""Building result records fast: per-query plans, per-document-tuple memos (spec 3.3, 3.4).

``LocalEngine.record`` turns a match (R_T row, documents, meta-variable nodes)
into a ``ResultRecord``. Everything that depends only on the query is computed
once per R_T row (``RecordPlan``): the join variables in name order with their
meta-variable and block, the JSON text of the query id and of each variable
name (the result id hashes ``[qid, [[stream, docid]...], [[var, node]...]]``,
``xscl.engine.output.result_id``), the escaped ``<result query="...">`` tag, and
per block the first-step cache key prefix. Everything that depends only on the
documents of a match is computed once per document tuple (``DocsInfo``): their
JSON text, (stream, docid, ts) triples, interval and parsed trees. What remains
per result is a few tuple builds, one SHA-256 and, for ``SELECT *``, a string
concatenation of cached element serialisations -- byte-identical to
``QueryOutput.build_xml`` (which still handles text/attribute parts and
``SELECT x, ...``).

Example::

    plan = RecordPlan(row, engine.outputs[row.qid])
    record = build_record(plan, docs_info(docs, trees), nodes, trees)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from lxml import etree

from xscl.engine.output import DocumentTree, DocumentTrees, QueryOutput, ResultRecord
from xscl.engine.state import DocState
from xscl.templates.registry import QueryRow


@lru_cache(maxsize=1 << 16)
def json_string(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)`` (cached: names and node ids repeat)."""
    return json.dumps(text, ensure_ascii=False)


def result_tag(qid: str) -> str:
    """The opening ``<result query="...">`` tag exactly as lxml serialises it."""
    empty = str(etree.tostring(etree.Element("result", query=qid), encoding="unicode"))
    assert empty.endswith("/>")
    return empty[:-2] + ">"


@dataclass(frozen=True)
class BlockKey:
    """For ``SELECT *``: how block ``index`` finds its first-step node.

    ``kind`` is ``root`` (block without steps: the root element), ``first``
    (no pattern variables: the first first-step node in document order) or
    ``walk`` (the deepest first-step node among embeddings agreeing with the
    join variables ``fixed``, names with their meta-variables, cached per
    document under ``prefix`` + their nodes).
    """

    index: int
    kind: str
    fixed: tuple[tuple[str, int], ...]
    prefix: tuple[object, ...]


class RecordPlan:
    """What building a record of one R_T row needs, computed once per row."""

    def __init__(self, row: QueryRow, output: QueryOutput) -> None:
        self.row = row
        self.output = output
        self.qid = row.qid
        template = row.template
        joined = sorted({m for edge in template.value_edges for m in edge})
        by_name: dict[str, int] = {}
        for meta in joined:  # a repeated name keeps its last meta-variable, like a dict would
            by_name[row.names[meta]] = meta
        #: join variables in name order: (name, meta-variable, block)
        self.joins = tuple(
            (name, meta, template.blocks[meta]) for name, meta in sorted(by_name.items())
        )
        self.names = tuple(name for name, _, _ in self.joins)
        self.metas = tuple(meta for _, meta, _ in self.joins)
        self.id_head = "[" + json_string(row.qid) + ","
        self.name_heads = tuple("[" + json_string(name) + "," for name in self.names)
        self.tag = result_tag(row.qid)
        self.select_all = output.select is None
        self.blocks = tuple(self._block_key(i, by_name) for i in range(len(output.blocks)))

    def _block_key(self, index: int, by_name: dict[str, int]) -> BlockKey:
        out = self.output.blocks[index]
        if out is None:
            return BlockKey(index, "root", (), ())
        if not out.variables:
            assert out.first_id is not None
            return BlockKey(index, "first", (), ("first", out.first_id))
        fixed = tuple((n, by_name[n]) for n in out.variables if n in by_name)
        prefix = ("walk", out.signature, tuple(out.id_of(n) for n, _ in fixed))
        return BlockKey(index, "walk", fixed, prefix)


@dataclass(frozen=True)
class DocsInfo:
    """What records of one document tuple share: JSON, triples, interval, trees."""

    json: str
    refs: tuple[tuple[str, str, int], ...]
    start: int
    end: int
    trees: tuple[DocumentTree, ...]

    @property
    def items(self) -> tuple[tuple[str | None, str | None], ...]:
        """Each document's item title and link (``DocumentTree.item``, cached there)."""
        return tuple(tree.item for tree in self.trees)


def docs_info(docs: tuple[DocState, ...], trees: DocumentTrees) -> DocsInfo:
    """The shared part of the records whose match has documents ``docs``."""
    keys = ",".join("[" + json_string(d.stream) + "," + json_string(d.docid) + "]" for d in docs)
    ts = [d.ts for d in docs]
    return DocsInfo(
        "[" + keys + "]",
        tuple((d.stream, d.docid, d.ts) for d in docs),
        min(ts),
        max(ts),
        tuple(trees.get(d) for d in docs),
    )


def build_record(
    plan: RecordPlan,
    docs: tuple[DocState, ...],
    info: DocsInfo,
    nodes: tuple[str, ...],
    trees: DocumentTrees,
) -> ResultRecord:
    """The result record of one match (same bytes as the straightforward construction)."""
    picked = [nodes[m] for m in plan.metas]
    parts = [
        head + json_string(node) + "]" for head, node in zip(plan.name_heads, picked, strict=True)
    ]
    text = plan.id_head + info.json + ",[" + ",".join(parts) + "]]"
    values = [
        (name, docs[block].values.get(node, ""))
        for (name, _, block), node in zip(plan.joins, picked, strict=True)
    ]
    pieces = _select_all_parts(plan, docs, info, nodes) if plan.select_all else None
    built = None
    if pieces is None:
        built = plan.output.build_xml(docs, dict(zip(plan.names, picked, strict=True)), trees)
    return ResultRecord(
        query=plan.qid,
        result_id=hashlib.sha256(text.encode("utf-8")).hexdigest()[:32],
        docs=info.refs,
        nodes=tuple(zip(plan.names, picked, strict=True)),
        values=tuple(values),
        start_micros=info.start,
        end_micros=info.end,
        built_xml=built,
        xml_parts=pieces,
        items=info.items,
    )


def _select_all_parts(
    plan: RecordPlan, docs: tuple[DocState, ...], info: DocsInfo, nodes: tuple[str, ...]
) -> tuple[str, ...] | None:
    """``SELECT *`` output in pieces when every block's first-step node is an element,
    else None.

    Each document caches, per (block pattern, join nodes), the first-step node's
    serialisation (None when that node is not an element): the embeddings are
    walked once per distinct key, not once per result.
    """
    parts = [plan.tag]
    for key, tree in zip(plan.blocks, info.trees, strict=True):
        cache_key = (key.prefix, tuple([nodes[m] for _, m in key.fixed]))
        part = tree.first_parts.get(cache_key, _MISSING)
        if part is _MISSING:
            node = _first_step(plan.output, key, docs, tree, nodes)
            part = None if "/" in node else tree.serialized(node)
            tree.first_parts[cache_key] = part
        if part is None:
            return None
        parts.append(part)
    parts.append("</result>")
    return tuple(parts)


_MISSING: str = "\x00missing"


def _first_step(
    output: QueryOutput,
    key: BlockKey,
    docs: tuple[DocState, ...],
    tree: DocumentTree,
    nodes: tuple[str, ...],
) -> str:
    if key.kind == "root":
        return "0"
    fixed = {name: nodes[m] for name, m in key.fixed}
    return output.first_step_node(key.index, docs[key.index], fixed, tree)


#: document tuples whose shared record parts are remembered before the memo is reset
_DOCS_INFO_CAPACITY = 4096


class RecordBuilder:
    """Builds the records of matches: the per-document caches of one matching process.

    ``plan_for`` gives a row's ``RecordPlan`` (``Subscriptions.record_plan``); the
    parsed trees of recently matched documents and the shared parts of their tuples
    are kept here. ``forget_tuples`` drops the tuples' memo, which holds parsed trees
    (the in-process engine calls it once per document).
    """

    def __init__(
        self, plan_for: Callable[[QueryRow], RecordPlan], trees: DocumentTrees | None = None
    ) -> None:
        self.plan_for = plan_for
        self.trees = trees if trees is not None else DocumentTrees()
        #: per document tuple of recent matches; DocState hashes by identity
        self._docs_infos: dict[tuple[DocState, ...], DocsInfo] = {}

    def record(self, match: tuple[QueryRow, tuple[DocState, ...], tuple[str, ...]]) -> ResultRecord:
        """The result record (id, values, output XML) of one match."""
        row, docs, nodes = match
        info = self._docs_infos.get(docs)
        if info is None:
            if len(self._docs_infos) >= _DOCS_INFO_CAPACITY:
                self._docs_infos.clear()
            info = docs_info(docs, self.trees)
            self._docs_infos[docs] = info
        return build_record(self.plan_for(row), docs, info, nodes, self.trees)

    def forget_tuples(self) -> None:
        self._docs_infos.clear()
