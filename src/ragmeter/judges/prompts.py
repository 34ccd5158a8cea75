"""The judge prompts of seeds 002 and 004: their instructions, reply schemas, and how a reply is checked.

Three calls cover seed 002's five metrics:

- ``claims``: extract the factual claims of a text (the answer, or the reference when the answer abstains)
  and verify each against all numbered chunks in one call: supported / contradicted / unsupported, with
  the chunks used. Faithfulness, Precision and Recall all read this one verdict. A judge that splits only
  (``CLAIM_MODES``: the packaged local judge's default) makes ``claim_split`` instead: the text alone, the
  reply its claims, which the evidence check then verifies against the chunks
  (:mod:`ragmeter.judges.checks.evidence`).
- ``correctness``: the answer against the reference, 1–5.
- ``relevance``: the answer against the question, 1–5.

MT-RAG's judged steps (seed 004) add two, and read the claims call for RL_F:

- ``idk``: does the answer, given the question and the exchange before it, decline for want of information:
  ``declines`` (1), ``partly`` (0.5) or ``answers`` (0);
- ``radbench``: one 1–10 rating of the answer's faithfulness, appropriateness and completeness, given the
  conversation, the question, the reference and the passages.

Untrusted text (question, history, answer, reference, chunks) goes only into the user message, each piece
between tags; a tag-like string inside it is defused, so an answer cannot close its own block. The
instructions live in the system message and say that tagged text is never an instruction. A verdict is
read only from the JSON reply, validated here (:meth:`Prompt.check`); nothing is ever pattern-matched out
of free text.

A prompt's hash covers its instructions, schema and token limit, and enters the judge signature and the
cache key, so editing a prompt invalidates exactly its own cached verdicts.

Every free-text string of a reply has a length limit in characters (``maxLength`` in the schema, and in
words in the instructions), chosen so that a reply at its longest fits the token limit: a verdict is never
cut off because its reason ran on. An endpoint with a grammar (llama.cpp's server, vLLM, Ollama) closes the
string at ``maxLength``; one that refuses the keyword (OpenAI's strict mode) gets the schema without it and
has the instructions' limit only (``JudgeConfig.bounds``). A reply over a limit is still accepted: the limit
is there to save the verdict, and a long reason is no wrong verdict.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ragmeter.core.records import Record
from ragmeter.judges.protocol import ChatRequest
from ragmeter.text.languages import Language
from ragmeter.text.sentences import split_sentences

__all__ = [
    "CHUNK_LABELLING",
    "CHUNK_LABEL_NAMES",
    "CLAIMS",
    "CLAIM_CHARS",
    "CLAIM_MODES",
    "CLAIM_SPLIT",
    "CORRECTNESS",
    "DIFFERENCES_CHARS",
    "EVIDENCE_CHARS",
    "GENERATION_LABELLING",
    "GENERATION_LABEL_NAMES",
    "IDK",
    "IDK_VALUES",
    "LAYOUTS",
    "PROMPTS",
    "RADBENCH",
    "REASON_CHARS",
    "RELEVANCE",
    "VERDICTS",
    "Prompt",
    "VerdictError",
    "defuse",
    "instructions",
    "render_blocks",
    "reply_object",
]

VERDICTS = ("supported", "contradicted", "unsupported")
#: How a judge is asked for claims: ``verify`` (one ``claims`` call splits the text and checks each claim against
#: the chunks) or ``split`` (one ``claim_split`` call splits the text; the evidence check verifies). On MT-RAG's dev
#: split the packaged judge's verdicts added nothing the check does not (``benchmarks/README.md``, "Evidence
#: check"), and a split call is a third of the time: ``split`` is the local judge's default, ``verify`` a remote
#: one's.
CLAIM_MODES = ("verify", "split")
#: How a judge's calls about one item are laid out (:mod:`ragmeter.judges.layouts`): each prompt a call of its own
#: (``calls``), or one item prefix shared by them all (``shared``, the local judge's default).
LAYOUTS = ("calls", "shared")
#: The IDK judge's verdicts and MT-RAG's values for them (its judge's yes, partly, no). Named for what the answer
#: does: with yes/partly/no the packaged judge answered "partly" to every answer of MT-RAG's dev split.
IDK_VALUES = {"declines": 1.0, "partly": 0.5, "answers": 0.0}
_HISTORY_TURNS = 4
#: The turns of history the IDK judge sees: the exchange before the question.
IDK_HISTORY_TURNS = 2
_TAGS = re.compile(r"<(/?)(question|history|text|answer|reference|chunk|nugget)\b", re.IGNORECASE)


class VerdictError(ValueError):
    """A reply that does not match its prompt's schema; the message tells the judge what to fix."""


