"""Clean-bench checks: a bench's figures are ranked only if it is clean (policy, pure).

- Prefix cache: emptied just before each ranked bench where the engine serves that (vLLM's POST
  /reset_prefix_cache in its dev mode, SGLang's /flush_cache), so no bench finds what the server served before it
  (the warm-up, an earlier bench); the record says whether it was, and how. The server's hit counters are read
  before and after the bench (its metrics endpoint, through the engine). After the reset, a hit is one prompt of the
  bench finding an earlier prompt of the same bench: vLLM's random prompts are runs of consecutive token ids from a
  random start, so two of a bench start alike with odds of about prompts^2 / (2 x vocabulary) (the tiny model's
  2,048 tokens: 16 prompts of 512 tokens with seed 1 repeat one whole prompt, 6.2% of the bench's tokens). The
  seeds are the same on every server compared, so every arm and cell sends those same prompts: said, and ranked.
  Without the reset (vLLM's dev mode is off where the server's port is reachable by others: docs/security.md,
  38.1), a random-prompt bench that found more than HIT_LIMIT of its prompt tokens cached may have measured a warm
  cache it did not ask for (the warm-up's prompts, an earlier bench's): vLLM's issues #52884 and #54227 saw
  throughput inflated by up to 86%, differently per concurrency. Flagged, never ranked, unless its hits are told
  to be its own: its prompts are fresh (a seed no earlier request to the server used, so no earlier prompt is one
  of them but by the same chance two of its own start alike) and the server's counters account for every prompt
  token it looked up since it booted (`Served`: nothing between redline's steps, nothing during one beyond what
  it sent and `slack`), so no other client warmed it. Such a bench's hits are its own prompts repeating each other
  (and chance matches with earlier fresh prompts, the same on every server of the run): said, and ranked.
- Client: the client's own peak against the concurrency asked. vLLM's client counts the requests active in each
  second of the run (any overlap with the second), which is never below the requests in flight at any moment of
  it: a peak under the concurrency asked proves the client never held that load (too few prompts, a slow client,
  the server refusing). Flagged. A peak at or over it is consistent with the load, not a proof of it.
- Rate (an open-loop bench): the rate the client sent (its requests over the span of their send times) against the
  rate asked. vLLM's client spaces n requests at a rate r over about (n - 1) / r seconds, whatever the server does, so
  a client that sent under SENT_FLOOR of the rate asked could not keep up (a starved CPU, a client past its limit),
  and one that sent over SENT_CEILING times it did not pace its requests: either way the point was not the load
  asked, and is not judged (flagged). A server that cannot keep up queues the requests:
  their latencies say so, not this check.
- Window: the figures cover the whole run, ramp-up and drain included (the bench client reports no steady state);
  said, so nobody reads them as a steady state.
- Figures: a throughput impossible for the bench's own workload (output or requests above what the bench produced
  over its wall time) is an artefact, not a measurement: flagged. A median TPOT or ITL under the token floor (0.05
  ms) with several output tokens per request is a stream the client got in one piece (a busy API server merges a
  request's tokens; seen on vLLM's CPU build): said here, and flagged on those metrics alone where the bench is
  judged (policy/noise.py), its TTFT and throughput still measured.

One mechanism keeps a flagged bench out of every verdict: a check whose `ok` is false gives the bench its problem
(ops/measured_boot.py), and a bench with a problem is never judged (a campaign cell red at that concurrency, an A/B
trial failed), the check's `said` its reason. A new kind of flag is one more `Check` name (models/clean_bench.py), a
function returning its BenchCheck in `checks` (or beside it, as the GPU's), and its fix in policy/unusable.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from redline.models.bench import BenchResult, BenchWorkload
from redline.models.clean_bench import BenchCheck, PrefixCounters
from redline.models.metrics import TOKEN_FLOOR_MS

HIT_LIMIT = 0.01  # the share of prompt tokens a random-prompt bench may find cached (vLLM's own warning: 1%)
SENT_FLOOR = 0.9  # an open-loop bench whose client sent under this share of the rate asked is not judged
SENT_CEILING = 1.5  # ... or over this many times it: it did not pace its requests as asked


Reset = tuple[bool, str]  # whether the prefix cache was emptied just before the bench, and how (or why not)
Own = tuple[bool, str]  # whether every hit of a bench not emptied before it is its own prompts', and why (or why not)
_OWN_HITS = (
    "the bench's own prompts repeating each other (random prompts can start alike in a small vocabulary); every arm "
    "and cell sends the same prompts"
)


@dataclass(frozen=True)
class Served:
    """What one server looked up in its prefix cache since it booted, as redline accounts for it: its counters at the
    end of redline's last step on it (None: some step's were not read, so nothing is accounted from there on), the
    prompt tokens redline's own requests do not account for (another client's), and the seeds redline's prompts to
    it used."""

    counters: PrefixCounters | None = field(default_factory=lambda: PrefixCounters(queries=0, hits=0))  # none at boot
    foreign: float = 0.0
    seeds: frozenset[int | None] = frozenset()


def slack(sent: BenchWorkload, tokens: int) -> float:
    """How many more prompt tokens than a bench's result counts its server may look up for it: the client's test
    request (one prompt of the longest), a few tokens per prompt its tokenizer adds (a BOS), and 1% for prompts that
    do not encode back to the length the client counted."""
    longest = sent.prefix_len + math.ceil(sent.input_len * (1 + sent.range_ratio))
    return longest + 4 * sent.num_prompts + 0.01 * tokens


def served_after(
    served: Served, before: PrefixCounters | None, after: PrefixCounters | None, sent: BenchWorkload, tokens: int | None
) -> Served:
    """`served` once one more step of redline's (a warm-up or a bench, which sent `sent` and counted `tokens` prompt
    tokens) ran between the counters `before` and `after`: what the server looked up between the last step and this
    one, and during this one past what it sent (and `slack`), is another client's."""
    seeds = served.seeds | {sent.seed}
    if served.counters is None or before is None or after is None or tokens is None:
        return Served(None, served.foreign, seeds)
    between = max(0.0, before.queries - served.counters.queries)
    during = max(0.0, after.queries - before.queries - tokens - slack(sent, tokens))
    return Served(after, served.foreign + between + during, seeds)


