"""A generated CEL workload and its arrival as published event files (tests/spark/test_spark_cel*).

The queries (``GENERATED``) cover keyed classes, an unkeyed one, resubscription
and a FOLD aggregate; ``generated_events`` draws 60 events on 21 end times, so
equal timestamps and several groups occur.

Arrival (docs/cel.md 6, 10.4): ``arrival_order`` delivers the events sorted by
end plus a jitter below the reorder slack, so no event is ever late whatever
the batch split; ``split`` cuts them into files (``xscl cel publish``). A
streaming run releases every epoch below its clock minus the slack, so its
oracle is the reference over the events ending before that (``released``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from xscl.events.envelope import Event, Value
from xscl.events.event_folder import add_events
from xscl.events.reference import evaluate
from xscl.events.results import Result
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import validate
from xscl.spark_plugin.job.sink import DEAD_LETTERS

GENERATED = """DECLARE STREAM S(a, b);
DECLARE STREAM T(a, b, c);
k0: SELECT a, b FROM S NEXT{$1.a = $2.a AND $2.b > $1.b} S PUBLISH P;
k1: FROM P NEXT{$2.a = $1.a} T;
k2: FROM (SELECT a, b, 0 AS n FROM S) FOLD{$2.a = $.a, $2.b >= $.b, $.n + 1 AS n} S;
g0: FROM S NEXT{$2.b > $1.b} T;
f0: FROM FILTER{b = 2}(T)
"""

#: The values of ``a``: the key of the keyed classes (a number among the strings).
KEYS: tuple[Value, ...] = ("x", "y", "z", 1)


def generated_events(seed: int) -> list[Event]:
    """60 events of S and T on end times 0..20 s, drawn from ``seed``."""
    rng = random.Random(seed)
    events = []
    for _ in range(60):
        stream = rng.choice(["S", "T"])
        key = rng.choice(KEYS)
        attrs: dict[str, Value] = {"a": key, "b": rng.randint(0, 3), "c": None}
        if stream == "S":
            del attrs["c"]
        end = rng.randint(0, 20) * 1_000_000
        events.append(Event(stream, end, end, attrs))
    return events


def arrival_order(events: Sequence[Event], slack: int, rng: random.Random) -> list[Event]:
    """``events`` in an order where none ends ``slack`` or more before one that came
    earlier (sorted by end plus a jitter in ``[0, slack)``): never late."""
    return sorted(events, key=lambda e: e.end + rng.randrange(slack))


def split(events: Sequence[Event], files: int, rng: random.Random) -> list[list[Event]]:
    """``events`` cut at random points into ``files`` non-empty runs, in order."""
    cuts = sorted(rng.sample(range(1, len(events)), files - 1))
    bounds = [0, *cuts, len(events)]
    return [list(events[a:b]) for a, b in pairwise(bounds)]


def publish(folder: Path, events: Sequence[Event]) -> int:
    """Add ``events`` as the next file of a job's events folder (``xscl cel publish``)."""
    folder.mkdir(parents=True, exist_ok=True)
    staged = folder.parent / f".{folder.name}-next.jsonl"
    staged.write_text("".join(e.to_json() + "\n" for e in events), encoding="utf-8")
    return add_events(folder, staged).seq


def released(text: str, events: Sequence[Event], slack: int) -> set[Result]:
    """The reference's results over the events a streaming run releases: those ending
    before the clock (the largest end) minus ``slack``."""
    program, errors = validate(parse_file(text))
    assert not errors
    watermark = max(e.end for e in events) - slack
    return evaluate(program, [e for e in events if e.end < watermark])


def dead_letters(results: Path) -> list[str]:
    """Every dead letter line a CEL job's results folder holds (any epoch)."""
    return [
        line
        for file in sorted(results.glob(f"**/{DEAD_LETTERS}/*.jsonl"))
        for line in file.read_text(encoding="utf-8").splitlines()
    ]
