"""values.schema.json refuses unknown keys and wrong types, and agrees with xscl's own checks.

Helm validates the values against the schema before rendering: a refused value fails
``helm install`` / ``upgrade`` / ``template`` with the key named. The schema's patterns and
enumerations are xscl's (stream names, durations, formats), and the defaults of values.yaml
are xscl's defaults, checked against the code here.
"""

from __future__ import annotations

import argparse
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.deploy.chartkit import CHART, render_files
from xscl.cli.common import parse_duration
from xscl.cli.job_args import RESULTS_FORMATS, add_job_arguments
from xscl.connectors.document import STREAM_NAME
from xscl.connectors.feeds import FORMS

DEFAULTS: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())

REFUSED = [
    pytest.param({"replicas": 2}, "replicas", id="unknown top-level key"),
    pytest.param({"job": {"mode": "spark", "replicas": 2}}, "replicas", id="unknown job key"),
    pytest.param({"home": {"claim": "x"}}, "claim", id="unknown home key"),
    pytest.param({"driver": {"livenessProbe": {"stall": 5}}}, "stall", id="unknown nested key"),
    pytest.param({"metrics": {"serviceMonitor": {"enable": True}}}, "enable", id="misspelt key"),
    pytest.param({"job": {"hotSalts": "8"}}, "hotSalts", id="string for an integer"),
    pytest.param({"job": {"hotThreshold": 2.5}}, "hotThreshold", id="fraction for an integer"),
    pytest.param({"job": {"joinPlan": "mjoin"}}, "joinPlan", id="an unknown join plan"),
    pytest.param({"job": {"cacheMemory": -1}}, "cacheMemory", id="negative cache memory"),
    pytest.param({"job": {"statePartitions": 0}}, "statePartitions", id="zero partitions"),
    pytest.param({"job": {"triggerSeconds": 0}}, "triggerSeconds", id="zero trigger"),
    pytest.param({"job": {"quiet": "yes"}}, "quiet", id="string for a boolean"),
    pytest.param({"job": {"mode": "yarn"}}, "mode", id="unknown mode"),
    pytest.param({"job": {"resultsFormat": "csv"}}, "resultsFormat", id="unknown results format"),
    pytest.param({"job": {"allowedLateness": "10 minutes"}}, "allowedLateness", id="bad duration"),
    pytest.param({"job": {"name": "../up"}}, "name", id="job name with a slash"),
    pytest.param(
        {"feeds": {"news": "https://a.example/f.atom"}}, "news", id="feed list not a list"
    ),
    pytest.param({"feeds": {"9news": ["https://a.example/f"]}}, "9news", id="bad stream name"),
    pytest.param({"feeds": {"news": ["/etc/passwd"]}}, "news", id="feed not a URL"),
    pytest.param({"feeds": {"news": []}}, "news", id="empty feed list"),
    pytest.param({"queries": ["a"]}, "queries", id="queries not text"),
    pytest.param({"spark": {"conf": {"hadoop.x": "1"}}}, "hadoop.x", id="conf key not spark.*"),
    pytest.param({"spark": {"conf": {"spark.x": 1}}}, "spark.x", id="conf value not a string"),
    pytest.param({"spark": {"executor": {"memory": "2 GB"}}}, "memory", id="bad Spark memory"),
    pytest.param({"spark": {"master": "local[2]"}}, "master", id="master not k8s://"),
    pytest.param({"home": {"accessModes": ["ReadWriteAll"]}}, "accessModes", id="bad access mode"),
    pytest.param({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy", id="bad pull policy"),
    pytest.param({"poller": {"form": "pretty"}}, "form", id="bad item form"),
    pytest.param({"driver": {"resources": {"request": {}}}}, "request", id="bad resources key"),
    pytest.param({"pair": {"enabled": "true"}}, "enabled", id="pair switch not a boolean"),
    pytest.param({"pair": True}, "pair", id="pair not an object"),
    pytest.param({"pair": {"replicas": 3}}, "replicas", id="unknown pair key"),
    pytest.param({"pair": {"leaseName": "x"}}, "leaseName", id="pair lease name not a value"),
    pytest.param({"pair": {"leaseSeconds": 0}}, "leaseSeconds", id="zero lease"),
    pytest.param({"pair": {"renewSeconds": "2"}}, "renewSeconds", id="string for seconds"),
    pytest.param(
        {"driver": {"readinessProbe": {"periodSeconds": 0}}},
        "periodSeconds",
        id="zero readiness period",
    ),
]


@pytest.mark.parametrize(("values", "named"), REFUSED)
def test_the_schema_refuses(values: dict[str, Any], named: str) -> None:
    with helm.Chart.load(str(CHART)) as chart, pytest.raises(helm.HelmValuesError) as caught:
        chart.validate_schema(values)
    assert named in str(caught.value)


def test_a_refused_value_stops_rendering() -> None:
    with pytest.raises(helm.HelmValuesError, match="replicas"):
        render_files({"job": {"replicas": 2}})


def test_the_defaults_and_every_profile_pass() -> None:
    from tests.deploy.chartkit import PROFILES

    with helm.Chart.load(str(CHART)) as chart:
        chart.validate_schema({})
        for path in PROFILES:
            chart.validate_schema(yaml.safe_load(path.read_text()))


def _schema() -> dict[str, Any]:
    import json

    schema: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
    return schema


def test_every_value_of_values_yaml_has_a_schema() -> None:
    """values.yaml and the schema list the same keys (free-form maps aside)."""
    schema = _schema()

    def walk(values: dict[str, Any], node: dict[str, Any], path: str) -> None:
        node = _resolve(schema, node)
        properties = node.get("properties")
        if properties is None:
            return  # a free-form map (resources, nodeSelector, conf, ...)
        assert set(values) == set(properties) - {"global"}, path
        for key, value in values.items():
            if isinstance(value, dict):
                walk(value, properties[key], f"{path}.{key}")

    walk(DEFAULTS, schema, "")


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
    return node


STREAMS = ["news", "_x", "a.b-c_9", "9news", "a b", "ä", "-x", "x/y", "", "news\n"]
DURATIONS = ["10m", "90s", "1h", "2d", "250ms", "1.5h", " 5 m ", "5", "10 minutes", "1e3s", "m", ""]


@pytest.mark.parametrize("name", STREAMS)
def test_stream_names_are_xscls(name: str) -> None:
    feeds = {name: ["https://a.example/feed"]}
    assert _accepted({"feeds": feeds}) == bool(STREAM_NAME.match(name))


@pytest.mark.parametrize("text", DURATIONS)
def test_durations_are_xscls(text: str) -> None:
    try:
        parse_duration(text)
        valid = True
    except ValueError:
        valid = False
    assert _accepted({"job": {"allowedLateness": text}}) == valid


def test_formats_are_xscls() -> None:
    properties = _schema()["properties"]
    assert tuple(properties["job"]["properties"]["resultsFormat"]["enum"]) == RESULTS_FORMATS
    assert set(properties["poller"]["properties"]["form"]["enum"]) == set(FORMS)


def test_job_defaults_are_xscl_serves() -> None:
    """A value the chart always passes has xscl's default, so the chart changes nothing."""
    parser = argparse.ArgumentParser()
    add_job_arguments(parser)
    xscl = vars(parser.parse_args([]))
    job = DEFAULTS["job"]
    assert job["name"] == xscl["name"]
    assert job["triggerSeconds"] == xscl["trigger_seconds"]
    assert job["feedEntries"] == xscl["feed_entries"]
    assert job["resultsFormat"] == xscl["results_format"]
    assert job["hotSalts"] == xscl["hot_salts"]
    assert job["hotThreshold"] == xscl["hot_threshold"]
    assert job["joinPlan"] == xscl["join_plan"]
    assert job["cacheMemory"] << 20 == xscl["cache_memory"]
    assert job["quiet"] == xscl["quiet"]
    for unset in ("maxRecordsPerBatch", "allowedLateness", "statePartitions", "valueGroups"):
        assert job[unset] is None


def test_poller_defaults_are_xscl_polls() -> None:
    from xscl.cli.main import build_parser

    xscl = vars(build_parser().parse_args(["poll", "https://a.example/feed"]))
    poller = DEFAULTS["poller"]
    assert poller["timeout"] == xscl["timeout"]
    assert poller["retries"] == xscl["retries"]
    assert poller["minHostInterval"] == xscl["min_host_interval"]


def _accepted(values: dict[str, Any]) -> bool:
    with helm.Chart.load(str(CHART)) as chart:
        try:
            chart.validate_schema(values)
        except helm.HelmValuesError:
            return False
    return True
