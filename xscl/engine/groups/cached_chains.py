"""One value group's batch of keyed chains under the plan choice: which templates match
their last block through kept prefixes (``prefix_cache``), the upkeep of those
prefixes, and what each plan cost (``join_plans``).

Per batch: ``begin`` asks the plan choice which cacheable templates
(``Subscriptions.prefix_plans``) to cache, builds the caches this worker lacks from the
stored documents and drops the others; ``run`` is the keyed matching's runner
(``keyed_chains.Runner``): a cached template's last-role plan completes kept prefixes,
every other plan probes, and each is timed; ``stored`` keeps the prefixes a newly
stored document makes; ``evicted`` drops the prefixes of evicted documents; ``finish``
tells the plan choice what the batch cost. The results are the same under either plan
(``prefix_cache``).

Where it runs: in a value group's batch (``value_group``), on an executor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from xscl.engine.groups.join_plans import BatchCost, PlanChoice
from xscl.engine.groups.keyed_chains import probe
from xscl.engine.groups.prefix_cache import PrefixCache
from xscl.engine.key_labels import is_key_label, is_spread_label, key_label, key_value
from xscl.engine.matcher import Match
from xscl.engine.plans import RolePlan
from xscl.engine.state import DocState
from xscl.engine.subscriptions import Subscriptions
from xscl.engine.view_cache import Slice
from xscl.templates.canonical import Template

#: A pass's slice: (pass label, key value) -> its ``slice_of``
SliceOf = Callable[[str, str], Callable[[str], Slice]]
#: A pass's documents: (pass label, key value) -> them
DocsOf = Callable[[str, str], list[DocState]]


class CachedChains:
    """See the module docstring."""

    def __init__(
        self,
        subscriptions: Subscriptions,
        choice: PlanChoice,
        group: int,
        caches: dict[Template, PrefixCache],
    ) -> None:
        self.subscriptions = subscriptions
        self.choice = choice
        self.group = group
        #: the kept prefixes: template -> cache (the worker's, carried between batches)
        self.caches = caches
        self.costs: dict[Template, BatchCost] = {}

    def begin(self, labels: Iterable[str], docs_of: DocsOf, slice_of: SliceOf) -> None:
        """Choose each cacheable template's plan; build the caches this worker lacks
        (``labels``: the key labels stored in the group)."""
        prefixes = self.subscriptions.prefix_plans
        for template in list(self.caches):
            if template not in prefixes or not self.choice.keeping(self.group, template):
                del self.caches[template]
        passes = [label for label in labels if is_key_label(label)]
        for template, plans in prefixes.items():
            cost = self.costs[template] = BatchCost(self.choice.caching(self.group, template))
            if self.choice.keeping(self.group, template) and template not in self.caches:
                started = time.process_time()
                cache = self.caches[template] = PrefixCache(plans)
                for label in passes:
                    value = key_value(label)
                    cache.build(label, docs_of(label, value), slice_of(label, value))
                cost.build_seconds = time.process_time() - started

    def run(
        self,
        plan: RolePlan,
        new: DocState,
        slice_of: Callable[[str], Slice],
        label: str,
        value: str,
    ) -> Iterable[Match]:
        """A keyed plan's matches in one pass (``keyed_chains.Runner``), timed for a
        cacheable template's last role."""
        cost = self.costs.get(plan.template)
        if cost is None or plan.role != plan.template.block_count - 1:
            return probe(plan, new, slice_of, label, value)
        started = time.process_time()
        cache = self.caches.get(plan.template) if cost.cached else None
        found: Iterable[Match] = (
            probe(plan, new, slice_of, label, value)
            if cache is None
            else cache.complete(plan, new, label, value)
        )
        matches = list(found)
        cost.last_docs += 1
        cost.last_seconds += time.process_time() - started
        return matches

    def stored(self, new: DocState, homes: Iterable[str], slice_of: SliceOf) -> None:
        """Keep the prefixes ``new``, just stored under ``homes``, makes in each pass it
        joins: its own labels' and, for a spread label, its key label's."""
        passes: set[str] = set()
        for label in homes:
            if is_key_label(label):
                passes.add(label)
                if is_spread_label(label):
                    passes.add(key_label(key_value(label)))
        if not passes:
            return
        for template, plans in self.subscriptions.prefix_plans.items():
            if not plans.fills(new):
                continue
            cost = self.costs[template]
            cost.prefix_docs += 1
            cache = self.caches.get(template)
            if cache is None:
                continue
            started = time.process_time()
            for label in sorted(passes):
                cache.add(label, new, slice_of(label, key_value(label)))
            cost.prefix_seconds += time.process_time() - started

    def evicted(self, stored: set[int]) -> None:
        """Drop the prefixes of evicted documents (``stored``: those left), an upkeep."""
        for template, cache in self.caches.items():
            started = time.process_time()
            cache.keep_only(stored)
            cost = self.costs.get(template)
            if cost is not None:
                cost.prefix_seconds += time.process_time() - started

    def finish(self) -> None:
        """Tell the plan choice what the batch cost, with each cache's size."""
        for template, cost in self.costs.items():
            cache = self.caches.get(template)
            cost.cache_bytes = 0 if cache is None else cache.bytes
        self.choice.observe(self.group, self.costs)
