"""The LLM judge: concurrency efficiency, judge tokens per sample, and local-judge throughput.

Three measurements (issue 5, item 9):

- ``concurrency``: 2,000 distinct ``relevance`` calls (320 with ``--quick``) through the real path,
  ``Judge(OpenAIBackend(...), cache=None, concurrency=32).run(calls)``, against the loopback fake of the
  OpenAI API (:mod:`ragmeter.testing.fake_openai`, scripted replies, 0.2 s latency per request). Ideal time =
  calls / 32 × 0.2 s; goal: wall time ≤ 1.15 × ideal. The fake server runs in this process (its threads
  share the interpreter with the client), as in the tests; the process CPU time per call is reported with
  the wall time, and the same calls are then sent to the fake in a child process, which separates the
  client's own CPU time per call from the server's.
- ``tokens``: judge tokens per sample for all five seed-002 metrics (the ``judged`` family: one ``claims``,
  one ``correctness`` and one ``relevance`` call per item) on synthetic samples of the shape "150-token
  answer, 100-token reference, 5 chunks of 200 tokens", lengths measured with the local server's own
  tokenizer (``POST /tokenize``). The figures are the tokens the server counted (``result.judging.usage``),
  repairs included. Goal ≤ 5,000 per sample (RAGAS's nearest five metrics: about 15,000).
- ``throughput``: items per minute of ``evaluate(metrics=["judged"])`` on the first 8 records of the bundled
  demo (2 with ``--quick``), local judge, no verdict cache: with the local judge's default claims call
  (``claim_split``: split only, the evidence check verifies) and, to compare, with ``claims`` (split and verify).
  The judge is built as the local judge builds it: each call after its system message's saved slot state is
  restored (:mod:`ragmeter.judges.backends.prefix_states`); to compare, the default claims call once more with
  every prompt computed whole (``cache_prompt: false``, the local judge of issue 33). Goals: ≥ 6 items per
  minute (issue 11), ≥ 10 (issue 34). ``tokens`` is measured with the default.

``tokens`` and ``throughput`` share one :class:`ragmeter.judges.LocalServer` start (the packaged
Qwen2.5-Coder-1.5B, Q4_K_M, its default slot count, every core); its start-up time is reported. Without ``xllamacpp``
or the packaged model parts, those two parts are skipped with a message.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
import time
import urllib.request
from typing import Any

CONCURRENCY = 32
LATENCY_S = 0.2
FULL_CALLS = 2_000
QUICK_CALLS = 320
GOAL_RATIO = 1.15

ANSWER_TOKENS = 150
REFERENCE_TOKENS = 100
CHUNK_TOKENS = 200
N_CHUNKS = 5
FULL_SAMPLES = 3
QUICK_SAMPLES = 1
GOAL_TOKENS = 5_000
RAGAS_TOKENS = 15_000

FULL_DEMO = 8
QUICK_DEMO = 2


# --- 1. concurrency efficiency ---------------------------------------------------------------------------


def _relevance_calls(n: int) -> list[Any]:
    from ragmeter.core.records import Record
    from ragmeter.judges import JudgeCall
    from ragmeter.judges.prompts import RELEVANCE, relevance_request

    return [
        JudgeCall(
            RELEVANCE,
            relevance_request(
                Record(
                    id=f"r{i}",
                    question=f"When does the museum of district {i} open on Sundays?",
                    answer=(
                        f"The museum of district {i} opens at {9 + i % 3}:00 on Sundays and closes at {16 + i % 2}:00."
                    ),
                )
            ),
        )
        for i in range(n)
    ]


def _timed_run(base_url: str, calls: list[Any]) -> tuple[float, float, list[Any]]:
    """Wall and process CPU seconds of one ``Judge.run`` (client built and closed outside the timer)."""
    from ragmeter.judges import Judge, OpenAIBackend

    judge = Judge(
        OpenAIBackend(base_url=base_url, model="fake-judge", api_key_env=None), cache=None, concurrency=CONCURRENCY
    )
    try:
        cpu, start = time.process_time(), time.perf_counter()
        outcomes = judge.run(calls)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        judge.close()
    return wall, cpu, outcomes


_CHILD_SERVER = """
import sys, time
from ragmeter.testing import FakeOpenAIServer
from ragmeter.testing.scripted_judge import respond
with FakeOpenAIServer(respond, latency_s=float(sys.argv[1])) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
    print(time.process_time(), len(server.requests), flush=True)
