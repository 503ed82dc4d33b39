"""The chart lints clean with Helm 4, and every ci/ profile renders to objects that validate.

Built-in kinds are validated strictly (unknown fields are errors) by ``kubernetes-validate``
against the Kubernetes schemas it bundles, for the oldest Kubernetes the chart allows
(Chart.yaml's kubeVersion) and the newest bundled. The SparkApplication is validated against
the spark-operator's CRD (a pruned copy in schemas/, made strict); the ServiceMonitor, whose
CRD is the Prometheus operator's, only by its kind being the one custom kind left.
Nothing is applied to a cluster: none runs here.
"""

from __future__ import annotations

import json
from pathlib import Path

import helm_python as helm
import jsonschema
import pytest
from kubernetes_validate import utils as kubernetes

from tests.deploy.chartkit import CHART, PROFILES, embedded_pods, profile, render_profile

OLDEST = "1.29"  # Chart.yaml: kubeVersion >=1.29.0-0
NEWEST = kubernetes.latest_version()
SPARK_APPLICATION = json.loads(
    (Path(__file__).parent / "schemas" / "sparkapplication-v1beta2.json").read_text()
)
CUSTOM_KINDS = {"SparkApplication", "ServiceMonitor"}
NAMES = [p.name.removesuffix("-values.yaml") for p in PROFILES]


def test_there_are_the_three_profiles() -> None:
    assert set(NAMES) >= {"default", "operator", "production"}


def test_chart_declares_the_oldest_kubernetes_validated() -> None:
    chart = (CHART / "Chart.yaml").read_text()
    assert f'kubeVersion: ">={OLDEST}.0-0"' in chart


@pytest.mark.parametrize("name", NAMES)
def test_helm_lint_strict_has_no_errors_or_warnings(name: str) -> None:
    report = helm.lint(str(CHART), profile(name), strict=True, kube_version=f"v{OLDEST}.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["errors"] == [] and problems == [], report


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_every_builtin_object_validates_strictly(name: str, version: str) -> None:
    checked = 0
    for obj in render_profile(name):
        if obj["kind"] not in CUSTOM_KINDS:
            _validate(obj["kind"] + "/" + obj["metadata"]["name"], obj, version)
            checked += 1
        for what, pod in embedded_pods(obj):  # Spark's pod templates
            _validate(what, pod, version)
            checked += 1
    assert checked >= 10


def _validate(what: str, obj: dict[str, object], version: str) -> None:
    try:
        kubernetes.validate(obj, version, strict=True)
    except kubernetes.ValidationError as exc:
        pytest.fail(f"{what} (Kubernetes {version}): {exc.message} at {list(exc.path)}")


@pytest.mark.parametrize("name", NAMES)
def test_only_the_known_custom_kinds_lack_a_kubernetes_schema(name: str) -> None:
    unknown = set()
    for obj in render_profile(name):
        try:
            kubernetes.validate(obj, NEWEST, strict=True)
        except kubernetes.SchemaNotFoundError:
            unknown.add(obj["kind"])
    assert unknown <= CUSTOM_KINDS


def test_the_spark_application_validates_against_the_operators_crd() -> None:
    (app,) = [o for o in render_profile("operator") if o["kind"] == "SparkApplication"]
    jsonschema.validate(app, SPARK_APPLICATION)


def test_the_crd_schema_catches_a_misspelt_field() -> None:
    (app,) = [o for o in render_profile("operator") if o["kind"] == "SparkApplication"]
    broken = json.loads(json.dumps(app))
    broken["spec"]["executor"]["instance"] = broken["spec"]["executor"].pop("instances")
    with pytest.raises(jsonschema.ValidationError, match="instance"):
        jsonschema.validate(broken, SPARK_APPLICATION)


def test_kubernetes_validate_catches_a_misspelt_field() -> None:
    deployment = next(o for o in render_profile("default") if o["kind"] == "Deployment")
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"
    with pytest.raises(kubernetes.ValidationError):
        kubernetes.validate(broken, NEWEST, strict=True)
