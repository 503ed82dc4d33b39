"""The job's hot values: the values the join groups reported hot, one file per batch.

A value group reports a value with more than ``--hot-threshold`` documents stored under
it (``engine.groups.value_group``); the sink's commit, on the driver, adds the new ones
to the job's hot-values folder before the batch's marker (``record``), and from the
next batch on the source's tasks spread them over salts (``engine.routing``). A value
once hot stays hot: the set only grows, so every stored document stays reachable.

Where it runs: ``read`` on executors, once per source task; ``record`` on the driver,
once per batch that found new ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from xscl.connectors.durable import write_atomically


def read(folder: str) -> frozenset[str]:
    """Every value recorded in a job's hot-values folder."""
    out: set[str] = set()
    path = Path(folder)
    if path.is_dir():
        for file in sorted(path.glob("*.json")):
            out.update(json.loads(file.read_text(encoding="utf-8")))
    return frozenset(out)


def record(folder: str, batch_name: str, found: Iterable[str]) -> None:
    """Add the values ``found`` hot in batch ``batch_name`` to the folder (those not in it).

    A replayed batch may find more or fewer: either is correct.
    """
    new = sorted(set(found) - read(folder))
    if new:
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        data = json.dumps(new, ensure_ascii=False).encode("utf-8")
        write_atomically(path / f"{batch_name}.json", data)