@dataclass(frozen=True)
class Prompt:
    """A judge prompt: ``instructions`` (system message), the reply ``schema`` and its checker; ``reply_start``
    and ``continuation``: the start of the reply written for the judge and the grammar of the rest (see
    :class:`~ragmeter.judges.protocol.ChatRequest`; '': the judge writes the whole reply)."""

    name: str
    instructions: str
    schema: Mapping[str, Any]
    max_tokens: int
    checker: Callable[[Any, int], dict[str, Any]]
    reply_start: str = ""
    continuation: str = ""

    @property
    def hash(self) -> str:
        seen: list[Any] = [self.instructions, self.schema, self.max_tokens]
        if self.reply_start:
            seen += [self.reply_start, self.continuation]
        body = json.dumps(seen, sort_keys=True)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:12]

    def request(
        self, blocks: Sequence[tuple[str, str]], task: str, *, schema: Mapping[str, Any] | None = None
    ) -> ChatRequest:
        """The chat request for the tagged ``blocks`` ((tag with attributes, untrusted text) pairs), ending
        with the ``task`` restated (small judges follow a closing instruction best). ``schema`` narrows the
        prompt's schema for this one request (the claims' chunk numbers to the chunks it shows)."""
        body = "\n\n".join([*render_blocks(blocks), task])
        return ChatRequest(
            (("system", self.instructions), ("user", body)), self.name, schema or self.schema, self.max_tokens
        )

    def check(self, text: str, n_chunks: int) -> dict[str, Any]:
        """The verdict in a reply's ``text``, normalised; raises :class:`VerdictError` saying what is wrong."""
        try:
            data = json.loads(_strip_fence(text))
        except json.JSONDecodeError as exc:
            raise VerdictError(f"it is not valid JSON ({exc.msg} at character {exc.pos})") from None
        return self.checker(data, n_chunks)


def render_blocks(blocks: Sequence[tuple[str, str]]) -> list[str]:
    """Each (tag with attributes, untrusted text) pair as a tagged block, its text defused."""
    return [f"<{tag}>\n{defuse(text)}\n</{tag.split()[0]}>" for tag, text in blocks]


def defuse(text: str) -> str:
    """``text`` with any of the prompt's tags made inert (``<answer>`` → ``‹answer>``)."""
    return _TAGS.sub(lambda m: f"‹{m.group(1)}{m.group(2)}", text)


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped


def reply_object(data: Any, keys: Sequence[str]) -> dict[str, Any]:
    """``data`` when it is a JSON object with exactly ``keys``; else :class:`VerdictError` saying what differs."""
    if not isinstance(data, dict):
        raise VerdictError(f"it must be a JSON object with the keys {', '.join(keys)}")
    missing = [k for k in keys if k not in data]
    extra = [k for k in data if k not in keys]
    if missing or extra:
        raise VerdictError(
            "it must have exactly the keys "
            + ", ".join(keys)
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unexpected {', '.join(map(str, extra))}" if extra else "")
        )
    return data


