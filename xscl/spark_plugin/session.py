"""Build the SparkSession xscl runs in: embedded local mode by default, a cluster unchanged.

Where things run:

* **Driver** (this Python process plus the JVM it starts through Py4J): the session,
  query planning, the Python streaming-source planner (``initialOffset`` /
  ``latestOffset`` / ``partitions`` / ``commit`` of ``xscl-spool``, in a Python worker
  the driver JVM starts), the results writer's ``commit`` and the progress listener.
* **Executors** (Python workers of the executor JVMs; in local mode threads of the
  driver JVM with their own Python worker processes): ``read`` of the sources,
  ``write`` of the sinks, ``mapInArrow`` / ``applyInPandasWithState`` functions.
  Every Python process must be able to ``import xscl``: install the package (wheel,
  image, packed venv) or put it on ``PYTHONPATH``; ``--py-files`` does not reach the
  source planner, a Python worker the driver JVM starts with its own path.

The embedded default keeps everything under one directory, ``--home`` (default
``./xscl-data``): ``checkpoints/`` (Spark checkpoints: offsets, commits, RocksDB
state), ``spool/`` (the durable input spool), ``results/`` (sinks) and ``tmp/``
(Spark's scratch space). Under ``spark-submit`` (a JVM already exists) the master
given there wins and only the SQL settings below are applied.
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xscl.errors import JavaNotFoundError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The master of the embedded default: two local cores.
DEFAULT_MASTER = "local[2]"
#: Default ``--home`` directory (relative to the working directory).
DEFAULT_HOME = "xscl-data"
#: Environment variable naming the master when none is passed.
MASTER_ENV = "XSCL_SPARK_MASTER"
#: The state store every stateful operator uses (state spills to disk, survives kill -9).
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_SUPPORTED_JAVA = ("17", "21")
_ACTIVATE_JAVA = re.compile(r'^export JAVA_HOME="([^"]+)"\s*#\s*xscl: JAVA_HOME', re.MULTILINE)
_JAVA_HINT = (
    "set JAVA_HOME to a Java 17 or 21 runtime, run 'bash scripts/bootstrap.sh java' "
    "(it finds or installs one and records it in .venv/bin/activate), or install "
    "Debian's openjdk-17-jre-headless"
)
_QUIET_LOG4J = """\
# xscl: Spark logs warnings and errors only (written by xscl.spark_plugin.session)
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.sparkconf.name = org.apache.spark.SparkConf
logger.sparkconf.level = error
logger.rocksdb.name = org.apache.spark.sql.execution.streaming.state
logger.rocksdb.level = warn
# "Current batch is falling behind": each micro-batch's progress line gives its time
logger.behind.name = org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor
logger.behind.level = error
# adaptive query execution is off in streaming queries, and Spark says so at every start
logger.aqe.name = org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream
logger.aqe.filter.aqe.type = RegexFilter
logger.aqe.filter.aqe.regex = .*adaptive.enabled is not supported in streaming.*
logger.aqe.filter.aqe.onMatch = DENY
logger.aqe.filter.aqe.onMismatch = NEUTRAL
logger.stateful.name = org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution
logger.stateful.filter.aqe.type = RegexFilter
logger.stateful.filter.aqe.regex = Disabling AQE since.*
logger.stateful.filter.aqe.onMatch = DENY
logger.stateful.filter.aqe.onMismatch = NEUTRAL
# a query stopped (Ctrl-C) before its batch's job began: nothing to cancel, said twice
logger.cancel.name = org.apache.spark.scheduler.DAGScheduler
logger.cancel.filter.none.type = RegexFilter
logger.cancel.filter.none.regex = Failed to cancel job group .*Cannot find active jobs.*
logger.cancel.filter.none.onMatch = DENY
logger.cancel.filter.none.onMismatch = NEUTRAL
"""
#: How the log configuration xscl writes begins (a file that does not is the user's).
_LOG4J_MARK = "# xscl: "
#: What the JVM prints on every start (Spark's launcher always adds the module): noise.
_JVM_NOISE = (b"WARNING: Using incubator modules",)


@dataclass(frozen=True)
class XsclHome:
    """The local directory layout of the embedded default."""

    root: Path

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def registry(self) -> Path:
        """``registry/NAME``: each job's subscription log (``subscriptions.py``)."""
        return self.root / "registry"

    @property
    def state(self) -> Path:
        """``state/NAME``: each job's own files beside its checkpoint (the values found
        hot, ``engine/routing.py``); the join state is Spark's, under ``checkpoints``."""
        return self.root / "state"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def log4j_config(self) -> Path:
        return self.root / "conf" / "log4j2.properties"

    def create(self) -> XsclHome:
        """Make every directory (idempotent) and write the quiet log configuration."""
        folders = (self.checkpoints, self.spool, self.results, self.tmp, self.log4j_config.parent)
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        try:
            written = self.log4j_config.read_text(encoding="utf-8")
        except FileNotFoundError:
            written = None
        ours = written is None or written.startswith(_LOG4J_MARK)
        if ours and written != _QUIET_LOG4J:  # a home made by an older xscl gets the new one
            self.log4j_config.write_text(_QUIET_LOG4J, encoding="utf-8")
        return self


