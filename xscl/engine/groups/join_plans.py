"""Which keyed chains a join group matches through kept prefixes: the plan choice
(Babu 2005 ch. 5: MJoins probe with no intermediate state, XJoins keep subresults;
§5.5 A-Caching chooses the caches online, under a memory budget).

A keyed chain whose prefix is keyed too (``engine.prefix_plans``) can be matched in a
group two ways, with the same results (``groups.prefix_cache``):

* **probe**: a new document of the last block walks the stored documents of every
  other block that hold its key value; nothing else is kept;
* **cache**: the group keeps every match of the first K - 1 blocks per key label, made
  as their documents arrive, and a new last-block document is checked against those.

Probing costs per last-block document what the walk enumerates; caching costs per
last-block document what is kept under its key, plus the upkeep per document of the
other blocks, plus the memory. Which is cheaper depends on the stream: how many
documents of each block arrive, and how many of their combinations the prefix's own
conditions (its windows, an equality outside the key) let through.

Three implementations of one protocol, chosen by ``xscl serve --join-plan``:

* ``ProbeAlways`` and ``CacheAlways``: the fixed plans (for comparison; a forced cache
  ignores the budget);
* ``Adaptive`` (the default): per group and template, the measured cost of each plan
  per batch, from the CPU time each took for the last-block documents and the upkeep,
  smoothed over batches (``PlanProfile``); the cheaper one is used, the other re-tried
  every ``explore`` batches so a change in the stream is seen (a drift), and a group's
  caches are kept under ``budget`` bytes, dropping those saving the least per byte first.

Where it runs: one object per Python worker and job (``worker_context``), asked by the
value groups of that worker at each batch; what it learns stays in that worker.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from xscl.templates.canonical import Template

#: The plans ``xscl serve --join-plan`` names (``plan_choice``).
JOIN_PLANS = ("adaptive", "probe", "cache")
#: Default memory for the kept prefixes of one join group (``--cache-memory``).
DEFAULT_CACHE_MEMORY = 64 << 20
#: Default number of batches between two tries of the plan not in use.
DEFAULT_EXPLORE = 8
#: The longest interval between two tries, in multiples of ``explore``.
MAX_BACKOFF = 8
#: Batches the rates of documents are measured over.
RATE_WINDOW = 8
#: The share of the current plan's cost the other must save before the plan switches.
HYSTERESIS = 0.2
#: Weight of a new batch's cost in a plan's smoothed cost.
SMOOTHING = 0.3


@dataclass
class BatchCost:
    """What one group's batch measured for one cacheable template."""

    cached: bool
    #: last-block documents checked, and the CPU seconds they took
    last_docs: int = 0
    last_seconds: float = 0.0
    #: documents of the other blocks (the cache's upkeep; counted under either plan)
    prefix_docs: int = 0
    prefix_seconds: float = 0.0
    #: seconds to build the cache from the stored documents (a worker that had none)
    build_seconds: float = 0.0
    #: bytes the cache holds after the batch (0 when probing)
    cache_bytes: int = 0


class PlanChoice(Protocol):
    """The plan choice a value group asks (see the module docstring)."""

    name: str

    def caching(self, group: int, template: Template) -> bool:
        """Whether ``group`` matches ``template``'s last block through kept prefixes in
        its next batch."""
        ...

    def keeping(self, group: int, template: Template) -> bool:
        """Whether ``group`` keeps ``template``'s prefixes up in its next batch (it does
        whenever it uses them)."""
        ...

    def observe(self, group: int, costs: dict[Template, BatchCost]) -> None:
        """What ``group``'s batch measured, per cacheable template."""
        ...


class ProbeAlways:
    """The MJoin plan everywhere: nothing kept."""

    name = "probe"

    def caching(self, group: int, template: Template) -> bool:
        return False

    def keeping(self, group: int, template: Template) -> bool:
        return False

    def observe(self, group: int, costs: dict[Template, BatchCost]) -> None:
        return None


class CacheAlways:
    """The prefixes kept for every cacheable template, whatever they cost."""

    name = "cache"

    def caching(self, group: int, template: Template) -> bool:
        return True

    def keeping(self, group: int, template: Template) -> bool:
        return True

    def observe(self, group: int, costs: dict[Template, BatchCost]) -> None:
        return None