def _check_claims(data: Any, n_chunks: int) -> dict[str, Any]:
    claims = reply_object(data, ("claims",))["claims"]
    if not isinstance(claims, list):
        raise VerdictError('"claims" must be a list')
    checked = []
    for number, claim in enumerate(claims, start=1):
        claim = reply_object(claim, ("claim", "evidence", "differences", "verdict", "chunks"))
        if not isinstance(claim["claim"], str) or not claim["claim"].strip():
            raise VerdictError(f"claim {number} has no text")
        for field in ("evidence", "differences"):
            if not isinstance(claim[field], str):
                raise VerdictError(f'claim {number}: "{field}" must be a string')
        if claim["verdict"] not in VERDICTS:
            raise VerdictError(f"claim {number} has the verdict {claim['verdict']!r}; use one of {', '.join(VERDICTS)}")
        chunks = claim["chunks"]
        if not isinstance(chunks, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in chunks):
            raise VerdictError(f'claim {number}: "chunks" must be a list of chunk numbers')
        wrong = [c for c in chunks if not 1 <= c <= n_chunks]
        if wrong:
            raise VerdictError(f"claim {number} names chunk {wrong[0]}, but the chunks are numbered 1 to {n_chunks}")
        if claim["verdict"] == "supported" and not chunks:
            raise VerdictError(f"claim {number} is supported but names no chunk that supports it")
        checked.append(
            {
                "claim": claim["claim"].strip(),
                "evidence": claim["evidence"],
                "differences": claim["differences"],
                "verdict": claim["verdict"],
                "chunks": sorted(set(chunks)) if claim["verdict"] != "unsupported" else [],
            }
        )
    return {"claims": checked}


def _check_claim_split(data: Any, n_chunks: int) -> dict[str, Any]:
    claims = reply_object(data, ("claims",))["claims"]
    if not isinstance(claims, list):
        raise VerdictError('"claims" must be a list of strings')
    for number, claim in enumerate(claims, start=1):
        if not isinstance(claim, str) or not claim.strip():
            raise VerdictError(f"claim {number} must be a sentence (a non-empty string)")
    return {"claims": [claim.strip() for claim in claims]}


def whole_number(key: str, top: int, *, reason: bool = True) -> Callable[[Any, int], dict[str, Any]]:
    """The checker of a ``{"reason", key}`` reply (``{key}`` alone without ``reason``) whose ``key`` is a whole
    number from 1 to ``top``."""

    def check(data: Any, n_chunks: int) -> dict[str, Any]:
        data = reply_object(data, ("reason", key) if reason else (key,))
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise VerdictError(f'"{key}" must be a whole number from 1 to {top}, got {value!r}')
        return {**_reason(data, reason), key: value}

    return check


def _check_idk(data: Any, n_chunks: int) -> dict[str, Any]:
    data = reply_object(data, ("reason", "verdict"))
    if data["verdict"] not in IDK_VALUES:
        raise VerdictError(f'"verdict" must be one of {", ".join(IDK_VALUES)}, got {data["verdict"]!r}')
    return {**_reason(data, True), "verdict": data["verdict"]}


def _reason(data: Mapping[str, Any], reason: bool) -> dict[str, Any]:
    if not reason:
        return {}
    if not isinstance(data["reason"], str):
        raise VerdictError('"reason" must be a string')
    return {"reason": data["reason"]}


# Characters at most per string: about twice the words the instructions allow (25 for a reason or a claim,
# 40 for evidence, 20 for differences) at 6 characters a word. At roughly 4 characters a token, a score
# reply at its longest is about 85 tokens of its 160; one claim at its longest about 190 of the claims
# call's 1024, so five claims at their longest fit, and many more of the usual length.
REASON_CHARS = 300
CLAIM_CHARS = 200
EVIDENCE_CHARS = 300
DIFFERENCES_CHARS = 160

_CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["claims"],
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["claim", "evidence", "differences", "verdict", "chunks"],
                "properties": {
                    "claim": {"type": "string", "maxLength": CLAIM_CHARS},
                    "evidence": {"type": "string", "maxLength": EVIDENCE_CHARS},
                    "differences": {"type": "string", "maxLength": DIFFERENCES_CHARS},
                    "verdict": {"type": "string", "enum": list(VERDICTS)},
                    "chunks": {"type": "array", "items": {"type": "integer"}},
                },
            },
        }
    },
}


_CLAIM_SPLIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["claims"],
    "properties": {"claims": {"type": "array", "items": {"type": "string", "maxLength": CLAIM_CHARS}}},
}


