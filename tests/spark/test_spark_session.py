"""The session builder: Java discovery (no JVM needed) and the embedded default's settings."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from xscl.errors import JavaNotFoundError
from xscl.spark_plugin.session import (
    ROCKSDB_PROVIDER,
    XsclHome,
    find_java_home,
    home_of,
    recorded_java_home,
)


def _fake_java(home: Path, version: str = "17.0.9") -> Path:
    binary = home / "bin" / "java"
    binary.parent.mkdir(parents=True)
    binary.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2023-10-17' >&2\n")
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return binary


def test_java_home_from_environment_wins(tmp_path: Path) -> None:
    _fake_java(tmp_path / "jdk")
    found = find_java_home({"JAVA_HOME": str(tmp_path / "jdk"), "PATH": ""}, venv=tmp_path)
    assert found == tmp_path / "jdk"


def test_java_home_without_java_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JavaNotFoundError, match=r"XSCL-S001 .*bin/java.*bootstrap.sh java"):
        find_java_home({"JAVA_HOME": str(tmp_path / "nowhere"), "PATH": ""}, venv=tmp_path)


def test_java_home_recorded_by_bootstrap(tmp_path: Path) -> None:
    _fake_java(tmp_path / "jre")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "activate").write_text(
        f'export PATH=x\n\nexport JAVA_HOME="{tmp_path / "jre"}"  # xscl: JAVA_HOME\n'
    )
    assert recorded_java_home(venv) == tmp_path / "jre"
    assert find_java_home({"PATH": ""}, venv=venv) == tmp_path / "jre"


def test_java_on_path_must_be_17_or_21(tmp_path: Path) -> None:
    old = _fake_java(tmp_path / "old", version="11.0.2")
    with pytest.raises(JavaNotFoundError, match="openjdk-17-jre-headless"):
        find_java_home({"PATH": str(old.parent)}, venv=tmp_path)
    new = _fake_java(tmp_path / "new", version="21.0.1")
    assert find_java_home({"PATH": str(new.parent)}, venv=tmp_path) == tmp_path / "new"


def test_home_layout_is_created(tmp_path: Path) -> None:
    home = XsclHome(tmp_path / "data").create()
    for folder in (home.checkpoints, home.spool, home.results, home.tmp):
        assert folder.is_dir()
    assert "rootLogger.level = warn" in home.log4j_config.read_text()


def test_the_log_configuration_silences_what_serve_always_printed(tmp_path: Path) -> None:
    """Issue 36, defect 15: the AQE warnings and "falling behind" are off in the
    configuration; a home an older xscl made gets it, a configuration of the user's
    stays as written."""
    home = XsclHome(tmp_path / "old")
    home.log4j_config.parent.mkdir(parents=True)
    home.log4j_config.write_text("# xscl: Spark logs warnings and errors only\nold\n")
    text = home.create().log4j_config.read_text()
    assert "runtime.ProcessingTimeExecutor\nlogger.behind.level = error" in text
    assert "regex = Disabling AQE since.*" in text
    assert "regex = .*adaptive.enabled is not supported in streaming.*" in text
    mine = XsclHome(tmp_path / "mine")
    mine.log4j_config.parent.mkdir(parents=True)
    mine.log4j_config.write_text("rootLogger.level = info\n")
    assert mine.create().log4j_config.read_text() == "rootLogger.level = info\n"


@pytest.mark.spark
def test_shared_session_is_local_with_rocksdb(spark: object, spark_home: Path) -> None:
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB_PROVIDER
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert home_of(spark).root == spark_home.resolve()
    assert os.environ["JAVA_HOME"]


def test_workers_import_pyspark_from_its_package_not_its_zip(spark: Any) -> None:
    """The daemon (``worker_daemon``) moved Spark's pyspark.zip behind the installed
    package of the same version, so a worker's pyspark is the compiled copy."""
    import pyspark

    where = (
        spark.sparkContext.parallelize([0], 1)
        .map(lambda _: __import__("pyspark").__file__)
        .collect()[0]
    )
    assert ".zip" not in where
    assert Path(where).resolve() == Path(pyspark.__file__).resolve()


