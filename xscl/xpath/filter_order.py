"""The order in which a candidate's filters are evaluated: A-Greedy (Babu 2005, ch. 4).

A trie node with several predicates (``[contains(title,'rust')][category =
'jobs'][matches(description, ...)]``) holds when all of them do: a
conjunction of commutative filters, a *pipelined filter query* (section
4.1).  Evaluation stops at the first filter that drops the element, so the
order decides the cost, and the best order changes when the documents do.
:class:`AdaptiveOrder` is A-Greedy (section 4.3):

* **Profiler** (4.3.1): after ``profile_every`` drops (at once until the
  window is first full) the next dropped element is *profiled*: its filters
  are timed as they run and, once one drops it, the remaining filters are
  evaluated too; the profile tuple (which filters drop it, each one's time)
  enters a sliding *profile window* of ``window`` tuples, so old data stops
  counting.
* **Re-optimizer** (4.3.2): the *matrix view* ``V[i][j]`` counts the window's
  tuples dropped by the j-th filter of the current order among those not
  dropped by the first ``i``; ``a[f]`` is filter f's mean time over the
  window.  The order satisfies the *Greedy Invariant* when
  ``V[i][i] / a[f(i)] >= V[i][j] / a[f(j)]`` for ``i <= j``.  A violation by
  more than the factor ``thrash`` (equation 4.4, against thrashing) re-orders
  from position ``i`` greedily: at each position the remaining filter with
  the highest conditional drop count per unit of time (Figure 4.7; among
  filters that drop nothing there, the cheaper first).

The first order is the caller's guess (``initial``: the automaton puts
comparisons before function predicates and regexes last); the profile
takes over from there.

The view is recomputed from the window on each profile tuple rather than
updated incrementally (Figure 4.5): the window is small and this happens
once per ``profile_every`` drops.  :class:`StaticOrder` is the same protocol
with a fixed order (the benchmark's baselines).  Results never depend on the
order: all filters must hold.

>>> order = AdaptiveOrder(2, window=8, profile_every=1)
>>> passes = [lambda: True, lambda: False]   # filter 1 always drops
>>> [order.run(lambda f: passes[f]()) for _ in range(3)], order.order
([False, False, False], (1, 0))
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from time import perf_counter_ns
from typing import Protocol

#: profile one dropped element in this many (the drop-profiling probability, 4.3.1)
PROFILE_EVERY = 32
#: profile tuples in the sliding window (4.3.1)
WINDOW = 16
#: re-order only when another filter's rank is this much better (equation 4.4)
THRASH = 1.25

Evaluate = Callable[[int], bool]


class FilterOrder(Protocol):
    """Evaluates a conjunction of filters ``0..n-1`` in some order."""

    @property
    def order(self) -> tuple[int, ...]: ...

    def run(self, evaluate: Evaluate) -> bool:
        """Whether every filter holds (``evaluate(f)`` tests filter ``f``)."""
        ...


class StaticOrder:
    """Filters always in one given order."""

    __slots__ = ("order",)

    def __init__(self, order: tuple[int, ...]) -> None:
        self.order = order

    def run(self, evaluate: Evaluate) -> bool:
        return all(evaluate(f) for f in self.order)


class AdaptiveOrder:
    """A-Greedy's profiler and re-optimizer for one conjunction (see the module docstring)."""

    __slots__ = ("_drops", "_every", "_thrash", "_times", "_window", "order", "reorders")

    def __init__(
        self,
        count: int,
        *,
        initial: tuple[int, ...] | None = None,
        window: int = WINDOW,
        profile_every: int = PROFILE_EVERY,
        thrash: float = THRASH,
    ) -> None:
        self.order: tuple[int, ...] = initial if initial is not None else tuple(range(count))
        #: profile tuples: (bit f set when filter f drops, each filter's time in ns)
        self._window: deque[tuple[int, tuple[int, ...]]] = deque(maxlen=window)
        self._times = [0] * count  # per filter: the window's total time
        self._every = profile_every
        self._thrash = thrash
        self._drops = 0
        self.reorders = 0

    def run(self, evaluate: Evaluate) -> bool:
        window = self._window
        if self._drops < self._every and len(window) == window.maxlen:
            for f in self.order:
                if not evaluate(f):
                    self._drops += 1
                    return False
            return True
        return self._profiled_run(evaluate)

    def _profiled_run(self, evaluate: Evaluate) -> bool:
        """Evaluate in order, timing each filter; if the element is dropped, evaluate the
        remaining filters too and record the profile tuple (4.3.1)."""
        order = self.order
        times = [0] * len(order)
        mask = 0
        dropped = False
        for f in order:
            start = perf_counter_ns()
            held = evaluate(f)
            times[f] = perf_counter_ns() - start + 1
            if not held:
                mask |= 1 << f
                dropped = True
        if not dropped:
            return True
        self._drops = 0
        window = self._window
        if len(window) == window.maxlen:
            _, old = window[0]
            for f, spent in enumerate(old):
                self._times[f] -= spent
        window.append((mask, tuple(times)))
        for f, spent in enumerate(times):
            self._times[f] += spent
        self._reoptimize()
        return False

    def _rank(self, f: int, alive: list[int]) -> float:
        """Drops per unit of time of filter ``f`` among the tuples ``alive`` (masks)."""
        bit = 1 << f
        dropped = sum(1 for mask in alive if mask & bit)
        return dropped * len(self._window) / self._times[f]

    def _reoptimize(self) -> None:
        """Check the Greedy Invariant (4.4); on a violation re-order greedily (Figure 4.7)."""
        order = list(self.order)
        alive = [mask for mask, _ in self._window]
        for i, f in enumerate(order):
            own = self._rank(f, alive)
            if any(own * self._thrash < self._rank(g, alive) for g in order[i + 1 :]):
                self._greedy_from(i, order, alive)
                return
            alive = [mask for mask in alive if not mask & (1 << f)]

    def _greedy_from(self, i: int, order: list[int], alive: list[int]) -> None:
        head, rest = order[:i], order[i:]
        while rest:
            best = max(rest, key=lambda g: (self._rank(g, alive), -self._times[g]))
            head.append(best)
            rest.remove(best)
            alive = [mask for mask in alive if not mask & (1 << best)]
        self.order = tuple(head)
        self.reorders += 1