"""


def concurrency(quick: bool) -> dict[str, Any]:
    from ragmeter.testing import FakeOpenAIServer
    from ragmeter.testing.scripted_judge import respond

    n = QUICK_CALLS if quick else FULL_CALLS
    calls = _relevance_calls(n)
    ideal = n / CONCURRENCY * LATENCY_S
    with FakeOpenAIServer(respond, latency_s=LATENCY_S) as server:
        wall, cpu, outcomes = _timed_run(server.base_url, calls)
        requests = len(server.requests)
    failures = sum(o.verdict is None for o in outcomes)
    if failures or requests != n:
        raise RuntimeError(f"{failures} of {n} calls failed and the fake saw {requests} requests")

    # The same calls with the fake in a child process: the client's CPU time per call on its own.
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD_SERVER, str(LATENCY_S)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdin is not None and child.stdout is not None
        url = child.stdout.readline().strip()
        child_wall, client_cpu, _ = _timed_run(url, calls)
        child.stdin.close()
        server_cpu, child_requests = (float(x) for x in child.stdout.readline().split())
    finally:
        child.wait(timeout=30)

    ratio = wall / ideal
    out = {
        "calls": n,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY_S,
        "ideal_s": ideal,
        "wall_s": wall,
        "ratio": ratio,
        "calls_per_s": n / wall,
        "ideal_calls_per_s": CONCURRENCY / LATENCY_S,
        "goal_ratio": GOAL_RATIO,
        "goal_s": GOAL_RATIO * ideal,
        "meets_goal": ratio <= GOAL_RATIO,
        "process_cpu_s": cpu,
        "process_cpu_ms_per_call": 1000 * cpu / n,
        "child_server": {
            "wall_s": child_wall,
            "ratio": child_wall / ideal,
            "calls_per_s": n / child_wall,
            "client_cpu_s": client_cpu,
            "client_cpu_ms_per_call": 1000 * client_cpu / n,
            "server_cpu_s": server_cpu,
            "server_cpu_ms_per_call": 1000 * server_cpu / int(child_requests),
        },
    }
    print(
        f"[judge] concurrency: {n:,} calls at {CONCURRENCY} × {LATENCY_S:g} s: {wall:.2f} s (ideal {ideal:.2f} s, "
        f"ratio {ratio:.3f}, goal ≤ {GOAL_RATIO:g}: {'met' if out['meets_goal'] else 'NOT met'}), "
        f"{n / wall:.0f} calls/s, {out['process_cpu_ms_per_call']:.2f} ms CPU per call in one process; "
        f"fake in a child process: {child_wall:.2f} s (ratio {child_wall / ideal:.3f}), client "
        f"{out['child_server']['client_cpu_ms_per_call']:.2f} ms + server "
        f"{out['child_server']['server_cpu_ms_per_call']:.2f} ms CPU per call"
    )
    return out


# --- synthetic samples of a fixed token shape ------------------------------------------------------------

CITY = "Wrenford"
_PLACES = [
    ("Aquatic Centre", "Mill Road"),
    ("Central Library", "Kestrel Street"),
    ("Recycling Centre", "Ferry Lane"),
    ("Museum of Local History", "Abbey Square"),
    ("Community Hall", "Orchard Way"),
    ("Sports Arena", "Canal Street"),
    ("Botanic Garden", "Station Hill"),
    ("Youth Centre", "Baker's Row"),
    ("Covered Market", "Market Place"),
    ("Health Clinic", "Linden Avenue"),
]
_DAYS = ["Monday to Friday", "Tuesday to Saturday", "Monday to Saturday", "Wednesday to Sunday"]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November"]


def _facts(name: str, street: str, rng: random.Random) -> list[str]:
    """About twenty factual sentences on one public service of the fictional city, with drawn values."""
    h1, h2 = rng.randint(7, 10), rng.randint(17, 21)
    adult = rng.randint(3, 9)
    return [
        f"The {CITY} {name} on {street} is open {rng.choice(_DAYS)} from {h1}:00 to {h2}:00.",
        f"On Sundays the {name} opens from {h1 + 1}:00 to {rng.randint(14, 16)}:00.",
        (
            f"Admission to the {name} costs {adult} dollars for adults and {adult // 2} dollars for children "
            f"under {rng.randint(12, 16)}."
        ),
        f"Holders of the {CITY} resident card get a discount of {rng.choice([10, 15, 20, 25])} percent at the {name}.",
        f"The {name} is closed on public holidays and for maintenance during the first week of {rng.choice(_MONTHS)}.",
        f"Bus route {rng.randint(2, 48)} stops outside the {name} every {rng.choice([10, 12, 15, 20])} minutes.",
        (
            f"The car park of the {name} has {rng.randint(20, 140)} spaces, and parking there is limited to "
            f"{rng.randint(2, 4)} hours."
        ),
        (
            f"Groups of more than {rng.randint(8, 25)} people must book a visit to the {name} at least "
            f"{rng.randint(3, 14)} days in advance."
        ),
        f"The {name} opened in {rng.randint(1950, 1995)} and was renovated in {rng.randint(2005, 2022)}.",
        f"Bookings for the {name} can be made by phone on 555-{rng.randint(1000, 9999)} or at the front desk.",
        (
            f"Wheelchair users enter the {name} through the {rng.choice(['north', 'south', 'east', 'west'])} "
            f"entrance, which has a ramp and an automatic door."
        ),
        (
            f"The {name} offers a free guided tour on the last {rng.choice(_WEEKDAYS)} of each month at "
            f"{rng.randint(10, 15)}:00."
        ),
        f"Lost property found at the {name} is kept for {rng.choice([14, 30, 60, 90])} days before it is donated.",
        f"Dogs are not allowed inside the {name}, except for assistance dogs.",
        f"The café at the {name} serves hot meals between 12:00 and {rng.choice([14, 15])}:00.",
        f"The {name} employs {rng.randint(6, 60)} staff, {rng.randint(2, 5)} of whom are trained first aiders.",
        f"Free wireless internet is available in every room of the {name}.",
        (
            f"Complaints about the {name} are answered by the city's service desk within "
            f"{rng.randint(5, 15)} working days."
        ),
        f"The {name} runs a volunteer programme for residents over {rng.choice([16, 18])}.",
        f"Lockers at the {name} take a one-dollar coin, which is returned when the locker is opened.",
    ]


class _Tokenizer:
    """Token counts from the llama.cpp server's own tokenizer (``POST {base}/tokenize``)."""

    def __init__(self, base_url: str) -> None:
        self.url = base_url.removesuffix("/").removesuffix("/v1") + "/tokenize"

    def count(self, text: str) -> int:
        body = json.dumps({"content": text}).encode("utf-8")
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return len(json.loads(response.read())["tokens"])


