"""CEL's grammar, resolution and schemas (docs/cel.md sections 2-4), on the thesis's examples."""

from __future__ import annotations

from xscl.lang.cel.ast import (
    Attr,
    BoolConst,
    Compare,
    Const,
    Duration,
    Filter,
    Fold,
    Logic,
    Next,
    StreamRef,
    SubQuery,
    UnionExpr,
)
from xscl.lang.cel.parser import parse_file, parse_query
from xscl.lang.cel.validation import Program, validate

STOCK = "DECLARE STREAM Stock(Name, Price, Volume);\n"

# Thesis 4.2.2, Examples 11-18, with Example 19 as decided in docs/cel.md section 8 (1, 2).
THESIS = (
    STOCK
    + """
ex11: SELECT * FROM Stock PUBLISH MyStock;
ex12: SELECT Price AS IBMPrice FROM FILTER{Name= 'IBM' AND Price > 83}(Stock) PUBLISH IBMStock;
ex13: SELECT Price AS IBMPrice
      FROM FILTER{Name='IBM'} (SELECT * FROM FILTER{Price > 83}(Stock))
      PUBLISH IBMStock2;
ex14: SELECT IBMPrice, Price AS MSFTPrice FROM IBMStock NEXT{Name='MSFT'} (Stock);
ex15: SELECT IBMPrice, Price, Name FROM IBMStock NEXT{IBMPrice < Price} (Stock);
ex16: SELECT Name FROM (SELECT Price FROM Stock) NEXT{$1.Price = $2.Price} (Stock);
ex17: SELECT *
      FROM FILTER{cnt > 10} (
        (SELECT *, 1 AS cnt FROM
          FILTER{Volume > 10000}(Stock))
        FOLD{$2.Name = $.Name, $2.Price > $.Price,
          $.cnt+1 AS cnt}
        Stock);
ex18: SELECT Price_1 AS IBMPrice1, Price AS IBMPrice2
      FROM (FILTER{Name='IBM' AND Price > 83}(Stock))
            NEXT{$2.Price > $1.Price}
      (FILTER{Name='IBM'}(Stock));
ex19: SELECT Name, MaxPrice_1 AS MaxPrice, MinPrice_1 AS MinPrice, Price AS FinalPrice
      FROM
        FILTER{DUR ≥ 10min} (
          (SELECT Name, Price_1 AS MaxPrice, Price AS MinPrice
           FROM FILTER{Volume > 10000}(Stock)
             FOLD{$2.Name = $.Name, $2.Price < $.Price, }
           Stock))
        NEXT{$2.Name = $1.Name AND $2.Price > 1.05*$1.MinPrice}
        Stock
"""
)


def _program(text: str) -> Program:
    parsed = parse_file(text)
    assert parsed.ok, [str(e) for e in parsed.errors]
    program, errors = validate(parsed, text=text)
    assert not errors, [str(e) for e in errors]
    return program


def test_the_thesis_examples_are_valid_cel() -> None:
    program = _program(THESIS)
    assert [q.qid for q in program.queries] == [
        "ex11", "ex12", "ex13", "ex14", "ex15", "ex16", "ex17", "ex18", "ex19",
    ]  # fmt: skip
    assert program.published == {
        "MyStock": ("Name", "Price", "Volume"),
        "IBMStock": ("IBMPrice",),
        "IBMStock2": ("IBMPrice",),
    }


def test_example_17_schema_is_the_thesis_schema() -> None:
    text = STOCK + (
        "SELECT * FROM ((SELECT *, 1 AS cnt FROM Stock) "
        "FOLD{$2.Name = $.Name, $2.Price > $.Price, $.cnt+1 AS cnt} Stock) PUBLISH P"
    )
    assert _program(text).published["P"] == (
        "Name_1", "Price_1", "Volume_1", "cnt_1", "Name", "Price", "Volume", "cnt",
    )  # fmt: skip


def test_next_renames_every_first_input_attribute_on_a_collision() -> None:
    program = _program(
        STOCK + "FROM (SELECT Name, Price AS P FROM Stock) NEXT Stock PUBLISH A;"
        "FROM (SELECT Price AS P FROM Stock) NEXT Stock PUBLISH B"
    )
    assert program.published["A"] == ("Name_1", "P_1", "Name", "Price", "Volume")
    assert program.published["B"] == ("P", "Name", "Price", "Volume")