@dataclass
class PlanProfile:
    """One group's measurements of one template under both plans.

    >>> p = PlanProfile()
    >>> p.observe(BatchCost(False, last_docs=10, last_seconds=1.0, prefix_docs=5), 1)
    >>> p.observe(BatchCost(True, last_docs=10, last_seconds=0.1, prefix_docs=5,
    ...                     prefix_seconds=0.2, cache_bytes=100), 2)
    >>> p.cheaper(), round(p.saving(), 2)
    (True, 0.7)
    >>> p.observe(BatchCost(True, prefix_docs=100, prefix_seconds=4.0), 3)  # no last block
    >>> p.cheaper(), round(p.saving(), 2)
    (False, -0.87)
    """

    probe_per_last: float | None = None
    cache_per_last: float | None = None
    upkeep_per_prefix: float | None = None
    #: last-block and other documents of the last ``RATE_WINDOW`` batches (seen under
    #: either plan): the profiler's sliding window (Babu ch. 4)
    last_docs: deque[int] = field(default_factory=lambda: deque(maxlen=RATE_WINDOW))
    prefix_docs: deque[int] = field(default_factory=lambda: deque(maxlen=RATE_WINDOW))
    #: CPU seconds the last build of the cache from the stored documents took
    build_cost: float = 0.0
    #: the bytes of the kept prefixes when they were last kept
    cache_bytes: int = 0
    #: the batch each plan was last measured at
    probed_at: int = -1
    cached_at: int = -1
    #: batches between two tries of the plan not in use (``Adaptive._next``; 0: the
    #: choice's ``explore``)
    interval: int = 0
    #: the plan being tried in this batch, if it is a try
    trying: bool | None = None

    def observe(self, cost: BatchCost, batch: int) -> None:
        self.last_docs.append(cost.last_docs)
        self.prefix_docs.append(cost.prefix_docs)
        if cost.build_seconds:
            self.build_cost = cost.build_seconds
        if cost.cached:
            self.cached_at = batch
            self.cache_bytes = cost.cache_bytes
            if cost.last_docs:
                self.cache_per_last = _smooth(
                    self.cache_per_last, cost.last_seconds / cost.last_docs
                )
            if cost.prefix_docs:
                self.upkeep_per_prefix = _smooth(
                    self.upkeep_per_prefix, cost.prefix_seconds / cost.prefix_docs
                )
        else:
            self.probed_at = batch
            if cost.last_docs:
                self.probe_per_last = _smooth(
                    self.probe_per_last, cost.last_seconds / cost.last_docs
                )

    @property
    def last_rate(self) -> float:
        """Last-block documents per batch, over the window."""
        return _mean(self.last_docs)

    @property
    def prefix_rate(self) -> float:
        """Documents of the other blocks per batch, over the window."""
        return _mean(self.prefix_docs)

    def saving(self) -> float:
        """CPU seconds per batch the cache saves over probing (negative: it costs)."""
        return self.cost(False) - self.cost(True)

    def cheaper(self) -> bool | None:
        """Whether caching is the cheaper plan (None: not both measured yet)."""
        if self.probe_per_last is None or self.cache_per_last is None:
            return None
        return self.saving() > 0

    def cost(self, cached: bool) -> float:
        """CPU seconds per batch of one plan, at the current rates."""
        last, prefix = self.last_rate, self.prefix_rate
        if not cached:
            return (self.probe_per_last or 0.0) * last
        return (self.cache_per_last or 0.0) * last + (self.upkeep_per_prefix or 0.0) * prefix