def _fill(sentences: list[str], target: int, tokens: _Tokenizer) -> str:
    """Sentences taken in order, each one kept when the text stays within ``target`` tokens; so the text is
    at most ``target`` tokens and short of it by less than any sentence left out."""
    kept: list[str] = []
    for sentence in sentences:
        if tokens.count(" ".join([*kept, sentence])) <= target:
            kept.append(sentence)
    return " ".join(kept)


def synthetic_samples(n: int, tokens: _Tokenizer, seed: int = 0) -> tuple[list[Any], list[dict[str, int]]]:
    """``n`` records of the shape 150-token answer, 100-token reference, 5 chunks of 200 tokens (at most, a
    few tokens under), and the measured token counts of each.

    The question asks about one service. Chunks 1 and 2 state that service's facts (chunk 2 finishes with
    another service's), chunks 3 to 5 are about other services. The reference restates facts of the
    service; the answer restates most of them, gets one number wrong and adds one fact no chunk holds.
    """
    from ragmeter.core.records import Chunk, Record

    rng = random.Random(seed)
    records, lengths = [], []
    for i in range(n):
        places = rng.sample(_PLACES, 5)
        facts = [_facts(name, street, rng) for name, street in places]
        main, (name, _) = facts[0], places[0]
        chunk_texts = [_fill(main[:11], CHUNK_TOKENS, tokens), _fill(main[11:] + facts[1], CHUNK_TOKENS, tokens)]
        chunk_texts += [_fill(f, CHUNK_TOKENS, tokens) for f in facts[2:]]
        in_chunks = [s for s in main if any(s in c for c in chunk_texts)]
        reference = _fill([in_chunks[k] for k in (0, 1, 2, 4, 5, 8)], REFERENCE_TOKENS, tokens)
        bus = next(s for s in main if s.startswith("Bus route"))  # chunk 1 holds it
        minutes = re.search(r"every (\d+) minutes", bus)
        assert minutes is not None
        wrong = bus.replace(minutes.group(0), f"every {int(minutes.group(1)) + 5} minutes")
        made_up = f"The {name} also lends out free umbrellas at the front desk on rainy days."
        answer_sentences = [in_chunks[k] for k in (0, 2, 4)] + [wrong, made_up] + [s for s in in_chunks[6:] if s != bus]
        answer = _fill(answer_sentences, ANSWER_TOKENS, tokens)
        records.append(
            Record(
                id=f"s{i}",
                question=f"When is the {CITY} {name} open, what does it cost, and how do I get there?",
                answer=answer,
                references=(reference,),
                contexts=tuple(Chunk(doc_id=f"s{i}-c{k + 1}", text=t) for k, t in enumerate(chunk_texts)),
            )
        )
        lengths.append(
            {
                "answer": tokens.count(answer),
                "reference": tokens.count(reference),
                "chunks": [tokens.count(t) for t in chunk_texts],
            }
        )
    return records, lengths


