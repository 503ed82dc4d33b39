"""Subscriptions at scale: the presearch index on and off, by kind and count (issue 34).

    python benchmarks/subscriptions/run.py            # 1k, 10k, 100k, 1M subscriptions
    python benchmarks/subscriptions/run.py --quick    # stops at 100k

Documents: the items and entries of ``../shared/data/feeds-kagi-smallweb`` and
``feeds-stream-youthopp``, each reduced to ``<item>`` with ``title``, ``link``,
``category``* and ``description`` (the text of the description, summary or
content).  Keywords are words of those titles and descriptions: a quarter
drawn from the most frequent 2,000 (they match), the rest the whole
vocabulary shuffled, each word once, then pairs of words (most match
nothing), so nearly every subscription is a distinct predicate.  One
subscription is one query of a kind:

* ``keyword``  ``F//item->x[contains(title, 'w')]``
* ``prefix``   ``F//item->x[starts-with(lower-case(title), 'w')]``
* ``regex``    ``F//item->x[matches(description, 'w1|w2', 'i')]``
* ``equality`` ``F//item->x[./category = 'w']`` (the literal index, not a function)
* ``range``    ``F//item->x[./title >= 'w']`` (the literal index; ``w`` in lower
  case, so mostly titles that start in lower case pass)
* ``mixed``    a fifth each of keyword, regex and equality, and two fifths of
  two-block joins ``F//item->x[contains(title,'w')]/category->c JOIN {c = d, 1d}
  F//item->y[contains(description,'v')]/category->d`` (in half of those a
  second filter on the left item, ``[./category = 'w']``: A-Greedy orders the
  two)
* ``every``    (``serve_scale.py`` only) a tenth ``range``, the rest ``mixed``

Per kind and count, in a fresh process (so its memory is its own): the
registration (parse and ``LocalEngine(queries)``), CPU and wall seconds, and
the growth of the resident set per subscription; Stage 1 items/s
(``Stage1.evaluate_rows``) and local-engine items/s (``LocalEngine.process``)
with the presearch on and off (the same queries registered in a second
engine, ``LocalEngine(..., presearch=False)``), items/s in CPU time, each
with its CPU and wall seconds; and at 1k the reference (``xscl.reference``,
each query on its own).  The runs with the index off stop after ``--budget``
CPU seconds (the items they covered are shown).

A second table is the filter-order drift workload (A-Greedy,
``xscl.xpath.filter_order``): one definition with three filters over a
stream whose selectivities change half-way; each static order and the
adaptive one, in CPU seconds (best of ``--rounds``, interleaved).

The machine may be shared: every rate is in CPU time, wall time is shown
beside it, and the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from lxml import etree

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))  # after PYTHONPATH: a checkout given there is the one measured

from benchmarks.rss_memory import current_rss  # noqa: E402
from xscl import reference  # noqa: E402
from xscl.connectors.document import Document  # noqa: E402
from xscl.engine import LocalEngine  # noqa: E402
from xscl.lang.parser import parse_queries  # noqa: E402
from xscl.xpath import Stage1  # noqa: E402

DATA = ROOT / ".." / "shared" / "data"
FEEDS = ("feeds-kagi-smallweb", "feeds-stream-youthopp")
KINDS = ("keyword", "prefix", "regex", "equality", "range", "mixed")
SIZES = (1_000, 10_000, 100_000, 1_000_000)
#: items evaluated per measurement with the index on (the off runs stop at --budget)
ITEMS = 2_000
WARM_UP = 200
#: items in each half of the drift workload
PHASE = 1_500


# ------------------------------------------------------------------ documents
def _local(element: etree._Element) -> str:
    return etree.QName(element).localname if isinstance(element.tag, str) else ""


def _text(element: etree._Element | None) -> str:
    return "" if element is None else "".join(element.itertext()).strip()


def load_items() -> list[str]:
    """Every item/entry as ``<item><title/><link/><category/>*<description/></item>``."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    items: list[str] = []
    for feed in FEEDS:
        for path in sorted((DATA / feed).glob("*.xml")):
            try:
                root = etree.parse(str(path), parser).getroot()
            except etree.XMLSyntaxError:
                continue
            for raw in root.iter():
                if _local(raw) not in ("item", "entry"):
                    continue
                children = {}
                categories = []
                for child in raw:
                    name = _local(child)
                    if name == "category":
                        categories.append(child.get("term") or _text(child))
                    elif name not in children:
                        children[name] = child
                link = children.get("link")
                href = "" if link is None else (link.get("href") or _text(link))
                body = next(
                    (children[n] for n in ("description", "summary", "content", "encoded")
                     if n in children), None)
                item = etree.Element("item")
                etree.SubElement(item, "title").text = _text(children.get("title"))
                etree.SubElement(item, "link").text = href
                for category in categories:
                    etree.SubElement(item, "category").text = category
                etree.SubElement(item, "description").text = _text(body)[:4000]
                items.append(etree.tostring(item, encoding="unicode"))
    return items


