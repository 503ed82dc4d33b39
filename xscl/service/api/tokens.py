"""The API's clients: a token per client, of which only a hash is kept.

``HOME/api/tokens.json`` (mode 0600) maps each client's name to the SHA-256 of its
token and whether it is an admin. ``create`` returns the token once; the store never
holds it. A token is 32 random bytes (``secrets``), so a plain hash is enough: there
is nothing to guess that a slow hash would protect.

Where it runs: ``xscl api token create`` and the API's requests (``lookup``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from xscl.connectors.durable import write_atomically
from xscl.errors import ApiRequestError

#: A client's name: it is recorded as the owner of its subscriptions.
CLIENT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_PREFIX = "xscl_"


@dataclass(frozen=True)
class Client:
    """Who made a request."""

    name: str
    admin: bool


def tokens_path(home: str | Path) -> Path:
    return Path(home) / "api" / "tokens.json"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TokenStore:
    """The clients of one home's API; re-read when the file changes.

    ``path``: another tokens file (``xscl api --tokens``, e.g. a Kubernetes Secret
    mounted read-only), of the same form.
    """

    def __init__(self, home: str | Path, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else tokens_path(home)
        self._stamp: tuple[int, int] | None = None
        self._by_digest: dict[str, Client] = {}

    def _entries(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):  # none yet (creating one says why not)
            return {}
        except (OSError, ValueError) as exc:
            raise ApiRequestError.from_code("XSCL-A008", f"cannot read {self.path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ApiRequestError.from_code("XSCL-A008", f"{self.path} is not a JSON object")
        return data

    def create(self, name: str, *, admin: bool = False) -> str:
        """A new token for client ``name`` (refused when the name is taken or invalid)."""
        if not CLIENT_NAME.fullmatch(name):
            raise ApiRequestError.from_code(
                "XSCL-A006", f"client name {name!r} must match {CLIENT_NAME.pattern}"
            )
        entries = self._entries()
        if name in entries:
            raise ApiRequestError.from_code(
                "XSCL-A006", f"client {name!r} already has a token (see {self.path})"
            )
        token = _PREFIX + secrets.token_urlsafe(32)
        entries[name] = {
            "sha256": _digest(token),
            "admin": admin,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        body = json.dumps(entries, indent=1, sort_keys=True).encode("utf-8")
        try:
            write_atomically(self.path, body)
            os.chmod(self.path, 0o600)
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise ApiRequestError.from_code(
                "XSCL-A008",
                f"cannot write the tokens file {self.path}: {why}; give --home (or --tokens) "
                "a place you can write to",
            ) from exc
        return token

    def lookup(self, token: str | None) -> Client:
        """The client of ``token``; ``XSCL-A001`` when there is none."""
        if not token or not token.startswith(_PREFIX) or len(token) > 200:
            raise ApiRequestError.from_code("XSCL-A001")
        self._reload()
        digest = _digest(token)
        for known, client in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return client
        raise ApiRequestError.from_code("XSCL-A001")

    def _reload(self) -> None:
        try:
            stat = self.path.stat()
            stamp = (stat.st_mtime_ns, stat.st_ino)
        except FileNotFoundError:
            stamp = (0, 0)
        if stamp == self._stamp:
            return
        self._by_digest = {
            str(entry["sha256"]): Client(name, bool(entry.get("admin", False)))
            for name, entry in self._entries().items()
            if isinstance(entry, dict) and "sha256" in entry
        }
        self._stamp = stamp