def _reasoned(key: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of a reply with a short ``reason`` and then ``key``."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["reason", key],
        "properties": {"reason": {"type": "string", "maxLength": REASON_CHARS}, key: value},
    }


def instructions(name: str) -> str:
    """The packaged instructions ``prompts/NAME.txt``."""
    return (resources.files("ragmeter.judges") / "prompts" / f"{name}.txt").read_text(encoding="utf-8").strip()


CLAIMS = Prompt("claims", instructions("claims"), _CLAIMS_SCHEMA, 1024, _check_claims)
CLAIM_SPLIT = Prompt("claim_split", instructions("claim_split"), _CLAIM_SPLIT_SCHEMA, 1024, _check_claim_split)
_SCORE_SCHEMA = _reasoned("score", {"type": "integer", "enum": [1, 2, 3, 4, 5]})
CORRECTNESS = Prompt("correctness", instructions("correctness"), _SCORE_SCHEMA, 160, whole_number("score", 5))
RELEVANCE = Prompt("relevance", instructions("relevance"), _SCORE_SCHEMA, 160, whole_number("score", 5))
IDK = Prompt(
    "idk", instructions("idk"), _reasoned("verdict", {"type": "string", "enum": list(IDK_VALUES)}), 160, _check_idk
)
RADBENCH = Prompt(
    "radbench",
    instructions("radbench"),
    _reasoned("rating", {"type": "integer", "enum": list(range(1, 11))}),
    160,
    whole_number("rating", 10),
)
#: The LLM annotator's labels of seed 003 (:mod:`ragmeter.human.annotator`): per chunk, and of the answer's generation.
#: The judge answers "yes" or "no" for each (read as 1 and 0): asked for 0 or 1, the packaged 1.5B judge wrote 0
#: for every label of every chunk (33 MT-RAG passages that people all judged relevant).
CHUNK_LABEL_NAMES = ("topically_relevant", "evidence_sufficient", "misleading")
GENERATION_LABEL_NAMES = ("proper_action", "response_on_topic", "helpful", "incomplete", "unsafe_content")
_YES_NO = {"type": "string", "enum": ["yes", "no"]}
#: Characters at most of a chunk's "about" (about 12 words): what the chunk is about, written before its labels.
ABOUT_CHARS = 80


def _yes(data: Mapping[str, Any], name: str, where: str) -> int:
    value = data[name]
    if value not in ("yes", "no"):
        raise VerdictError(f'{where}"{name}" must be "yes" or "no", got {value!r}')
    return int(value == "yes")


def _check_chunk_labels(data: Any, n_chunks: int) -> dict[str, Any]:
    entries = reply_object(data, ("chunks",))["chunks"]
    if not isinstance(entries, list) or len(entries) != n_chunks:
        raise VerdictError(f'"chunks" must list all {n_chunks} chunks, one entry each, in order')
    out = []
    for number, entry in enumerate(entries, start=1):
        entry = reply_object(entry, ("chunk", "about", *CHUNK_LABEL_NAMES))
        if entry["chunk"] != number:
            raise VerdictError(
                f"entry {number} is for chunk {entry['chunk']!r}: list the chunks 1 to {n_chunks} in order"
            )
        out.append({name: _yes(entry, name, f"chunk {number}: ") for name in CHUNK_LABEL_NAMES})
    return {"chunks": out}


def _check_generation_labels(data: Any, n_chunks: int) -> dict[str, Any]:
    data = reply_object(data, ("reason", *GENERATION_LABEL_NAMES))
    if not isinstance(data["reason"], str):
        raise VerdictError('"reason" must be a string')
    return {"reason": data["reason"], **{name: _yes(data, name, "") for name in GENERATION_LABEL_NAMES}}


