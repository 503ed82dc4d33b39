"""Render the chart deploy/helm/xscl offline and look at what it made (helpers of tests/deploy).

Rendering and linting go through ``helm-python-sdk`` (PyPI): Helm 4's Go SDK in a shared
library, so no ``helm`` binary and no cluster are needed. No Kubernetes API server runs
here: the tests stop at lint, render and schema validation.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "xscl"
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"
PROFILES = sorted(CHART.glob("ci/*-values.yaml"))
RELEASE = "demo"
NAMESPACE = "streams"

Manifest = dict[str, Any]


def profile(name: str) -> dict[str, Any]:
    """The values of ``ci/NAME-values.yaml``."""
    values: dict[str, Any] = yaml.safe_load((CHART / "ci" / f"{name}-values.yaml").read_text())
    return values or {}


def render_files(values: dict[str, Any] | None = None) -> dict[str, str]:
    """Template path -> rendered text, as ``helm template`` makes them (hooks included)."""
    with helm.Chart.load(str(CHART)) as chart:
        rendered: dict[str, str] = chart.render(
            values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True
        )
    return rendered


def render(values: dict[str, Any] | None = None) -> list[Manifest]:
    """Every Kubernetes object the chart renders with ``values``."""
    objects: list[Manifest] = []
    for path, text in sorted(render_files(values).items()):
        if path.endswith(".txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


@cache
def render_profile(name: str) -> tuple[Manifest, ...]:
    """The objects of a ``ci/`` profile (cached: tests must not change them)."""
    return tuple(render(profile(name)))


def kinds(objects: Iterator[Manifest] | tuple[Manifest, ...] | list[Manifest]) -> list[str]:
    return [o["kind"] for o in objects]


def only(objects: tuple[Manifest, ...] | list[Manifest], kind: str, suffix: str = "") -> Manifest:
    """The one object of ``kind`` whose name ends with ``suffix``."""
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, f"{len(found)} {kind} objects named *{suffix}"
    return found[0]


def pod_specs(obj: Manifest) -> Iterator[tuple[str, Manifest]]:
    """(what, pod spec) of every pod an object describes, pod templates inside ConfigMaps
    and SparkApplications included."""
    kind = obj["kind"]
    if kind in ("Deployment", "StatefulSet", "Job"):
        yield f"{kind}/{obj['metadata']['name']}", obj["spec"]["template"]["spec"]
    elif kind == "SparkApplication":
        for role in ("driver", "executor"):
            yield f"SparkApplication {role}", obj["spec"][role]["template"]["spec"]
    elif kind == "ConfigMap":
        for key, text in obj.get("data", {}).items():
            if key.endswith("pod-template.yaml"):
                yield f"ConfigMap {key}", yaml.safe_load(text)["spec"]


def embedded_pods(obj: Manifest) -> Iterator[tuple[str, Manifest]]:
    """The Pod manifests embedded in an object (Spark's pod templates)."""
    if obj["kind"] == "SparkApplication":
        for role in ("driver", "executor"):
            yield f"SparkApplication {role} template", obj["spec"][role]["template"]
    elif obj["kind"] == "ConfigMap":
        for key, text in obj.get("data", {}).items():
            if key.endswith("pod-template.yaml"):
                yield f"ConfigMap {key}", yaml.safe_load(text)


def spark_defaults(objects: tuple[Manifest, ...] | list[Manifest]) -> dict[str, str]:
    """The driver's spark-defaults.conf (mode spark) as a dict."""
    text = only(objects, "ConfigMap", "-spark")["data"]["spark-defaults.conf"]
    pairs = (line.split(" ", 1) for line in text.splitlines() if line.strip())
    return {key: value for key, value in pairs}


@cache
def load_script(name: str) -> ModuleType:
    """Import one of the chart's files/*.py programs as a module (``chart_files.STEM``)."""
    path = CHART / "files" / name
    module_name = f"chart_files.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module