def test_references_are_resolved_to_their_input() -> None:
    program = _program(
        STOCK + "FROM (SELECT *, Price AS P FROM Stock) "
        "FOLD{$2.Name = $.Name AND P < $2.Price, $2.Price > $.Price} Stock"
    )
    fold = program.queries[0].source
    assert isinstance(fold, Fold) and isinstance(fold.pred, Logic)
    assert fold.pred.items == (
        Compare("=", Attr("Name", "2"), Attr("Name", "$")),
        Compare("<", Attr("P", "1"), Attr("Price", "2")),
    )
    filtered = _program(STOCK + "FROM FILTER{Price > 1}(Stock)").queries[0].source
    assert isinstance(filtered, Filter)
    assert filtered.pred == Compare(">", Attr("Price", "1"), Const(1))


def test_keywords_operators_and_spacing_do_not_change_the_ast() -> None:
    a = parse_query("FROM FILTER{Price >= 83 AND NOT Name <> 'IBM'}(Stock) NEXT S")
    b = parse_query("from filter { Price ≥ 83 and not Name != 'IBM' } ( Stock ) next{TRUE} S")
    assert a == b


def test_durations_are_microseconds_whatever_the_unit() -> None:
    def duration(text: str) -> int:
        source = parse_query(f"FROM FILTER{{DUR < {text}}}(S)").source
        assert isinstance(source, Filter) and isinstance(source.pred, Compare)
        assert isinstance(source.pred.right, Duration)
        return source.pred.right.micros

    assert duration("10min") == duration("10 m") == duration("600s") == 600_000_000
    assert duration("1.5h") == duration("90 MIN") == 5_400_000_000
    assert duration("2 days") == duration("48h")
    assert duration("1us") == 1 and duration("1.5ms") == 1_500
    # the thesis's words (issue 38): singular and plural, any case
    assert duration("52 weeks") == duration("364 days") == duration("52Weeks") == 364 * 86_400e6
    assert duration("1 Week") == duration("7 DAYS") == duration("1 day") * 7
    assert duration("3 HOURS") == duration("3 hour") == duration("180 minutes") == duration("3h")
    assert duration("1 Minute") == duration("60 seconds") == duration("60 Second") == duration("1m")
    assert duration("2 mins") == duration("120 secs") == duration("120 sec")
    assert duration("1 millisecond") == duration("1000 microseconds") == 1_000


def test_union_binds_loosest_and_next_associates_left() -> None:
    query = parse_query("FROM A NEXT B FOLD{TRUE, TRUE} C UNION D NEXT E")
    assert isinstance(query.source, UnionExpr)
    left, right = query.source.left, query.source.right
    assert isinstance(left, Fold) and isinstance(left.left, Next)
    assert left.left.left == StreamRef("A") and left.right == StreamRef("C")
    assert right == Next(StreamRef("D"), StreamRef("E"), BoolConst(True))


def test_sub_queries_and_grouping_parentheses() -> None:
    query = parse_query("SELECT a FROM (FROM (S) PUBLISH T) NEXT (A UNION B) PUBLISH U")
    assert isinstance(query.source, Next)
    assert isinstance(query.source.left, SubQuery)
    assert query.source.left.query.publish == "T"
    assert query.source.right == UnionExpr(StreamRef("A"), StreamRef("B"))
    assert query.publish == "U"


def test_fold_with_two_three_and_empty_aggregate_parts() -> None:
    two = parse_query("FROM S FOLD{TRUE, FALSE} S")
    empty = parse_query("FROM S FOLD{TRUE, FALSE, } S")
    assert two == empty
    three = parse_query("FROM S FOLD{TRUE, FALSE, $.n + 1 AS n, $2.p AS q} S")
    assert isinstance(three.source, Fold) and [a.name for a in three.source.aggs] == ["n", "q"]


def test_stream_names_may_hold_dots_and_hyphens() -> None:
    query = parse_query("FROM feeds.items-2 NEXT x--comment\n")
    assert query.source == Next(StreamRef("feeds.items-2"), StreamRef("x"), BoolConst(True))
    assert parse_file("FROM S y").errors[0].code == "CEL-P003"


def test_queries_are_validated_after_the_publishers_they_read() -> None:
    program = _program(
        "DECLARE STREAM S(a);\n"
        "r: SELECT a_1 FROM P NEXT S;\n"
        "p: FROM S NEXT{$1.a < $2.a} S PUBLISH P"
    )
    assert [q.qid for q in program.queries] == ["p", "r"]
    assert program.schema("P") == ("a_1", "a")


def test_a_catalog_gives_schemas_of_outside_streams() -> None:
    parsed = parse_file("SELECT author FROM FILTER{n > 2}(xposts)")
    program, errors = validate(parsed, catalog={"xposts": ("author", "n")})
    assert not errors and program.schema("xposts") == ("author", "n")


def test_several_queries_may_publish_one_stream_with_the_same_names() -> None:
    program = _program("DECLARE STREAM S(a, b);FROM S PUBLISH P; SELECT b, a FROM S PUBLISH P")
    assert program.published["P"] == ("a", "b")