def test_worker_path_keeps_the_zip_without_an_installed_twin(tmp_path: Path) -> None:
    import zipfile

    from xscl.spark_plugin.worker_daemon import installed_first

    archive = tmp_path / "pyspark.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("pyspark/version.py", "__version__ = '4.3.0'")
    other = tmp_path / "site" / "pyspark"
    other.mkdir(parents=True)
    (other / "version.py").write_text("__version__ = '4.2.0'")  # another version
    path = [str(archive), str(tmp_path / "site"), str(tmp_path / "missing.zip")]
    assert installed_first(path) == path
    (other / "version.py").write_text("__version__ = '4.3.0'")
    assert installed_first(path) == [path[1], path[2], path[0]]


def test_the_jvm_s_stderr_is_passed_on_without_its_noise() -> None:
    """Issue 36, defects 9 and 15: the incubator line goes; a record of a failure the
    command tells itself (with its trace) goes, with the same failure's echoes; the
    rest passes in order."""
    from xscl.spark_plugin.session import JvmStderr

    source, sink = os.pipe()
    told, out = os.pipe()
    os.write(sink, b"WARNING: Using incubator modules: jdk.incubator.vector\n"
                   b"10:00:00 WARN A: kept\n  at kept.trace\nworker line\n"
                   b"10:00:01 ERROR Executor: Exception in task 1.0\nTraceback\n"
                   b"xscl.errors.OutputWriteError: XSCL-S023 the results folder ...\n"
                   b"10:00:02 ERROR TaskSetManager: Task 1 failed; aborting job\n")  # fmt: skip
    os.close(sink)
    JvmStderr(source, out, settle=0.05).run()
    os.close(out)
    assert os.read(told, 1 << 16) == b"10:00:00 WARN A: kept\n  at kept.trace\nworker line\n"


def test_the_jvm_s_records_of_a_home_that_cannot_be_written_are_dropped() -> None:
    """A full or read-only home fails Spark's own checkpoint writes with Java's
    IOException: ``xscl serve`` tells it in one XSCL-S024 line, so Spark's record of it
    (pages of trace) is an echo. Before, ~100 lines of it were printed."""
    from xscl.spark_plugin.session import JvmStderr

    source, sink = os.pipe()
    told, out = os.pipe()
    os.write(sink, b"10:00:00 ERROR MicroBatchExecution: Query xscl terminated with error\n"
                   b"org.apache.hadoop.fs.FSError: java.io.IOException: No space left on device\n"
                   b"\tat org.apache.hadoop.fs.RawLocalFileSystem.write(RawLocal...)\n"
                   b"Caused by: java.io.IOException: No space left on device\n"
                   b"10:00:01 WARN Echo: a later record of the same failure\n")  # fmt: skip
    os.close(sink)
    JvmStderr(source, out, settle=0.05).run()
    os.close(out)
    assert os.read(told, 1 << 16) == b""


def test_the_jvm_s_stderr_is_hushed_once_serve_is_interrupted() -> None:
    """Ctrl-C mid-batch: Spark's aborted write, its killed tasks and a Python worker's
    BrokenPipeError echo the one line ``xscl serve`` says; from ``hush`` on, nothing
    passes (what came before does)."""
    import threading

    from xscl.spark_plugin.session import JvmStderr

    source, sink = os.pipe()
    told, out = os.pipe()
    relay = JvmStderr(source, out, settle=0.05)
    reader = threading.Thread(target=relay.run, daemon=True)
    reader.start()
    os.write(sink, b"10:00:00 WARN A: before\n")
    time.sleep(0.3)  # settled: passed on
    try:
        relay.hush()
    finally:
        os.write(sink, b"10:00:01 ERROR WriteToDataSourceV2Exec: ... is aborting.\n"
                       b"Traceback (most recent call last):\n"
                       b"BrokenPipeError: [Errno 32] Broken pipe\n"
                       b"10:00:02 WARN TaskSetManager: Lost task 0.0 (TaskKilled)\n"
                       b"loose line\n")  # fmt: skip
        os.close(sink)
    reader.join(10)
    os.close(out)
    assert os.read(told, 1 << 16) == b"10:00:00 WARN A: before\n"