def own_hits(prior: Served, now: Served, sent: BenchWorkload) -> Own:
    """Whether the hits of a bench whose cache was not emptied are all its own prompts' (`prior`: the server before
    the bench, `now`: after it), and why or why not, in the words its check says."""
    if now.counters is None:
        return False, "the server's counters were not read at every step, so no other client's requests are ruled out"
    if sent.seed is None or sent.seed in prior.seeds:
        return False, f"its prompts' seed ({sent.seed}) was sent to this server before, so its prompts are not fresh"
    if now.foreign > 0:
        return False, (
            f"the server looked up {now.foreign:,.0f} prompt tokens since it booted that redline did not send "
            "(another client's requests)"
        )
    return True, (
        f"fresh prompts (seed {sent.seed}, which no earlier request to this server used) and every prompt token the "
        "server looked up since it booted is one redline sent"
    )


def prefix_cache(
    before: PrefixCounters | None,
    after: PrefixCounters | None,
    shared: float = 0.0,
    reset: Reset | None = None,
    own: Own | None = None,
) -> BenchCheck:
    """`shared`: the share of the bench's prompt tokens its workload shares on purpose (a prefix every prompt
    starts with), which it may find cached; only hits beyond that (and HIT_LIMIT) were not asked for. `reset`: the
    cache was emptied just before the bench (True: every hit is the bench's own prompts finding each other). `own`
    (a cache not emptied): whether its hits are told to be its own prompts' all the same (`own_hits`)."""
    emptied, how = reset if reset is not None else (False, "not emptied before the bench")
    head = f"prefix cache {how}: "
    by = "emptied" if emptied else ("fresh prompts" if own is not None and own[0] else None)
    if before is None or after is None:
        said = head + "its counters not read (the engine exposes none)"
        return BenchCheck(check="prefix_cache", ok=True, said=said, clean_by="emptied" if emptied else None)
    queries, hits = after.queries - before.queries, after.hits - before.hits
    if queries <= 0:
        return BenchCheck(check="prefix_cache", ok=True, said=head + "no prompt token was looked up in it", clean_by=by)
    rate = max(hits, 0.0) / queries
    said = f"{head}{rate:.1%} of {queries:,.0f} prompt tokens were found in it"
    if shared:
        said += f" (its workload shares a prefix: up to {shared:.1%} asked for)"
    if emptied and rate > shared:
        said += f": {_OWN_HITS}"
    if not emptied and own is not None:
        said += f"; {own[1]}"
    if not emptied and rate > shared + HIT_LIMIT and by is None:
        return BenchCheck(
            check="prefix_cache",
            ok=False,
            said=f"{said}: over {shared + HIT_LIMIT:.0%}, a warm cache the bench did not ask for (prompts the server "
            "served before it, or its own repeating each other); not ranked",
        )
    if not emptied and rate > shared + HIT_LIMIT:
        said += f": {_OWN_HITS} in the same order (and by the same chance an earlier bench's), not a warm cache"
    return BenchCheck(check="prefix_cache", ok=True, said=said, clean_by=by)


def client(result: BenchResult, requested: int) -> BenchCheck:
    reached = result.max_concurrent_requests
    if reached is None:
        return BenchCheck(check="client", ok=True, said="the client did not report its requests in flight")
    if reached < requested:
        return BenchCheck(
            check="client",
            ok=False,
            said=f"at most {reached} of the {requested} requests asked were active in any second of the run: "
            "the client never held that load; not ranked",
        )
    return BenchCheck(
        check="client",
        ok=True,
        said=f"{reached} requests overlapped the client's busiest second ({requested} at a time asked; a request "
        "ending and the next starting in one second both count)",
    )


