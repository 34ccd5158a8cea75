"""A scripted judge for tests: verdicts worked out from the request by fixed rules, and records to judge.

:func:`respond` is a responder for :class:`ragmeter.testing.FakeOpenAIServer`; :func:`records` gives native
records whose every judged score follows from the rules by hand.

The rules, applied to the tagged blocks of the user message:
- ``claim_split``: each sentence of the <text> block is a claim (in the shared layout, where there is none: of the
  first <reference> when the task names the REFERENCE, else of the <answer>).
- ``claims``: each sentence of the <text> block is a claim; it is supported by every chunk that contains
  it word for word (case-insensitive, final stop left out), contradicted when a chunk contains it once its " not" is
  taken out, else unsupported; its evidence is the first such chunk's text ("" when none is), its differences "none"
  unless contradicted.
- ``correctness``: 5 when the answer equals a reference (case-insensitive), else 2.
- ``relevance``: 4, or 1 when the answer holds "don't know".
- ``idk``: "declines" when the answer starts with "I don't know", "partly" when it holds "don't know" later, else
  "answers".
- ``radbench``: 9 when the answer equals a reference (case-insensitive), 6 when it shares a chunk's first
  sentence, else 3; its reason quotes the answer (so an answer that writes its own rating is quoted too).
- ``chunk_labels``: each chunk is topically relevant when it holds "museum", evidence-sufficient when it holds
  "opens", misleading when it holds "closes".
- ``nuggets``: each sentence of each <reference> block is a nugget, vital when it is a reference's first sentence,
  else okay (at most 10).
- ``nugget_grades``: a nugget (final stop left out) the answer holds word for word (case-insensitive) is
  ``support``, quoted; one whose first three words the answer holds is ``partial``, quoting them; else ``none``
  with no quote. An answer holding "FAKE QUOTE" gets ``support`` for every nugget, quoting words it does not have.
- ``testset_<kind>`` (a test set's item): the answer is the first sentence of each <chunk>, joined, and so are the
  quotes; the question "What does the text say about <its first two words>?"; an unanswerable one asks "What does
  <its first two words> cost on public holidays?", with no answer or quote, and a follow-up "And what else is true
  of it?" (one whose chunk holds "STANDALONE": the plain question). ``testset_answered``: "answers" when a <chunk>
  holds "holiday", quoting its first sentence, else "no". ``testset_standalone``: "needs_history" when the question
  says "it", "its" or "they", else "standalone". A chunk holding "NO QUOTE" gets a
  quote it does not have, one holding "SAYS IT" a question that is its answer, one holding "ADD CLAIM" an answer
  with a sentence no chunk states, one holding "BROKEN" a reply that is not JSON, every time.
- ``generation_labels``: proper action always; on topic and helpful unless the answer holds "don't know"
  (helpful also needs "opens"); incomplete when it holds "don't know"; never unsafe. An answer holding "BROKEN"
  gets a reply that is not JSON, every time.

A verdict has a ``reason`` only where the request's schema asks for one (the shared layout's do not). So every
expected score can be worked out by hand from the records below, in either layout.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["blocks", "records", "reply_to", "respond", "verdict_for"]

_BLOCK = re.compile(
    r"<(question|history|text|answer|reference|chunk|nugget)(?: (?:id|n)=\"(\d+)\")?>\n(.*?)\n</\1>", re.DOTALL
)


def blocks(user_message: str) -> list[tuple[str, str | None, str]]:
    """(tag, chunk id or None, text) for each tagged block of a rendered judge request."""
    return [(m.group(1), m.group(2), m.group(3)) for m in _BLOCK.finditer(user_message)]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def verdict_for(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted verdict for an OpenAI chat-completions request body."""
    first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    name = body["response_format"]["json_schema"]["name"]
    parts = blocks(first_user)
    if name == "claims":
        text = next(t for tag, _, t in parts if tag == "text")
        chunks = [(int(i), t.lower()) for tag, i, t in parts if tag == "chunk"]
        claims = []
        for sentence in _sentences(text):
            plain = sentence.rstrip(".!?").lower()
            affirmed = plain.replace(" not ", " ") if " not " in plain else None
            supporting = [i for i, t in chunks if plain in t]
            contradicting = [i for i, t in chunks if affirmed is not None and affirmed in t]
            if supporting:
                verdict, used = "supported", supporting
            elif contradicting:
                verdict, used = "contradicted", contradicting
            else:
                verdict, used = "unsupported", []
            evidence = dict(chunks)[used[0]] if used else ""
            differences = "none" if verdict != "contradicted" else f"claim says {sentence}"
            claims.append(
                {
                    "claim": sentence,
                    "evidence": evidence,
                    "differences": differences,
                    "verdict": verdict,
                    "chunks": used,
                }
            )
        return {"claims": claims}
    if name == "claim_split":
        texts = {tag: t for tag, _, t in reversed(parts)}  # the first block of each tag
        named = (
            "text"
            if "text" in texts
            else "reference"
            if "split the REFERENCE" in first_user or ("split the first REFERENCE" in first_user)
            else "answer"
        )
        return {"claims": _sentences(texts[named])}
    if name == "nuggets":
        sentences = [(i == 0, s) for tag, _, t in parts if tag == "reference" for i, s in enumerate(_sentences(t))]
        return {"nuggets": [{"fact": s, "importance": "vital" if first else "okay"} for first, s in sentences[:10]]}
    if name == "nugget_grades":
        answer = next(t for tag, _, t in parts if tag == "answer")
        return {"grades": [{"nugget": int(i), **_grade(t, answer)} for tag, i, t in parts if tag == "nugget"]}
    if name == "testset_standalone":
        question = next(t for tag, _, t in parts if tag == "question")
        return {"verdict": "needs_history" if re.search(r"\b(it|its|they)\b", question) else "standalone"}
    if name == "testset_answered":
        holding = [t for tag, _, t in parts if tag == "chunk" and "holiday" in t.lower()]
        return {"quote": _sentences(holding[0])[0] if holding else "", "verdict": "answers" if holding else "no"}
    if name.startswith("testset_"):
        return _testset_item(name.removeprefix("testset_"), [t for tag, _, t in parts if tag == "chunk"])
    if name == "chunk_labels":
        return {
            "chunks": [
                {
                    "chunk": int(i),
                    "about": "a museum",
                    "topically_relevant": _yes("museum" in t),
                    "evidence_sufficient": _yes("opens" in t),
                    "misleading": _yes("closes" in t),
                }
                for tag, i, t in parts
                if tag == "chunk"
            ]
        }
    answer = next(t for tag, _, t in parts if tag == "answer")
    if name == "generation_labels":
        lowered = answer.lower()
        unknown = "don't know" in lowered
        return {
            "reason": "scripted",
            "proper_action": "yes",
            "response_on_topic": _yes(not unknown),
            "helpful": _yes(not unknown and "opens" in lowered),
            "incomplete": _yes(unknown),
            "unsafe_content": "no",
        }
    if name == "idk":
        lowered = answer.lower()
        verdict = (
            "declines" if lowered.startswith("i don't know") else "partly" if "don't know" in lowered else "answers"
        )
        return {"reason": "scripted", "verdict": verdict}
    if name == "radbench":
        references = [t.lower() for tag, _, t in parts if tag == "reference"]
        firsts = [_sentences(t)[0].lower() for tag, _, t in parts if tag == "chunk" and t.strip()]
        rating = 9 if answer.lower() in references else 6 if any(f in answer.lower() for f in firsts) else 3
        return {"reason": f"the answer says: {answer[:200]}", "rating": rating}
    if name == "correctness":
        references = [t.lower() for tag, _, t in parts if tag == "reference"]
        return {"reason": "scripted", "score": 5 if answer.lower() in references else 2}
    return {"reason": "scripted", "score": 1 if "don't know" in answer.lower() else 4}


