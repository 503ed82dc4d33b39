"""``xscl status``'s figures as gauges in Spark's metrics system (source ``xscl``).

The driver registers a metrics ``Source`` whose gauges are Python objects the JVM
calls through Py4J (the callback server PySpark runs for streaming listeners): the
primary's epoch, the standbys, the last committed batch, its spool offset, the spool's
head, the lag and the results. Each gauge reads a ``JobStatus`` cached for a second,
so a metrics sink polling every gauge reads the home once. Spark's configured sinks
export them, e.g. Prometheus with ``spark.ui.enabled=true`` and
``spark.metrics.conf.*.sink.prometheusServlet.class=
org.apache.spark.metrics.sink.PrometheusServlet`` (``/metrics/prometheus``), or JMX.

Where it runs: the driver, once per primary (``register_status_source``); the gauges'
``getValue`` on Spark's metrics threads, calling back into the driver's Python.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from xscl.service.pair.status import JobStatus

SOURCE_NAME = "xscl"
#: Gauge name -> how it is read from a ``JobStatus`` (-1: unknown).
GAUGES: dict[str, Callable[[JobStatus], int | None]] = {
    "epoch": lambda s: None if s.primary is None else int(s.primary["epoch"]),
    "standbys": lambda s: len(s.standbys),
    "last_batch": lambda s: s.last_batch,
    "committed_offset": lambda s: s.committed_offset,
    "spool_head": lambda s: s.spool_head,
    "lag": lambda s: s.lag,
    "published_lag": lambda s: s.published_lag,
    "results": lambda s: s.results,
}


class CachedStatus:
    """``read()``'s result, read again at most every ``seconds``."""

    def __init__(self, read: Callable[[], JobStatus], seconds: float = 1.0) -> None:
        self._read = read
        self._seconds = seconds
        self._lock = threading.Lock()
        self._status: JobStatus | None = None
        self._at = 0.0

    def value(self, name: str) -> int:
        with self._lock:
            now = time.monotonic()
            if self._status is None or now - self._at >= self._seconds:
                self._status, self._at = self._read(), now
            status = self._status
        figure = GAUGES[name](status)
        return -1 if figure is None else int(figure)


class _JavaObject:
    """``java.lang.Object``'s methods for a Py4J proxy (Scala collections call them)."""

    def equals(self, other: Any) -> bool:
        return other is self

    def hashCode(self) -> int:
        return id(self) & 0x7FFFFFFF

    def toString(self) -> str:
        return f"xscl {type(self).__name__.strip('_').lower()}"


class _Gauge(_JavaObject):
    """A ``com.codahale.metrics.Gauge`` implemented in Python (Py4J callback)."""

    def __init__(self, status: CachedStatus, name: str) -> None:
        self.status = status
        self.name = name

    def getValue(self) -> int:
        return self.status.value(self.name)

    class Java:
        implements: ClassVar[list[str]] = ["com.codahale.metrics.Gauge"]


class _Source(_JavaObject):
    """An ``org.apache.spark.metrics.source.Source`` implemented in Python (Py4J)."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry

    def sourceName(self) -> str:
        return SOURCE_NAME

    def metricRegistry(self) -> Any:
        return self.registry

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.metrics.source.Source"]


def register_status_source(spark: Any, read: Callable[[], JobStatus]) -> Any:
    """Register the ``xscl`` source with the driver's metrics system; the JVM source."""
    from pyspark.java_gateway import ensure_callback_server_started

    context = spark.sparkContext
    gateway = context._gateway
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    jvm = context._jvm
    status = CachedStatus(read)
    registry = jvm.com.codahale.metrics.MetricRegistry()
    for name in GAUGES:
        registry.register(name, _Gauge(status, name))
    source = _Source(registry)
    system = metrics_system(spark)
    earlier = system.getSourcesByName(SOURCE_NAME)
    for index in range(earlier.size()):  # an earlier job of this process
        system.removeSource(earlier.apply(index))
    system.registerSource(source)
    return source


def metrics_system(spark: Any) -> Any:
    """The driver's ``MetricsSystem``, reached through fields: Py4J cannot call methods of
    ``SparkEnv`` (listing them needs protobuf classes that are not on the classpath)."""
    jvm = spark.sparkContext._jvm
    objects: Any = spark.sparkContext._jsc.sc()
    for owner, name in (("org.apache.spark.SparkContext", "_env"),
                        ("org.apache.spark.SparkEnv", "metricsSystem")):
        field = jvm.java.lang.Class.forName(owner).getDeclaredField(name)
        field.setAccessible(True)
        objects = field.get(objects)
    return objects
