"""deploy/docker/Dockerfile and its entry point, checked without building (no container runtime).

The Dockerfile is parsed: its stages, base image, what it copies, what it installs, its user
and entry point are compared with the project (pyproject.toml, the chart's values, Spark's
jars). The entry point script is run with stand-ins for ``xscl``, ``java`` and
``spark-submit`` and the command line each role starts is compared with what Spark expects.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import os
import re
import shlex
import subprocess
import zipfile
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tests.deploy.chartkit import CHART, DOCKERFILE, ROOT, only, render_profile

ENTRYPOINT = DOCKERFILE.parent / "entrypoint.sh"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: Debian releases whose archive has openjdk-17-jre-headless (trixie moved on to 21)
JAVA17_RELEASES = {"bullseye", "bookworm"}
#: The extras the image installs: k8s, the client of `xscl serve --lease kubernetes`
#: (the chart's process pair), and api, `xscl api` (the chart's API Deployment)
IMAGE_EXTRAS = "k8s,api"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    steps = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            steps.append((keyword.upper(), " ".join(rest.split())))
    return steps


STEPS = instructions(DOCKERFILE.read_text())


def stages() -> dict[str, list[tuple[str, str]]]:
    """The steps of each named stage."""
    found: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for keyword, args in STEPS:
        if keyword == "FROM":
            current = found.setdefault(args.split(" AS ")[1], [])
        current.append((keyword, args))
    return found


def base_image() -> str:
    arg = next(
        args for keyword, args in STEPS if keyword == "ARG" and args.startswith("PYTHON_IMAGE=")
    )
    return arg.split("=", 1)[1]


def run_commands(stage: str) -> list[list[str]]:
    """Each shell command of the stage's RUN steps (split at &&), as words."""
    commands = []
    for keyword, args in stages()[stage]:
        if keyword == "RUN":
            args = re.sub(r"^(--\S+ )+", "", args)
            commands += [shlex.split(part) for part in args.split(" && ")]
    return commands


def test_two_stages_on_one_slim_python_base() -> None:
    assert list(stages()) == ["build", "runtime"]
    for steps in stages().values():
        assert steps[0] == ("FROM", f"${{PYTHON_IMAGE}} AS {steps[0][1].split(' AS ')[1]}")
    match = re.fullmatch(r"python:(\d+)\.(\d+)-slim-(\w+)", base_image())
    assert match, base_image()
    python = f"{match.group(1)}.{match.group(2)}"
    assert SpecifierSet(PYPROJECT["project"]["requires-python"]).contains(f"{python}.0")
    assert match.group(3) in JAVA17_RELEASES


