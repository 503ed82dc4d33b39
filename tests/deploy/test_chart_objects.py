"""What the chart renders, asserted as helm-unittest would (written as pytest).

Each test renders a ci/ profile (or the defaults with a few values) and looks at the objects:
which exist in which mode, how they refer to each other (selectors, volumes, the service
account, the driver's address in spark-defaults.conf), and the settings every pod must have.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import helm_python as helm
import pytest

from tests.deploy.chartkit import (
    NAMESPACE,
    RELEASE,
    ROOT,
    Manifest,
    kinds,
    only,
    pod_specs,
    profile,
    render,
    render_files,
    render_profile,
    spark_defaults,
)

EXAMPLE_QUERIES = (ROOT / "examples" / "rss" / "queries.xscl").read_text(encoding="utf-8")
PROFILES = ("default", "operator", "production", "pair")


def component(obj: Manifest) -> str | None:
    labels: dict[str, str] = obj["metadata"].get("labels", {})
    return labels.get("app.kubernetes.io/component")


def pod_labels(objects: tuple[Manifest, ...]) -> list[dict[str, str]]:
    """Labels of every pod the release makes, Spark's executors (by template) included."""
    found = []
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            found.append(obj["spec"]["template"]["metadata"]["labels"])
    found.extend(_spark_templates(objects))
    return found


