"""How long a stored document can still be joined by a document arriving later.

Where it runs: where documents are stored, once per document: the job's value groups
(``groups.value_group``) and the in-process engine (``local``); ``partner_reaches``
once per batch, or per registry change.

A group keeps a document while a later-arriving document can still join it. A later
document ``n`` is not late, so ``n.ts >= newest - lateness`` (``newest``: what the
spool had delivered before it, only growing). A document stored in block ``r`` of a
template is joined by ``n`` within the template's window, so it is needed while
``ts >= newest - lateness - window``: the group's reach, the widest window.

But in a template of FOLLOWED BY only, every block before ``r`` is strictly earlier
(spec 3.2, ``plans.block_sides``): a document that can fill only the last block of such
templates is the newest of every match it is in, so a later arrival joins it only if
that arrival's own timestamp is earlier, ``newest - lateness <= n.ts < ts``. Its reach
is 0: it is dropped as soon as the allowed lateness has passed it, however wide the
window (Babu ch. 6, k-Mon: an ordered-arrival bound lets a join drop state early).
``vendor/item FOLLOWED BY {cve = term, 3d} news/entry`` keeps a news entry for the
lateness, not for three days.

>>> from xscl.engine.plans import RolePlan, role_steps
>>> from xscl.templates.canonical import Template
>>> fb = Template(("FOLLOWED BY",), (0, 1), (-1, -1), (True, True), ((0, 1),))
>>> plans = [RolePlan(fb, r, role_steps(fb, r)) for r in range(2)]
>>> plans[0].max_window = plans[1].max_window = 3_600
>>> plans[0].var_counts[0].update([7]); plans[1].var_counts[0].update([8])
>>> reaches = partner_reaches(plans)
>>> reaches
{7: 3600, 8: 0}
>>> partner_reach(reaches, [8]), partner_reach(reaches, [7, 8]), partner_reach(reaches, [])
(0, 3600, 0)
"""

from __future__ import annotations

from collections.abc import Iterable

from xscl.engine.plans import RolePlan


def partner_reaches(plans: Iterable[RolePlan]) -> dict[int, int | None]:
    """Var id of a block's top node -> the reach of a document binding it (None: INF)."""
    out: dict[int, int | None] = {}
    for plan in plans:
        last = all(side < 0 for b, side in enumerate(plan.sides) if b != plan.role)
        reach = 0 if last else plan.max_window
        for var in plan.var_counts[0]:
            known = out.get(var, 0)
            out[var] = None if known is None or reach is None else max(known, reach)
    return out


def partner_reach(reaches: dict[int, int | None], var_ids: Iterable[int]) -> int | None:
    """The reach of a document binding ``var_ids`` (the widest of its blocks'; 0 when
    it binds no block's top node)."""
    out = 0
    for var in var_ids:
        if var in reaches:
            reach = reaches[var]
            if reach is None:
                return None
            out = max(out, reach)
    return out
