"""Hong 2009 §5.5.2's event pattern workloads on xscl's CEL engine, as normalised
throughput (thesis Figures 5.8 and 5.9(a, b)).

    python benchmarks/rumor/run.py                               # every sweep, defaults
    python benchmarks/rumor/run.py --sweeps queries --events 20000

Setup (§5.5.1, Table 5.3): streams S and T of ten integer attributes ``a0..a9``,
uniform in ``0..constant domain - 1``, interleaved one event per time unit (S at
even times, T at odd; a unit is a second here); windows drawn from ``1..window
domain`` with a Zipf distribution favouring the longest; constants drawn with the
same Zipf distribution. Defaults: 1,000 queries, constant domain 1,000, window
domain 1,000, Zipf 1.5.

* **Workload 1** (Figure 5.8, the AN and FR indexes):
  ``FILTER{a0 = c1}(S) NEXT{DUR <= w AND $2.a0 = c3} T``.
* **Workload 2** (Figure 5.9(a), the AI index): ``S NEXT{$2.a0 = $1.a0 AND DUR <= w} T``,
  and its iteration variant (Figure 5.9(b)):
  ``S FOLD{$2.a0 = $1.a0 AND DUR <= w, $2.a1 > $.a1} T``.

Each sweep varies one parameter from light to heavy (workload 1: the number of
queries, the constant domain, the window domain, the Zipf parameter; workload 2: the
number of queries). Throughput is events per CPU second of the engine's
``process_epoch`` after subscribing (this process only; the thesis reports wall
time of a JVM after a warm-up), and the *normalised* throughput divides it by the
lightest setting's, as the thesis does after SASE. ``--seconds`` bounds each run.

Workload 3 (channels, Figure 5.9(c, d)) needs channels into CEL (a channel tuple
processed once for every stream it encodes): not built, so not run.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xscl.events.engine import Engine
from xscl.events.envelope import Event
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import validate

ATTRIBUTES = tuple(f"a{n}" for n in range(10))
HEADER = "".join(f"DECLARE STREAM {s}({', '.join(ATTRIBUTES)});\n" for s in "ST")
MICROS = 1_000_000


@dataclass(frozen=True)
class Parameters:
    """One setting of Table 5.3's variables."""

    queries: int = 1_000
    constants: int = 1_000
    windows: int = 1_000
    zipf: float = 1.5


def zipf_choice(rng: random.Random, domain: int, s: float, *, largest_first: bool) -> int:
    """A value of ``0..domain - 1`` (or ``1..domain`` for windows) by Zipf(``s``)."""
    weights = [1 / k**s for k in range(1, domain + 1)]
    rank = rng.choices(range(domain), weights)[0]
    return domain - rank if largest_first else rank


def workload_1(rng: random.Random, p: Parameters, qid: int) -> str:
    c1 = zipf_choice(rng, p.constants, p.zipf, largest_first=False)
    c3 = zipf_choice(rng, p.constants, p.zipf, largest_first=False)
    w = zipf_choice(rng, p.windows, p.zipf, largest_first=True)
    return f"q{qid}: FROM FILTER{{a0 = {c1}}}(S) NEXT{{DUR <= {w} AND $2.a0 = {c3}}} T"


def workload_2(rng: random.Random, p: Parameters, qid: int) -> str:
    w = zipf_choice(rng, p.windows, p.zipf, largest_first=True)
    return f"q{qid}: FROM S NEXT{{$2.a0 = $1.a0 AND DUR <= {w}}} T"


def workload_2_fold(rng: random.Random, p: Parameters, qid: int) -> str:
    w = zipf_choice(rng, p.windows, p.zipf, largest_first=True)
    return f"q{qid}: FROM S FOLD{{$2.a0 = $1.a0 AND DUR <= {w}, $2.a1 > $.a1}} T"


TEMPLATES: dict[str, Callable[[random.Random, Parameters, int], str]] = {
    "1": workload_1,
    "2": workload_2,
    "2-fold": workload_2_fold,
}

#: (workload, swept variable, its values from light to heavy)
SWEEPS: dict[str, list[tuple[str, str, list[float]]]] = {
    "queries": [
        ("1", "queries", [1_000, 10_000, 100_000]),
        ("2", "queries", [100, 1_000, 10_000]),
        ("2-fold", "queries", [100, 1_000, 10_000]),
    ],
    "constants": [("1", "constants", [10_000, 1_000, 100])],
    "windows": [("1", "windows", [10, 100, 1_000])],
    "zipf": [("1", "zipf", [2.0, 1.5, 1.2])],
}


def events(count: int, constants: int, seed: int) -> list[Event]:
    rng = random.Random(seed)
    out = []
    for n in range(count):
        attrs: dict[str, str | int | float | None] = {
            a: rng.randrange(constants) for a in ATTRIBUTES
        }
        out.append(Event("ST"[n % 2], n * MICROS, n * MICROS, attrs))
    return out


@dataclass(frozen=True)
class Run:
    subscribe_s: float
    events: int
    events_per_s: float
    results: int


def measure(workload: str, p: Parameters, count: int, seconds: float, seed: int) -> Run:
    """Subscribe the queries into a fresh engine, then process events within ``seconds``."""
    rng = random.Random(seed)
    draw = TEMPLATES[workload]
    text = HEADER + ";\n".join(draw(rng, p, n) for n in range(p.queries))
    parsed = parse_file(text)
    program, errors = validate(parsed)
    assert parsed.ok and not errors, [str(e) for e in (*parsed.errors, *errors)][:3]
    gc.collect()
    engine = Engine()
    started = time.process_time()
    engine.subscribe(program)
    subscribe_s = time.process_time() - started
    stream = events(count, p.constants, seed + 1)
    results = processed = 0
    started = time.process_time()
    for event in stream:
        results += len(engine.process_epoch(event.end, [event]))
        processed += 1
        if processed % 100 == 0 and time.process_time() - started > seconds:
            break
    elapsed = time.process_time() - started
    engine.close()
    return Run(subscribe_s, processed, processed / elapsed, results)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", nargs="+", choices=list(SWEEPS), default=list(SWEEPS))
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=20.0, help="CPU budget per run")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    print(
        "| workload | variable | value | queries | subscribe s | events | events/s "
        "| normalised | results |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for sweep in args.sweeps:
        for workload, variable, values in SWEEPS[sweep]:
            lightest: float | None = None
            for value in values:
                number = float(value) if variable == "zipf" else int(value)
                p = Parameters(**{variable: number})  # type: ignore[arg-type]
                run = measure(workload, p, args.events, args.seconds, args.seed)
                lightest = lightest or run.events_per_s
                print(
                    f"| {workload} | {variable} | {value:g} | {p.queries:,} "
                    f"| {run.subscribe_s:.1f} | {run.events:,} | {run.events_per_s:,.0f} "
                    f"| {run.events_per_s / lightest:.2f} | {run.results:,} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
