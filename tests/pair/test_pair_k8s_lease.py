"""The Kubernetes lease (``xscl.service.pair.k8s_lease``) against a fake API server.

No API server runs here. ``FakeCoordinationApi`` stands in for
``kubernetes.client.CoordinationV1Api``: it keeps each Lease as the JSON the client
sends (``ApiClient.sanitize_for_serialization``), hands back the client's own
``V1Lease`` objects, bumps ``resourceVersion`` on every write and answers a stale one
with the client's ``ApiException`` 409, a missing object with 404, as the API server
does. What this cannot show (docs/architecture.md says so): RBAC, the in-cluster
configuration, the server's clock and real network failures.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

client = pytest.importorskip("kubernetes.client")

from kubernetes.client.rest import ApiException  # noqa: E402

from xscl.errors import LeaseLostError  # noqa: E402
from xscl.service.pair.k8s_lease import KubernetesLease  # noqa: E402
from xscl.service.pair.lease import Identity, LeaseWatch  # noqa: E402


class FakeCoordinationApi:
    """The Lease calls ``KubernetesLease`` makes, with the API server's concurrency rules."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.serializer = client.ApiClient()

    def _out(self, key: tuple[str, str]) -> Any:
        return client.V1Lease.from_dict(self.stored[key])

    def read_namespaced_lease(self, name: str, namespace: str) -> Any:
        if (namespace, name) not in self.stored:
            raise ApiException(status=404, reason="Not Found")
        return self._out((namespace, name))

    def _store(self, key: tuple[str, str], body: Any) -> Any:
        data = self.serializer.sanitize_for_serialization(body)
        spec = data["spec"]
        assert set(spec) <= {"holderIdentity", "leaseDurationSeconds", "leaseTransitions",
                             "acquireTime", "renewTime"}, spec
        dt.datetime.fromisoformat(spec["renewTime"])  # a MicroTime the server parses
        self.version += 1
        data["metadata"]["resourceVersion"] = str(self.version)
        self.stored[key] = data
        return self._out(key)

    def create_namespaced_lease(self, namespace: str, body: Any) -> Any:
        key = (namespace, body.metadata.name)
        if key in self.stored:
            raise ApiException(status=409, reason="AlreadyExists")
        return self._store(key, body)

    def replace_namespaced_lease(self, name: str, namespace: str, body: Any) -> Any:
        key = (namespace, name)
        if key not in self.stored:
            raise ApiException(status=404, reason="Not Found")
        if body.metadata.resource_version != self.stored[key]["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        return self._store(key, body)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _lease(api: FakeCoordinationApi, name: str) -> KubernetesLease:
    return KubernetesLease(api, "xscl-job", "ns", Identity(name, 7, f"{name}-pod"), 3)


def test_epochs_are_lease_transitions_taken_by_compare_and_set() -> None:
    api = FakeCoordinationApi()
    first, second, third = _lease(api, "a"), _lease(api, "b"), _lease(api, "c")
    taken = first.acquire(first.read())
    assert taken is not None and (taken.epoch, taken.holder, taken.host) == (1, "a", "a-pod")
    assert second.acquire(None) is None  # the object exists: 409
    clock = Clock()
    watch = LeaseWatch(clock)
    seen = second.read()
    assert not watch.lapsed(seen)
    clock.now += 3
    assert watch.lapsed(second.read())
    # two standbys take over from the same record: one wins, the other gets 409
    won, lost = second.acquire(seen), third.acquire(seen)
    assert won is not None and won.epoch == 2 and lost is None
    stored = api.stored[("ns", "xscl-job")]["spec"]
    assert (stored["holderIdentity"], stored["leaseTransitions"]) == ("b", 2)
    assert not first.holds(1) and second.holds(2)
    with pytest.raises(LeaseLostError, match="taken over by epoch 2"):
        first.renew(1)
    assert second.renew(2).epoch == 2


def test_a_renewal_that_loses_the_race_to_a_take_over_is_fenced() -> None:
    api = FakeCoordinationApi()
    old, new = _lease(api, "a"), _lease(api, "b")
    old.acquire(None)
    seen = new.read()
    original = api.replace_namespaced_lease

    def take_over_first(name: str, namespace: str, body: Any) -> Any:
        api.replace_namespaced_lease = original  # type: ignore[method-assign]
        new.acquire(seen)  # lands between the old holder's read and its write
        return original(name, namespace, body)

    api.replace_namespaced_lease = take_over_first  # type: ignore[method-assign]
    with pytest.raises(LeaseLostError):
        old.renew(1)
    assert new.holds(2)


def test_a_released_lease_lapses_at_once_and_keeps_its_epoch() -> None:
    api = FakeCoordinationApi()
    holder, standby = _lease(api, "a"), _lease(api, "b")
    holder.acquire(None)
    holder.release(1)
    record = standby.read()
    assert record is not None and record.released and record.epoch == 1
    assert LeaseWatch(Clock()).lapsed(record)
    taken = standby.acquire(record)
    assert taken is not None and taken.epoch == 2


def test_a_fresh_lease_starts_above_the_epochs_the_home_already_opened() -> None:
    """A job that ran under a file lease up to epoch 5 moves to a Kubernetes Lease."""
    api = FakeCoordinationApi()
    taken = _lease(api, "a").acquire(None, floor=5)
    assert taken is not None and taken.epoch == 6
    assert api.stored[("ns", "xscl-job")]["spec"]["leaseTransitions"] == 6
