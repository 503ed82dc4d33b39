"""One local SparkSession shared by every Spark test (``local[2]``, UI off, RocksDB state)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from xscl.connectors.document import Document  # noqa: E402
from xscl.connectors.spool import Spool  # noqa: E402
from xscl.errors import JavaNotFoundError  # noqa: E402
from xscl.spark_plugin.session import ROCKSDB_PROVIDER, build_session, find_java_home  # noqa: E402


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``--home`` directory of the shared session."""
    return tmp_path_factory.mktemp("xscl-home")


@pytest.fixture
def java() -> Path:
    """Skip when there is no Java runtime (without starting a JVM in this process)."""
    try:
        return find_java_home()
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def spark(spark_home: Path) -> Iterator[SparkSession]:
    """The shared session; Spark tests skip with the reason when no Java is installed."""
    try:
        find_java_home()
    except JavaNotFoundError as exc:
        pytest.skip(str(exc))
    session = build_session(
        "local[2]",
        "xscl-tests",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        },
        home=spark_home,
    )
    yield session
    session.stop()


class SpoolKit:
    """Small spools for the tests: documents one second apart, URL docids on every third."""

    #: 2006-06-01T10:00:00Z in microseconds.
    base_ts = 1_149_156_000_000_000

    def docs(self, count: int, *, start: int = 0, stream: str = "S") -> list[Document]:
        out = []
        for i in range(start, start + count):
            docid = f"https://example.org/item/{i}" if i % 3 == 0 else f"d{i}"
            xml = f"<item><title>t{i} &amp; é</title><author>a{i % 4}</author></item>"
            out.append(Document(stream, docid, self.base_ts + i * 1_000_001, xml))
        return out

    def fill(self, path: Path, docs: list[Document]) -> None:
        """Append ``docs`` to the spool at ``path`` (created when missing)."""
        with Spool(path, sync=False) as spool:
            spool.append(docs)


@pytest.fixture(scope="session")
def spool_kit() -> SpoolKit:
    return SpoolKit()