def _spark_templates(objects: tuple[Manifest, ...]) -> list[dict[str, str]]:
    import yaml

    labels = []
    for obj in objects:
        if obj["kind"] == "SparkApplication":
            labels += [
                obj["spec"][r]["template"]["metadata"]["labels"] for r in ("driver", "executor")
            ]
        if obj["kind"] == "ConfigMap" and "executor-pod-template.yaml" in obj.get("data", {}):
            template = yaml.safe_load(obj["data"]["executor-pod-template.yaml"])
            labels.append(template["metadata"]["labels"])
    return labels


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def driver_pod_conf(objects: tuple[Manifest, ...], ordinal: int) -> dict[str, str]:
    """The Spark settings driver pod ``ordinal`` gets on top of spark-defaults.conf: its
    PYSPARK_SUBMIT_ARGS, with $(POD_NAME) expanded as the kubelet does."""
    driver = only(objects, "StatefulSet", "-driver")
    env = {e["name"]: e for e in driver["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    pod = f"{driver['metadata']['name']}-{ordinal}"
    words = shlex.split(env["PYSPARK_SUBMIT_ARGS"]["value"].replace("$(POD_NAME)", pod))
    assert words[-1] == "pyspark-shell" and words[:-1:2] == ["--conf"] * (len(words) // 2)
    return dict(word.split("=", 1) for word in words[1:-1:2])


# ---- the two ways the job runs -----------------------------------------------------------


def test_spark_mode_runs_xscl_serve_in_a_statefulset_of_one() -> None:
    objects = render_profile("default")
    driver = only(objects, "StatefulSet", "-driver")
    assert driver["spec"]["replicas"] == 1
    container = driver["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:3] == ["serve", "--master", "k8s://https://kubernetes.default.svc"]
    assert "SparkApplication" not in kinds(objects)


def test_operator_mode_has_a_spark_application_and_no_driver_workload() -> None:
    objects = render_profile("operator")
    app = only(objects, "SparkApplication")
    workloads = [o for o in objects if o["kind"] in ("Deployment", "StatefulSet")]
    assert [o for o in workloads if component(o) == "driver"] == []
    assert {component(o) for o in workloads} == {"poller", "feeds", "metrics"}
    assert [o for o in objects if o["kind"] == "Service" and component(o) == "driver"] == []
    assert app["spec"]["restartPolicy"]["type"] == "Always"
    assert app["spec"]["mode"] == "cluster" and app["spec"]["type"] == "Python"
    assert app["spec"]["mainApplicationFile"] == "local:///opt/xscl/submit.py"


def test_the_driver_uses_the_service_account_the_role_is_bound_to() -> None:
    for name in PROFILES:
        objects = render_profile(name)
        account = only(objects, "ServiceAccount")["metadata"]["name"]
        binding = only(objects, "RoleBinding")
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
        ]
        assert binding["roleRef"]["name"] == only(objects, "Role")["metadata"]["name"]
        if name == "operator":
            assert only(objects, "SparkApplication")["spec"]["driver"]["serviceAccount"] == account
        else:
            driver = only(objects, "StatefulSet", "-driver")
            assert driver["spec"]["template"]["spec"]["serviceAccountName"] == account
            conf = spark_defaults(objects)
            assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == account


def test_the_role_lists_exactly_the_verbs_the_driver_needs() -> None:
    role = only(render_profile("default"), "Role")
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    assert rules == {
        (("",), ("pods",)): {
            "create",
            "get",
            "list",
            "watch",
            "patch",
            "delete",
            "deletecollection",
        },
        (("",), ("configmaps",)): {"create", "delete", "deletecollection"},
    }
    # the only calls on services and claims, switched off (hence not in the Role)
    conf = spark_defaults(render_profile("default"))
    assert conf["spark.kubernetes.driver.service.deleteOnTermination"] == "false"
    assert conf["spark.kubernetes.driver.ownPersistentVolumeClaim"] == "false"
    assert conf["spark.kubernetes.driver.reusePersistentVolumeClaim"] == "false"


def test_no_other_pod_gets_an_api_token() -> None:
    for name in PROFILES:
        for what, spec in (s for o in render_profile(name) for s in pod_specs(o)):
            if "driver" in what.lower():
                continue
            assert spec.get("automountServiceAccountToken") is False, what


# ---- queries and feeds ------------------------------------------------------------------


def test_the_queries_config_map_holds_the_example_queries() -> None:
    config = only(render_profile("default"), "ConfigMap", "-config")
    assert config["data"]["queries.xscl"] == EXAMPLE_QUERIES


def test_given_queries_replace_the_example() -> None:
    text = "q: S//a->x FOLLOWED BY {x = y, 1h} S//b->y;\n"
    config = only(render({"queries": text}), "ConfigMap", "-config")
    assert config["data"]["queries.xscl"] == text


def test_each_stream_has_its_feed_list() -> None:
    objects = render_profile("default")
    data = only(objects, "ConfigMap", "-config")["data"]
    for stream, urls in profile("default")["feeds"].items():
        assert data[f"{stream}.feeds"].split() == urls


def test_no_feeds_no_poller() -> None:
    objects = render({})
    assert [o for o in objects if component(o) == "poller"] == []
    assert "No feeds are configured" in render_files({})["xscl/templates/NOTES.txt"]


def test_changing_the_queries_does_not_restart_the_driver_but_spark_settings_do() -> None:
    def checksum(values: dict[str, Any]) -> str:
        driver = only(render(values), "StatefulSet", "-driver")
        annotations: dict[str, str] = driver["spec"]["template"]["metadata"]["annotations"]
        return annotations["checksum/spark"]

    base = checksum({})
    assert checksum({"queries": "q: S//a->x FOLLOWED BY {x = y, 1h} S//b->y;"}) == base
    assert checksum({"spark": {"executor": {"instances": 5}}}) != base


def test_the_subscriptions_job_runs_after_install_and_upgrade() -> None:
    for name in PROFILES:
        job = only(render_profile(name), "Job", "-subscriptions")
        hooks = job["metadata"]["annotations"]["helm.sh/hook"].split(",")
        assert set(hooks) == {"post-install", "post-upgrade"}
    assert [o for o in render({"subscriptions": {"enabled": False}}) if o["kind"] == "Job"] == []


# ---- how the objects refer to each other ------------------------------------------------


@pytest.mark.parametrize("name", PROFILES)
def test_every_service_selects_pods_of_the_release(name: str) -> None:
    objects = render_profile(name)
    labels = pod_labels(objects)
    for service in (o for o in objects if o["kind"] == "Service"):
        selector = service["spec"]["selector"]
        assert any(selects(selector, pod) for pod in labels), service["metadata"]["name"]


@pytest.mark.parametrize("name", PROFILES)
def test_the_executor_budget_selects_the_executor_pods(name: str) -> None:
    objects = render_profile(name)
    budget = only(objects, "PodDisruptionBudget", "-executors")
    selector = budget["spec"]["selector"]["matchLabels"]
    executors = [
        pod
        for pod in _spark_templates(objects)
        if pod.get("app.kubernetes.io/component") == "executor"
    ]
    assert executors and all(selects(selector, pod) for pod in executors)
    others = [pod for pod in pod_labels(objects) if pod not in executors]
    assert not any(selects(selector, pod) for pod in others)


@pytest.mark.parametrize("name", PROFILES)
def test_every_volume_refers_to_an_object_that_exists(name: str) -> None:
    objects = render_profile(name)
    config_maps = {o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"}
    claims = {o["metadata"]["name"] for o in objects if o["kind"] == "PersistentVolumeClaim"}
    claims |= {profile(name).get("home", {}).get("existingClaim")} - {None}
    for obj in objects:
        for what, spec in pod_specs(obj):
            volumes = {v["name"]: v for v in spec.get("volumes", [])}
            for volume in volumes.values():
                if "configMap" in volume:
                    assert volume["configMap"]["name"] in config_maps, what
                if "persistentVolumeClaim" in volume:
                    assert volume["persistentVolumeClaim"]["claimName"] in claims, what
            for container in spec["containers"]:
                for mount in container.get("volumeMounts", []):
                    assert mount["name"] in volumes, f"{what}: {mount['name']}"


@pytest.mark.parametrize("name", ["default", "pair"])
def test_spark_defaults_point_at_the_rendered_objects(name: str) -> None:
    objects = render_profile(name)
    conf = spark_defaults(objects)
    service = only(objects, "Service", "-driver")
    driver = only(objects, "StatefulSet", "-driver")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert driver["spec"]["serviceName"] == service["metadata"]["name"]
    # each driver pod's own address, pod and executor names: not shared by the replicas
    for key in ("spark.driver.host", "spark.kubernetes.driver.pod.name"):
        assert key not in conf
    for ordinal in range(driver["spec"]["replicas"]):
        pod = f"{driver['metadata']['name']}-{ordinal}"
        assert driver_pod_conf(objects, ordinal) == {
            "spark.driver.host": f"{pod}.{service['metadata']['name']}.{NAMESPACE}.svc",
            "spark.kubernetes.driver.pod.name": pod,
            "spark.kubernetes.executor.podNamePrefix": pod,
        }
    assert conf["spark.kubernetes.namespace"] == NAMESPACE
    ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    assert int(conf["spark.driver.port"]) == ports["driver-rpc"]
    assert int(conf["spark.driver.blockManager.port"]) == ports["blockmanager"]
    container = driver["spec"]["template"]["spec"]["containers"][0]
    assert conf["spark.kubernetes.container.image"] == container["image"]
    # the executor pod template is a file of the ConfigMap mounted at SPARK_CONF_DIR
    conf_dir = next(e["value"] for e in container["env"] if e["name"] == "SPARK_CONF_DIR")
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == conf_dir)
    volume = next(
        v for v in driver["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
    )
    spark = only(objects, "ConfigMap", "-spark")
    assert volume["configMap"]["name"] == spark["metadata"]["name"]
    template = conf["spark.kubernetes.executor.podTemplateFile"]
    assert template.startswith(conf_dir + "/")
    assert template.removeprefix(conf_dir + "/") in spark["data"]


@pytest.mark.parametrize("name", ["default", "operator"])
def test_spark_reports_to_the_metrics_service(name: str) -> None:
    objects = render_profile(name)
    service = only(objects, "Service", "-metrics")
    if name == "operator":
        conf = only(objects, "SparkApplication")["spec"]["sparkConf"]
    else:
        conf = spark_defaults(objects)
    sink = "spark.metrics.conf.*.sink.statsd"
    assert conf[f"{sink}.class"] == "org.apache.spark.metrics.sink.StatsdSink"
    assert conf[f"{sink}.host"] == f"{service['metadata']['name']}.{NAMESPACE}.svc"
    statsd = next(p for p in service["spec"]["ports"] if p["name"] == "statsd")
    assert (statsd["protocol"], statsd["port"]) == ("UDP", int(conf[f"{sink}.port"]))
    assert conf["spark.sql.streaming.metricsEnabled"] == "true"


def test_the_service_monitor_scrapes_the_metrics_port() -> None:
    objects = render_profile("production")
    monitor = only(objects, "ServiceMonitor")
    service = only(objects, "Service", "-metrics")
    assert selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert "ServiceMonitor" not in kinds(render_profile("default"))


# ---- settings every pod has -------------------------------------------------------------


@pytest.mark.parametrize("name", PROFILES)
def test_every_pod_runs_as_non_root_on_a_read_only_root(name: str) -> None:
    for obj in render_profile(name):
        for what, spec in pod_specs(obj):
            assert spec["securityContext"]["runAsNonRoot"] is True, what
            for container in spec["containers"]:
                context = container["securityContext"]
                assert context["readOnlyRootFilesystem"] is True, what
                assert context["allowPrivilegeEscalation"] is False, what
                assert context["capabilities"]["drop"] == ["ALL"], what


@pytest.mark.parametrize("name", PROFILES)
def test_every_chart_container_has_requests_and_a_memory_limit(name: str) -> None:
    for obj in render_profile(name):
        if obj["kind"] not in ("Deployment", "StatefulSet", "Job"):
            continue  # Spark sizes its own pods from spark.*.cores / memory
        for container in obj["spec"]["template"]["spec"]["containers"]:
            resources = container["resources"]
            assert resources["requests"]["cpu"] and resources["requests"]["memory"], container
            assert resources["limits"]["memory"], container["name"]


@pytest.mark.parametrize("name", ["default", "pair"])
def test_the_driver_probes_ask_the_pair(name: str) -> None:
    """Readiness: the lease's holder or a following standby; liveness: the primary's
    progress, a standby's heartbeat (files/job_health.py; tests/deploy/test_job_health.py)."""
    driver = only(render_profile(name), "StatefulSet", "-driver")
    container = driver["spec"]["template"]["spec"]["containers"][0]
    ready = container["readinessProbe"]["exec"]["command"]
    live = container["livenessProbe"]["exec"]["command"]
    assert ready[:3] == ["python", "/etc/xscl/scripts/job_health.py", "--readiness"]
    assert live[:2] == ["python", "/etc/xscl/scripts/job_health.py"]
    assert "--readiness" not in live and "--stall-seconds" in live
    # an exec of Python that may call the API server: more than the 1 s default
    assert container["readinessProbe"]["timeoutSeconds"] >= 10


def test_the_optional_parts_are_off_by_default_and_on_in_production() -> None:
    default, production = render_profile("default"), render_profile("production")
    assert "NetworkPolicy" not in kinds(default)
    assert [o["metadata"]["name"] for o in default if o["kind"] == "PodDisruptionBudget"] == [
        "demo-xscl-executors"
    ]
    assert kinds(production).count("NetworkPolicy") == 3
    assert kinds(production).count("PodDisruptionBudget") == 2
    assert "PersistentVolumeClaim" not in kinds(production)  # home.existingClaim


def test_the_home_claim_is_kept_on_uninstall_and_read_write_many() -> None:
    claim = only(render_profile("default"), "PersistentVolumeClaim")
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]


def test_names_leave_room_for_sparks_executor_pod_names() -> None:
    """Spark names executors PREFIX-exec-N (PREFIX: the driver pod's name), and a pod name
    has at most 63 characters: room for 99999 executors."""
    long = "a-release-name-that-is-much-longer-than-anyone-would-use"
    with_long = tuple(render({"fullnameOverride": long, "pair": {"enabled": True}}))
    for ordinal in (0, 1):
        prefix = driver_pod_conf(with_long, ordinal)["spark.kubernetes.executor.podNamePrefix"]
        assert len(f"{prefix}-exec-99999") <= 63 and re.fullmatch(r"[a-z0-9-]+[a-z0-9]", prefix)
    assert all(len(o["metadata"]["name"]) <= 63 for o in with_long)


# ---- the process pair (pair.enabled) ----------------------------------------------------


def test_the_pair_runs_two_drivers_on_one_home() -> None:
    objects = render_profile("pair")
    driver = only(objects, "StatefulSet", "-driver")
    assert driver["spec"]["replicas"] == 2
    assert "volumeClaimTemplates" not in driver["spec"]  # one claim for both, not one each
    claim = only(objects, "PersistentVolumeClaim")
    volumes = driver["spec"]["template"]["spec"]["volumes"]
    home = next(v for v in volumes if v["name"] == "home")
    assert home["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    container = driver["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    lease = f"{RELEASE}-xscl-lease"
    assert args[args.index("--lease") : args.index("--lease") + 6] == [
        "--lease", "kubernetes", "--lease-name", lease, "--lease-namespace", NAMESPACE,
    ]  # fmt: skip


def lease_rules(objects: tuple[Manifest, ...] | list[Manifest]) -> list[dict[str, Any]]:
    role = only(objects, "Role")
    return [r for r in role["rules"] if r["apiGroups"] == ["coordination.k8s.io"]]


#: The Lease calls of xscl/service/pair/k8s_lease.py (CoordinationV1Api) and their verbs.
LEASE_CALL_VERBS = {"read": "get", "create": "create", "replace": "update", "patch": "patch",
                    "delete": "delete", "list": "list"}  # fmt: skip


def test_the_lease_rules_grant_exactly_the_calls_of_the_lease_backend() -> None:
    source = (ROOT / "xscl" / "service" / "pair" / "k8s_lease.py").read_text()
    calls = set(re.findall(r"\.api\.(\w+)_namespaced_lease\(", source))
    assert calls and calls <= set(LEASE_CALL_VERBS)
    used = {LEASE_CALL_VERBS[call] for call in calls}
    rules = lease_rules(render_profile("pair"))
    assert all(r["resources"] == ["leases"] for r in rules)
    granted = [v for r in rules for v in r["verbs"]]
    assert sorted(granted) == sorted(used) == ["create", "get", "update"]
    lease = f"{RELEASE}-xscl-lease"
    for rule in rules:  # create cannot be restricted by name: the name is in the body
        assert rule.get("resourceNames") == (None if rule["verbs"] == ["create"] else [lease])


@pytest.mark.parametrize("name", ["default", "operator", "production"])
def test_without_the_pair_no_lease_rule(name: str) -> None:
    assert lease_rules(render_profile(name)) == []


def test_the_pair_has_a_driver_budget_of_one_and_spreads_over_nodes() -> None:
    objects = render_profile("pair")
    driver = only(objects, "StatefulSet", "-driver")
    labels = driver["spec"]["template"]["metadata"]["labels"]
    budget = only(objects, "PodDisruptionBudget", "-driver")
    assert budget["spec"]["minAvailable"] == 1
    assert selects(budget["spec"]["selector"]["matchLabels"], labels)
    spread = driver["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in spread  # one node still runs
    (term,) = spread["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert selects(term["podAffinityTerm"]["labelSelector"]["matchLabels"], labels)
    one = only(render_profile("default"), "StatefulSet")
    assert "affinity" not in one["spec"]["template"]["spec"]


def test_the_pairs_spread_keeps_the_drivers_own_affinity() -> None:
    nodes = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "workload", "operator": "In", "values": ["spark"]}]}]}  # fmt: skip
    values = {"pair": {"enabled": True}, "driver": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": nodes}}}}  # fmt: skip
    affinity = only(render(values), "StatefulSet")["spec"]["template"]["spec"]["affinity"]
    assert affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == nodes
    assert "podAntiAffinity" in affinity


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(
            {"pair": {"enabled": True}, "job": {"mode": "operator"}},
            "pair.enabled needs job.mode=spark",
            id="pair in mode operator",
        ),
        pytest.param(
            {"pair": {"enabled": True, "leaseSeconds": 2, "renewSeconds": 2}},
            "must be less than pair.leaseSeconds",
            id="renewal no shorter than the lease",
        ),
    ],
)
def test_the_chart_refuses(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmError, match=re.escape(message)):
        render(values)


def test_notes_tell_how_to_find_the_primary() -> None:
    notes = render_files(profile("pair"))["xscl/templates/NOTES.txt"]
    assert f"xscl status --home /var/lib/xscl --name xscl --lease kubernetes --lease-name " \
        f"{RELEASE}-xscl-lease --lease-namespace {NAMESPACE}" in notes  # fmt: skip
    assert "xscl status" not in render_files(profile("default"))["xscl/templates/NOTES.txt"]
