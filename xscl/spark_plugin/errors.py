"""Errors of the Spark plugin: stable ``XSCL-S0xx`` codes.

Each error subclasses the matching builtin (``OSError`` for a missing runtime or an
unreadable directory, ``ValueError`` for a bad option) so callers that only know the
builtins still catch them. Errors pickle: data-source errors are raised on executors
and travel back to the driver.
"""

from __future__ import annotations

from typing import ClassVar

#: Stable error codes and their one-line meaning.
ERROR_CODES: dict[str, str] = {
    "XSCL-S001": "no usable Java runtime (Java 17 or 21) was found",
    "XSCL-S002": "invalid option of an xscl Spark data source",
    "XSCL-S003": "the spool cannot be read",
    "XSCL-S004": "a results directory holds a file it cannot understand",
    "XSCL-S005": "the streaming query of a batch run failed; nothing was written",
    "XSCL-S006": "the join state file was written in another format",
    "XSCL-S007": "the join state and the checkpoint disagree on where the spool was left",
    "XSCL-S010": "a subscribed query file has invalid queries (xscl.spark_plugin.subscriptions)",
    "XSCL-S011": "a subscribed query id is already taken",
    "XSCL-S012": "an unsubscribed query id is not subscribed",
    "XSCL-S013": "a subscription would make PUBLISH/FROM references form a cycle",
    "XSCL-S014": "an event file of the subscription registry cannot be read",
    "XSCL-S020": "this instance lost the job's lease to a newer epoch and stops (fenced)",
    "XSCL-S021": "the job's lease cannot be read or written",
    "XSCL-S022": "the job's home was written by an xscl without process pairs (no epochs)",
    "XSCL-S023": "the job's results folder cannot be written (full, read-only, gone)",
}


class _Coded:
    code: ClassVar[str]

    def __str__(self) -> str:
        return f"{self.code} {super().__str__()}"


class JavaNotFoundError(_Coded, OSError):
    """No Java runtime could be found before starting the JVM."""

    code = "XSCL-S001"


class DataSourceOptionError(_Coded, ValueError):
    """An option of ``xscl-spool`` / ``xscl-results`` is missing or malformed."""

    code = "XSCL-S002"


class SpoolReadError(_Coded, OSError):
    """The spool directory is missing or cannot be read."""

    code = "XSCL-S003"


class ResultsDirectoryError(_Coded, OSError):
    """A results directory holds a committed file that cannot be parsed."""

    code = "XSCL-S004"


class SparkBatchError(_Coded, RuntimeError):
    """The streaming query of ``xscl run --engine spark`` failed; nothing was written."""

    code = "XSCL-S005"


class LeaseLostError(_Coded, RuntimeError):
    """Another instance took the job's lease: this one must write nothing more."""

    code = "XSCL-S020"


class LeaseStoreError(_Coded, OSError):
    """The lease (a file on the home, or a Kubernetes Lease) cannot be read or written."""

    code = "XSCL-S021"


class LegacyHomeError(_Coded, OSError):
    """A checkpoint or results folder in the layout before process pairs (no epochs)."""

    code = "XSCL-S022"


class OutputWriteError(_Coded, OSError):
    """The job's sink could not write under its results folder; the batch is not
    committed (it is replayed whole by the next start)."""

    code = "XSCL-S023"