def vocabulary(items: Sequence[str]) -> tuple[list[str], list[str]]:
    """(frequent words, every word) of the items' titles and descriptions, 4+ letters."""
    counts: Counter[str] = Counter()
    for xml in items:
        counts.update(w.lower() for w in re.findall(r"[^\W\d_]{4,}", xml))
    for tag in ("item", "title", "link", "category", "description"):
        counts.pop(tag, None)
    frequent = [w for w, _ in counts.most_common(2_000)]
    return frequent, sorted(counts)


# ----------------------------------------------------------------- workloads
def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def keywords(frequent: list[str], words: list[str], rng: random.Random) -> Iterator[str]:
    """A frequent word one time in four, else the next word of the shuffled vocabulary
    (distinct), then pairs of them once it is used up (distinct, rarely matching)."""
    pool = list(words)
    rng.shuffle(pool)
    fresh = iter(itertools.chain(pool, (f"{a} {b}" for a in pool for b in pool if a != b)))
    while True:
        yield rng.choice(frequent) if rng.random() < 0.25 else next(fresh)


def queries_text(kind: str, count: int, items: Sequence[str], seed: int = 34) -> str:
    frequent, words = vocabulary(items)
    rng = random.Random(seed)
    drawn = keywords(frequent, words, rng)

    def word() -> str:
        return next(drawn)

    def one(n: int, kind: str) -> str:
        if kind == "keyword":
            return f"F//item->x[contains(title, {_quoted(word())})]"
        if kind == "prefix":
            return f"F//item->x[starts-with(lower-case(title), {_quoted(word())})]"
        if kind == "regex":
            return f"F//item->x[matches(description, {_quoted(word() + '|' + word())}, 'i')]"
        if kind == "equality":
            return f"F//item->x[./category = {_quoted(word())}]"
        if kind == "range":  # lower case: above most titles, which start upper case
            return f"F//item->x[./title >= {_quoted(word())}]"
        if kind == "every":  # serve_scale.py: a tenth range, the rest as in mixed
            return one(n, "range") if n % 10 == 9 else one(n - n // 10, "mixed")
        if n % 5 < 3:
            return one(n, ("keyword", "regex", "equality")[n % 5])
        extra = f"[./category = {_quoted(word())}]" if n % 5 == 4 else ""
        return (
            f"F//item->x[contains(title, {_quoted(word())})]{extra}/category->c "
            f"JOIN {{c = d, 1d}} F//item->y[contains(description, {_quoted(word())})]"
            "/category->d"
        )

    return "".join(f"s{n}: {one(n, kind)};\n" for n in range(count))


def documents(items: Sequence[str], count: int, offset: int = 0) -> list[Document]:
    base = 1_700_000_000_000_000
    return [
        Document("F", f"i{offset + i}", base + (offset + i) * 60_000_000, items[i % len(items)])
        for i in range(count)
    ]


# -------------------------------------------------------------------- a cell
def _clock() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    cpu, wall = _clock()
    return cpu - start[0], wall - start[1]


def _rate(
    run: Callable[[Document], Any], docs: Sequence[Document], budget: float
) -> dict[str, Any]:
    """Items/s (CPU) of ``run`` over ``docs``, stopping after ``budget`` CPU seconds."""
    start = _clock()
    done = 0
    for doc in docs:
        run(doc)
        done += 1
        if budget and time.process_time() - start[0] > budget:
            break
    cpu, wall = _since(start)
    return {"items": done, "cpu": cpu, "wall": wall, "rate": done / cpu if cpu else 0.0}


def stage1_run(stage: Stage1) -> Callable[[Document], Any]:
    def run(doc: Document) -> Any:
        try:
            return stage.evaluate_rows(doc.stream, doc.docid, doc.ts_micros, doc.xml)
        except Exception:  # a rejected item (too large...): counted by Stage 1
            return None

    return run


def measure_cell(kind: str, count: int, budget: float) -> dict[str, Any]:
    items = load_items()
    text = queries_text(kind, count, items)
    docs = documents(items, ITEMS)
    rss = current_rss()
    start = _clock()
    engine = LocalEngine(parse_queries(text))
    reg_cpu, reg_wall = _since(start)
    grown = current_rss() - rss
    out: dict[str, Any] = {
        "kind": kind,
        "count": count,
        "reg_cpu": reg_cpu,
        "reg_wall": reg_wall,
        "bytes": grown / count,
        "functions": len(engine.stage1.functions),
        "templates": engine.stage1.functions.template_count,
    }
    on = engine.stage1
    engine_off = LocalEngine(parse_queries(text), presearch=False)
    off = engine_off.stage1
    warm = documents(items, WARM_UP, offset=ITEMS)
    for doc in warm:
        stage1_run(on)(doc)
    out["s1_on"] = _rate(stage1_run(on), docs, 0)
    for doc in warm[:20]:
        stage1_run(off)(doc)
    out["s1_off"] = _rate(stage1_run(off), docs, budget)
    out["local_on"] = _rate(lambda d: engine.process([d]), docs, 0)
    out["local_off"] = _rate(lambda d: engine_off.process([d]), docs, budget)
    if count <= 1_000:
        queries = list(parse_queries(text))
        ref_docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
        out["reference"] = _reference_rate(queries, ref_docs, budget)
    return out


def _reference_rate(queries: list[Any], docs: list[Any], budget: float) -> dict[str, Any]:
    """The reference over growing prefixes of the items until ``budget`` CPU seconds."""
    start = _clock()
    done = 0
    step = 25
    while done < len(docs) and time.process_time() - start[0] < budget:
        reference.evaluate(queries, docs[done : done + step])
        done += step
    cpu, wall = _since(start)
    return {"items": done, "cpu": cpu, "wall": wall, "rate": done / cpu if cpu else 0.0}


# --------------------------------------------------------------- the drift
def drift_table(rounds: int) -> list[tuple[str, float]]:
    """One three-filter definition over a stream whose selectivities change mid-way."""
    from xscl.lang.ast import FunctionPredicate
    from xscl.xpath.filter_order import AdaptiveOrder, FilterOrder, StaticOrder
    from xscl.xpath.functions import FunctionTable
    from xscl.xpath.predicates import (
        PathTable,
        PredicateEvaluator,
        compile_predicates,
        initial_order,
    )
    from xscl.xpath.safe_parse import ParseLimits, parse_document

    filters = (
        FunctionPredicate("matches(description, 'a[^x]{3,}e|o[^x]{2}u', 'i')"),  # never drops
        FunctionPredicate("contains(description, 'zq')"),  # drops in phase 1
        FunctionPredicate("starts-with(link, 'http')"),  # cheap; drops in phase 2
    )
    table = FunctionTable()
    for f in filters:
        table.acquire(f.expression)
    compiled = compile_predicates(filters, PathTable(), table)
    words = " ".join(["lorem ipsum dolor sit amet consectetur adipiscing"] * 12)
    phase1 = [f"<item><title>t{i}</title><link>http://x/{i}</link>"
              f"<description>{words}</description></item>" for i in range(PHASE)]
    phase2 = [f"<item><title>t{i}</title><link>ftp://x/{i}</link>"
              f"<description>{words} zq</description></item>" for i in range(PHASE)]
    roots = [parse_document(x, ParseLimits()) for x in phase1 + phase2]

    def run(order: FilterOrder) -> float:
        start = time.process_time()
        for root in roots:
            evaluator = PredicateEvaluator(root, table)
            evaluator.check_in_order(1, compiled, root, order)
        return time.process_time() - start

    strategies: dict[str, Callable[[], FilterOrder]] = {
        f"static {''.join('ABC'[i] for i in p)}": (lambda p=p: StaticOrder(p))
        for p in itertools.permutations(range(3))
    }
    strategies["A-Greedy"] = lambda: AdaptiveOrder(3, initial=initial_order(compiled))
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, make in strategies.items():
            spent = run(make())
            best[name] = min(best.get(name, spent), spent)
    return list(best.items())


# -------------------------------------------------------------------- output
def _fmt_rate(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "-"
    return f"{cell['rate']:,.0f} ({cell['cpu']:.1f}/{cell['wall']:.1f})"


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"| {'kind':8} | {'subs':>9} | {'register s cpu/wall':>19} | {'B/sub':>6} "
        f"| {'Stage 1 on':>22} | {'Stage 1 off':>22} | {'local on':>22} "
        f"| {'local off':>22} | {'reference':>18} |"
    )
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for r in rows:
        off_items = r["s1_off"]["items"]
        off = _fmt_rate(r["s1_off"]) + ("" if off_items == ITEMS else f" n={off_items}")
        local_items = r["local_off"]["items"]
        local_off = _fmt_rate(r["local_off"]) + (
            "" if local_items == ITEMS else f" n={local_items}")
        print(
            f"| {r['kind']:8} | {r['count']:>9,} | {r['reg_cpu']:>9.1f}/{r['reg_wall']:<9.1f} "
            f"| {r['bytes']:>6,.0f} | {_fmt_rate(r['s1_on']):>22} | {off:>22} "
            f"| {_fmt_rate(r['local_on']):>22} | {local_off:>22} "
            f"| {_fmt_rate(r.get('reference')):>18} |"
        )


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="stop at 100k subscriptions")
    parser.add_argument("--sizes", help="comma-separated counts (instead of 1k..1M)")
    parser.add_argument("--kinds", help="comma-separated kinds (default: all)")
    parser.add_argument("--budget", type=float, default=20.0,
                        help="CPU seconds for each run with the index off (default 20)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the drift table")
    parser.add_argument("--log", type=Path,
                        help="append each cell's result here (JSON lines) and reuse the cells "
                        "it already holds: an interrupted run goes on where it stopped")
    parser.add_argument("--cell", nargs=2, metavar=("KIND", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cell:
        print(json.dumps(measure_cell(args.cell[0], int(args.cell[1]), args.budget)))
        return 0
    if not all((DATA / feed).is_dir() for feed in FEEDS):
        print(f"the feeds are not at {DATA}", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else list(SIZES)
    if args.quick:
        sizes = [s for s in sizes if s <= 100_000]
    kinds = args.kinds.split(",") if args.kinds else list(KINDS)
    print(f"load average at start: {_load()}; items per run: {ITEMS} (+{WARM_UP} warm-up)")
    logged: dict[tuple[str, int], dict[str, Any]] = {}
    if args.log is not None and args.log.exists():
        for line in args.log.read_text(encoding="utf-8").splitlines():
            cell = json.loads(line)
            logged[(cell["kind"], cell["count"])] = cell
    rows = []
    for count in sizes:
        for kind in kinds:
            if (kind, count) in logged:
                rows.append(logged[(kind, count)])
                continue
            command = [sys.executable, __file__, "--cell", kind, str(count),
                       "--budget", str(args.budget)]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            cell = json.loads(done.stdout.strip().splitlines()[-1])
            cell["load"] = _load()
            rows.append(cell)
            if args.log is not None:
                with args.log.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(cell) + "\n")
            print(f"  {kind} {count:,}: done (load {_load()})", file=sys.stderr)
    print()
    print("items/s in CPU time, (CPU s/wall s) of the run; n = items covered within --budget")
    print_table(rows)
    print()
    drift = drift_table(args.rounds)
    best_static = min(t for name, t in drift if name.startswith("static"))
    worst_static = max(t for name, t in drift if name.startswith("static"))
    print(
        "filter order under drift (A: matches(description), never drops; B: contains("
        "description), drops the first half; C: starts-with(link), drops the second), CPU s:"
    )
    print("| order | CPU s | / best static | worst static / this |")
    print("|---|---:|---:|---:|")
    for name, spent in drift:
        print(f"| {name} | {spent:.3f} | {spent / best_static:.2f} | {worst_static / spent:.2f} |")
    print(f"\nload average at end: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
