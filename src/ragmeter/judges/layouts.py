"""How a judge's calls about one item are laid out: each prompt a call of its own, or one shared item prefix.

- ``calls``: every prompt is a conversation of its own: its instructions as the system message, then the
  blocks it needs and its task (:mod:`ragmeter.judges.prompts`). A remote judge's default.
- ``shared``: one system message holds the tasks of seed 002's calls (``prompts/shared.txt``: claims,
  correctness, relevance); the user message starts with the *item*, the same for all of the item's calls (the last four
  turns of history, the question, the answer, the references), then the task's one line. A score is the verdict alone,
  without a reason: ``{"score": 4}``. The packaged local judge's default: it computes the item once and takes it from a
  saved slot state for every other call (:mod:`ragmeter.judges.backends.prefix_states`), and writes 7 tokens a score
  instead of about 45; an endpoint that caches prefixes (vLLM, llama.cpp's server) can serve the item from its first
  call. Claims are split from the answer in the item (the reference's, where the answer abstains). Three calls keep
  their own: the verifying claims call (``claims="verify"``), which reads the passages, and the IDK and RADBench judges,
  whose verdicts without a reason failed the local judge's checks (an answer called a refusal; a copy of the reference,
  a wrong answer and an off-topic one all rated 7 of 10).

A judge whose backend continues an assistant message (``continues_replies``: the local judge, whose llama.cpp server
takes a last assistant message as the reply's start) is not asked to write a score's ``{"score": `` either: the
request writes it for the judge, and the judge writes the digit and the closing brace (the grammar
``_SCORE_REST``): two tokens and the end, and never a score in a code fence or spread over lines, which the schema's
grammar allows (the packaged judge's whole scores took 11.5 tokens each on MT-RAG's dev answers, begun ones 3). Its
task line is the task's name alone (``TASK correctness.``; the system message defines it), without the instruction to
reply with JSON, which the begun reply makes moot: 12 tokens to compute instead of 30. Both are a measurement of their
own, validated as the layout was (``benchmarks/judge/bench_judge_layouts.py --compare continued``: judge_correctness
follows people's completeness ratings more closely than with the whole reply, no figure worse), and the prompts'
hashes say which way a score was asked.

Prompts keep their names in both layouts (a metric asks for ``correctness`` either way); their hashes differ,
so a verdict's signature and cache key say which layout gave it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ragmeter.core.records import Record
from ragmeter.judges.engine import JudgeCall
from ragmeter.judges.prompts import (
    CLAIM_SPLIT,
    LAYOUTS,
    Prompt,
    claim_split_request,
    claim_split_schema,
    claims_note,
    claims_request,
    correctness_request,
    history_block,
    idk_request,
    instructions,
    radbench_request,
    relevance_request,
    render_blocks,
    whole_number,
)
from ragmeter.judges.protocol import ChatRequest
from ragmeter.text.languages import Language

__all__ = ["CONTINUED_PROMPTS", "LAYOUTS", "SHARED_PROMPTS", "Layout", "item_text", "judge_call", "layout_of"]

#: The token limit of a score without a reason: ``{"score": 5}`` is 7 tokens, and the grammar lets a reply put up to
#: 20 spaces or a newline between them.
VERDICT_TOKENS = 32
_SHARED = instructions("shared")


#: A score reply without a reason.
_SCORE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["score"],
    "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
}
#: The shared layout's prompts, by name: one system message, scores without a reason.
SHARED_PROMPTS = {
    prompt.name: prompt
    for prompt in (
        replace(CLAIM_SPLIT, instructions=_SHARED),
        Prompt("correctness", _SHARED, _SCORE, VERDICT_TOKENS, whole_number("score", 5, reason=False)),
        Prompt("relevance", _SHARED, _SCORE, VERDICT_TOKENS, whole_number("score", 5, reason=False)),
    )
}
#: A score's start, written for a judge that continues replies, and the grammar of the rest: the digit and the brace.
_SCORE_START = '{"score": '
_SCORE_REST = 'root ::= [1-5] "}"'
#: The shared layout's prompts for a judge that continues replies: the scores begun for it.
CONTINUED_PROMPTS = {
    **SHARED_PROMPTS,
    **{
        name: replace(SHARED_PROMPTS[name], reply_start=_SCORE_START, continuation=_SCORE_REST)
        for name in ("correctness", "relevance")
    },
}
#: What each score task of the shared layout asks, after the item, where the judge writes the whole reply; a begun
#: score's task is its name alone (``TASK correctness.``): the system message defines it, and the reply's start
#: and grammar leave nothing to instruct.
_TASKS = {
    "correctness": "TASK correctness: grade the facts of the ANSWER against the REFERENCE.",
    "relevance": "TASK relevance: grade how well the ANSWER addresses the QUESTION.",
}
_REPLY = " Reply with the JSON object only."


def item_text(record: Record) -> str:
    """The item every shared-layout call about ``record`` starts with: the last four turns of history, the
    question, the answer and the references, as tagged blocks, and the blank line that ends them."""
    blocks = [
        *history_block(record),
        ("question", record.question),
        ("answer", record.answer),
        *(("reference", reference) for reference in record.references),
    ]
    return "\n\n".join(render_blocks(blocks)) + "\n\n"


def _shared_request(
    prompt: Prompt,
    record: Record,
    task: str,
    *,
    extra: list[tuple[str, str]] | None = None,
    schema: Mapping[str, Any] | None = None,
) -> ChatRequest:
    """``prompt``'s request about ``record``: the item, then the ``extra`` blocks, then ``task``, its closing line."""
    item = item_text(record)
    rest = "".join(block + "\n\n" for block in render_blocks(extra or []))
    return ChatRequest(
        (("system", prompt.instructions), ("user", item + rest + task)),
        prompt.name,
        schema or prompt.schema,
        prompt.max_tokens,
        shared=len(item),
        reply_start=prompt.reply_start,
        continuation=prompt.continuation,
    )


