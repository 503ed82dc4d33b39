"""The checked-in lists of known differences from the peer suites (``known/*.txt``).

A list is plain text: ``## REASON`` starts a group, every other non-blank line that is
not a ``#`` comment names one case (a QT3 test case, a fixture file, ``file field``...)
that differs from the peer's expected value for that reason. Each difference has a
reason; a case is listed once.
"""

from __future__ import annotations

from pathlib import Path

KNOWN = Path(__file__).resolve().parent / "known"


def read_known(name: str) -> dict[str, str]:
    """case -> reason, from ``known/NAME``."""
    reasons: dict[str, str] = {}
    reason: str | None = None
    for number, raw in enumerate((KNOWN / name).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("## "):
            reason = line[3:].strip()
        elif line and not line.startswith("#"):
            assert reason, f"{name}:{number}: {line!r} comes before any '## reason'"
            assert line not in reasons, f"{name}:{number}: {line!r} is listed twice"
            reasons[line] = reason
    return reasons


def compare(
    differing: set[str], ran: set[str], known: dict[str, str]
) -> tuple[list[str], list[str]]:
    """(new differences, listed ones that no longer differ) among the cases that ran."""
    new = sorted(differing - set(known))
    stale = sorted((set(known) & ran) - differing)
    return new, stale
