"""Which multi-pattern library the presearch index uses: instruction counts (callgrind).

    pip install pyahocorasick ahocorasick-rs google-re2 hyperscan   # the candidates
    python benchmarks/presearch_libraries/run.py            # 10k and 97k literals
    python benchmarks/presearch_libraries/run.py --sizes 10000

Instructions, not seconds: each measurement is a fresh process under
``valgrind --tool=callgrind`` (``apt-get install valgrind``), so the numbers do
not depend on the machine's load.  Haystacks: the casefolded titles (2,000)
and bodies (200: description, summary or content) of the items of
``../shared/data/feeds-kagi-smallweb`` and ``feeds-stream-youthopp``;
literals: the shuffled words (3+ letters) of the same text, so a body holds
hundreds of them (the dense case).  A scan returns the set of literals found.
Per library and size: ``build`` (the process builds the matcher and exits)
and ``build + scan`` (then scans every haystack); the table shows the build
(minus a process that only loads the corpus) and the scan per haystack.
A library that is not installed is skipped.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lxml import etree

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
LIBRARIES = ("pyahocorasick", "ahocorasick_rs", "hyperscan", "re2", "python")
TITLES = 2_000
BODIES = 200


def corpus(path: Path) -> None:
    """Write the literals and haystacks to ``path`` (JSON)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    titles: list[str] = []
    bodies: list[str] = []
    for feed in ("feeds-kagi-smallweb", "feeds-stream-youthopp"):
        for file in sorted((DATA / feed).glob("*.xml")):
            try:
                tree = etree.parse(str(file), parser)
            except etree.XMLSyntaxError:
                continue
            for item in tree.iter():
                if not isinstance(item.tag, str) or etree.QName(item).localname not in (
                    "item",
                    "entry",
                ):
                    continue
                for child in item:
                    if not isinstance(child.tag, str):
                        continue
                    local = etree.QName(child).localname
                    text = "".join(child.itertext()).casefold()
                    if local == "title":
                        titles.append(text)
                    elif local in ("description", "summary", "content", "encoded"):
                        bodies.append(text)
    words = sorted({w for t in titles + bodies for w in re.findall(r"\w{3,}", t)})
    import random

    random.Random(7).shuffle(words)
    path.write_text(json.dumps({"vocab": words, "titles": titles, "bodies": bodies}))


def child(library: str, size: int, kind: str, mode: str, corpus_path: str) -> None:
    """One measured process: build the matcher (and scan) with ``library``."""
    data = json.loads(Path(corpus_path).read_text())
    literals: list[str] = data["vocab"][:size]
    haystacks = data["titles"][:TITLES] if kind == "titles" else data["bodies"][:BODIES]
    scan: Any
    if library == "none":
        return
    if library == "pyahocorasick":
        import ahocorasick

        automaton = ahocorasick.Automaton()
        for i, literal in enumerate(literals):
            automaton.add_word(literal, i)
        automaton.make_automaton()

        def scan(h: str) -> set[int]:
            return {v for _, v in automaton.iter(h)}

    elif library == "ahocorasick_rs":
        import ahocorasick_rs

        rs = ahocorasick_rs.AhoCorasick(literals, matchkind=ahocorasick_rs.MatchKind.Standard)

        def scan(h: str) -> set[int]:
            return {m[0] for m in rs.find_matches_as_indexes(h, overlapping=True)}

    elif library == "re2":
        import re2

        options = re2.Options()
        options.max_mem = 1 << 30
        regex_set = re2.Set.SearchSet(options)
        for literal in literals:
            regex_set.Add(re2.escape(literal))
        regex_set.Compile()

        def scan(h: str) -> set[int]:
            return set(regex_set.Match(h) or ())

    elif library == "hyperscan":
        import hyperscan

        database = hyperscan.Database()
        database.compile(
            expressions=[literal.encode() for literal in literals],
            ids=list(range(len(literals))),
            elements=len(literals),
            flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(literals),
        )
        found: set[int] = set()

        def on_match(index: int, start: int, end: int, flags: int, context: Any) -> None:
            found.add(index)

        def scan(h: str) -> set[int]:
            found.clear()
            database.scan(h.encode(), match_event_handler=on_match)
            return set(found)

    else:  # pure Python: literals by their first three characters, then startswith
        by_gram: dict[str, list[tuple[str, int]]] = {}
        for i, literal in enumerate(literals):
            by_gram.setdefault(literal[:3], []).append((literal, i))

        def scan(h: str) -> set[int]:
            out = set()
            for k in range(len(h) - 2):
                for literal, i in by_gram.get(h[k : k + 3], ()):
                    if h.startswith(literal, k):
                        out.add(i)
            return out

    if mode == "scan":
        for haystack in haystacks:
            scan(haystack)


def instructions(args: list[str]) -> int:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             __file__, "--child", *args],
            capture_output=True, text=True, check=True,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(done.stderr[-2000:])
    return int(found.group(1))


def installed(library: str) -> bool:
    module = {"pyahocorasick": "ahocorasick"}.get(library, library)
    if library == "python":
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,97000")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        library, size, kind, mode, corpus_path = args.child
        child(library, int(size), kind, mode, corpus_path)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        corpus_path = str(Path(folder) / "corpus.json")
        corpus(Path(corpus_path))
        base = instructions(["none", "0", "titles", "build", corpus_path])
        print(f"baseline (start-up, corpus): {base / 1e6:,.0f}M instructions")
        print("| library | literals | build | per title | per body |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for size in (int(s) for s in args.sizes.split(",")):
            for library in LIBRARIES:
                if not installed(library):
                    print(f"| {library} | {size:,} | not installed | | |")
                    continue
                common = [library, str(size)]
                build = instructions([*common, "titles", "build", corpus_path])
                titles = instructions([*common, "titles", "scan", corpus_path])
                bodies = instructions([*common, "bodies", "scan", corpus_path])
                print(
                    f"| {library} | {size:,} | {(build - base) / 1e6:,.0f}M "
                    f"| {(titles - build) / TITLES / 1e3:,.1f}k "
                    f"| {(bodies - build) / BODIES / 1e3:,.1f}k |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
