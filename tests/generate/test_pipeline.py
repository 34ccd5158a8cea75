"""Writing a test set on the scripted judge (ragmeter.testing.scripted_judge): items planned over the documents,
each check dropping what it should with its reason, the records ragmeter's reader takes unchanged, and a rerun
that asks nothing again."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Answerability
from ragmeter.io import record_from_dict
from ragmeter.io.native import record_to_dict
from ragmeter.judges import Judge, JudgeCache, ScriptedBackend
from ragmeter.testing.scripted_judge import reply_to
from ragmeter.testsets.checks import QUOTE_NOT_IN_CHUNKS, STATES_ITS_ANSWER
from ragmeter.testsets.chunking import Chunk
from ragmeter.testsets.corpus import CorpusChunks
from ragmeter.testsets.pipeline import DUPLICATE, NOT_SUPPORTED, generate, plan

ROWS = [
    ("d1", "c1", "The Central Library opens at nine. It has three floors."),
    ("d1", "c2", "Parking costs three dollars. The garage is underground."),
    ("d2", "c3", "The museum closes at six. Entry is free."),
    ("d2", "c4", "NO QUOTE the cafe sells tea."),
    ("d3", "c5", "SAYS IT the pool is heated."),
    ("d3", "c6", "ADD CLAIM the gym opens early."),
    ("d4", "c7", "BROKEN the zoo opens at ten."),
    ("d5", "c8", "The Central Library closes at noon on Sundays."),
]  # the same question as c1's
CORPUS = CorpusChunks(
    tuple(
        Chunk(chunk_id, doc, text, [d for d, _, _ in ROWS[:i]].count(doc))
        for i, (doc, chunk_id, text) in enumerate(ROWS)
    ),
    {chunk_id: "en" for _, chunk_id, _ in ROWS},
)


def _judge(cache: JudgeCache | None = None) -> tuple[Judge, ScriptedBackend]:
    backend = ScriptedBackend(reply_to)
    return Judge(backend, claims="split", cache=cache, max_attempts=1), backend


def test_each_check_drops_what_it_should_and_the_rest_is_kept() -> None:
    judge, _ = _judge()
    with judge:
        records, report = generate(CORPUS, judge, n=10, kinds=("factoid",))
    by_source = {tuple(r.qrels): r for r in records}
    assert set(by_source) in ({("c1",), ("c2",), ("c3",)}, {("c8",), ("c2",), ("c3",)})  # c1 or c8: one question
    museum = by_source[("c3",)]
    assert (museum.question, museum.references, museum.answer) == (
        "What does the text say about the museum?",
        ("The museum closes at six.",),
        "",
    )
    assert museum.qrels == {"c3": 2} and museum.answerability is Answerability.ANSWERABLE
    assert {k: museum.metadata[k] for k in ("language", "question_type", "source_documents")} == {
        "language": "en",
        "question_type": "factoid",
        "source_documents": ["d2"],
    }
    assert museum.metadata["generator"] == report.signature and "seed:0" in report.signature
    assert report.asked == {"factoid": 8} and report.kept == {"factoid": 3}
    dropped = {reason: count for (_, reason), count in report.dropped.items()}
    assert {
        reason: dropped.pop(reason) for reason in (QUOTE_NOT_IN_CHUNKS, STATES_ITS_ANSWER, NOT_SUPPORTED, DUPLICATE)
    } == dict.fromkeys((QUOTE_NOT_IN_CHUNKS, STATES_ITS_ANSWER, NOT_SUPPORTED, DUPLICATE), 1)
    (failure,) = dropped  # the BROKEN chunk's reply, never a number
    assert failure.startswith("judge failed (testset_factoid): ") and dropped[failure] == 1
    assert report.why_short.startswith("3 of 10 items kept after 8 asked (2 per item at most): dropped 1 × ")
    for record in records:  # ragmeter's reader takes them unchanged
        assert record_from_dict(record_to_dict(record)) == record


def test_a_two_chunk_item_needs_both_chunks_of_one_document() -> None:
    rows = [chunk for chunk in CORPUS.chunks if chunk.doc_id in ("d1", "d5")]
    judge, _ = _judge()
    with judge:
        records, report = generate(CorpusChunks(tuple(rows), CORPUS.languages), judge, n=1, kinds=("two_chunks",))
    (record,) = records  # d5 has one chunk: never asked
    assert record.qrels == {"c1": 1, "c2": 1} and record.metadata["source_documents"] == ["d1"]
    assert record.references == ("The Central Library opens at nine. Parking costs three dollars.",)
    assert report.asked == {"two_chunks": 1} and report.kept == {"two_chunks": 1}
    assert all(len(p.chunks) == 2 and len({c.doc_id for c in p.chunks}) == 1 for p in plan(CORPUS, 5, ["two_chunks"]))


def test_the_plan_spreads_over_documents_and_follows_its_seed() -> None:
    first = plan(CORPUS, 5, ["factoid", "explanation"], seed=3)
    assert [p.kind for p in first[:4]] == ["factoid", "explanation"] * 2
    assert len({p.chunks[0].doc_id for p in first[:5]}) == 5  # five documents before any gives a second
    assert len(first) == len(ROWS) and plan(CORPUS, 5, ["factoid", "explanation"], seed=3) == first
    assert [p.chunks for p in plan(CORPUS, 5, ["factoid"], seed=4)] != [
        p.chunks for p in plan(CORPUS, 5, ["factoid"], seed=3)
    ]
    assert len(plan(CORPUS, 2, ["factoid"])) == 4  # at most two asks per item wanted
    with pytest.raises(ConfigError, match="not essay"):
        plan(CORPUS, 2, ["essay"])


def test_a_rerun_asks_nothing_again(tmp_path: Path) -> None:
    judge, backend = _judge(JudgeCache(tmp_path / "cache.sqlite"))
    with judge:
        first, _ = generate(CORPUS, judge, n=3)
    asked = len(backend.requests)
    again, backend_again = _judge(JudgeCache(tmp_path / "cache.sqlite"))
    with again:
        second, _ = generate(CORPUS, again, n=3)
    assert (
        second == first
        and asked > 0
        and backend_again.requests == [r for r in backend_again.requests if "BROKEN" in r.messages[1][1]]
    )


def test_an_unanswerable_question_is_kept_only_when_its_nearest_chunks_do_not_answer_it() -> None:
    from ragmeter.models import load_embedder

    rows = [("m", "The museum closes at six."), ("m", "Museum entry is free during holidays.")] + [
        ("p", f"Parking costs {word}.")
        for word in (
            "apply on weekdays",
            "are paid at machines",
            "rise in summer",
            "are lower for residents",
            "are listed online",
            "fund the roads",
            "go up in May",
        )
    ]
    chunks = tuple(Chunk(f"u{i}", doc, text, i) for i, (doc, text) in enumerate(rows))
    corpus = CorpusChunks(chunks, {c.chunk_id: "en" for c in chunks})
    judge, backend = _judge()
    with judge:
        records, report = generate(
            corpus, judge, n=5, kinds=("unanswerable",), embedder_for=lambda code: load_embedder("hashing", code)
        )
    # the museum's two topics ask what the museum (its entry) costs on public holidays, which a chunk answers; the
    # parking chunks ask one question seven times, which none of its five nearest answers: one kept, six repeats
    (record,) = records
    assert record.question == "What does parking costs cost on public holidays?"
    assert (record.references, record.qrels, record.answerability) == ((), None, Answerability.UNANSWERABLE)
    assert record.metadata["source_documents"] == ["p"]
    assert {reason: count for (_, reason), count in report.dropped.items()} == {
        "a chunk of the corpus the question is nearest to answers it (judge: answers)": 2,
        DUPLICATE: 6,
    }
    answered = [r for r in backend.requests if r.schema_name == "testset_answered"]
    assert len({r.messages[1][1] for r in answered}) == 3 and all(
        r.messages[1][1].count("<chunk") == 5 for r in answered
    )
    with pytest.raises(ConfigError, match="give an embedder"):
        generate(corpus, judge, n=1, kinds=("unanswerable",))


def test_a_follow_up_leans_on_a_first_turn_written_from_another_chunk_of_its_document() -> None:
    rows = [
        ("lib", "The Central Library opens at nine."),
        ("lib", "It has three floors."),
        ("pool", "The pool is heated."),
        ("pool", "STANDALONE the pool has six lanes."),
        ("zoo", "NO QUOTE the zoo opens at ten."),
        ("zoo", "It keeps lions."),
    ]
    chunks = tuple(Chunk(f"f{i}", doc, text, i) for i, (doc, text) in enumerate(rows))
    judge, backend = _judge()
    with judge:
        records, report = generate(
            CorpusChunks(chunks, {c.chunk_id: "en" for c in chunks}), judge, n=2, kinds=("follow_up",)
        )
    (record,) = records
    assert [(t.role, t.text) for t in record.history] == [
        ("user", "What does the text say about the central?"),
        ("assistant", "The Central Library opens at nine."),
    ]
    assert (record.question, record.references, record.qrels) == (
        "And what else is true of it?",
        ("It has three floors.",),
        {"f1": 2},
    )
    assert record.metadata["turn"] == 2 and record.conversation_id == record.id
    # the pool's follow-up names what it asks about: it does not need its conversation; the zoo's first turn failed
    assert dict(report.dropped) == {
        ("follow_up", "the follow-up can be understood without its conversation"): 1,
        ("follow_up", "its first turn was dropped: a quote of the answer's evidence is not words of its chunks"): 1,
    }
    follow_ups = [r for r in backend.requests if r.schema_name == "testset_follow_up"]
    assert all("<history>\nuser: What does the text say about the" in r.messages[1][1] for r in follow_ups)


def test_an_indonesian_document_gets_an_indonesian_item() -> None:
    chunks = (Chunk("k1", "perpus", "Perpustakaan buka pukul 08.00 setiap hari. Kartu anggota gratis.", 0),)
    judge, backend = _judge()
    with judge:
        records, _ = generate(CorpusChunks(chunks, {"k1": "id"}), judge, n=1, kinds=("factoid",))
    (written,) = [r for r in backend.requests if r.schema_name == "testset_factoid"]
    assert written.messages[1][1].endswith("Write them in Indonesian. Reply with the JSON object only.")
    (record,) = records
    assert record.metadata["language"] == "id" and record.references == ("Perpustakaan buka pukul 08.00 setiap hari.",)
    assert record_from_dict(record_to_dict(record)).metadata["language"] == "id"


def test_every_chunk_that_holds_the_answer_is_in_the_qrels() -> None:
    chunks = (
        Chunk("a", "pool", "The pool opens at seven. It is heated.", 0),
        Chunk("b", "faq", "Early swimmers ask: the pool opens at seven. Lanes are free.", 0),
        Chunk("c", "faq", "The gym opens at six.", 1),
    )
    judge, _ = _judge()
    with judge:
        records, _ = generate(CorpusChunks(chunks, dict.fromkeys("abc", "en")), judge, n=3, kinds=("factoid",))
    by_question = {r.references[0]: r.qrels for r in records}
    assert by_question["The pool opens at seven."] == {"a": 2, "b": 2}  # the FAQ's chunk holds it too
    assert by_question["The gym opens at six."] == {"c": 2}


def test_each_batch_reports_its_progress() -> None:
    seen: list[tuple[int, int]] = []
    judge, _ = _judge()
    with judge:
        records, _ = generate(
            CORPUS,
            judge,
            n=10,
            kinds=("factoid",),
            on_batch=lambda so_far: seen.append((sum(so_far.asked.values()), sum(so_far.kept.values()))),
        )
    assert seen == [(8, 3)] and len(records) == 3  # eight chunks: one batch
