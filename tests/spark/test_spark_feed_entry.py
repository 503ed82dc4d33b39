"""What a person reads in a result's entry: each kind of item gives a title and a link."""

from __future__ import annotations

from typing import Any

import pytest

from xscl.results.feed_entry import MAX_LABEL, entry_text

TS = "2026-11-02T08:00:00Z"


def _record(*elements: str, values: dict[str, str] | None = None) -> dict[str, Any]:
    docs = [{"stream": "S", "docid": f"d{i}", "ts": TS} for i in range(len(elements))]
    xml = f'<result query="Q">{"".join(elements)}</result>'
    return {"query": "Q", "result_id": "r", "docs": docs, "values": values or {}, "xml": xml}


@pytest.mark.parametrize(
    ("item", "title", "link"),
    [
        # RSS 2.0: link text; a guid is a permalink unless it says otherwise
        ("<item><title>A</title><link>https://a.example/1</link></item>", "A", "https://a.example/1"),
        ("<item><title>A</title><guid>https://a.example/g</guid></item>", "A", "https://a.example/g"),
        ('<item><title>A</title><guid isPermaLink="false">https://a.example/g</guid></item>',
         "A", "urn:xscl:doc:S:d0"),
        # Atom: the alternate link, not the others; an HTML title without its tags
        ('<entry xmlns="http://www.w3.org/2005/Atom"><title type="html">A &lt;b&gt;bold&lt;/b&gt;'
         '</title><link rel="edit" href="https://a.example/e"/>'
         '<link href="https://a.example/alt"/></entry>', "A bold", "https://a.example/alt"),
        # RSS 1.0: rdf:about
        ('<item xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
         'rdf:about="https://a.example/r"><title>R</title></item>', "R", "https://a.example/r"),
        # never a link a reader would run or resolve against the feed
        ("<item><title>J</title><link>javascript:alert(1)</link></item>", "J", "urn:xscl:doc:S:d0"),
        ("<item><title>R</title><link>/relative</link></item>", "R", "urn:xscl:doc:S:d0"),
        # no title: the stream and docid
        ("<book><author>x</author></book>", "S/d0", "urn:xscl:doc:S:d0"),
    ],
)  # fmt: skip
def test_an_item_gives_its_title_and_its_own_link(item: str, title: str, link: str) -> None:
    text = entry_text(_record(item))
    assert (text.title, text.link, text.related) == (title, link, ())
    if link.startswith("https://"):
        assert f'<a href="{link}">' in text.html
    else:
        assert "<a " not in text.html  # a urn: or a refused link is not clickable


def test_join_values_lead_the_title_and_the_body() -> None:
    record = _record("<i><title>A</title></i>", "<i><title>B</title></i>",
                     values={"x": "v", "y": "v", "z": ""})  # fmt: skip
    text = entry_text(record)
    assert text.title == "v: A → B"
    assert text.related == ("urn:xscl:doc:S:d1",)
    assert "<p>Joined on x, y = <b>v</b>; z = <b></b></p>" in text.html


def test_select_results_are_titled_by_the_selected_values() -> None:
    record = _record('<var name="t"><title>Hello &amp; bye</title></var>', '<var name="u">x</var>',
                     values={"u": "x"})  # fmt: skip
    record["docs"] = record["docs"][:1]
    text = entry_text(record)
    assert text.title == "x: Hello & bye"
    assert "<p>t: Hello &amp; bye</p>" in text.html


def test_unreadable_xml_and_long_titles_still_make_an_entry() -> None:
    text = entry_text(_record("<i>") | {"xml": "<result><i>"})
    assert (text.title, text.link) == ("S/d0", "urn:xscl:doc:S:d0")
    long = entry_text(_record(f"<i><title>{'w' * 500}</title></i>"))
    assert len(long.title) == MAX_LABEL and long.title.endswith("…")
    assert "w" * 500 in long.html  # the body keeps the whole title


def test_text_is_escaped_in_the_html() -> None:
    item = '<i><title>&lt;script&gt;"x"</title><link>https://a.example/?a=1&amp;b=2</link></i>'
    text = entry_text(_record(item))
    assert "<script>" not in text.html
    assert "&lt;script&gt;&quot;x&quot;" in text.html
    assert 'href="https://a.example/?a=1&amp;b=2"' in text.html


def test_select_results_name_their_documents_by_the_items_title_and_link() -> None:
    """Issue 36, defect 14: a SELECT result's XML copies no item; the engine's record
    knows each document's item, so the entry links it under its title, not stream/docid."""
    from xscl.engine.local import LocalEngine
    from xscl.lang.parser import parse_file
    from xscl.results.atom import EntryRenderer

    queries = parse_file("Q: SELECT t FROM S//item[./title->t];").queries
    item = "<item><title>Hello</title><link>https://a.example/1</link></item>"
    (record,) = LocalEngine(list(queries)).process_one("S", "d7", 0, item)
    assert record.items == (("Hello", "https://a.example/1"),)
    text = entry_text(record.to_json_dict(), record.items)
    assert text.link == "https://a.example/1"
    assert '<a href="https://a.example/1">Hello</a>' in text.html
    assert "S/d7" not in text.html
    entry = EntryRenderer(2**20).result_entry(record).data.decode()
    assert '<link href="https://a.example/1"/>' in entry
    # read back from its JSON line the record has no items: stream/docid, as before
    assert "S/d7" in entry_text(record.to_json_dict()).html


def test_select_results_of_items_without_title_or_link_fall_back() -> None:
    record = _record('<var name="t">x</var>')
    text = entry_text(record, [(None, None)])
    assert (text.link, "S/d0" in text.html) == ("urn:xscl:doc:S:d0", True)


def test_cel_entries_link_the_documents_urls_they_carry_and_no_urn() -> None:
    """Issue 36, defect 14: a CEL entry linked urn:xscl:cel:..., which no reader opens."""
    from xscl.results.atom import entry_of

    base = {"query": "c", "stream": None, "start": TS, "end": TS, "id": "f00"}
    plain = entry_of(base | {"attrs": {"author": "ann"}}).data.decode()
    assert "<id>urn:xscl:cel:f00</id>" in plain
    assert "<link" not in plain
    linked = entry_of(
        base | {"attrs": {"a": "https://a.example/1", "b": "https://b.example/2", "n": 1}}
    ).data.decode()
    assert '<link href="https://a.example/1"/>' in linked
    assert '<link rel="related" href="https://b.example/2"/>' in linked
    assert "urn:xscl:cel" not in linked.replace("<id>urn:xscl:cel:f00</id>", "")