# --- 2. tokens per sample, 3. throughput (local judge) ---------------------------------------------------


def _judge(server: Any, claims: str, reuse: str) -> Any:
    """The local judge's judge on ``server``; ``reuse``: ``states`` (the local judge's) or ``none``."""
    from ragmeter.judges import LOCAL_TIMEOUT_S, Judge, OpenAIBackend
    from ragmeter.judges.backends.prefix_states import LocalBackend

    options = {
        "base_url": server.base_url,
        "model": server.model_id,
        "api_key_env": None,
        "timeout_s": LOCAL_TIMEOUT_S,
        "bounds": "schema",
    }
    backend = LocalBackend.at(**options) if reuse == "states" else OpenAIBackend(cache_prompt=False, **options)
    return Judge(backend, concurrency=server.parallel, timeout_s=LOCAL_TIMEOUT_S, claims=claims)


def _evaluate(records: list[Any], server: Any, claims: str = "split", reuse: str = "states") -> tuple[Any, float]:
    import ragmeter

    judge = _judge(server, claims, reuse)
    try:
        start = time.perf_counter()
        result = ragmeter.evaluate(records, metrics=["judged"], judge=judge)
        return result, time.perf_counter() - start
    finally:
        judge.close()


def _failures(result: Any) -> list[dict[str, str]]:
    """Each failed call: item, prompt, reason and the start of the last reply."""
    return [
        {"id": f["id"], "prompt": f["prompt"], "reason": f["reason"], "raw": (f["raw"] or "")[:300]}
        for f in result.judging.failures
    ]


def _by_prompt(result: Any, n: int) -> dict[str, dict[str, float]]:
    assert result.judging is not None
    return {
        name: {
            "calls": u.calls,
            "requests": u.requests,
            "retries": u.retries,
            "repairs": u.repairs,
            "failures": u.failures,
            "prompt_tokens_per_sample": u.prompt_tokens / n,
            "completion_tokens_per_sample": u.completion_tokens / n,
            "total_tokens_per_sample": (u.prompt_tokens + u.completion_tokens) / n,
        }
        for name, u in sorted(result.judging.usage.items())
    }


def _means(result: Any) -> dict[str, float | None]:
    out = {}
    for summary in result.summaries:
        if summary.statistic != "mean":
            continue
        value = float(summary.value)
        out[summary.metric] = None if math.isnan(value) else value  # NaN: too few defined values
    return out