def java_major_version(java: Path) -> str | None:
    """The major version (``"17"``) of a ``java`` binary, or None if it does not run."""
    try:
        out = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match is None:
        return None
    major, minor = match.group(1), match.group(2)
    return minor if major == "1" and minor else major


def recorded_java_home(venv: Path) -> Path | None:
    """The JAVA_HOME ``scripts/bootstrap.sh java`` recorded in ``venv/bin/activate``."""
    activate = venv / "bin" / "activate"
    try:
        text = activate.read_text(encoding="utf-8")
    except OSError:
        return None
    matches = _ACTIVATE_JAVA.findall(text)
    return Path(matches[-1]) if matches else None


def find_java_home(environ: Mapping[str, str] | None = None, *, venv: Path | None = None) -> Path:
    """Locate the Java runtime Spark will use, before any JVM is started.

    Order: ``JAVA_HOME``; the one ``scripts/bootstrap.sh java`` recorded in the venv's
    ``bin/activate``; a ``java`` on ``PATH`` that is Java 17 or 21. Raises
    ``JavaNotFoundError`` (``XSCL-S001``) saying how to get one otherwise.
    """
    env = os.environ if environ is None else environ
    configured = env.get("JAVA_HOME")
    if configured:
        home = Path(configured)
        if (home / "bin" / "java").exists():
            return home
        raise JavaNotFoundError(f"JAVA_HOME={configured} has no bin/java; {_JAVA_HINT}")
    recorded = recorded_java_home(Path(sys.prefix) if venv is None else venv)
    if recorded is not None and (recorded / "bin" / "java").exists():
        return recorded
    on_path = shutil.which("java", path=env.get("PATH"))
    if on_path is not None:
        binary = Path(on_path).resolve()
        if java_major_version(binary) in _SUPPORTED_JAVA:
            return binary.parent.parent
    raise JavaNotFoundError(f"no Java 17 or 21 runtime found; {_JAVA_HINT}")


def _jvm_running() -> bool:
    """Is there a JVM already (spark-submit started us, or a session exists)?"""
    from pyspark import SparkContext

    return "PYSPARK_GATEWAY_PORT" in os.environ or SparkContext._active_spark_context is not None


def session_conf(home: XsclHome, *, shuffle_partitions: int = 2) -> dict[str, str]:
    """The Spark settings xscl relies on (all overridable through ``conf``, or by
    ``--conf`` in ``PYSPARK_SUBMIT_ARGS``: ``build_session``)."""
    return {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # rows per Arrow batch between the JVM and Python workers: a join group's
        # results carry their documents' XML (~200 KB a row in the heavy 100k
        # benchmark), and Spark's default of 10,000 made one 1.9 GB batch, past the
        # JVM's 1 GB of direct memory for Arrow (docs/benchmarks.md)
        "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        # the workers import pyspark's compiled package, not its zip (``worker_daemon``)
        "spark.python.daemon.module": "xscl.spark_plugin.worker_daemon",
        "spark.sql.warehouse.dir": str(home.root / "warehouse"),
        "spark.local.dir": str(home.tmp),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": (
            f"-Dlog4j.configurationFile=file:{home.log4j_config} -Dderby.system.home={home.tmp}"
        ),
    }


