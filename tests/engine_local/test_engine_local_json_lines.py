"""``JsonLineEncoder`` writes exactly what ``json.dumps`` of the record would.

Every result of random workloads (``SELECT *`` with shared pieces and variable
lists), documents whose ids and texts need JSON escapes (quotes, backslashes,
control characters, line separators, non-ASCII), with the piece cache large,
tiny (starting over all the time) and off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.workloads import Workload, workloads
from xscl.connectors.document import Document
from xscl.engine import LocalEngine
from xscl.engine.json_lines import MIN_CACHED_CHARS, JsonLineEncoder
from xscl.lang.parser import parse_queries

ODD = ['q"uote', "back\\slash", "é-ünïcode", "tab\there", "ctl\x01", "line\u2028sep"]


def _check(text: str, docs: Sequence[Document], cache_bytes: int) -> int:
    """Compare every record's line; how many records had a piece long enough to cache."""
    encoder = JsonLineEncoder(cache_bytes=cache_bytes)
    records = LocalEngine(parse_queries(text)).process(docs)
    for record in records:
        assert encoder.encode(record) == (record.to_json_line() + "\n").encode("utf-8")
    return sum(
        1 for r in records if any(len(p) >= MIN_CACHED_CHARS for p in r.xml_parts or ())
    )


@examples(60)
@given(workload=workloads(), cache_bytes=st.sampled_from([0, 700, 1 << 26]))
def test_lines_equal_json_dumps(workload: Workload, cache_bytes: int) -> None:
    _check(workload.text, workload.docs, cache_bytes)


@pytest.mark.parametrize("cache_bytes", [0, 700, 1 << 26])
def test_escapes_in_ids_and_large_shared_pieces(cache_bytes: int) -> None:
    text = "Q: S//item->i[./a->x] JOIN {x=y, INF} S//item->j[./a->y]"
    odd = [o.replace("\x01", "") for o in ODD]  # not allowed in XML text
    filler = "".join(f"<p n='{n}'>{odd[n % len(odd)]} \\ \"</p>" for n in range(60))
    docs = [
        Document("S", f"{ODD[n % len(ODD)]}{n}", n * 1_000_000,
            f"<item><a>v</a><b>{n}\u2028é\t\"q\"</b>{filler}</item>")
        for n in range(6)
    ]  # fmt: skip
    docs += [replace(d, docid=d.docid + "-again", ts_micros=d.ts_micros + 1) for d in docs]
    assert _check(text, docs, cache_bytes) > 20