def tokens_per_sample(server: Any, quick: bool) -> dict[str, Any]:
    n = QUICK_SAMPLES if quick else FULL_SAMPLES
    records, lengths = synthetic_samples(n, _Tokenizer(server.base_url))
    result, wall = _evaluate(records, server)
    totals = result.judging.totals()
    prompt, completion = totals["prompt_tokens"] / n, totals["completion_tokens"] / n
    out = {
        "samples": n,
        "shape": {
            "answer": ANSWER_TOKENS,
            "reference": REFERENCE_TOKENS,
            "chunks": N_CHUNKS,
            "chunk_tokens": CHUNK_TOKENS,
        },
        "measured_lengths": lengths,
        "input_tokens_per_sample": sum(l["answer"] + l["reference"] + sum(l["chunks"]) for l in lengths) / n,
        "by_prompt": _by_prompt(result, n),
        "requests_per_sample": totals["requests"] / n,
        "repairs": totals["repairs"],
        "failures": totals["failures"],
        "failed_calls": _failures(result),
        "prompt_tokens_per_sample": prompt,
        "completion_tokens_per_sample": completion,
        "total_tokens_per_sample": prompt + completion,
        "goal_tokens": GOAL_TOKENS,
        "meets_goal": prompt + completion <= GOAL_TOKENS,
        "ragas_reference_tokens": RAGAS_TOKENS,
        "wall_s": wall,
        "means": _means(result),
    }
    parts = ", ".join(
        f"{name} {p['prompt_tokens_per_sample']:.0f}+{p['completion_tokens_per_sample']:.0f}"
        for name, p in out["by_prompt"].items()
    )
    print(
        f"[judge] tokens: {n} sample(s), {out['input_tokens_per_sample']:.0f} input tokens each: {parts} "
        f"→ {prompt + completion:,.0f} per sample (goal ≤ {GOAL_TOKENS:,}: "
        f"{'met' if out['meets_goal'] else 'NOT met'}); {totals['repairs']} repairs, {totals['failures']} "
        f"failures, {wall:.0f} s"
    )
    return out


def throughput(server: Any, quick: bool, claims: str, reuse: str = "states") -> dict[str, Any]:
    import ragmeter
    from ragmeter.io.demo import demo_path

    n = QUICK_DEMO if quick else FULL_DEMO
    records = list(ragmeter.read_records(demo_path()))[:n]
    result, wall = _evaluate(records, server, claims, reuse)
    totals = result.judging.totals()
    out = {
        "claims": claims,
        "reuse": reuse,
        "records": n,
        "source": f"first {n} records of the bundled demo ({demo_path().name})",
        "chunks_per_record": sum(len(r.contexts) for r in records) / n,
        "wall_s": wall,
        "items_per_min": 60 * n / wall,
        "s_per_item": wall / n,
        "calls_per_item": totals["calls"] / n,
        "requests_per_item": totals["requests"] / n,
        "repairs": totals["repairs"],
        "failures": totals["failures"],
        "failed_calls": _failures(result),
        "prompt_tokens_per_item": totals["prompt_tokens"] / n,
        "completion_tokens_per_item": totals["completion_tokens"] / n,
        "by_prompt": _by_prompt(result, n),
        "judge_concurrency": server.parallel,
        "means": _means(result),
    }
    print(
        f"[judge] throughput (claims={claims}, reuse={reuse}): {n} demo records in {wall:.1f} s → "
        f"{out['items_per_min']:.2f} items/min, {out['s_per_item']:.1f} s/item, "
        f"{out['calls_per_item']:.2f} calls/item ({out['requests_per_item']:.2f} requests), "
        f"{totals['failures']} failures"
    )
    return out


def local_judge(quick: bool) -> dict[str, Any]:
    from importlib import util

    from ragmeter.judges import LocalServer

    if util.find_spec("xllamacpp") is None:
        return {"skipped": "xllamacpp is not installed (pip install 'ragmeter[local]'): local judge skipped"}
    server = LocalServer()
    start = time.perf_counter()
    try:
        server.start()
    except Exception as exc:  # noqa: BLE001  (missing model parts: report, keep the concurrency figures)
        server.stop()
        return {"skipped": f"the local judge did not start: {type(exc).__name__}: {exc}"}
    startup = time.perf_counter() - start
    print(
        f"[judge] local server ({server.model_id}, {server.parallel} slots, {server.threads} threads) "
        f"started in {startup:.1f} s"
    )
    try:
        return {
            "model": server.model_id,
            "threads": server.threads,
            "slots": server.parallel,
            "startup_s": startup,
            "tokens": tokens_per_sample(server, quick),
            "throughput": throughput(server, quick, "split"),
            "throughput_whole": throughput(server, quick, "split", "none"),
            "throughput_verify": throughput(server, quick, "verify"),
        }
    finally:
        server.stop()


def run(*, quick: bool = False) -> dict[str, Any]:
    return {"concurrency": concurrency(quick), "local": local_judge(quick), "quick": quick}


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