def submitted_settings(arguments: str) -> set[str]:
    """The Spark settings given as ``--conf key=value`` in ``PYSPARK_SUBMIT_ARGS``.

    >>> sorted(submitted_settings("--conf spark.a=1 --conf=spark.b=x --master local pyspark-shell"))
    ['spark.a', 'spark.b']
    """
    words = shlex.split(arguments)
    keys = set()
    for index, word in enumerate(words):
        if word == "--conf" and index + 1 < len(words):
            keys.add(words[index + 1].split("=", 1)[0])
        elif word.startswith("--conf="):
            keys.add(word.removeprefix("--conf=").split("=", 1)[0])
    return keys


def build_session(
    master: str | None = None,
    app_name: str = "xscl",
    conf: Mapping[str, str] | None = None,
    *,
    home: str | Path | None = None,
) -> SparkSession:
    """Get or start the SparkSession xscl runs in (runs on the driver, once per process).

    ``master``: explicit argument, else ``conf["spark.master"]``, else
    ``$XSCL_SPARK_MASTER``, else whatever ``spark-submit`` configured, else
    ``local[2]``. ``home`` (default ``./xscl-data``) receives checkpoints, spool,
    results and scratch space. Java is located (``find_java_home``) before a JVM is
    started, so a missing runtime is a clear ``JavaNotFoundError``, not a Py4J trace.
    The xscl data sources are registered on the returned session.
    """
    from pyspark.sql import SparkSession

    layout = XsclHome(Path(home if home is not None else DEFAULT_HOME).resolve()).create()
    settings = session_conf(layout)
    for key in submitted_settings(os.environ.get("PYSPARK_SUBMIT_ARGS", "")):
        settings.pop(key, None)  # given to spark-submit: it wins over xscl's default
    settings.update(conf or {})
    chosen = master or settings.pop("spark.master", None) or os.environ.get(MASTER_ENV)
    builder = SparkSession.builder.appName(app_name)
    starting = not _jvm_running()
    if starting:
        os.environ["JAVA_HOME"] = str(find_java_home())
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        chosen = chosen or DEFAULT_MASTER
        if chosen.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no hostname warning
        builder = builder.master(chosen)
        _launch_jvm({"spark.app.name": app_name, "spark.master": chosen, **settings})
    elif chosen:
        builder = builder.master(chosen)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if starting and (spark.sparkContext.master or "").startswith("local-cluster"):
        # stopped before the interpreter exits: left to the JVM's shutdown hooks, the
        # in-process Master kept relaunching the executors they had just stopped,
        # and printed a wall of Java errors after the job's last line
        atexit.register(spark.stop)
    from xscl.spark_plugin.registration import register_data_sources

    register_data_sources(spark)
    return spark


def _launch_jvm(settings: Mapping[str, str]) -> None:
    """Start the driver's JVM as ``getOrCreate`` would (the same ``--conf`` settings),
    with its stderr read by a thread that passes it on to ours (``JvmStderr``). Spark's
    logs and the Python workers' stderr (children of the JVM) pass through it too."""
    from subprocess import PIPE

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": PIPE})  # type: ignore[no-untyped-call]
    stderr = gateway.proc.stderr if gateway.proc is not None else None
    if stderr is not None:
        relay = JvmStderr(stderr.fileno())
        _RELAYS.append(relay)
        threading.Thread(target=relay.run, name="xscl-jvm-stderr", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway)


