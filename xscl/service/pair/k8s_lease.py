"""The lease as a Kubernetes ``coordination.k8s.io/v1`` Lease (``--lease kubernetes``).

The Lease object's fields carry the record: ``holderIdentity`` (the holder id; empty
once released), ``leaseDurationSeconds``, ``renewTime``, and ``leaseTransitions`` as
the **epoch**. Every write is a ``replace`` with the ``resourceVersion`` that was read
(the API server's compare-and-set: a concurrent writer gets 409 Conflict), so of two
standbys taking over from the same record exactly one gets the next epoch, and a
renewal or release after a take-over fails. The pid and host ``xscl status`` shows are
annotations.

Kubernetes' own leader-election clients warn that a lease alone does not fence: here
the epoch names the folders every write goes to and the sink checks it before each
commit (``epochs``, ``job.sink``), as for the file lease.

Needs the ``kubernetes`` package (``pip install 'xscl[k8s]'``) and, in a pod, a
service account allowed to get, create and update Leases in its namespace.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from xscl.errors import LeaseLostError, LeaseStoreError
from xscl.service.pair.lease import DEFAULT_LEASE_SECONDS, Identity, LeaseRecord, lost_message

PID = "xscl.io/pid"
HOST = "xscl.io/host"
#: Where a pod finds its own namespace.
NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
#: HTTP statuses the API server answers for a missing object and a stale write.
NOT_FOUND, CONFLICT = 404, 409


class KubernetesLease:
    """``Lease`` on a Lease object through ``kubernetes.client.CoordinationV1Api``."""

    #: a look is an API request: two a second per standby
    poll_seconds = 0.5

    def __init__(
        self,
        api: Any,
        name: str,
        namespace: str,
        identity: Identity | None = None,
        duration: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self.api = api
        self.name = name
        self.namespace = namespace
        self.identity = identity or Identity.of_this_process()
        self.duration = duration

    @classmethod
    def in_cluster(
        cls, name: str, namespace: str | None, duration: float = DEFAULT_LEASE_SECONDS
    ) -> KubernetesLease:
        """The lease seen from this pod (its service account), else from ``~/.kube/config``."""
        try:
            from kubernetes import client, config
        except ImportError as exc:
            raise LeaseStoreError(
                "--lease kubernetes needs the kubernetes package: pip install 'xscl[k8s]'"
            ) from exc
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except config.ConfigException:
            try:
                config.load_kube_config()  # type: ignore[no-untyped-call]
            except (config.ConfigException, OSError) as exc:
                raise LeaseStoreError(f"no Kubernetes configuration: {exc}") from exc
        if namespace is None:
            try:
                namespace = NAMESPACE_FILE.read_text(encoding="utf-8").strip()
            except OSError:
                namespace = "default"
        return cls(client.CoordinationV1Api(), name, namespace, duration=duration)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> KubernetesLease:
        return cls.in_cluster(spec["name"], spec["namespace"], float(spec["duration"]))

    def spec(self) -> dict[str, Any]:
        return {
            "kind": "kubernetes",
            "name": self.name,
            "namespace": self.namespace,
            "duration": self.duration,
        }

    # ----------------------------------------------------------------- reading
    def _get(self) -> Any:
        try:
            return self.api.read_namespaced_lease(self.name, self.namespace)
        except Exception as exc:
            if _status(exc) == NOT_FOUND:
                return None
            raise LeaseStoreError(f"cannot read Lease {self._where()}: {exc}") from exc

    def read(self) -> LeaseRecord | None:
        lease = self._get()
        return None if lease is None else _record(lease)

    def holds(self, epoch: int) -> bool:
        record = self.read()
        return record is not None and record.epoch == epoch and not record.released

    # ----------------------------------------------------------------- writing
    def acquire(self, observed: LeaseRecord | None, floor: int = 0) -> LeaseRecord | None:
        epoch = max(0 if observed is None else observed.epoch, floor) + 1
        body = self._body(epoch, observed.token if observed is not None else None)
        try:
            if observed is None:
                stored = self.api.create_namespaced_lease(self.namespace, body)
            else:
                stored = self.api.replace_namespaced_lease(self.name, self.namespace, body)
        except Exception as exc:
            if _status(exc) in (CONFLICT, NOT_FOUND):
                return None  # another instance wrote first
            raise LeaseStoreError(f"cannot take Lease {self._where()}: {exc}") from exc
        return _record(stored)

    def renew(self, epoch: int) -> LeaseRecord:
        current = self.read()
        if current is None or current.epoch != epoch or current.holder != self.identity.holder:
            raise LeaseLostError(lost_message(epoch, current))
        try:
            stored = self.api.replace_namespaced_lease(
                self.name, self.namespace, self._body(epoch, current.token)
            )
        except Exception as exc:
            if _status(exc) == CONFLICT:  # written since we read it: a take-over
                raise LeaseLostError(lost_message(epoch, self.read())) from exc
            raise LeaseStoreError(f"cannot renew Lease {self._where()}: {exc}") from exc
        return _record(stored)

    def release(self, epoch: int) -> None:
        current = self.read()
        if current is None or current.epoch != epoch or current.holder != self.identity.holder:
            return
        body = self._body(epoch, current.token, holder="")
        try:
            self.api.replace_namespaced_lease(self.name, self.namespace, body)
        except Exception as exc:
            if _status(exc) not in (CONFLICT, NOT_FOUND):
                raise LeaseStoreError(f"cannot release Lease {self._where()}: {exc}") from exc

    def _body(self, epoch: int, version: str | None, holder: str | None = None) -> Any:
        from kubernetes import client

        now = dt.datetime.now(dt.timezone.utc)
        return client.V1Lease(
            metadata=client.V1ObjectMeta(
                name=self.name,
                namespace=self.namespace,
                resource_version=version,
                annotations={PID: str(self.identity.pid), HOST: self.identity.host},
            ),
            spec=client.V1LeaseSpec(
                holder_identity=self.identity.holder if holder is None else holder,
                lease_duration_seconds=max(1, round(self.duration)),
                lease_transitions=epoch,
                acquire_time=now,
                renew_time=now,
            ),
        )

    def _where(self) -> str:
        return f"{self.namespace}/{self.name}"


def _status(exc: Exception) -> int | None:
    """The HTTP status of a ``kubernetes.client.ApiException`` (None: another error)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


def _record(lease: Any) -> LeaseRecord:
    """A Lease object as a ``LeaseRecord`` (``token``: its resourceVersion)."""
    spec, meta = lease.spec, lease.metadata
    annotations = meta.annotations or {}
    renewed = spec.renew_time or spec.acquire_time
    holder = spec.holder_identity or ""
    return LeaseRecord(
        holder=holder,
        pid=int(annotations.get(PID, 0)),
        host=str(annotations.get(HOST, "")),
        epoch=int(spec.lease_transitions or 0),
        renewed=renewed.timestamp() if renewed is not None else 0.0,
        duration=float(spec.lease_duration_seconds or DEFAULT_LEASE_SECONDS),
        released=holder == "",
        token=str(meta.resource_version or ""),
    )
