"""The judge prompts that write a test set's items from a corpus's chunks (``ragmeter generate``, issue 48).

One system message (``prompts/testset_question.txt``) describes every kind of question; each kind is a prompt of its own
(``testset_<kind>``), so that its calls are counted apart and its reply checked by its own rules, while the local judge
keeps one saved state of the shared instructions. A request shows the chunks numbered (and, for a follow-up, the
conversation so far) and ends with the kind's task and the language to write in. The reply: the question, the reference
answer, and the quotes of the chunks that state it, which the generator checks lexically before anything else
(:func:`~ragmeter.judges.nugget_prompts.quote_found`). :data:`ANSWERED` checks an unanswerable question against the
corpus's chunks nearest to it, and :data:`STANDALONE` whether a follow-up needs the conversation before it.

Which chunks a kind needs: :data:`CHUNKS_NEEDED` (two for ``two_chunks``, one for the others; an unanswerable
question is written from one chunk's topic and checked later against the whole corpus's nearest chunks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.judges.prompts import Prompt, VerdictError, instructions, reply_object
from ragmeter.judges.protocol import ChatRequest
from ragmeter.text.languages import LANGUAGES, Language

__all__ = [
    "ANSWERED",
    "ANSWERED_VERDICTS",
    "ANSWER_CHARS",
    "CHUNKS_NEEDED",
    "KINDS",
    "QUESTION_CHARS",
    "QUESTION_PROMPTS",
    "STANDALONE",
    "answered_request",
    "question_request",
    "standalone_request",
]

#: The kinds of question, as ``--types`` names them.
KINDS = ("factoid", "explanation", "two_chunks", "unanswerable", "follow_up")
#: Chunks a request of each kind shows.
CHUNKS_NEEDED = {"factoid": 1, "explanation": 1, "two_chunks": 2, "unanswerable": 1, "follow_up": 1}
QUESTION_CHARS = 240
ANSWER_CHARS = 600
_QUOTE_CHARS = 240
_MAX_QUOTES = 3
_TASKS = {
    "factoid": "Write a factoid question that CHUNK 1 answers with one short fact, its answer and quotes.",
    "explanation": "Write a how or why question that CHUNK 1 answers in one to three sentences, its answer and quotes.",
    "two_chunks": "Write a question that needs a fact of CHUNK 1 and a fact of CHUNK 2, its answer and quotes from "
    "both.",
    "unanswerable": 'Write a question on the chunks\' topic that no chunk answers; the answer is "" and there are no '
    "quotes.",
    "follow_up": "Write the user's next question in the HISTORY conversation, leaning on it, that CHUNK 1 answers; "
    "its answer and quotes.",
}


def _schema(kind: str) -> dict[str, Any]:
    quotes: dict[str, Any] = {
        "type": "array",
        "maxItems": 0 if kind == "unanswerable" else _MAX_QUOTES,
        "items": {"type": "string", "maxLength": _QUOTE_CHARS},
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["question", "answer", "quotes"],
        "properties": {
            "question": {"type": "string", "maxLength": QUESTION_CHARS},
            "answer": {"type": "string", "maxLength": 0 if kind == "unanswerable" else ANSWER_CHARS},
            "quotes": quotes,
        },
    }


def _checker(kind: str) -> Any:
    def check(data: Any, n_chunks: int) -> dict[str, Any]:
        reply = reply_object(data, ("question", "answer", "quotes"))
        question, answer, quotes = reply["question"], reply["answer"], reply["quotes"]
        if not isinstance(question, str) or not question.strip():
            raise VerdictError('"question" must be the question, a non-empty string')
        if not isinstance(answer, str) or not isinstance(quotes, list) or not all(isinstance(q, str) for q in quotes):
            raise VerdictError('"answer" must be a string and "quotes" a list of strings')
        quotes = [q.strip() for q in quotes if q.strip()]
        if kind == "unanswerable":
            if answer.strip() or quotes:
                raise VerdictError('an unanswerable question has the answer "" and no quotes')
        elif not answer.strip() or not quotes:
            raise VerdictError("write the answer, and quote the chunks' words that state it")
        return {"question": question.strip(), "answer": answer.strip(), "quotes": quotes}

    return check


#: The prompt of each kind: the shared instructions, the kind's schema and checker.
QUESTION_PROMPTS = {
    kind: Prompt(f"testset_{kind}", instructions("testset_question"), _schema(kind), 768, _checker(kind))
    for kind in KINDS
}


def question_request(
    kind: str, chunks: Sequence[str], *, history: Sequence[tuple[str, str]] = (), language: Language = LANGUAGES["en"]
) -> ChatRequest:
    """The request for one question of ``kind`` from ``chunks`` (:data:`CHUNKS_NEEDED` of them), a follow-up's
    conversation so far in ``history`` ((role, text) turns), written in ``language``."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of question {kind!r}: one of {', '.join(KINDS)}")
    if len(chunks) != CHUNKS_NEEDED[kind]:
        raise ValueError(f"a {kind} question is written from {CHUNKS_NEEDED[kind]} chunk(s), not {len(chunks)}")
    if (kind == "follow_up") != bool(history):
        raise ValueError("a follow-up question, and only one, is written after a conversation: give its history")
    blocks = [(f'chunk n="{number}"', text) for number, text in enumerate(chunks, start=1)]
    if history:
        blocks.append(("history", "\n".join(f"{role}: {text}" for role, text in history)))
    task = f"KIND: {kind}. {_TASKS[kind]} Write them in {language.name}. Reply with the JSON object only."
    return QUESTION_PROMPTS[kind].request(blocks, task)


