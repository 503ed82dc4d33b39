"""``xscl cel run``: CEL queries over a file of event envelopes (docs/cel.md 5 and 6).

The events are read in file order. Bad lines (``CEL-E001``..``E005``) and
events naming a PUBLISHed stream (``CEL-E006``) go to
``RESULTS.deadletter.jsonl``; events of streams no query reads are ignored and
counted. Without a reorder slack the whole file counts (it is sorted by end
time); with one, the file order is the arrival order and events later than
the slack are dead letters (``CEL-E007``), for either evaluator. Results are
written sorted by (end, query, stream, id); both files are written atomically,
dead letters first, so a complete-looking output is complete.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.durable import write_lines_atomically
from xscl.errors import EventError
from xscl.events.engine import Engine
from xscl.events.envelope import Event, read_events
from xscl.events.reference import evaluate
from xscl.events.reorder import ReorderBuffer
from xscl.events.results import Result
from xscl.lang.cel.validation import Program

__all__ = ["CelBatchSummary", "deadletter_path_for", "run_batch"]

Evaluator = Literal["reference", "local", "spark"]


@dataclass(frozen=True)
class CelBatchSummary:
    """What a batch run did."""

    events: int
    ignored: int
    late: int
    dead_letters: int
    results: int
    output_path: Path
    deadletter_path: Path


def deadletter_path_for(output_path: Path) -> Path:
    """``RESULTS.jsonl`` -> ``RESULTS.deadletter.jsonl``."""
    name = output_path.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return output_path.with_name(f"{stem}.deadletter.jsonl")


def _admitted(
    program: Program,
    items: Iterable[tuple[int, Event | DeadLetter]],
    source: str,
    dead: list[DeadLetter],
) -> tuple[list[tuple[int, Event]], int]:
    """The events the queries read with their lines; the others dead-lettered or counted."""
    events: list[tuple[int, Event]] = []
    ignored = 0
    for line, item in items:
        if isinstance(item, DeadLetter):
            dead.append(item)
        elif item.stream in program.published:
            reason = f"stream {item.stream!r} is PUBLISHed by a query; only its queries feed it"
            refused = EventError.from_code("CEL-E006", reason, source=source, line=line)
            dead.append(DeadLetter.from_error(refused, stream=item.stream))
        elif item.stream in program.streams:
            events.append((line, item))
        else:
            ignored += 1
    return events, ignored


def _on_time(
    numbered: list[tuple[int, Event]], slack: int, source: str, dead: list[DeadLetter]
) -> tuple[list[Event], int]:
    """The events that are not later than ``slack`` in file order (docs/cel.md 6)."""
    buffer = ReorderBuffer(slack)
    kept: list[Event] = []
    for line, event in numbered:
        released = buffer.push(event)
        if isinstance(released, DeadLetter):
            dead.append(replace(released, source=source, line=line))
        else:
            kept.extend(e for _, group in released for e in group)
    kept.extend(e for _, group in buffer.flush() for e in group)
    return kept, buffer.late


def run_batch(
    program: Program,
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    evaluator: Evaluator = "local",
    slack: int | None = None,
    queries_text: str | None = None,
) -> CelBatchSummary:
    """Evaluate ``program`` over the envelope file; write the results and the dead letters.

    ``spark`` needs ``queries_text`` (the file ``program`` was validated from): the
    executors compile it themselves (``xscl.spark_plugin.cel``).
    """
    source = str(input_path)
    dead: list[DeadLetter] = []
    with open(input_path, encoding="utf-8") as handle:
        numbered, ignored = _admitted(program, read_events(handle, source=source), source, dead)
    late = 0
    events = [event for _, event in numbered]
    if slack is not None:
        events, late = _on_time(numbered, slack, source, dead)
    results: set[Result]
    if evaluator == "reference":
        results = evaluate(program, events)
    elif evaluator == "spark":
        from xscl.spark_plugin.cel.batch import evaluate_on_spark

        assert queries_text is not None
        results = evaluate_on_spark(queries_text, events)
    else:
        engine = Engine()
        engine.subscribe(program)
        results = engine.run(events)
        engine.close()  # reclaimable once dropped (a large subscribe froze it)
    output = Path(output_path)
    dead_path = deadletter_path_for(output)
    write_lines_atomically(dead_path, (d.to_json() for d in dead))
    ordered = sorted(results, key=Result.sort_key)
    write_lines_atomically(output, (r.to_json() for r in ordered))
    return CelBatchSummary(
        events=len(events),
        ignored=ignored,
        late=late,
        dead_letters=len(dead),
        results=len(ordered),
        output_path=output,
        deadletter_path=dead_path,
    )
