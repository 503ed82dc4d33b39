"""What ``xscl status`` reports about a job: its pair, its last commit, its lag.

Everything is read from the job's home (and the lease's store); nothing is written,
no Spark is started, and it works while the job runs or after it stopped:

* ``primary``: the lease's holder (pid, host, epoch, when the lease expires and
  whether it is live: not released, not lapsed, its process not gone from this host);
* ``standbys``: the standbys whose heartbeat is fresh (``member.StandbyBoard``);
* ``last_batch``: the newest micro-batch readers see (``results_sink`` chain), and
  ``committed_offset``: the spool offset it read up to (its epoch's offset log);
* ``spool_head``: the spool's committed end; ``lag`` = ``spool_head`` minus
  ``committed_offset``;
* ``results``: the results committed, summed from the visible markers (a result is
  committed once, so no part file needs reading).

Where it runs: the ``xscl status`` process.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from xscl.service.pair.epochs import EpochFolders, batch_end_offset
from xscl.service.pair.lease import Lease, process_gone
from xscl.service.pair.member import StandbyBoard


@dataclass(frozen=True)
class JobStatus:
    """The figures of ``xscl status`` (see the module docstring); ``None``: unknown."""

    name: str
    primary: dict[str, Any] | None
    standbys: list[dict[str, Any]] = field(default_factory=list)
    last_batch: int | None = None
    committed_offset: int | None = None
    spool_head: int | None = None
    lag: int | None = None
    #: documents the join groups PUBLISHed that no committed batch has read yet
    published_lag: int | None = None
    results: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """The text form: one fact a line."""
        out = [f"job {self.name}"]
        if self.primary is None:
            out.append("primary: none (no instance has taken the lease)")
        else:
            p = self.primary
            state = "live" if p["live"] else "not live (lapsed, released or gone)"
            out.append(
                f"primary: pid {p['pid']} on {p['host']}, epoch {p['epoch']}, {state}, "
                f"lease expires {_clock(p['expires'])}"
            )
        if not self.standbys:
            out.append("standbys: none")
        for standby in self.standbys:
            warm = "warm" if standby.get("warm") else "warming up"
            out.append(
                f"standby: pid {standby['pid']} on {standby['host']}, {warm}, "
                f"since {_clock(standby['since'])}"
            )
        batch = "none" if self.last_batch is None else str(self.last_batch)
        offset = _or_dash(self.committed_offset)
        out.append(f"last committed batch: {batch} (spool offset {offset})")
        out.append(f"spool head: {_or_dash(self.spool_head)}, lag {_or_dash(self.lag)}")
        out.append(f"published documents not read yet: {_or_dash(self.published_lag)}")
        out.append(f"results: {self.results}")
        return out


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def _clock(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def job_status(
    home: Path, name: str, lease: Lease, spool: Path, board: StandbyBoard
) -> JobStatus:
    """Read the figures of job ``name`` under ``home`` (see the module docstring)."""
    from xscl.connectors.spool import SpoolReader
    from xscl.results.read import visible_markers

    record = lease.read()
    primary = None
    if record is not None:
        live = (
            not record.released
            and record.expires > time.time()
            and not process_gone(record.host, record.pid)
        )
        primary = {
            "pid": record.pid,
            "host": record.host,
            "epoch": record.epoch,
            "holder": record.holder,
            "expires": record.expires,
            "live": live,
        }
    keep = ("pid", "host", "since", "warm")
    standbys: list[dict[str, Any]] = [{k: s[k] for k in keep if k in s} for s in board.live()]
    folders = EpochFolders(home, name, 0)
    markers = visible_markers(folders.results_root)
    last_batch = committed = published = None
    if markers:
        folder, marker = markers[-1]
        last_batch = int(marker["batch"])
        checkpoint = folders.at(int(folder.name[1:])).checkpoint
        committed = batch_end_offset(checkpoint, last_batch)
        published = batch_end_offset(checkpoint, last_batch, "published")
    head = SpoolReader(spool).next_offset() if spool.is_dir() else None
    lag = None
    if head is not None:
        lag = head - (committed or 0)
    appended = SpoolReader(folders.published).next_offset()
    published_lag = appended - (published or 0)
    return JobStatus(
        name=name,
        primary=primary,
        standbys=standbys,
        last_batch=last_batch,
        committed_offset=committed,
        spool_head=head,
        lag=lag,
        published_lag=published_lag,
        results=sum(int(m.get("rows", 0)) for _f, m in markers),
    )
