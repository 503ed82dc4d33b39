"""``ShapeMemo``: memoised normal forms and template assignments equal fresh ones.

The memo is only an optimisation of registration; every answer must equal
``normalize`` / ``assign_template`` run on the query itself, for any id.
"""

from __future__ import annotations

import pickle
import random
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.workloads import NAMESPACES, query_texts
from xscl.lang.normal_form import normalize
from xscl.lang.parser import parse_query
from xscl.templates import ShapeMemo, assign_template, query_shape

JOIN = "S/item[./a->x1] JOIN {x1 = y1, 5s} T/item[./a->y1]"


@examples(60)
@given(
    texts=st.lists(query_texts(), min_size=1, max_size=4),
    max_shapes=st.sampled_from((1, 2, 100)),
    rng=st.randoms(use_true_random=False),
)
def test_memoised_answers_equal_fresh_ones_under_any_id(
    texts: list[str], max_shapes: int, rng: random.Random
) -> None:
    memo = ShapeMemo(max_shapes=max_shapes)
    for round_ in range(3):  # the same shapes again, under new ids, in another order
        rng.shuffle(texts)
        for position, text in enumerate(texts):
            qid = f"q{round_}_{position}"
            query = parse_query(text.split(":", 1)[1], qid=qid, namespaces=NAMESPACES)
            normal = memo.normal(query)
            assert normal == normalize(query)
            assert normal.query is query
            assert memo.assignment(normal) == assign_template(normalize(query))


def test_one_shape_is_normalised_once_and_assigned_once() -> None:
    memo = ShapeMemo()
    first = memo.normal(parse_query(JOIN, qid="A"))
    second = memo.normal(parse_query(JOIN, qid="B"))
    assert (memo.misses, memo.hits) == (1, 1)
    assert second.blocks is first.blocks and second.qid == "B"
    one, two = memo.assignment(first), memo.assignment(second)
    assert two.template is one.template and (one.qid, two.qid) == ("A", "B")


@pytest.mark.parametrize(
    "other",
    [
        f"SELECT x1 FROM {JOIN}",  # another projection
        f"{JOIN} PUBLISH P",  # a publishing query
        JOIN.replace("5s", "6s"),  # another window
        JOIN.replace("JOIN", "FOLLOWED BY"),
    ],
)
def test_shapes_that_differ_beyond_the_id_are_distinct(other: str) -> None:
    memo = ShapeMemo()
    memo.normal(parse_query(JOIN, qid="A"))
    query = parse_query(other, qid="B")
    assert memo.normal(query) == normalize(query)
    assert memo.misses == 2
    assert query_shape(query) != query_shape(parse_query(JOIN, qid="A"))


def test_shape_ignores_the_id_and_how_it_was_written() -> None:
    labelled = parse_query(f"Q7: {JOIN}")
    positional = parse_query(JOIN, qid="q1")
    assert labelled.explicit_id != positional.explicit_id
    assert query_shape(labelled) == query_shape(positional)
    assert query_shape(replace(labelled, namespaces=(("p", "urn:p"),))) != query_shape(labelled)


def test_the_memo_keeps_at_most_max_shapes() -> None:
    memo = ShapeMemo(max_shapes=2)
    windows = ("1s", "2s", "3s", "1s")
    for index, window in enumerate(windows):
        memo.normal(parse_query(JOIN.replace("5s", window), qid=f"q{index}"))
    # 1s was evicted by 3s (oldest first), so it is computed again
    assert (memo.misses, memo.hits) == (4, 0)
    assert len(memo._normal) == 2
    with pytest.raises(ValueError, match="max_shapes"):
        ShapeMemo(max_shapes=0)


def test_a_pickled_memo_is_empty_and_still_works() -> None:
    memo = ShapeMemo(max_shapes=7)
    memo.normal(parse_query(JOIN, qid="A"))
    copy = pickle.loads(pickle.dumps(memo))
    assert (copy.max_shapes, copy.hits, copy.misses, copy._normal) == (7, 0, 0, {})
    assert copy.normal(parse_query(JOIN, qid="B")) == normalize(parse_query(JOIN, qid="B"))
