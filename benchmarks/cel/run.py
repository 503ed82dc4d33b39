"""The CEL engine on the technical benchmark of thesis 4.6.1, each optimisation on and off.

    python benchmarks/cel/run.py                         # 10k subscriptions, all templates
    python benchmarks/cel/run.py --subscriptions 10000 100000 400000 --templates Filter
    python benchmarks/cel/run.py --subscriptions 200 --events 2000 --reference

One stream S with four discrete attributes d0..d3 (domain 100) and four
continuous ones c0..c3 (uniform in [0, 1)), one event per second, values drawn
uniformly. Subscriptions follow the five templates of 4.6.1 with the
parameters of Table 4.1: three steps; each step predicate fixes two discrete
attributes (the query's *primary* one, the same value in every step, and one
more) and bounds two continuous ones (25 thresholds, selectivity 0.7 on
average); attributes are chosen with Zipf(1), the values of the three steps
with Zipf 1, 1 and 0.8; the duration constant is 20 s:

* LinearStat          FILTER{t3}(FILTER{t2}(FILTER{t1}(S) NEXT S) NEXT S)
* LinearDyn           the same, with one parameterised conjunct in t2 and t3
* Filter              NEXT{DUR <= 20 AND $2.primary = v}: other events are skipped
* NonDeterministic    FOLD{DUR <= 20 AND $2.primary = v, TRUE} instead of NEXT
* NonDeterministicAgg the same, summing the continuous attributes

For every template, size and configuration (all optimisations on, each one
off, all off) the table gives the time to subscribe (the engine's, not the
parser's), the events processed within ``--seconds`` (configurations that
scan every subscription stop early), the events per second, the mean number
of active instances and the results. Times are the process's CPU time, not
wall time: on a shared machine other tenants' load changes wall time by
factors, CPU time much less. Configurations that processed every
event must agree on the results (the script fails otherwise). With
``--reference`` the reference evaluator runs the same workload too (each
query alone; use small sizes). Cayuga's own figure: above 1,000 events/s at
400k subscriptions (C++, 2007).
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xscl.events.engine import OPTIMISATIONS, Engine, EngineConfig
from xscl.events.envelope import Event
from xscl.events.reference import evaluate
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

DISCRETE = ("d0", "d1", "d2", "d3")
CONTINUOUS = ("c0", "c1", "c2", "c3")
SCHEMA = DISCRETE + CONTINUOUS
DOMAIN = 100
RANGES = 25
DURATION = 20
ZIPF_ATTRIBUTES = 1.0
ZIPF_STEPS = (1.0, 1.0, 0.8)
TEMPLATES = ("LinearStat", "LinearDyn", "Filter", "NonDeterministic", "NonDeterministicAgg")
CONFIGS: dict[str, tuple[str, ...]] = {
    "all on": (),
    **{f"no {name}": (name,) for name in OPTIMISATIONS},
    "all off": tuple(OPTIMISATIONS),
}
MICROS = 1_000_000


def zipf_weights(n: int, s: float) -> list[float]:
    """P(k) proportional to 1 / k**s for k = 1..n."""
    return [1 / k**s for k in range(1, n + 1)]


class Workload:
    """Draws step predicates the way Table 4.1 says."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.values = {s: zipf_weights(DOMAIN, s) for s in set(ZIPF_STEPS)}

    def pick(self, items: Sequence[str]) -> str:
        return self.rng.choices(items, zipf_weights(len(items), ZIPF_ATTRIBUTES))[0]

    def value(self, step: int) -> int:
        return self.rng.choices(range(DOMAIN), self.values[ZIPF_STEPS[step]])[0]

    def step(self, primary: str, primary_value: int, step: int) -> str:
        other = self.pick([d for d in DISCRETE if d != primary])
        first = self.pick(CONTINUOUS)
        second = self.pick([c for c in CONTINUOUS if c != first])
        bounds = [0.18 + 0.01 * self.rng.randrange(RANGES) for _ in range(2)]
        return (
            f"{primary} = {primary_value} AND {other} = {self.value(step)} "
            f"AND {first} > {bounds[0]:.2f} AND {second} > {bounds[1]:.2f}"
        )

    def query(self, template: str, qid: int) -> str:
        primary = self.pick(DISCRETE)
        value = self.value(0)
        t1, t2, t3 = (self.step(primary, value, i) for i in range(3))
        c = self.pick(CONTINUOUS)
        within = f"DUR <= {DURATION} AND $2.{primary} = {value}"
        if template == "LinearStat":
            body = f"FILTER{{{t3}}}(FILTER{{{t2}}}(FILTER{{{t1}}}(S) NEXT S) NEXT S)"
        elif template == "LinearDyn":
            body = (
                f"FILTER{{{t3} AND {c} > {c}_1}}"
                f"(FILTER{{{t2} AND {c} > {c}_1}}(FILTER{{{t1}}}(S) NEXT S) NEXT S)"
            )
        elif template == "Filter":
            body = (
                f"FILTER{{{t3}}}(FILTER{{{t2}}}(FILTER{{{t1}}}(S) NEXT{{{within}}} S)"
                f" NEXT{{{within}}} S)"
            )
        elif template == "NonDeterministic":
            project = ", ".join(SCHEMA)
            body = (
                f"FILTER{{{t3}}}((SELECT {project} FROM FILTER{{{t2}}}("
                f"FILTER{{{t1}}}(S) FOLD{{{within}, TRUE}} S)) FOLD{{{within}, TRUE}} S)"
            )
        else:
            project = ", ".join((*SCHEMA, "total"))
            add = " + ".join(f"$2.{x}" for x in CONTINUOUS)
            start = " + ".join(CONTINUOUS)
            body = (
                f"FILTER{{{t3}}}((SELECT {project} FROM FILTER{{{t2}}}("
                f"(SELECT *, {start} AS total FROM FILTER{{{t1}}}(S))"
                f" FOLD{{{within}, TRUE, $.total + {add} AS total}} S))"
                f" FOLD{{{within}, TRUE, $.total + {add} AS total}} S)"
            )
        return f"q{qid}: SELECT * FROM {body}"

    def events(self, count: int) -> list[Event]:
        rng = self.rng
        out = []
        for n in range(1, count + 1):
            attrs: dict[str, str | int | float | None] = {
                d: rng.randrange(DOMAIN) for d in DISCRETE
            }
            attrs.update({c: round(rng.random(), 3) for c in CONTINUOUS})
            out.append(Event("S", n * MICROS, n * MICROS, attrs))
        return out