_CHUNK_LABELS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["chunks"],
    "properties": {
        "chunks": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["chunk", "about", *CHUNK_LABEL_NAMES],
                "properties": {
                    "chunk": {"type": "integer"},
                    "about": {"type": "string", "maxLength": ABOUT_CHARS},
                    **dict.fromkeys(CHUNK_LABEL_NAMES, _YES_NO),
                },
            },
        }
    },
}
_GENERATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["reason", *GENERATION_LABEL_NAMES],
    "properties": {
        "reason": {"type": "string", "maxLength": REASON_CHARS},
        **dict.fromkeys(GENERATION_LABEL_NAMES, _YES_NO),
    },
}
CHUNK_LABELLING = Prompt("chunk_labels", instructions("chunk_labels"), _CHUNK_LABELS_SCHEMA, 2048, _check_chunk_labels)
GENERATION_LABELLING = Prompt(
    "generation_labels", instructions("generation_labels"), _GENERATION_SCHEMA, 200, _check_generation_labels
)
PROMPTS = {
    p.name: p
    for p in (CLAIMS, CLAIM_SPLIT, CORRECTNESS, RELEVANCE, IDK, RADBENCH, CHUNK_LABELLING, GENERATION_LABELLING)
}


def history_block(record: Record, turns: int | None = _HISTORY_TURNS) -> list[tuple[str, str]]:
    """The last ``turns`` turns of the conversation (``None``: all), when there is one, as a ``history`` block."""
    kept = record.history if turns is None else record.history[-turns:]
    if not kept:
        return []
    return [("history", "\n".join(f"{turn.role}: {turn.text}" for turn in kept))]


def claims_request(record: Record, text: str, language: Language | None = None) -> ChatRequest:
    """Extract the claims of ``text`` (the answer or the reference) and verify them against the chunks.

    The question and history are left out: a claim is what the text itself states, and a small judge
    shown the question splits the question instead of the text. The text comes after the chunks (shown
    before them, a small judge quotes the first chunk as every claim's evidence). A ``language`` with a
    :attr:`~ragmeter.text.languages.Language.claims_note` adds it to the request."""
    chunks = chunk_blocks(record)
    return CLAIMS.request(
        [*chunks, ("text", text)],
        "Split the TEXT above into claims and check each claim against the chunks. "
        + claims_note(language)
        + "Reply with the JSON object only.",
        schema=claims_schema(len(chunks), claims_cap(text, language)),
    )


def claim_split_request(text: str, language: Language | None = None) -> ChatRequest:
    """Split ``text`` (the answer or the reference) into its claims; nothing else is shown: the chunks are the
    evidence check's to read, and a small judge shown the question splits the question instead of the text. A
    ``language`` with a :attr:`~ragmeter.text.languages.Language.claims_note` adds it to the request."""
    return CLAIM_SPLIT.request(
        [("text", text)],
        "Split the TEXT above into its factual claims. " + claims_note(language) + "Reply with the JSON object only.",
        schema=claim_split_schema(text, language),
    )


def claim_split_schema(text: str, language: Language | None = None) -> dict[str, Any]:
    """The claim split's schema for ``text``: at most :func:`claims_cap` claims."""
    claims = {**_CLAIM_SPLIT_SCHEMA["properties"]["claims"], "maxItems": claims_cap(text, language)}
    return {**_CLAIM_SPLIT_SCHEMA, "properties": {"claims": claims}}


def claims_note(language: Language | None) -> str:
    """The language's note for a claims task (with a space after it), or nothing."""
    return f"{language.claims_note} " if language is not None and language.claims_note else ""


def chunk_blocks(record: Record) -> list[tuple[str, str]]:
    """The record's chunks as numbered ``chunk`` blocks, each with its title first when it has one."""
    return [
        (f'chunk id="{number}"', chunk.text if not chunk.title else f"{chunk.title}\n{chunk.text}")
        for number, chunk in enumerate(record.contexts, start=1)
    ]


def claims_cap(text: str, language: Language | None = None) -> int:
    """The most claims a reply may list for ``text`` (written in ``language``): 4 per sentence, plus 2. A small
    judge sometimes goes on listing the chunks' sentences as claims until the token limit cuts it off, twice
    (demo q24: two sentences, a reply past 2,048 tokens); the cap ends the list well before, far above what the
    text states."""
    return 4 * max(1, len(split_sentences(text, language))) + 2


