"""Stage 0 connectors: documents from feeds, JSONL envelopes and XML files into the spool.

Modules (one job each):

* ``dead_letters`` -- the dead-letter record of a rejected input (codes: ``xscl.errors``).
* ``document``  -- the ``Document`` envelope and its JSONL form (spec section 4).
* ``segment``   -- the spool's on-disk record format.
* ``spool``     -- the durable, deduplicated, offset-addressed spool.
* ``xmlsafe``   -- the one safe lxml parser configuration and its limits.
* ``normalize`` -- feedparser entry -> canonical ``<item>`` (spec section 1).
* ``feeds``     -- feed bytes -> documents (``raw`` or ``normalized``), bozo accounting.
* ``fetch``     -- HTTP(S) with conditional GET, retries, per-host politeness, state.
* ``xmlfiles``  -- directories of XML files, one document per file or per record.
* ``poller``    -- poll many feeds into a spool with per-feed reports.

Only the light modules are re-exported here; import the others directly.
"""

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import Document, format_ts, parse_ts
from xscl.connectors.spool import Spool, SpoolReader

__all__ = [
    "DeadLetter",
    "Document",
    "Spool",
    "SpoolReader",
    "format_ts",
    "parse_ts",
]