def send_rate(result: BenchResult, asked: float) -> BenchCheck:
    """An open-loop bench's send rate against the rate asked."""
    rate = result.sent_rate
    if rate is None:
        return BenchCheck(
            check="rate",
            ok=False,
            said=f"{asked:g} req/s asked, and the client saved no send times to tell what it sent (was it run with "
            "--save-detailed?): not judged",
        )
    if rate < SENT_FLOOR * asked:
        return BenchCheck(
            check="rate",
            ok=False,
            said=f"the client sent {rate:.3g} req/s of the {asked:g} asked ({rate / asked:.0%}, under "
            f"{SENT_FLOOR:.0%}): it could not send that rate, so the point is not the load asked; not judged",
        )
    if rate > SENT_CEILING * asked:
        return BenchCheck(
            check="rate",
            ok=False,
            said=f"the client sent {rate:.3g} req/s, {rate / asked:.1f}x the {asked:g} asked: it did not pace the "
            "requests as asked, so the point is not the load asked; not judged",
        )
    return BenchCheck(check="rate", ok=True, said=f"the client sent {rate:.3g} req/s ({asked:g} asked)")


def window(result: BenchResult) -> BenchCheck:
    return BenchCheck(
        check="window",
        ok=True,
        said=f"whole run: {result.duration:.1f} s, ramp-up and drain included (no steady-state window reported)",
    )


ROUNDING = 1.01  # a throughput may round above its tokens over the wall time by this much, no more


def implausible(result: BenchResult) -> list[str]:
    """What in a bench's figures its own tokens and wall time make impossible (empty: nothing)."""
    found = []
    wall = result.duration
    for name, done, unit in (
        ("output_throughput", result.total_output_tokens, "output tokens"),
        ("request_throughput", result.completed, "requests"),
    ):
        said = getattr(result, name)
        if said is not None and done is not None and wall > 0 and said > ROUNDING * done / wall:
            found.append(f"{name} {said:,.4g}/s is above the bench's {done:,} {unit} over its {wall:.3g} s")
    return found


def together(result: BenchResult) -> list[str]:
    """The token times of a bench under the token floor though its requests decoded several tokens each: the tokens
    reached the client together (a busy API server merges a request's stream), so its TPOT and ITL time nothing."""
    if (result.total_output_tokens or 0) <= result.completed:  # one output token per request: no TPOT, no ITL
        return []
    times = {"median TPOT": result.median_tpot_ms, "median ITL": result.median_itl_ms}
    return [f"{name} {ms:.3g} ms" for name, ms in times.items() if ms is not None and ms < TOKEN_FLOOR_MS]


def plausible(result: BenchResult) -> BenchCheck:
    """The bench's figures against what its own workload allows: flagged, and left out of every verdict, where its
    throughput is impossible for its tokens over its wall time. Token times under the floor are said here and
    flagged on their metric alone wherever the bench is judged (policy/noise.py `flags_of`): its TTFT and throughput
    are still measured."""
    found = implausible(result)
    if found:
        return BenchCheck(check="figures", ok=False, said=f"implausible figures: {'; '.join(found)}; not ranked")
    under = together(result)
    if under:
        return BenchCheck(
            check="figures",
            ok=True,
            said=f"{' and '.join(under)} under the token floor of {TOKEN_FLOOR_MS:g} ms: its tokens reached the client "
            "together, so TPOT and ITL time nothing here (flagged, never judged); TTFT and throughput are measured",
        )
    return BenchCheck(check="figures", ok=True, said="every figure is possible for the bench's tokens and wall time")


def checks(
    result: BenchResult,
    sent: BenchWorkload,
    before: PrefixCounters | None,
    after: PrefixCounters | None,
    reset: Reset | None = None,
    own: Own | None = None,
) -> list[BenchCheck]:
    """Every check of one bench (`sent`: what it sent); any not ok keeps its figures
    out of every verdict. A closed-loop bench's client is checked for the concurrency it held, an open-loop one's for
    the rate it sent."""
    return [
        prefix_cache(before, after, sent.shared, reset, own),
        sent_check(result, sent),
        window(result),
        plausible(result),
    ]


def sent_check(result: BenchResult, workload: BenchWorkload) -> BenchCheck:
    """The client's check: the concurrency it held (closed loop), or the rate it sent (open loop)."""
    if workload.concurrency is None:
        asked = workload.asked_rate
        if asked is None:  # a trace whose arrivals ask no rate (all at one instant): nothing to check the client by
            return BenchCheck(check="rate", ok=True, said="its arrivals ask no rate (all at once)")
        return send_rate(result, asked)
    return client(result, workload.concurrency)


def flagged(found: list[BenchCheck]) -> str | None:
    """Why a bench is kept out of a ranking (its checks that failed), or None: it is clean."""
    failed = [c.said for c in found if not c.ok]
    return "; ".join(failed) if failed else None


__all__ = [
    "HIT_LIMIT",
    "SENT_CEILING",
    "SENT_FLOOR",
    "send_rate",
    "sent_check",
    "Own",
    "Reset",
    "Served",
    "checks",
    "client",
    "flagged",
    "implausible",
    "own_hits",
    "plausible",
    "together",
    "prefix_cache",
    "served_after",
    "slack",
    "window",
]