CHUNK = 10_000


def programs(template: str, size: int, seed: int) -> Iterator[Program]:
    """The subscriptions, parsed and validated in chunks (so their ASTs do not pile up)."""
    workload = Workload(seed)
    header = f"DECLARE STREAM S({', '.join(SCHEMA)});\n"
    for first in range(0, size, CHUNK):
        text = header + ";\n".join(
            workload.query(template, n) for n in range(first, min(size, first + CHUNK))
        )
        parsed = parse_file(text)
        checked, errors = validate(parsed)
        assert parsed.ok and not errors, [str(e) for e in (*parsed.errors, *errors)][:3]
        yield checked


@dataclass
class Row:
    template: str
    size: int
    config: str
    subscribe_s: float
    events: int
    events_per_s: float
    instances: float
    results: int
    states: int
    peak_rss_mb: float


def measure(
    template: str, size: int, config: str, events: list[Event], args: argparse.Namespace
) -> Row:
    """Subscribe ``size`` queries into a fresh engine, then process events within the budget."""
    gc.collect()
    engine = Engine(EngineConfig.without(*CONFIGS[config]))
    subscribed = 0.0
    for chunk in programs(template, size, args.seed):
        started = time.process_time()
        engine.subscribe(chunk)
        subscribed += time.process_time() - started
    samples = []
    results = 0
    every = max(1, len(events) // 20)
    processed = 0
    sampled = 0.0
    started = time.process_time()
    for event in events:
        results += len(engine.process_epoch(event.end, [event]))
        processed += 1
        if processed % every == 0:
            paused = time.process_time()
            samples.append(engine.instance_count())
            sampled += time.process_time() - paused
        if processed % 10 == 0 and time.process_time() - started - sampled > args.seconds:
            break
    elapsed = time.process_time() - started - sampled
    row = Row(
        template,
        size,
        config,
        subscribed,
        processed,
        processed / elapsed,
        sum(samples) / max(1, len(samples)),
        results,
        len(engine.network.states()),
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    engine.close()  # its frozen subscriptions back to the collector: the next size's
    return row  # gc.collect() reclaims this engine


def reference_row(template: str, size: int, events: list[Event], seed: int) -> Row:
    """The reference evaluator on the same workload (each query alone)."""
    (prepared,) = programs(template, size, seed)
    started = time.process_time()
    results = evaluate(prepared, events)
    elapsed = time.process_time() - started
    return Row(
        template, size, "reference", 0.0, len(events), len(events) / elapsed, 0.0,
        len(results), 0, 0.0,
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscriptions", type=int, nargs="+", default=[10_000])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument(
        "--seconds",
        type=float,
        default=30.0,
        help="processing budget per configuration: slower ones stop early (see 'events')",
    )
    parser.add_argument("--templates", nargs="+", choices=TEMPLATES, default=list(TEMPLATES))
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--reference", action="store_true", help="also run the reference")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    print(
        "| template | subscriptions | configuration | subscribe s | events | events/s "
        "| active instances | results | states | peak RSS MB |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    events = Workload(args.seed + 1).events(args.events)
    for template in args.templates:
        for size in args.subscriptions:
            rows = [measure(template, size, c, events, args) for c in args.configs]
            if args.reference:
                rows.append(reference_row(template, size, events, args.seed))
            complete = {row.results for row in rows if row.events == len(events)}
            assert len(complete) <= 1, f"configurations disagree on {template}/{size}: {rows}"
            for row in rows:
                print(
                    f"| {row.template} | {row.size:,} | {row.config} | {row.subscribe_s:.1f} "
                    f"| {row.events:,} | {row.events_per_s:,.0f} | {row.instances:,.0f} "
                    f"| {row.results:,} | {row.states:,} | {row.peak_rss_mb:,.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
