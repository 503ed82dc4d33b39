"""The in-process shared join processor (MMQJP, thesis 6.4-6.5): ``--engine local``.

Modules: ``state`` (R_docTS, R_doc, R_bin per document), ``view_cache`` (slices
R_L,s keyed by string value, thesis 6.5), ``plans`` (per-template, per-role join
orders with the R_T trie), ``matcher`` (Algorithms 1/3/4), ``output`` (result
records, ids and XML), ``records`` (the fast per-result path: per-query plans,
per-document caches), ``local`` (``LocalEngine``), ``batch`` (``run_batch``).
"""

from xscl.engine.batch import BatchSummary, run_batch
from xscl.engine.local import EngineStats, LocalEngine
from xscl.engine.output import ResultRecord, result_id

__all__ = [
    "BatchSummary",
    "EngineStats",
    "LocalEngine",
    "ResultRecord",
    "result_id",
    "run_batch",
]