#: Whether passages answer a question: an unanswerable item is kept only on ``no``.
ANSWERED_VERDICTS = ("answers", "partly", "no")


def _check_answered(data: Any, n_chunks: int) -> dict[str, Any]:
    reply = reply_object(data, ("quote", "verdict"))
    if not isinstance(reply["quote"], str):
        raise VerdictError('"quote" must be a string')
    if reply["verdict"] not in ANSWERED_VERDICTS:
        raise VerdictError(f'"verdict" is {reply["verdict"]!r}; use one of {", ".join(ANSWERED_VERDICTS)}')
    return {"quote": reply["quote"].strip(), "verdict": reply["verdict"]}


ANSWERED = Prompt(
    "testset_answered",
    instructions("testset_answered"),
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["quote", "verdict"],
        "properties": {
            "quote": {"type": "string", "maxLength": _QUOTE_CHARS},
            "verdict": {"type": "string", "enum": list(ANSWERED_VERDICTS)},
        },
    },
    160,
    _check_answered,
)


def answered_request(question: str, chunks: Sequence[str]) -> ChatRequest:
    """Do ``chunks`` (a corpus's nearest to ``question``) answer it? The check of an unanswerable item, made
    apart from the call that wrote it."""
    blocks = [("question", question), *((f'chunk n="{n}"', text) for n, text in enumerate(chunks, start=1))]
    return ANSWERED.request(
        blocks,
        "Do the chunks answer the QUESTION? Quote, then answer with answers, partly or "
        "no. Reply with the JSON object only.",
    )


def _check_standalone(data: Any, n_chunks: int) -> dict[str, Any]:
    verdict = reply_object(data, ("verdict",))["verdict"]
    if verdict not in ("standalone", "needs_history"):
        raise VerdictError(f'"verdict" is {verdict!r}; use standalone or needs_history')
    return {"verdict": verdict}


STANDALONE = Prompt(
    "testset_standalone",
    instructions("testset_standalone"),
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["verdict"],
        "properties": {"verdict": {"type": "string", "enum": ["standalone", "needs_history"]}},
    },
    32,
    _check_standalone,
)


def standalone_request(question: str, history: Sequence[tuple[str, str]]) -> ChatRequest:
    """Does a follow-up ``question`` need its ``history`` ((role, text) turns)? Its check, apart from the call that
    wrote it."""
    return STANDALONE.request(
        [("history", "\n".join(f"{role}: {text}" for role, text in history)), ("question", question)],
        "Can the QUESTION be understood without the HISTORY? Reply with the JSON object only.",
    )
