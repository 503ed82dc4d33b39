"""The in-process shared join processor (MMQJP, thesis 6.4-6.5): ``--engine local``.

Modules: ``state`` (R_docTS, R_doc, R_bin per document), ``view_cache`` (slices
R_L,s keyed by string value, thesis 6.5), ``plans`` (per-template, per-role join
orders with the R_T trie), ``matcher`` (Algorithms 1/3/4), ``subscriptions`` (the
registered queries, placed), ``join_state`` (the stored documents), ``output`` and
``records`` (result records, ids and XML), ``local`` (``LocalEngine``), ``batch``
(``run_batch``); ``placements``, ``routing`` and ``groups`` (the same logic
partitioned, for the Spark job).

The names below are imported on first use, so importing a submodule (a Spark
planner process imports ``groups.keys``) does not load the whole engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xscl.engine.batch import BatchSummary, run_batch
    from xscl.engine.local import EngineStats, LocalEngine
    from xscl.engine.output import ResultRecord, result_id

_EXPORTS = {
    "BatchSummary": "xscl.engine.batch",
    "run_batch": "xscl.engine.batch",
    "EngineStats": "xscl.engine.local",
    "LocalEngine": "xscl.engine.local",
    "ResultRecord": "xscl.engine.output",
    "result_id": "xscl.engine.output",
}

__all__ = [
    "BatchSummary",
    "EngineStats",
    "LocalEngine",
    "ResultRecord",
    "result_id",
    "run_batch",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xscl.engine' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
