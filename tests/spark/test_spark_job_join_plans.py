"""A keyed chain's last block matched by probing or through kept prefixes
(``engine.groups.join_plans``, ``prefix_cache``): a plan choice, never a change of
results. Through the job's executor functions without Spark
(``test_spark_job_keyed_chains._in_process``: routing and the value groups, batch by
batch); the streaming job with the cache forced is in ``test_spark_job_keyed_chains``.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given

from tests.profiles import examples
from tests.spark.jobkit import reference_by_id, subscribed
from tests.spark.test_spark_job_keyed_chains import (
    HOT_KEY_WORKLOADS,
    KEYED_QUERIES,
    _documents,
    _in_process,
)
from xscl.connectors.document import Document
from xscl.engine.groups.join_plans import (
    Adaptive,
    CacheAlways,
    PlanChoice,
    ProbeAlways,
    plan_choice,
)
from xscl.engine.groups.prefix_cache import PrefixCache
from xscl.engine.groups.stored import GroupMemory
from xscl.engine.placements import KEYED

SECOND = 1_000_000


def _choices() -> dict[str, tuple[PlanChoice | None, bool]]:
    """Each plan choice, with (True) or without a worker's live group states."""
    return {
        "none": (None, False),
        "probe": (ProbeAlways(), True),
        "cache": (CacheAlways(), False),
        "cache, live": (CacheAlways(), True),
        "adaptive, trying each plan every other batch": (Adaptive(explore=1), True),
        "adaptive, 300 bytes a group": (Adaptive(budget=300, explore=2), True),
        "adaptive, no memory": (Adaptive(budget=0, explore=1), True),
    }


@examples(20, suppress=[HealthCheck.function_scoped_fixture])
@given(**HOT_KEY_WORKLOADS)
def test_every_plan_gives_the_reference_results(
    tmp_path_factory: Any, seed: int, count: int, cuts: list[int], lateness: int | None,
    threshold: int | None,
) -> None:  # fmt: skip
    """Random documents, arrival orders, batch cuts, lateness and keys turning hot: the
    forced plans (probe, cache) and the adaptive one, re-deciding between batches and
    under a budget that drops its caches, give the reference's results, each once."""
    docs = _documents(random.Random(seed), count)
    work = tmp_path_factory.mktemp("plans")
    want = set(reference_by_id(work, KEYED_QUERIES, docs, lateness))
    for name, (choice, live) in _choices().items():
        memory: GroupMemory[Any] | None = GroupMemory() if live else None
        got, _routes = _in_process(
            work / name, docs, cuts, threshold, lateness, None, KEYED_QUERIES, choice, memory
        )
        assert len(got) == len(set(got)), f"{name}: a result found twice"
        assert set(got) == want, name


def _one_key(count: int) -> list[Document]:
    """``count`` documents of one key value, the three streams in turn, 1/4 s apart."""
    return [
        Document("STU"[n % 3], f"d{n}", n * SECOND // 4, f"<item><a>v</a><b>w{n % 2}</b></item>")
        for n in range(count)
    ]


def test_a_live_group_keeps_its_prefixes_between_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the worker's live group states, a group makes each cached template's prefixes
    once and keeps them up as documents arrive; without them, it builds them again at
    every batch from its stored documents."""
    made: Counter[int] = Counter()
    init = PrefixCache.__init__

    def counted(self: PrefixCache, *args: Any) -> None:
        made[id(args[0])] += 1
        init(self, *args)

    monkeypatch.setattr(PrefixCache, "__init__", counted)
    docs = _one_key(36)
    cuts = list(range(0, 36, 4))
    want = set(reference_by_id(tmp_path, KEYED_QUERIES, docs))
    counts = {}
    for live in (True, False):
        made.clear()
        memory: GroupMemory[Any] | None = GroupMemory() if live else None
        got, _ = _in_process(
            tmp_path / str(live), docs, cuts, None, None, None, KEYED_QUERIES, CacheAlways(),
            memory,
        )  # fmt: skip
        assert set(got) == want and len(got) == len(want)
        counts[live] = max(made.values())
    assert counts[True] == 1  # one key value: one group, each template's cache made once
    assert counts[False] == len(cuts)  # once per batch


def test_the_adaptive_plan_measures_both_plans_and_keeps_to_its_budget(tmp_path: Path) -> None:
    """The adaptive plan measures probing and caching per group and template (trying the
    plan not in use every ``explore`` batches), and a group whose kept prefixes exceed
    the budget goes back to probing; the results stay the reference's."""
    docs = _one_key(60)
    cuts = list(range(0, 60, 3))
    want = set(reference_by_id(tmp_path, KEYED_QUERIES, docs))
    roomy = Adaptive(explore=2)
    got, _ = _in_process(
        tmp_path / "roomy", docs, cuts, None, None, None, KEYED_QUERIES, roomy, GroupMemory()
    )
    assert set(got) == want and len(got) == len(want)
    measured = [p for p in roomy.profiles.values() if p.last_rate]
    assert measured and all(
        p.probe_per_last is not None and p.cache_per_last is not None for p in measured
    )
    assert any(p.cache_bytes for p in roomy.profiles.values())
    tight = Adaptive(budget=1, explore=2)
    got, _ = _in_process(
        tmp_path / "tight", docs, cuts, None, None, None, KEYED_QUERIES, tight, GroupMemory()
    )
    assert set(got) == want and len(got) == len(want)
    over = [key for key, p in tight.profiles.items() if p.cache_bytes > 1]
    assert over and not any(tight.chosen[key] for key in over)
    none = Adaptive(budget=0, explore=1)
    got, _ = _in_process(
        tmp_path / "none", docs, cuts, None, None, None, KEYED_QUERIES, none, GroupMemory()
    )
    assert set(got) == want and len(got) == len(want)
    assert none.profiles and not any(p.cache_bytes for p in none.profiles.values())


def test_only_templates_whose_prefix_is_keyed_can_cache(tmp_path: Path) -> None:
    """``prefix_plans``: a keyed chain whose first blocks are joined by the key class's
    own edges keeps its prefixes; one joined only through its last block always probes."""
    text = KEYED_QUERIES + (
        "through_last: S//item[./a->x] JOIN {TRUE, 5s} T//item[./a->y]"
        " JOIN {x = z AND y = z, 5s} U//item[./a->z];\n"
    )
    subs = subscribed(tmp_path, text).subscriptions
    cacheable = {
        qid for qid in subs.placement if subs.registry.template_of(qid) in subs.prefix_plans
    }
    assert cacheable == {"three", "outside", "wide", "four"}
    assert subs.placement["through_last"] == KEYED


def test_the_plan_names() -> None:
    assert plan_choice("probe").name == "probe"
    assert plan_choice("cache").name == "cache"
    assert plan_choice("adaptive", 5).name == "adaptive"
    with pytest.raises(ValueError, match="unknown join plan"):
        plan_choice("mjoin")
