"""Hong 2009 §5.5.2's event pattern workloads on xscl's CEL engine, as normalised
throughput (thesis Figures 5.8 and 5.9(a, b)).

    python benchmarks/rumor/run.py                               # every sweep, defaults
    python benchmarks/rumor/run.py --sweeps queries --events 20000
    python benchmarks/rumor/run.py --workload 3                  # channels (capacity, queries)

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

* **Workload 3** (Figure 5.9(c, d), channels into CEL, §5.4.4):
  ``S_i NEXT{$2.a0 = $1.a0 AND DUR <= w} T``, each query reading one of the
  *capacity* sharable streams ``S_1..S_c`` (round robin). Input in rounds (§5.5.2):
  the same S tuple in every ``S_i`` at one even time, then a T tuple. Four plans,
  every one giving each query the same results (``tests/cel/test_cel_channels.py``):

  - ``none``: the round is ``c + 1`` events, results one ``Result`` per query
    (``process_epoch``), the thesis's plan without channels;
  - ``C``: ``S_1..S_c`` are channel C (``Engine.declare_channel``), the round is one
    ``ChannelEvent`` of all of them and T, processed once per automaton edge
    (``xscl.events.channels``); results per query;
  - ``D``: per-stream input, results as result channels (``process_epoch_channels``:
    one tuple per output event with its member queries);
  - ``C+D``: both, the thesis's plan with channels (Example 24: C in, D out).

  Throughput counts the per-stream events a round stands for (``c + 1``) in every
  plan, so all read the same input, and ``results`` counts per-query results (a
  result channel's members); *normalised* divides by ``none`` at the lightest
  setting, *speedup* by ``none`` at the same setting. Sweeps: the channel capacity
  1..10 (Figure 5.9(d)) and the number of queries at capacity 10 (Figure 5.9(c)).
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xscl.events.channels import ChannelEvent
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


# ---------------------------------------------------------------- workload 3: channels

#: (swept variable, its values from light to heavy) of Workload 3, each run with and
#: without channels
CHANNEL_SWEEPS: dict[str, tuple[str, list[int]]] = {
    "capacity": ("capacity", list(range(1, 11))),
    "channel-queries": ("queries", [100, 1_000, 10_000]),
}


def workload_3_text(rng: random.Random, p: Parameters, capacity: int) -> str:
    """The CEL file of Workload 3: ``p.queries`` queries over ``S1..S<capacity>`` and T."""
    header = "".join(
        f"DECLARE STREAM {s}({', '.join(ATTRIBUTES)});\n" for s in [*members(capacity), "T"]
    )
    queries = []
    for qid in range(p.queries):
        w = zipf_choice(rng, p.windows, p.zipf, largest_first=True)
        stream = f"S{qid % capacity + 1}"
        queries.append(f"q{qid}: FROM {stream} NEXT{{$2.a0 = $1.a0 AND DUR <= {w}}} T")
    return header + ";\n".join(queries)


def members(capacity: int) -> list[str]:
    """The sharable streams of channel C."""
    return [f"S{n}" for n in range(1, capacity + 1)]


Epoch = tuple[int, list[Event | ChannelEvent]]


def rounds(count: int, constants: int, seed: int, capacity: int, channels: bool) -> list[Epoch]:
    """``count`` rounds: the S tuple (one per member stream, or one channel tuple), then T."""
    rng = random.Random(seed)
    streams = members(capacity)
    out: list[Epoch] = []
    for n in range(count):
        for unit, stream in ((2 * n, "S"), (2 * n + 1, "T")):
            attrs: dict[str, str | int | float | None] = {
                a: rng.randrange(constants) for a in ATTRIBUTES
            }
            at = unit * MICROS
            epoch: list[Event | ChannelEvent]
            if stream == "T":
                epoch = [Event("T", at, at, attrs)]
            elif channels:
                epoch = [ChannelEvent(tuple(streams), at, at, attrs)]
            else:
                epoch = [Event(s, at, at, attrs) for s in streams]
            out.append((at, epoch))
    return out


#: Workload 3's plans: (input as channel tuples, results as result channels)
PLANS: dict[str, tuple[bool, bool]] = {
    "none": (False, False),
    "C": (True, False),
    "D": (False, True),
    "C+D": (True, True),
}


def measure_3(
    p: Parameters, capacity: int, plan: str, count: int, seconds: float, seed: int
) -> Run:
    """Workload 3 in a fresh engine; ``events`` counts per-stream events (c + 1 a round)."""
    channels, result_channels = PLANS[plan]
    text = workload_3_text(random.Random(seed), p, capacity)
    parsed = parse_file(text)
    program, errors = validate(parsed)
    assert parsed.ok and not errors, [str(e) for e in (*parsed.errors, *errors)][:3]
    gc.collect()
    engine = Engine()
    if channels:
        engine.declare_channel("C", ATTRIBUTES, members(capacity))
    started = time.process_time()
    engine.subscribe(program)
    subscribe_s = time.process_time() - started
    epochs = rounds(count // 2, p.constants, seed + 1, capacity, channels)
    results = processed = 0
    started = time.process_time()
    for n, (at, batch) in enumerate(epochs):
        if result_channels:
            results += sum(len(c.members) for c in engine.process_epoch_channels(at, batch))
        else:
            results += len(engine.process_epoch(at, batch))
        processed += 1 if n % 2 else capacity
        if n % 100 == 99 and time.process_time() - started > seconds:
            break
    elapsed = time.process_time() - started
    engine.close()
    return Run(subscribe_s, processed, processed / elapsed, results)


def channel_sweep(sweep: str, count: int, seconds: float, seed: int) -> None:
    """One Workload 3 sweep, every plan at each setting, as a markdown table."""
    variable, values = CHANNEL_SWEEPS[sweep]
    print(
        "| workload | variable | value | capacity | queries | channels | subscribe s "
        "| events | events/s | normalised | speedup | results |"
    )
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    lightest: float | None = None
    for value in values:
        capacity = value if variable == "capacity" else 10
        p = Parameters(queries=value) if variable == "queries" else Parameters()
        without: float | None = None
        for plan in PLANS:
            run = measure_3(p, capacity, plan, count, seconds, seed)
            lightest = lightest or run.events_per_s
            without = without or run.events_per_s
            speedup = f"{run.events_per_s / without:.2f}" if plan != "none" else ""
            print(
                f"| 3 | {variable} | {value:g} | {capacity} | {p.queries:,} "
                f"| {plan} | {run.subscribe_s:.1f} | {run.events:,} "
                f"| {run.events_per_s:,.0f} | {run.events_per_s / lightest:.2f} | {speedup} "
                f"| {run.results:,} |",
                flush=True,
            )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    every = [*SWEEPS, *CHANNEL_SWEEPS]
    parser.add_argument("--sweeps", nargs="+", choices=every, default=every)
    parser.add_argument(
        "--workload",
        choices=["1", "2", "3"],
        help="only the sweeps of this workload (3: capacity and channel-queries)",
    )
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=20.0, help="CPU budget per run")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    sweeps = [
        s
        for s in args.sweeps
        if args.workload is None
        or (args.workload == "3" and s in CHANNEL_SWEEPS)
        or any(w.split("-")[0] == args.workload for w, _, _ in SWEEPS.get(s, []))
    ]
    plain = [s for s in sweeps if s in SWEEPS]
    for sweep in sweeps:
        if sweep in CHANNEL_SWEEPS:
            channel_sweep(sweep, args.events, args.seconds, args.seed)
    if not plain:
        return
    print(
        "| workload | variable | value | queries | subscribe s | events | events/s "
        "| normalised | results |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for sweep in plain:
        for workload, variable, values in SWEEPS[sweep]:
            if args.workload is not None and workload.split("-")[0] != args.workload:
                continue
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
