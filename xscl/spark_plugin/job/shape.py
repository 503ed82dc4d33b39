"""The numbers that decide where a job's stored documents live, fixed at its first start.

A document is stored in the join group of ``value_bucket(digest, buckets)`` (and,
for a hot value, of one of ``salts`` salted buckets), and Spark keeps the state
store's partitioning (``state_partitions``) in the checkpoint. A restart with other
numbers would look for stored documents where they are not, so the numbers the job
first started with are recorded in its checkpoint folder (``xscl-job.json``, beside
Spark's own files) and every later start uses those, saying so when options differ.

Where it runs: the driver, once per start (``plan.start_job``).

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> settle(folder, JobShape(4, 16, 8)).buckets
16
>>> settle(folder, JobShape(8, 64, 8)).buckets   # a restart keeps the first numbers
16
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from xscl.connectors.durable import write_atomically

FILE_NAME = "xscl-job.json"


@dataclass(frozen=True)
class JobShape:
    """State partitions, value groups and hot-value salts of a job."""

    state_partitions: int
    buckets: int
    salts: int


def settle(checkpoint: str | Path, wanted: JobShape) -> JobShape:
    """The shape the job at ``checkpoint`` runs with: the recorded one, else ``wanted``."""
    path = Path(checkpoint) / FILE_NAME
    try:
        recorded = JobShape(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(asdict(wanted), sort_keys=True).encode("utf-8"))
        return wanted
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is damaged ({exc}); it records the job's shape") from exc
    if recorded != wanted:
        print(
            f"xscl: this job's checkpoint fixes state partitions {recorded.state_partitions}, "
            f"value groups {recorded.buckets} and hot salts {recorded.salts} ({path}); "
            "other options are ignored (start a new --name to change them)",
            file=sys.stderr,
        )
    return recorded
