"""Brute-force evaluation of XSCL queries, each on its own (spec/XSCL.md section 3).

For one query: for every block, every document of the block's stream is
embedded once (``BlockMatcher``); each document's embeddings are projected on
the block's join variables, giving the candidates of the block; ``ChainJoiner``
joins the candidates left to right under the windows and equalities; each
distinct (documents, join-variable nodes) becomes one ``ResultRecord``.

``evaluate`` runs several queries and feeds PUBLISHed results back as documents
(stream = the PUBLISH name, docid = result id, ts = the result's end time,
xml = the output XML). Queries run in dependency order (a query that reads a
PUBLISHed stream runs after every query that publishes it; ties keep the given
order), which reaches the fixpoint in one pass; a PUBLISH cycle raises
``ValueError``. Documents are deduplicated by ``(stream, docid)``: the first
delivery wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xscl.errors import XmlDocumentError
from xscl.lang.ast import Query
from xscl.reference.documents import Document
from xscl.reference.embed import BlockMatcher, Embedding
from xscl.reference.joins import Candidate, ChainJoiner, Match, block_variables, join_variables
from xscl.reference.output import (
    build_select_all,
    build_select_vars,
    first_binding,
    first_step_node,
)
from xscl.reference.results import DocRef, ResultRecord, result_id
from xscl.reference.xmltree import Node, parse_xml
from xscl.reference.xpathfn import EvalStats, FunctionPredicates


def _dedupe(documents: Iterable[Document]) -> list[Document]:
    seen: set[tuple[str, str]] = set()
    unique: list[Document] = []
    for doc in documents:
        if doc.key not in seen:
            seen.add(doc.key)
            unique.append(doc)
    return unique


class _QueryEvaluator:
    def __init__(self, query: Query, stats: EvalStats) -> None:
        self.query = query
        namespaces = dict(query.namespaces)
        self.matcher = BlockMatcher(namespaces, FunctionPredicates(namespaces, stats))
        self.join_vars = join_variables(query)
        self.block_vars = [block_variables(block) for block in query.blocks]
        self.block_join_vars = [
            sorted(v for v in names if v in self.join_vars) for names in self.block_vars
        ]
        self.var_block = {v: i for i, names in enumerate(self.block_vars) for v in names}
        self.values: dict[int, str] = {}
        self.embeddings: dict[tuple[int, tuple[str, str]], list[Embedding]] = {}

    def run(self, documents: Sequence[Document]) -> list[ResultRecord]:
        candidates: list[list[Candidate]] = []
        for i, block in enumerate(self.query.blocks):
            block_candidates: list[Candidate] = []
            for doc in documents:
                if doc.stream != block.stream:
                    continue
                found = self.matcher.embeddings(block, doc.index)
                if not found:
                    continue
                self.embeddings[(i, doc.key)] = found
                projections = dict.fromkeys(
                    tuple((v, dict(bindings)[v]) for v in self.block_join_vars[i])
                    for _, bindings in found
                )
                for projection in projections:
                    for _, node in projection:
                        self.values.setdefault(id(node), doc.index.value(node))
                    block_candidates.append(Candidate(doc, projection))
            candidates.append(block_candidates)
        matches = ChainJoiner(self.query, self.values).join(candidates)
        return [self._record(match) for match in matches]

    def _consistent(self, i: int, match: Match) -> list[Embedding]:
        wanted = {v: match.nodes[v] for v in self.block_join_vars[i]}
        return [
            (first, bindings)
            for first, bindings in self.embeddings[(i, match.docs[i].key)]
            if all(dict(bindings)[v] is node for v, node in wanted.items())
        ]

    def _output(self, match: Match) -> str:
        qid = self.query.qid
        if self.query.select is None:
            firsts = [
                first_step_node(self._consistent(i, match), bool(self.block_join_vars[i]))
                for i in range(len(self.query.blocks))
            ]
            return build_select_all(qid, firsts)
        bound: list[tuple[str, Node]] = []
        for var in self.query.select:
            if var not in self.var_block:
                raise ValueError(f"query {qid}: SELECT uses {var!r}, which no block binds")
            if var in match.nodes:
                bound.append((var, match.nodes[var]))
            else:
                consistent = self._consistent(self.var_block[var], match)
                bound.append((var, first_binding(consistent, var)))
        return build_select_vars(qid, bound)

    def _record(self, match: Match) -> ResultRecord:
        node_ids = {var: node.node_id for var, node in match.nodes.items()}
        rid = result_id(self.query.qid, [doc.key for doc in match.docs], node_ids)
        return ResultRecord(
            query=self.query.qid,
            result_id=rid,
            docs=tuple(DocRef(d.stream, d.docid, d.ts_micros) for d in match.docs),
            nodes=tuple(sorted(node_ids.items())),
            values=tuple(sorted((v, self.values[id(n)]) for v, n in match.nodes.items())),
            xml=self._output(match),
            start_micros=match.start,
            end_micros=match.end,
        )


def evaluate_query(
    query: Query, documents: Iterable[Document], *, stats: EvalStats | None = None
) -> list[ResultRecord]:
    """Results of one query over ``documents`` (deduplicated, sorted by result id)."""
    evaluator = _QueryEvaluator(query, stats if stats is not None else EvalStats())
    records = evaluator.run(_dedupe(documents))
    unique = {record.result_id: record for record in records}
    return sorted(unique.values(), key=lambda record: record.sort_key)


def dependency_order(queries: Sequence[Query]) -> list[Query]:
    """Queries ordered so that publishers run before their readers; raises on a cycle."""
    publishers: dict[str, list[int]] = {}
    for i, query in enumerate(queries):
        if query.publish is not None:
            publishers.setdefault(query.publish, []).append(i)
    needs = [
        {p for block in query.blocks for p in publishers.get(block.stream, ())} for query in queries
    ]
    done: list[int] = []
    remaining = list(range(len(queries)))
    while remaining:
        ready = [i for i in remaining if needs[i] <= set(done)]
        if not ready:
            names = ", ".join(queries[i].qid for i in remaining)
            raise ValueError(f"PUBLISH cycle among queries: {names}")
        done.extend(ready)
        remaining = [i for i in remaining if i not in ready]
    return [queries[i] for i in done]


def published_document(record: ResultRecord, stream: str) -> Document:
    """The document a PUBLISHed result becomes (parsed with the same safe parser)."""
    tree = parse_xml(record.xml)
    return Document(stream, record.result_id, record.end_micros, record.xml, tree)


def evaluate(
    queries: Sequence[Query], documents: Iterable[Document], *, stats: EvalStats | None = None
) -> list[ResultRecord]:
    """All results of all queries, PUBLISH streams included, sorted by (query, result_id)."""
    stats = stats if stats is not None else EvalStats()
    pool = _dedupe(documents)
    seen = {doc.key for doc in pool}
    results: list[ResultRecord] = []
    for query in dependency_order(queries):
        records = evaluate_query(query, pool, stats=stats)
        results.extend(records)
        if query.publish is None:
            continue
        for record in records:
            try:
                doc = published_document(record, query.publish)
            except XmlDocumentError as exc:
                stats.published_rejected += 1
                stats.add_sample(f"published result {record.result_id} rejected: {exc}")
                continue
            if doc.key not in seen:
                seen.add(doc.key)
                pool.append(doc)
                stats.published_documents += 1
    return sorted(results, key=lambda record: record.sort_key)