def _testset_item(kind: str, chunks: list[str]) -> dict[str, Any]:
    firsts = [_sentences(chunk)[0] for chunk in chunks]
    answer = " ".join(firsts)
    subject = " ".join(firsts[0].rstrip(".!?").split()[:2]).lower()
    if kind == "unanswerable":
        return {"question": f"What does {subject} cost on public holidays?", "answer": "", "quotes": []}
    question = f"What does the text say about {subject}?"
    if kind == "follow_up" and "STANDALONE" not in " ".join(chunks):
        question = "And what else is true of it?"
    every = " ".join(chunks)
    if "SAYS IT" in every:
        question = firsts[0].rstrip(".") + "?"
    if "ADD CLAIM" in every:
        answer += " The library also lends laptops."
    quotes = ["words the chunk never wrote"] if "NO QUOTE" in every else [f.rstrip(".") for f in firsts]
    return {"question": question, "answer": answer, "quotes": quotes}


def _grade(nugget: str, answer: str) -> dict[str, str]:
    if "FAKE QUOTE" in answer:
        return {"quote": "words the answer never wrote", "grade": "support"}
    plain, lowered = nugget.rstrip(".!?").lower(), answer.lower()
    if plain in lowered:
        start = lowered.index(plain)
        return {"quote": answer[start : start + len(plain)], "grade": "support"}
    opening = " ".join(plain.split()[:3])
    if opening in lowered:
        start = lowered.index(opening)
        return {"quote": answer[start : start + len(opening)], "grade": "partial"}
    return {"quote": "", "grade": "none"}


