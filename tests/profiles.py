"""Test budgets of the suite: the ``ci`` profile (the default) and ``deep``.

``ci`` is what every run uses unless told otherwise: each property test runs the
examples it asks for with ``examples(n)``, sized so the whole suite stays within
its time budget while still catching the deliberate bugs its differential tests
were checked against. ``deep`` multiplies every
such budget by ``DEEP_FACTOR``, for a local run before a risky change::

    pytest --hypothesis-profile=deep tests/engine_local tests/xpath

The peer suites (``tests/peers``) sample their cases with a fixed seed under ``ci`` and
run every case under ``deep`` (``sample``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from hypothesis import HealthCheck, settings

#: ``max_examples`` of the ``ci`` profile: a test asking for ``examples(n)`` gets n.
CI_EXAMPLES = 100
DEEP_FACTOR = 20


def register() -> None:
    """Register ``ci`` and ``deep`` and load ``ci`` (``--hypothesis-profile`` overrides)."""
    settings.register_profile(
        "ci",
        max_examples=CI_EXAMPLES,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    settings.register_profile(
        "deep", settings.get_profile("ci"), max_examples=CI_EXAMPLES * DEEP_FACTOR
    )
    settings.load_profile("ci")


def examples(ci: int, *, suppress: Sequence[HealthCheck] = ()) -> settings:
    """Settings running ``ci`` examples under ``ci``, proportionally more under ``deep``
    (``suppress``: health checks to skip besides the profile's)."""
    current = settings.default
    return settings(
        max_examples=max(1, ci * current.max_examples // CI_EXAMPLES),
        suppress_health_check=[*current.suppress_health_check, *suppress],
    )


_T = TypeVar("_T")


def deep() -> bool:
    """Whether the ``deep`` profile (or another larger than ``ci``) is loaded."""
    return settings.default.max_examples > CI_EXAMPLES


def sample(items: Sequence[_T], ci: int, *, seed: int = 2009) -> list[_T]:
    """``ci`` of ``items`` drawn with a fixed seed (in their order) under ``ci``; all of
    them under ``deep``."""
    if deep() or len(items) <= ci:
        return list(items)
    chosen = sorted(random.Random(seed).sample(range(len(items)), ci))
    return [items[i] for i in chosen]