def _shared_claims(record: Record, text: str, language: Language | None) -> ChatRequest:
    """Split the answer (or the first reference, whose claims stand in where the answer abstains) in the item;
    any other text comes after the item in a block of its own."""
    extra: list[tuple[str, str]] = []
    if text == record.answer:
        named = "the ANSWER"
    elif record.references and text == record.references[0]:
        named = "the REFERENCE" if len(record.references) == 1 else "the first REFERENCE"
    else:
        named, extra = "the TEXT above", [("text", text)]
    task = f"TASK claims: split {named} into its factual claims. {claims_note(language)}".rstrip() + _REPLY
    return _shared_request(
        SHARED_PROMPTS["claim_split"], record, task, extra=extra, schema=claim_split_schema(text, language)
    )


@dataclass(frozen=True)
class Layout:
    """A layout: the prompt it asks for each prompt a metric reads, and the request for one record."""

    name: str
    prompts: Mapping[str, Prompt]
    requests: Mapping[str, Callable[[Record, str | None, Language | None], ChatRequest]]

    def prompt(self, prompt: Prompt) -> Prompt:
        """The prompt asked where a metric reads ``prompt``'s verdicts (``prompt`` itself when this layout has
        no version of its own)."""
        return self.prompts.get(prompt.name, prompt)

    def call(
        self, prompt: Prompt, record: Record, *, text: str | None = None, language: Language | None = None
    ) -> JudgeCall:
        """The call asking ``prompt`` (as this layout asks it) about ``record``; ``text`` is the text whose
        claims a claims prompt splits."""
        return JudgeCall(self.prompt(prompt), self.requests[prompt.name](record, text, language), len(record.contexts))


def _text(text: str | None) -> str:
    if text is None:
        raise ValueError("a claims call needs the text whose claims it asks for")
    return text


_CALLS = Layout(
    "calls",
    {},
    {
        "claims": lambda record, text, language: claims_request(record, _text(text), language),
        "claim_split": lambda record, text, language: claim_split_request(_text(text), language),
        "correctness": lambda record, text, language: correctness_request(record),
        "relevance": lambda record, text, language: relevance_request(record),
        "idk": lambda record, text, language: idk_request(record),
        "radbench": lambda record, text, language: radbench_request(record),
    },
)


def _shared_score(prompt: Prompt, record: Record) -> ChatRequest:
    """A score ``prompt``'s request about ``record``: its task's name alone where its reply is begun (see
    :data:`_TASKS`), else what the task asks and the instruction to reply with JSON only."""
    task = f"TASK {prompt.name}." if prompt.reply_start else _TASKS[prompt.name] + _REPLY
    return _shared_request(prompt, record, task)


def _shared_layout(prompts: Mapping[str, Prompt]) -> Layout:
    """The shared layout asking ``prompts`` (:data:`SHARED_PROMPTS`, or :data:`CONTINUED_PROMPTS`)."""
    return Layout(
        "shared",
        prompts,
        {
            **_CALLS.requests,  # the verifying claims call, IDK and RADBench keep their own
            "claim_split": lambda record, text, language: _shared_claims(record, _text(text), language),
            **{
                name: (lambda record, text, language, name=name: _shared_score(prompts[name], record))
                for name in _TASKS
            },
        },
    )


_BY_NAME = {layout.name: layout for layout in (_CALLS, _shared_layout(SHARED_PROMPTS))}
_SHARED_CONTINUED = _shared_layout(CONTINUED_PROMPTS)


def layout_of(judge: Any) -> Layout:
    """The layout of ``judge`` (its ``layout`` name; ``calls`` for a judge without one); in the shared layout, the
    scores begun for a judge that ``continues_replies``."""
    name = getattr(judge, "layout", "calls")
    if name == "shared" and getattr(judge, "continues_replies", False):
        return _SHARED_CONTINUED
    return _BY_NAME[name]


def judge_call(
    judge: Any, prompt: Prompt, record: Record, *, text: str | None = None, language: Language | None = None
) -> JudgeCall:
    """The call ``judge`` is asked, in its layout, for ``prompt`` about ``record`` (see :meth:`Layout.call`)."""
    return layout_of(judge).call(prompt, record, text=text, language=language)