def _yes(condition: bool) -> str:
    return "yes" if condition else "no"


def respond(body: dict[str, Any]) -> str:
    """The reply text for :class:`ragmeter.testing.FakeOpenAIServer`."""
    name = body["response_format"]["json_schema"]["name"]
    if (name == "generation_labels" or name.startswith("testset_")) and "BROKEN" in json.dumps(body):
        return "this is not JSON"
    verdict = verdict_for(body)
    schema = body["response_format"]["json_schema"].get("schema")
    if schema is not None and "reason" not in schema.get("properties", {}):
        verdict.pop("reason", None)
    return json.dumps(verdict)


def records(n: int) -> list[dict[str, Any]]:
    """``n`` native records cycling through five shapes: all supported, half supported, contradicted,
    an abstaining answer (claims of the reference), and no retrieved chunks."""
    out = []
    for i in range(n):
        shape = i % 5
        chunks = [
            {"doc_id": f"d{i}-1", "text": f"The museum {i} opens at nine. Tickets cost five euros."},
            {"doc_id": f"d{i}-2", "text": f"The museum {i} closes at six."},
            {"doc_id": f"d{i}-3", "text": f"Parking near museum {i} is free."},
        ]
        reference = f"The museum {i} opens at nine."
        answer = {
            0: f"The museum {i} opens at nine. The museum {i} closes at six.",
            1: f"The museum {i} opens at nine. The museum {i} has a cafe.",
            2: f"Parking near museum {i} is not free.",
            3: "I don't know.",
            4: f"The museum {i} opens at nine.",
        }[shape]
        out.append(
            {
                "id": f"r{i}",
                "question": f"When does museum {i} open?",
                "answer": answer,
                "references": [reference],
                "contexts": chunks if shape != 4 else [],
            }
        )
    return out


def reply_to(request: Any) -> str:
    """The reply text for a :class:`~ragmeter.judges.ChatRequest`, as :func:`respond` gives it for the same request
    sent as an OpenAI body: the responder of a :class:`~ragmeter.judges.ScriptedBackend`."""
    return respond(
        {
            "messages": [{"role": role, "content": content} for role, content in request.messages],
            "response_format": {"json_schema": {"name": request.schema_name, "schema": dict(request.schema)}},
        }
    )
