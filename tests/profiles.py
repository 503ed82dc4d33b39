"""Hypothesis budgets of the suite: the ``ci`` profile (the default) and ``deep``.

``ci`` is what every run uses unless told otherwise: each property test runs the
examples it asks for with ``examples(n)``, sized so the whole suite stays within
its time budget while still catching the deliberate bugs its differential tests
were checked against. ``deep`` multiplies every
such budget by ``DEEP_FACTOR``, for a local run before a risky change::

    pytest --hypothesis-profile=deep tests/engine_local tests/xpath
"""

from __future__ import annotations

from collections.abc import Sequence

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
