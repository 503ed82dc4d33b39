"""One local SparkSession shared by every Spark test (``local[2]``, UI off, RocksDB state)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from xscl.spark_plugin.errors import JavaNotFoundError  # noqa: E402
from xscl.spark_plugin.session import ROCKSDB_PROVIDER, build_session, find_java_home  # noqa: E402


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``--home`` directory of the shared session."""
    return tmp_path_factory.mktemp("xscl-home")


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
