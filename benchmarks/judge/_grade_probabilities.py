"""The judge's probability of each nugget grade, read from the token log-probabilities of its grades reply.

A grades reply names one grade a nugget (``support``, ``partial``, ``none``); the judge's next-token distribution at
the first token of that grade says how sure it was. G-Eval (Liu et al., 2023) weights a judge's score by the
probabilities of the score's tokens instead of taking the one it wrote; :func:`grade_probabilities` gives what that
needs for the claim level: the same request the product sends (the backend's own body), asked again with
``logprobs`` and the top alternatives of each token, and for each nugget of the reply the probability of each grade,
summed over the alternative tokens that name it (the grade or its start, between the value's quotes; the grades begin
with different letters, so a token names at most one) and renormalised over the three.

The reply must be the one the product's call got (the judge is greedy and seeded): the caller compares the two and
counts a call whose grades or quotes differ as not comparable. Replies are kept in a JSONL file beside the verdict
cache, keyed by the request's body, so that an interrupted run goes on where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import httpx

from ragmeter.judges.engine import Judge
from ragmeter.judges.protocol import ChatRequest
from ragmeter.metrics.nuggets import GRADES

#: Alternatives asked for each token of the reply (the three grades and the tokens that begin them fit well within).
TOP_LOGPROBS = 10
#: Seconds for one grades call of the packaged judge on two cores (about 11 s each on MT-RAG dev).
TIMEOUT_S = 600.0


class ProbabilityCache:
    """Replies with the alternatives of each grade's first token, one JSON line each, keyed by the sha256 of the
    request's body."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._replies: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                entry = json.loads(line)
                self._replies[entry["key"]] = entry["reply"]

    def get(self, key: str) -> dict[str, Any] | None:
        return self._replies.get(key)

    def put(self, key: str, reply: dict[str, Any]) -> None:
        self._replies[key] = reply
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"key": key, "reply": reply}, ensure_ascii=False) + "\n")


def grade_probabilities(
    judge: Judge, request: ChatRequest, cache: ProbabilityCache
) -> tuple[list[dict[str, Any]], list[dict[str, float]]]:
    """The grades of ``request``'s reply (the parsed ``grades`` list) and, for each, the probability of each grade
    (:data:`~ragmeter.metrics.nuggets.GRADES`) at its first token. Raises ``ValueError`` where the reply does not
    parse or a grade's token cannot be found."""
    body = judge.backend.request_body(request) | {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
    key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    reply = cache.get(key)
    if reply is None:
        response = httpx.post(f"{judge.backend.base_url}/chat/completions", json=body, timeout=TIMEOUT_S)
        response.raise_for_status()
        choice = response.json()["choices"][0]
        content = choice["message"]["content"]
        tokens = _grade_tokens(choice["logprobs"]["content"], len(json.loads(content)["grades"]))
        alternatives = [[(a["token"], a["logprob"]) for a in token["top_logprobs"]] for token in tokens]
        reply = {"content": content, "alternatives": alternatives}
        cache.put(key, reply)
    return json.loads(reply["content"])["grades"], [_probabilities(each) for each in reply["alternatives"]]


def _grade_tokens(tokens: list[dict[str, Any]], expected: int) -> list[dict[str, Any]]:
    """The token at which each ``"grade"`` value of the reply begins, in order."""
    text, starts = "", []
    for token in tokens:
        starts.append(len(text))
        text += token["token"]
    found, at = [], 0
    while (key := text.find('"grade"', at)) >= 0:
        colon = text.index(":", key)
        value = text.index('"', colon) + 1  # the grade's first character
        found.append(max(i for i, start in enumerate(starts) if start <= value))
        at = value
    if len(found) != expected:
        raise ValueError(f"{len(found)} grade tokens in a reply of {expected} grades")
    return [tokens[i] for i in found]


def _probabilities(alternatives: list[list[Any]]) -> dict[str, float]:
    """Each grade's probability among a grade token's alternatives (token, log-probability) that name a grade (the
    grade, or its start, between the value's quotes), renormalised over the grades.

    >>> p = _probabilities([["sup", math.log(0.5)], ['none"', math.log(0.3)], ["full", math.log(0.2)]])
    >>> {grade: round(value, 3) for grade, value in p.items()}
    {'support': 0.625, 'partial': 0.0, 'none': 0.375}
    """
    mass = dict.fromkeys(GRADES, 0.0)
    for token, logprob in alternatives:
        piece = token.strip(' "')
        named = [grade for grade in GRADES if piece and grade.startswith(piece)]
        if len(named) == 1:
            mass[named[0]] += math.exp(logprob)
    total = sum(mass.values())
    if total == 0:
        raise ValueError(f"no alternative of a grade token names a grade: {alternatives}")
    return {grade: p / total for grade, p in mass.items()}
