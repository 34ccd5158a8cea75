"""Indonesian text tools against texts written for them by hand (``tests/text/data/``, written without reading the
patterns they test): refusals and near-miss answers, sentences with abbreviations, claims against chunks.

What each file holds: ``id_refusals.jsonl`` refusals of a RAG assistant and answers that use the same words without
declining ("Warga tidak tahu bahwa jalan itu ditutup"); ``id_sentences.jsonl`` texts with Jl., Kec., tgl., Agt.,
RT./RW., dkk. in mid-sentence and dll. ending one, with their sentences; ``id_claims.jsonl`` a claim, the chunks,
and whether they support it, by a person's reading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmeter import Settings, evaluate
from ragmeter.core.errors import ConfigError, InputError
from ragmeter.judges import ChatRequest, Judge, ScriptedBackend
from ragmeter.judges.checks.evidence import supports
from ragmeter.judges.checks.refusal_cues import declines_in_words
from ragmeter.metrics.lexical import exact_match, token_f1
from ragmeter.text import LANGUAGES, IdkDetector, detect_language, split_sentences

DATA = Path(__file__).parent / "data"
ID, EN = LANGUAGES["id"], LANGUAGES["en"]


def jsonl(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def says_idk(answer: str, language: Any) -> bool:
    return any(IdkDetector().is_idk(sentence, language) for sentence in split_sentences(answer, language))


REFUSALS = [row["text"] for row in jsonl("id_refusals.jsonl") if row["kind"] == "refusal"]
NEAR_MISSES = [row["text"] for row in jsonl("id_refusals.jsonl") if row["kind"] == "near_miss"]


@pytest.mark.parametrize("answer", REFUSALS)
def test_every_indonesian_refusal_is_found(answer: str) -> None:
    assert says_idk(answer, ID)
    assert declines_in_words(answer, ID)  # and a judge's "declines" verdict on it stands


@pytest.mark.parametrize("answer", NEAR_MISSES)
def test_no_answer_that_only_uses_the_words_of_a_refusal_is_flagged(answer: str) -> None:
    assert not says_idk(answer, ID)


def test_the_files_hold_what_the_issue_asks_and_english_patterns_miss_them() -> None:
    assert len(REFUSALS) >= 16 and len(NEAR_MISSES) >= 6
    # the English patterns alone find none of them: the language is what finds them
    assert sum(says_idk(answer, EN) for answer in REFUSALS) == 0


def test_sentences_with_indonesian_abbreviations_split_right() -> None:
    cases = jsonl("id_sentences.jsonl")
    assert len(cases) >= 50
    wrong = [case["text"] for case in cases if split_sentences(case["text"], ID) != case["sentences"]]
    assert wrong == []
    # without the language, nupunkt's English model breaks most of them at an abbreviation
    assert sum(split_sentences(case["text"]) != case["sentences"] for case in cases) > len(cases) / 2


def test_indonesian_evidence_check_reads_more_claims_right_than_the_english_one() -> None:
    cases = jsonl("id_claims.jsonl")
    right = {
        name: [supports(c["chunks"], c["claim"], language=language) == c["supported"] for c in cases]
        for name, language in (("id", ID), ("en", EN))
    }
    # what a check of words cannot see, it misses: "setiap penerima" said as "per penerima" (a scope word the chunk
    # lacks), one wrong place name among six words, a dropped "tidak" (a function word, as English "not"),
    # "sesudah" for "sebelum"
    assert sum(right["id"]) / len(cases) >= 0.8
    assert sum(right["id"]) > sum(right["en"])


def test_indonesian_numbers_and_currency_in_the_evidence_check() -> None:
    chunk = ["Biaya pembuatan paspor Rp350.000 dan jaraknya 2,5 km dari stasiun; antrean 1.500 orang."]
    assert supports(chunk, "Biaya paspor Rp 350.000.", language=ID)
    assert supports(chunk, "Antrean mencapai 1500 orang.", language=ID)
    assert not supports(chunk, "Jaraknya 25 km dari stasiun.", language=ID)  # 2,5 is two and a half
    assert supports(chunk, "Jaraknya 25 km dari stasiun.", language=EN)  # English reads "2,5" as 25


def test_extended_normalisation_joins_what_squad_keeps_apart() -> None:
    assert token_f1("anak-anak", ["anak anak"]) == 0.0  # SQuAD's: "anakanak"
    assert token_f1("anak-anak", ["anak anak"], extended=True) == 1.0
    assert exact_match("Rp25.000", ["Rp 25.000"]) == 0.0
    assert exact_match("Rp25.000", ["Rp 25.000"], extended=True) == 1.0
    assert exact_match("Rp. 25.000", ["rp25000"], extended=True) == 1.0


def test_the_run_setting_chooses_the_normalisation_and_signs_it() -> None:
    records = [{"id": "a", "question": "Berapa?", "answer": "Rp25.000", "references": ["Rp 25.000"]}]
    squad = evaluate(records, metrics=["exact_match"])
    extended = evaluate(records, metrics=["exact_match"], settings=Settings(normalization="extended"))
    assert (squad.summary("exact_match").value, extended.summary("exact_match").value) == (0.0, 1.0)
    assert squad.signatures["exact_match"].settings["normalizer"] == "squad-v1.1"
    assert extended.signatures["exact_match"].settings["normalizer"] == "squad-v1.1+extended-1"


def test_language_detection_and_a_records_own_field() -> None:
    assert detect_language("Berapa biaya parkir di Jl. Sudirman? Rp5.000 per jam.") == "id"
    assert detect_language("How much is parking? Five dollars an hour.") == "en"
    assert detect_language("OK") == "en"  # a tie goes to English
    assert detect_language("123 456") == "en"  # no letters

    def language_of(field: Any, setting: str = "auto") -> str:
        record = {"id": "r1", "question": "How much is parking?", "answer": "Five dollars.", "language": field}
        result = evaluate([record], metrics=["abstained"], settings=Settings(language=setting))
        return result.languages[0]

    assert language_of(None) == "en"
    assert language_of("id") == "id" and language_of("id-ID") == "id" and language_of("Indonesian") == "id"
    assert language_of("en", setting="id") == "en"  # the record's field wins over the run's setting
    with pytest.raises(InputError, match="field 'language': the language 'fr' is not one ragmeter knows"):
        language_of("fr")  # refused as the record is read, before any scoring
    with pytest.raises(ConfigError, match="language must be one of auto, en, id"):
        Settings(language="ms")


def test_an_indonesian_refusal_of_an_unanswerable_question_scores_one_with_a_judge_that_declines() -> None:
    def declines(request: ChatRequest) -> str:
        if request.schema_name == "idk":
            return json.dumps({"reason": "menolak", "verdict": "declines"})
        return json.dumps({"claims": []})

    records = [
        {
            "id": f"r{i}",
            "question": "Kapan perpustakaan kota dibangun?",
            "answer": answer,
            "answerability": "UNANSWERABLE",
            "references": [""],
            "contexts": [{"doc_id": "d1", "text": "Perpustakaan kota buka pukul 08.00 sampai 16.00."}],
        }
        for i, answer in enumerate(REFUSALS)
    ]
    with Judge(ScriptedBackend(declines)) as judge:
        indonesian = evaluate(records, metrics=["RL_F_idk", "idk_judge"], judge=judge)
        english = evaluate(records, metrics=["idk_judge"], judge=judge, settings=Settings(language="en"))
    assert list(indonesian.scores["idk_judge"]) == [1.0] * len(REFUSALS)
    assert list(indonesian.scores["RL_F_idk"]) == [1.0] * len(REFUSALS)
    assert indonesian.language_counts == {"id": len(REFUSALS)}
    # read as English, no refusal has a word that declines, so the check turns the verdict into "answers"
    assert list(english.scores["idk_judge"]) == [0.0] * len(REFUSALS)


def test_the_identifiers_unpacked_arrays_are_cached_and_a_broken_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.text.languages.detection import DETECTOR_ID, identifier

    monkeypatch.setenv("RAGMETER_CACHE", str(tmp_path))
    cached = tmp_path / "languages" / f"{DETECTOR_ID}-en-id.npz"
    texts = ["Saya tidak tahu.", "I don't know.", "Berapa biaya parkir di Jl. Sudirman?", "OK"]
    try:
        identifier.cache_clear()
        fresh = [identifier(("en", "id")).classify(text) for text in texts]
        assert cached.is_file()
        identifier.cache_clear()
        assert [identifier(("en", "id")).classify(text) for text in texts] == fresh  # read back from the cache
        cached.write_bytes(b"not an npz file")
        identifier.cache_clear()
        assert [identifier(("en", "id")).classify(text) for text in texts] == fresh  # rebuilt from the wheel
        assert cached.read_bytes()[:2] == b"PK"  # and the cache written again, as an npz (zip) file
        assert [code for code, _ in fresh] == ["id", "en", "id", "en"]
    finally:
        identifier.cache_clear()