def test_the_build_stage_copies_what_the_wheel_is_built_from() -> None:
    copied = {
        src for keyword, args in stages()["build"] if keyword == "COPY" for src in args.split()[:-1]
    }
    packages = {
        p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    assert copied == {"pyproject.toml", PYPROJECT["project"]["readme"], *packages}


def test_the_wheel_and_its_dependencies_are_built_from_the_project() -> None:
    build = run_commands("build")
    assert build[0][:3] == ["python", "-m", "pip"] and build[0][3] == "wheel"
    assert "--no-deps" in build[0] and build[0][-1] == "."
    assert build[1][3] == "wheel" and build[1][-1] == f"$(ls /dist/xscl-*.whl)[{IMAGE_EXTRAS}]"
    assert "--no-deps" not in build[1]


def test_the_runtime_installs_only_that_wheel_its_dependencies_java_and_tini() -> None:
    runtime = run_commands("runtime")
    apt = next(c for c in runtime if c[-2:] and "install" in c and "apt-get" in " ".join(c))
    assert "--no-install-recommends" in apt
    assert {w for w in apt if not w.startswith("-")} - {
        "DEBIAN_FRONTEND=noninteractive",
        "apt-get",
        "install",
    } == {"openjdk-17-jre-headless", "tini"}
    pips = [c for c in runtime if c[:2] == ["/opt/xscl/venv/bin/pip", "install"]]
    assert len(pips) == 1
    pip = pips[0]
    assert "--no-index" in pip and pip[pip.index("--find-links") + 1] == "/wheels"
    requirements = [w for w in pip[2:] if not w.startswith("-") and w != "/wheels"]
    assert requirements == [f"{PYPROJECT['project']['name']}[{IMAGE_EXTRAS}]"]  # nothing else
    assert set(IMAGE_EXTRAS.split(",")) <= set(PYPROJECT["project"]["optional-dependencies"])


def test_the_tests_run_on_the_same_dependency_set() -> None:
    """The installed xscl (what the tests import) requires what pyproject.toml lists, and
    the image's extras are installed here too."""
    extras = IMAGE_EXTRAS.split(",")
    requires = [Requirement(r) for r in importlib.metadata.requires("xscl") or []]
    installed = {str(r) for r in requires if "extra ==" not in str(r.marker or "")}
    declared = {str(Requirement(r)) for r in PYPROJECT["project"]["dependencies"]}
    assert installed == declared
    for extra in extras:
        wanted = {Requirement(r).name for r in PYPROJECT["project"]["optional-dependencies"][extra]}
        for name in wanted:
            assert importlib.metadata.version(name)  # PackageNotFoundError when missing


def test_a_non_root_user_that_the_chart_runs_as() -> None:
    user = next(args for keyword, args in STEPS if keyword == "USER")
    uid, gid = (int(part) for part in user.split(":"))
    assert uid > 0 and gid > 0
    useradd = next(c for c in run_commands("runtime") if c and c[0] == "useradd")
    assert useradd[useradd.index("--uid") + 1] == str(uid)
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == uid
    assert values["podSecurityContext"]["runAsGroup"] == gid


def test_the_entry_point_is_tini_then_the_role_script() -> None:
    entry = next(args for keyword, args in STEPS if keyword == "ENTRYPOINT")
    assert yaml.safe_load(entry) == ["/usr/bin/tini", "-g", "--", "/opt/xscl/entrypoint.sh"]
    copies = [args for keyword, args in STEPS if keyword == "COPY" and "entrypoint.sh" in args]
    assert copies == ["--chmod=0755 deploy/docker/entrypoint.sh /opt/xscl/entrypoint.sh"]


def test_the_paths_the_chart_uses_exist_in_the_image() -> None:
    app = only(render_profile("operator"), "SparkApplication")
    made = " ".join(" ".join(c) for c in run_commands("runtime"))
    assert app["spec"]["mainApplicationFile"].removeprefix("local://") == "/opt/xscl/submit.py"
    assert "xscl.spark_plugin.submit" in made and "/opt/xscl/submit.py" in made
    env = next(args for keyword, args in STEPS if keyword == "ENV")
    for name in ("JAVA_HOME=/opt/java", "SPARK_HOME=/opt/xscl/spark", "PATH=/opt/xscl/venv/bin:"):
        assert name in env
    assert "/opt/java" in made and "/opt/xscl/spark" in made


def test_the_dockerignore_lets_through_exactly_what_is_copied() -> None:
    patterns = [
        line
        for line in (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert patterns[0] == "*"
    allowed = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    copied = {
        src
        for keyword, args in STEPS
        if keyword == "COPY" and "--from" not in args
        for src in args.split()[:-1]
        if not src.startswith("--")
    }
    assert allowed == copied
    assert any(fnmatch.fnmatch("xscl/lang/__pycache__", p.replace("**/", "*/")) for p in patterns)


def test_the_documented_build_command_is_the_dockerfiles() -> None:
    """README and the Dockerfile's header say the same `docker build`: from the repository
    root (the context the COPY steps and Dockerfile.dockerignore are written for)."""
    command = re.compile(r"docker build -f deploy/docker/Dockerfile -t \S+ \.$", re.MULTILINE)
    assert command.search(DOCKERFILE.read_text())
    assert command.search((ROOT / "README.md").read_text())


# ---- the entry point, run with stand-ins --------------------------------------------------


def run_entrypoint(tmp: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    """Run entrypoint.sh; the argv that the program it execs received."""
    log = tmp / "argv"
    stub = f'#!/bin/sh\nprintf "%s\\n" "$0" "$@" > {log}\n'
    for path in ("bin/xscl", "java/bin/java", "spark/bin/spark-submit"):
        (tmp / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp / path).write_text(stub)
        (tmp / path).chmod(0o755)
    base = {
        "PATH": f"{tmp / 'bin'}:/usr/bin:/bin",
        "JAVA_HOME": str(tmp / "java"),
        "SPARK_HOME": str(tmp / "spark"),
    }
    done = subprocess.run(
        ["/bin/bash", str(ENTRYPOINT), *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines()


def test_other_arguments_run_xscl(tmp_path: Path) -> None:
    argv = run_entrypoint(tmp_path, "serve", "--home", "/var/lib/xscl")
    assert argv == [str(tmp_path / "bin" / "xscl"), "serve", "--home", "/var/lib/xscl"]


def test_driver_runs_spark_submit_in_client_mode_in_the_pod(tmp_path: Path) -> None:
    argv = run_entrypoint(
        tmp_path,
        "driver",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "local:///opt/xscl/submit.py",
        "--home",
        "/h",
        env={"SPARK_DRIVER_BIND_ADDRESS": "10.0.0.7"},
    )
    assert argv == [
        str(tmp_path / "spark" / "bin" / "spark-submit"),
        "--conf",
        "spark.driver.bindAddress=10.0.0.7",
        "--deploy-mode",
        "client",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "local:///opt/xscl/submit.py",
        "--home",
        "/h",
    ]


EXECUTOR_ENV = {
    "SPARK_JAVA_OPT_0": "-Dspark.driver.port=7078",
    "SPARK_JAVA_OPT_2": "-Dspark.app.id=spark-1",
    "SPARK_JAVA_OPT_10": "-Dspark.executor.id=3",
    "SPARK_EXECUTOR_MEMORY": "2g",
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@demo-xscl-driver.streams.svc:7078",
    "SPARK_EXECUTOR_ID": "3",
    "SPARK_EXECUTOR_CORES": "1",
    "SPARK_APPLICATION_ID": "spark-1",
    "SPARK_EXECUTOR_POD_IP": "10.0.0.9",
    "SPARK_RESOURCE_PROFILE_ID": "0",
    "SPARK_EXECUTOR_POD_NAME": "demo-xscl-exec-3",
    "SPARK_CONF_DIR": "/opt/spark/conf",
}


def test_executor_runs_sparks_executor_backend(tmp_path: Path) -> None:
    argv = run_entrypoint(tmp_path, "executor", env=EXECUTOR_ENV)
    spark = tmp_path / "spark"
    assert argv[:6] == [
        str(tmp_path / "java" / "bin" / "java"),
        "-Dspark.driver.port=7078",
        "-Dspark.app.id=spark-1",
        "-Dspark.executor.id=3",
        "-Xms2g",
        "-Xmx2g",
    ]
    assert argv[6:9] == [
        "-cp",
        f"/opt/spark/conf:{spark}/jars/*",
        "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
    ]
    options = dict(zip(argv[9::2], argv[10::2], strict=True))
    assert options == {
        "--driver-url": EXECUTOR_ENV["SPARK_DRIVER_URL"],
        "--executor-id": "3",
        "--cores": "1",
        "--app-id": "spark-1",
        "--hostname": "10.0.0.9",
        "--resourceProfileId": "0",
        "--podName": "demo-xscl-exec-3",
    }


def test_the_executor_backend_takes_those_options() -> None:
    """Spark's jar (from the pyspark the tests run) has the class and documents each option."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    (jar,) = jars.glob("spark-kubernetes_*.jar")
    with zipfile.ZipFile(jar) as archive:
        usage = b"".join(
            archive.read(n)
            for n in archive.namelist()
            if n.startswith("org/apache/spark/scheduler/cluster/k8s/KubernetesExecutorBackend")
        )
    script = ENTRYPOINT.read_text()
    options = re.findall(r"^\s+(--[A-Za-z-]+) \"\$SPARK_", script, re.MULTILINE)
    assert len(options) == 7
    for option in options:
        assert f"{option} <".encode() in usage, option


@pytest.mark.parametrize("variable", ["SPARK_EXECUTOR_MEMORY", "SPARK_DRIVER_URL"])
def test_an_executor_without_sparks_settings_stops(tmp_path: Path, variable: str) -> None:
    env = {k: v for k, v in EXECUTOR_ENV.items() if k != variable}
    done = subprocess.run(
        ["/bin/bash", str(ENTRYPOINT), "executor"],
        env={
            **env,
            "PATH": os.environ["PATH"],
            "JAVA_HOME": str(tmp_path),
            "SPARK_HOME": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode != 0 and variable in done.stderr