@dataclass
class Adaptive:
    """A-Caching per group and template (see the module docstring)."""

    budget: int = DEFAULT_CACHE_MEMORY
    explore: int = DEFAULT_EXPLORE
    name: str = "adaptive"
    #: (group, template) -> its profile
    profiles: dict[tuple[int, Template], PlanProfile] = field(default_factory=dict)
    #: group -> its batches observed
    batches: dict[int, int] = field(default_factory=dict)
    #: (group, template) -> whether the next batch uses the cache
    chosen: dict[tuple[int, Template], bool] = field(default_factory=dict)
    #: (group, template) -> whether the next batch keeps the cache up (it does while it
    #: uses it, and while it tries probing, so that going back costs no build)
    kept: dict[tuple[int, Template], bool] = field(default_factory=dict)

    def caching(self, group: int, template: Template) -> bool:
        return self.chosen.get((group, template), False)

    def keeping(self, group: int, template: Template) -> bool:
        return self.kept.get((group, template), False)

    def observe(self, group: int, costs: dict[Template, BatchCost]) -> None:
        batch = self.batches[group] = self.batches.get(group, 0) + 1
        for key in [k for k in self.profiles if k[0] == group and k[1] not in costs]:
            del self.profiles[key]  # an unsubscribed template's
            self.chosen.pop(key, None)
            self.kept.pop(key, None)
        for template, cost in costs.items():
            profile = self.profiles.setdefault((group, template), PlanProfile())
            profile.observe(cost, batch)
            use, keep = self._next(profile, cost.cached, batch)
            self.chosen[(group, template)] = use
            self.kept[(group, template)] = keep
        self._fit_budget(group)

    def _next(self, profile: PlanProfile, cached: bool, batch: int) -> tuple[bool, bool]:
        """Whether the next batch uses the cache, and whether it keeps it up.

        The cheaper plan is used. The other is tried as soon as there are last-block
        documents to measure it on, and again once its measurement is
        ``profile.interval`` batches old: the cache only when the measurements so far,
        at the current rates of documents, say a switch would pay (a try builds it),
        or at the longest interval. A try that confirms the plan in use doubles the
        interval (up to ``MAX_BACKOFF`` times ``explore``); a switch resets it."""
        if not self.budget:
            return False, False  # no memory for kept prefixes: always probe
        if not (profile.last_rate or profile.prefix_rate):
            return cached, cached  # nothing to compare on yet
        if profile.trying is not None and profile.trying == cached:
            # the batch just measured was a try of the other plan: back to the cheaper
            profile.trying = None
            cheaper = profile.cheaper()
            use = cached if cheaper is None else cheaper  # unmeasured: go on trying
            if use != cached:
                longest = MAX_BACKOFF * self.explore
                profile.interval = min(max(profile.interval, self.explore) * 2, longest)
            else:
                profile.interval = self.explore
            return use, use
        other = profile.probe_per_last if cached else profile.cache_per_last
        age = batch - (profile.probed_at if cached else profile.cached_at)
        due = age >= max(profile.interval, self.explore)
        worth = cached or self._pays(profile, True) or age >= MAX_BACKOFF * self.explore
        if (other is None and profile.last_rate) or (due and worth):
            profile.trying = not cached
            return not cached, True
        cheaper = profile.cheaper()
        if cheaper is not None and cheaper != cached and self._pays(profile, cheaper):
            profile.interval = self.explore  # the stream changed: watch it closely again
            return cheaper, cheaper
        return cached, cached

    def _pays(self, profile: PlanProfile, cache: bool) -> bool:
        """Whether switching to ``cache`` (or to probing) is worth it: the other plan
        must save ``HYSTERESIS`` of the current one's cost (so one late document does
        not flip the plan back and forth), and a switch to caching must save more
        before the next try than building the cache costs."""
        gain = abs(profile.saving())
        if gain < HYSTERESIS * profile.cost(not cache):
            return False
        return not cache or gain * max(profile.interval, self.explore) > profile.build_cost

    def _fit_budget(self, group: int) -> None:
        """Keep the group's caches under ``budget``: drop those saving the least per
        byte first."""
        kept = [
            (profile.saving() / max(profile.cache_bytes, 1), template, profile.cache_bytes)
            for (g, template), profile in self.profiles.items()
            if g == group and self.kept.get((g, template)) and profile.cache_bytes
        ]
        total = sum(size for _rank, _template, size in kept)
        for _rank, template, size in sorted(kept, key=lambda k: k[0]):
            if total <= self.budget:
                break
            self.chosen[(group, template)] = self.kept[(group, template)] = False
            total -= size


def plan_choice(name: str, budget: int = DEFAULT_CACHE_MEMORY) -> PlanChoice:
    """The plan choice ``xscl serve --join-plan NAME`` names."""
    if name == "probe":
        return ProbeAlways()
    if name == "cache":
        return CacheAlways()
    if name == "adaptive":
        return Adaptive(budget)
    raise ValueError(f"unknown join plan {name!r}: adaptive, probe or cache")


def _mean(window: deque[int]) -> float:
    return sum(window) / max(len(window), 1)


def _smooth(old: float | None, new: float) -> float:
    return new if old is None else (1 - SMOOTHING) * old + SMOOTHING * new