def claims_schema(n_chunks: int, cap: int) -> dict[str, Any]:
    """The claims schema for one request: chunk numbers only 1 to ``n_chunks`` (an ``enum``, which llama.cpp's
    grammar and OpenAI's strict mode both honour: a small judge can no longer name a chunk it was not shown,
    which its repair did not always fix), and at most ``cap`` claims (``maxItems``, for the local grammar)."""
    claims = _CLAIMS_SCHEMA["properties"]["claims"]
    item = claims["items"]
    chunks = {"type": "array", "items": {"type": "integer", "enum": list(range(1, n_chunks + 1))}}
    return {
        **_CLAIMS_SCHEMA,
        "properties": {
            "claims": {
                **claims,
                "maxItems": cap,
                "items": {**item, "properties": {**item["properties"], "chunks": chunks}},
            }
        },
    }


def correctness_request(record: Record) -> ChatRequest:
    return CORRECTNESS.request(
        [
            ("question", record.question),
            *history_block(record),
            ("answer", record.answer),
            *(("reference", reference) for reference in record.references),
        ],
        "Grade the facts of the ANSWER against the REFERENCE. Reply with the JSON object only.",
    )


def relevance_request(record: Record) -> ChatRequest:
    return RELEVANCE.request(
        [("question", record.question), *history_block(record), ("answer", record.answer)],
        "Grade how well the ANSWER addresses the QUESTION. Reply with the JSON object only.",
    )


def idk_request(record: Record) -> ChatRequest:
    """Does the answer say that the information is not available? The question is shown with the exchange
    before it (``IDK_HISTORY_TURNS``): an answer can only be judged a refusal against what was asked. MT-RAG's
    judge reads the whole conversation; shown all of it, the packaged 1.5B judge called 12 of 39 real answers
    refusals in a one-off comparison on 60 of MT-RAG's records (often with the reason "declines" and nothing
    more), against 5 of 39 with the last exchange only."""
    return IDK.request(
        [*history_block(record, turns=IDK_HISTORY_TURNS), ("question", record.question), ("answer", record.answer)],
        "Classify the RESPONSE in the <answer> tags: answers, declines or partly. Reply with the JSON object only.",
    )


def radbench_request(record: Record) -> ChatRequest:
    """RADBench's rating of the answer: the passages first, then the conversation, the question, the
    reference(s) and the answer."""
    return RADBENCH.request(
        [
            *chunk_blocks(record),
            *history_block(record, turns=None),
            ("question", record.question),
            *(("reference", reference) for reference in record.references),
            ("answer", record.answer),
        ],
        "Rate the ANSWER from 1 to 10 for faithfulness to the passages, appropriateness and "
        "completeness against the REFERENCE. Reply with the JSON object only.",
    )


def chunk_labels_request(record: Record) -> ChatRequest:
    """The labels of every chunk of ``record`` in one call: the question (with the exchange before it), then the
    numbered chunks; the reply lists exactly as many entries as there are chunks (the schema numbers them)."""
    chunks = chunk_blocks(record)
    entry = _CHUNK_LABELS_SCHEMA["properties"]["chunks"]["items"]
    numbered = {
        **entry,
        "properties": {**entry["properties"], "chunk": {"type": "integer", "enum": list(range(1, len(chunks) + 1))}},
    }
    schema = {
        **_CHUNK_LABELS_SCHEMA,
        "properties": {
            "chunks": {"type": "array", "items": numbered, "minItems": len(chunks), "maxItems": len(chunks)}
        },
    }
    return CHUNK_LABELLING.request(
        [*history_block(record, turns=IDK_HISTORY_TURNS), ("question", record.question), *chunks],
        "Label each CHUNK for the QUESTION, in order. Reply with the JSON object only.",
        schema=schema,
    )


def generation_labels_request(record: Record) -> ChatRequest:
    return GENERATION_LABELLING.request(
        [*history_block(record, turns=IDK_HISTORY_TURNS), ("question", record.question), ("answer", record.answer)],
        "Label the ANSWER to the QUESTION. Reply with the JSON object only.",
    )