#: The first line of one of Spark's warnings or errors, as ``_QUIET_LOG4J`` lays it out.
_LOG_RECORD = re.compile(rb"\d\d:\d\d:\d\d (?:FATAL|ERROR|WARN) ")
#: Java's words for a file system that cannot be written (full, read-only, over quota):
#: the job's checkpoint or Spark's working files under the home (``XSCL-S024``).
STORAGE_UNWRITABLE = (
    r"java\.io\.IOException: (No space left on device|Read-only file system|Disk quota exceeded)"
)
#: The failures ``xscl serve`` tells in one line itself (a results folder or a home that
#: cannot be written, a lease taken over): Spark's records of them are echoes, with traces.
_TOLD = re.compile(rb"XSCL-S02[03]\b|" + STORAGE_UNWRITABLE.encode())
#: The relays of this process's driver JVM (one, once a session was built here).
_RELAYS: list[JvmStderr] = []


def hush_jvm_stderr() -> None:
    """Pass nothing more of the driver JVM's stderr on (driver; ``xscl serve`` on Ctrl-C,
    from its signal handler): what Spark says while the job stops (the aborted write,
    the killed tasks, the Python workers' broken pipes) echoes a stop the command tells
    in one line itself."""
    for relay in _RELAYS:
        relay.hush()


class JvmStderr:
    """The driver JVM's stderr, passed on to ``fd`` but for noise (driver, one thread).

    Dropped: the line the JVM prints on every start (``_JVM_NOISE``), and Spark's
    records of a failure the command tells in one line itself (``_TOLD``: the task's
    error, the lost tasks, the aborted write, the query's end, each with its Java and
    Python traces), with every further warning or error record for ``quiet_seconds``
    (the same failure's echoes); after ``hush``, everything. A record is its first line
    and the lines after it up to the next record's, or until nothing came for
    ``settle`` seconds.
    """

    def __init__(
        self, source: int, fd: int = 2, settle: float = 0.2, quiet_seconds: float = 60.0
    ) -> None:
        self.source = source
        self.fd = fd
        self.settle = settle
        self.quiet_seconds = quiet_seconds
        self._record: list[bytes] = []
        self._quiet_until = 0.0
        self._hushed = threading.Event()

    def hush(self) -> None:
        """Drop everything from now on (``hush_jvm_stderr``); the stream is still read,
        so the JVM never blocks on a full pipe."""
        self._hushed.set()

    def run(self) -> None:
        """Pass the stream on until it ends (the JVM exited)."""
        import select
        import time

        partial = b""
        while True:
            ready, _, _ = select.select([self.source], [], [], self.settle)
            if not ready:
                self._flush(time.monotonic())
                continue
            chunk = os.read(self.source, 1 << 16)
            if not chunk:
                break
            *lines, partial = (partial + chunk).split(b"\n")
            for line in lines:
                self._line(line + b"\n", time.monotonic())
        if partial:
            self._line(partial, time.monotonic())
        self._flush(time.monotonic())

    def _line(self, line: bytes, now: float) -> None:
        if self._hushed.is_set():
            self._record.clear()
            return
        if line.startswith(_JVM_NOISE):
            return
        if _LOG_RECORD.match(line):
            self._flush(now)
            self._record.append(line)
        elif self._record:
            self._record.append(line)
        else:
            self._write(line)

    def _flush(self, now: float) -> None:
        if not self._record or self._hushed.is_set():
            self._record.clear()
            return
        text = b"".join(self._record)
        self._record.clear()
        if _TOLD.search(text):
            self._quiet_until = now + self.quiet_seconds
        elif now >= self._quiet_until:
            self._write(text)

    def _write(self, data: bytes) -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError:  # our stderr is gone: keep draining, so the JVM never blocks
            pass


def home_of(spark: SparkSession) -> XsclHome:
    """The ``XsclHome`` a session was built with (from its warehouse directory)."""
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    if warehouse is None:
        return XsclHome(Path(DEFAULT_HOME).resolve())
    return XsclHome(Path(warehouse.removeprefix("file:")).parent)
