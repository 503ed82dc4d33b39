"""Rebuild ``documents.jsonl`` (raw-form items, spec section 4 envelopes) from ``feeds/``.

Run from this folder: ``python build_documents.py``. ``xscl poll`` produces the
same raw items into a spool; this script keeps the example self-contained.
"""

from __future__ import annotations

import json
from email.utils import parsedate_to_datetime

from lxml import etree

ATOM = "{http://www.w3.org/2005/Atom}"


def main() -> None:
    docs = []
    for item in etree.parse("feeds/vendor.rss").getroot().iter("item"):
        stamp = parsedate_to_datetime(item.findtext("pubDate") or "")
        docs.append({
            "stream": "vendor",
            "docid": item.findtext("guid"),
            "ts": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "xml": etree.tostring(item, encoding="unicode").strip(),
        })
    for entry in etree.parse("feeds/news.atom").getroot().iter(ATOM + "entry"):
        docs.append({
            "stream": "news",
            "docid": entry.findtext(ATOM + "id"),
            "ts": entry.findtext(ATOM + "published"),
            "xml": etree.tostring(entry, encoding="unicode").strip(),
        })
    docs.sort(key=lambda d: str(d["ts"]))
    with open("documents.jsonl", "w", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
