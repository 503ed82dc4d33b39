"""What a Python worker keeps between Spark tasks, in one object.

Spark reuses a Python worker for many tasks of the job (``spark.python.worker.reuse``;
with ``xscl serve --fresh-workers`` each task is a new fork of the daemon instead, which
starts with the daemon's own context, ``worker_reuse``), so what is expensive to build
is built once per worker and kept here, never in module globals of the modules that use
it:

* ``queries``: the subscriptions at each registry version (``service.live_queries``):
  built from the compiled table or the texts, then extended event by event;
* ``decoded``: per job and group kind (value, chain), the recently decoded documents
  (``engine.groups.decoded``);
* ``memory``: per job, the group states this worker wrote, reused when Spark hands
  the same snapshot back (``engine.groups.stored.GroupMemory``);
* ``documents``: one spool reader per spool (its segment index walked once);
* ``trees``: per job (its registry), the parsed documents recently matched (results'
  output and the real string values of matched documents, ``engine.groups.exact``),
  by (stream, docid), which the spool makes unique within a job;
* ``renderer``: the Atom entries of the groups' newest results (caches shared by
  every group call);
* ``feed_writers``: one Atom feed writer per feeds folder, so a feed it wrote is not
  read back.

Where it runs: executors (and the driver in local mode), once per Python worker
(``worker()`` builds it on first use). Nothing here is pickled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.join_plans import PlanChoice, plan_choice
from xscl.engine.groups.spool_documents import SpoolDocuments
from xscl.engine.groups.stored import GroupMemory
from xscl.engine.output import DocumentTrees
from xscl.results.atom import DEFAULT_CACHE_BYTES, AtomFeedWriter, EntryRenderer
from xscl.service.live_queries import LiveQueries


@dataclass
class WorkerContext:
    """See the module docstring."""

    queries: LiveQueries = field(default_factory=LiveQueries)
    _trees: dict[str, DocumentTrees] = field(default_factory=dict)
    _decoded: dict[tuple[str, str], DecodedDocs] = field(default_factory=dict)
    _memory: dict[str, GroupMemory[Any]] = field(default_factory=dict)
    _plans: dict[tuple[str, str, int], PlanChoice] = field(default_factory=dict)
    renderer: EntryRenderer = field(default_factory=lambda: EntryRenderer(DEFAULT_CACHE_BYTES // 4))
    feed_writers: dict[tuple[str, int, str | None], AtomFeedWriter] = field(default_factory=dict)
    _documents: dict[tuple[str, str | None], SpoolDocuments] = field(default_factory=dict)

    def trees(self, registry: str) -> DocumentTrees:
        """The parsed documents of the job whose registry is ``registry``."""
        found = self._trees.get(registry)
        if found is None:
            found = self._trees[registry] = DocumentTrees()
        return found

    def decoded(self, registry: str, kind: str) -> DecodedDocs:
        """The decoded documents of ``kind``'s groups (``engine.groups.routed.kind_of``) of
        the job whose registry is ``registry`` (a document's bytes differ by kind)."""
        found = self._decoded.get((registry, kind))
        if found is None:
            found = self._decoded[(registry, kind)] = DecodedDocs()
        return found

    def memory(self, registry: str) -> GroupMemory[Any]:
        """The live group states this worker wrote for the job of ``registry``."""
        found = self._memory.get(registry)
        if found is None:
            found = self._memory[registry] = GroupMemory()
        return found

    def join_plans(self, registry: str, name: str, budget: int) -> PlanChoice:
        """The plan choice of the job of ``registry`` (``groups.join_plans``: what the
        adaptive one learns stays with this worker)."""
        key = (registry, name, budget)
        found = self._plans.get(key)
        if found is None:
            found = self._plans[key] = plan_choice(name, budget)
        return found

    def documents(self, spool: str, published: str | None = None) -> SpoolDocuments:
        """The document store over ``spool`` and the job's ``published`` spool (made on
        first use)."""
        found = self._documents.get((spool, published))
        if found is None:
            found = self._documents[(spool, published)] = SpoolDocuments(spool, published)
        return found


_context: WorkerContext | None = None


def worker() -> WorkerContext:
    """This Python worker's context (made on first use)."""
    global _context
    if _context is None:
        _context = WorkerContext()
    return _context
