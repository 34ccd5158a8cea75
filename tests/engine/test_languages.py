"""The language setting in runs: English data scores exactly as before under ``auto`` and ``en``; Indonesian records
take the Indonesian tools and the multilingual embedder, and the report and the signatures say so."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter import Settings, evaluate
from ragmeter.cli import main
from ragmeter.core.errors import ConfigError, ModelError
from ragmeter.core.settings import parse_tau_sim
from ragmeter.core.signature import diff
from ragmeter.io.readers import read_records
from ragmeter.metrics.mtrag.algorithmic import idk_eval_from_detector
from ragmeter.models import load_embedder, multilingual_e5
from ragmeter.report.terminal import language_lines
from ragmeter.text import LANGUAGES, IdkDetector, split_sentences
from ragmeter.text.languages import record_language

DATA = Path(__file__).parents[1] / "text" / "data"
DEMO = Path(str(resources.files("ragmeter") / "data" / "demo.jsonl"))
DEMO_ID = Path(str(resources.files("ragmeter") / "data" / "demo-id.jsonl"))
#: The packaged MiniLM's model id: its file's digest and the tokens it keeps (README, "Signatures").
MINILM = "all-MiniLM-L6-v2-int8-onnx@sha256:8199be6f/max_len:256"
ENGLISH_METRICS = [
    "overlap",
    "faithfulness_fallback",
    "abstained",
    "idk_citation_count",
    "exact_match",
    "token_f1",
    "RB_agg_idk",
    "faithfulness_offline",
]


def test_english_data_scores_the_same_under_auto_and_en() -> None:
    # the demo's last records are Indonesian (q39–q45: its assistant answers in the question's language)
    records = [record for record in read_records(DEMO) if record.id not in {"q39", "q40", "q41", "q44", "q45"}]
    auto = evaluate(records, metrics=ENGLISH_METRICS)
    english = evaluate(records, metrics=ENGLISH_METRICS, settings=Settings(language="en"))
    for metric in ENGLISH_METRICS:
        assert np.array_equal(auto.scores[metric], english.scores[metric], equal_nan=True), metric
        # the signatures differ in the language setting, and under auto name what Indonesian records would get
        assert set(diff(auto.signatures[metric], english.signatures[metric])) <= {
            "language",
            "embedder.id",
            "tau_sim.id",
        }, metric
    assert set(auto.languages) == {"en"}


def test_the_demos_indonesian_records_are_read_as_indonesian() -> None:
    result = evaluate(read_records(DEMO), metrics=["abstained"])
    indonesian = {item for item, code in zip(result.item_ids, result.languages, strict=True) if code == "id"}
    assert indonesian == {"q39", "q40", "q41", "q44", "q45"}
    # "Saya tidak tahu." (q41) abstains under auto, as it did when both languages' patterns applied to every record
    assert result.scores["abstained"][result.item_ids.index("q41")] == 1.0


def test_mtrag_records_are_all_read_as_english(shared_data: Callable[..., Path]) -> None:
    records = read_records(shared_data("mtrag", "human_eval_tasks.jsonl"))
    assert {record_language(record, "auto").code for record in records} == {"en"}


def test_idk_detection_on_idk_mrc_meets_the_bar(shared_data: Callable[..., Path]) -> None:
    """IDK-MRC's test split: a held-out refusal (``report`` list, not read while writing the patterns) for each
    unanswerable question, the first answer span for each answerable one."""
    paragraphs = json.loads(shared_data("indonesian", "idk_mrc", "test.json").read_text(encoding="utf-8"))
    refusals = json.loads((DATA / "idk_refusal_templates.json").read_text(encoding="utf-8"))["report"]
    questions = [q for paragraph in paragraphs for q in paragraph["qas"]]
    declined = [
        idk_eval_from_detector(refusals[i % len(refusals)], IdkDetector(), LANGUAGES["id"]) == 1
        for i, _ in enumerate(q for q in questions if q["is_impossible"])
    ]
    flagged = [
        idk_eval_from_detector(q["answers"][0]["text"], IdkDetector(), LANGUAGES["id"]) == 1
        for q in questions
        if not q["is_impossible"]
    ]
    balanced = (np.mean(declined) + 1 - np.mean(flagged)) / 2
    assert balanced >= 0.95 and np.mean(flagged) <= 0.02


def test_indonesian_demo_takes_the_indonesian_tools_and_the_multilingual_embedder() -> None:
    result = evaluate(read_records(DEMO_ID), metrics=["overlap", "abstained"])
    assert result.language_counts == {"id": 10}
    signature = result.signatures["overlap"].settings
    assert signature["embedder.id"] == multilingual_e5.model_id()
    assert signature["tau_sim.id"] == multilingual_e5.TAU_SIM
    assert signature["language"] == "auto/py3langid-0.4.0/en-1+id-3"
    only_id = evaluate(read_records(DEMO_ID), metrics=["overlap"], settings=Settings(language="id"))
    # Indonesian first; English named too, since a record's own language field may still choose it
    assert dict(only_id.signatures["overlap"].settings) == {
        "embedder": multilingual_e5.model_id(),
        "tau_sim": 0.91,
        "embedder.en": MINILM,
        "tau_sim.en": 0.65,
        "language": "id/en-1+id-3",
        "idk": "idk-en-1+id-3",
        "splitter": "nupunkt-0.8.0",
    }
    assert np.array_equal(only_id.scores["overlap"], result.scores["overlap"])
    # the two refusals of unanswerable questions abstain: every sentence is an Indonesian IDK sentence
    records = {record.id: record for record in read_records(DEMO_ID)}
    abstaining = [item for item, value in zip(result.item_ids, result.scores["abstained"], strict=True) if value]
    assert all(records[item].answerability.value == "UNANSWERABLE" for item in abstaining) and len(abstaining) == 2


def test_the_report_names_each_languages_embedder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["run", str(DEMO_ID), "--metrics", "overlap", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "Languages (--language auto): 10 Indonesian" in out
    assert f"Indonesian items embedded by {multilingual_e5.model_id()} at tau_sim {multilingual_e5.TAU_SIM}" in out
    rows = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {row["language"] for row in rows} == {"id"}


def test_the_multilingual_embedder_gives_unit_vectors_that_tell_paraphrase_from_unrelated() -> None:
    embedder = load_embedder("multilingual")
    texts = [
        "Kantor kelurahan buka setiap hari Senin sampai Jumat.",
        "Kantor kelurahan melayani warga dari Senin hingga Jumat.",
        "Harga cabai naik karena musim hujan.",
    ]
    vectors = embedder.encode(texts)
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    # the vectors do not depend on the batch
    alone = np.vstack([embedder.encode([text]) for text in texts])
    assert np.allclose(alone, vectors, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


def test_a_model_file_with_another_digest_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multilingual_e5, "MODEL_SHA256", "0" * 64)
    with pytest.raises(ModelError, match=r"the packaged multilingual embedding model .* has sha256 1571fc98"):
        multilingual_e5.MultilingualE5()


def test_overlap_takes_any_embedding_dimension() -> None:
    record = {
        "id": "a",
        "question": "q",
        "answer": "Kantor buka hari Senin [CIT:d1].",
        "language": "id",
        "contexts": [{"doc_id": "d1", "text": "Kantor kelurahan buka setiap hari Senin."}],
    }
    for backend in ("onnx", "multilingual"):
        value = evaluate([record], metrics=["overlap"], settings=Settings(embedder=backend)).scores["overlap"][0]
        assert not math.isnan(value)


def test_indonesian_sentences_keep_citations_with_the_sentence_before() -> None:
    text = "Kantor pindah ke Jl. Sudirman No. 5, Kec. Setiabudi.[CIT:d1] Layanan buka tgl. 5 Agt. 2024 [CIT:d2]."
    assert split_sentences(text, LANGUAGES["id"]) == [
        "Kantor pindah ke Jl. Sudirman No. 5, Kec. Setiabudi.[CIT:d1]",
        "Layanan buka tgl. 5 Agt. 2024 [CIT:d2].",
    ]


def _overlap(answer: str, **settings: Any) -> float:
    record = {
        "id": "a",
        "question": "Di mana kantor Samsat?",
        "answer": answer,
        "contexts": [
            {
                "doc_id": "d1",
                "text": "Kantor Samsat pindah ke Jalan Sudirman Nomor 5, Kecamatan "
                "Setiabudi, pada tanggal 5 Agustus 2024.",
            }
        ],
    }
    return float(evaluate([record], metrics=["overlap"], settings=Settings(**settings)).scores["overlap"][0])


def test_an_answer_with_abbreviations_scores_as_the_same_answer_spelled_out() -> None:
    abbreviated = "Kantor Samsat pindah ke Jl. Sudirman No. 5, Kec. Setiabudi, pada tgl. 5 Agt. 2024 [CIT:d1]."
    spelled = (
        "Kantor Samsat pindah ke Jalan Sudirman Nomor 5, Kecamatan Setiabudi, pada tanggal 5 Agustus 2024 [CIT:d1]."
    )
    assert _overlap(abbreviated) == _overlap(spelled) == 1.0  # detected as Indonesian
    # read as English, the abbreviations cut the answer into five pieces: four uncited, and the cited one, "2024
    # [CIT:d1].", too short to be like the chunk
    assert _overlap(abbreviated, language="en", embedder="multilingual", tau_sim=multilingual_e5.TAU_SIM) == 0.0


# ---------------------------------------------------------------- what --tau-sim and --language do to each language

CHUNK = "Kantor kelurahan buka setiap hari Senin sampai Jumat pukul 08.00 sampai 15.00."
#: An Indonesian claim unrelated to CHUNK ("chilli prices rose because of the rainy season"): the multilingual
#: embedder's cosine with it lies between MiniLM's τ_sim (0.65, or 0.7 given) and its own (0.91).
UNRELATED = "Harga cabai naik karena musim hujan."
MIXED = [
    {
        "id": "en1",
        "question": "When is the office open?",
        "answer": "The office opens on Mondays [CIT:d1].",
        "contexts": [{"doc_id": "d1", "text": "The office opens every Monday to Friday."}],
    },
    {
        "id": "id1",
        "question": "Kapan kantor kelurahan buka?",
        "answer": f"{UNRELATED[:-1]} [CIT:d1].",
        "language": "id",
        "contexts": [{"doc_id": "d1", "text": CHUNK}],
    },
]


def test_the_unrelated_claims_cosine_lies_between_the_two_thresholds() -> None:
    vectors = load_embedder("multilingual").encode([UNRELATED, CHUNK])
    assert 0.7 < float(vectors[0] @ vectors[1]) < 0.91


def test_one_tau_sim_given_applies_to_every_language_and_the_run_says_so() -> None:
    default = evaluate(MIXED, metrics=["overlap"])
    given = evaluate(MIXED, metrics=["overlap"], settings=Settings(tau_sim=0.7))
    # the unrelated Indonesian claim: below its embedder's own 0.91, above the 0.7 given
    assert default.scores["overlap"][1] == 0.0 and given.scores["overlap"][1] == 1.0
    signature = given.signatures["overlap"].settings
    assert (signature["tau_sim"], signature["tau_sim.id"]) == (0.7, 0.7)
    assert (signature["embedder"], signature["embedder.id"]) == (MINILM, multilingual_e5.model_id())
    lines = language_lines(given)
    assert lines[1:] == [
        "Languages (--language auto): 1 English, 1 Indonesian",
        f"  English items embedded by {MINILM} at tau_sim 0.7",
        f"  Indonesian items embedded by {multilingual_e5.model_id()} at tau_sim 0.7",
        (
            "  tau_sim 0.7 given applies to Indonesian items too (their embedder's own: 0.91; --tau-sim en=0.7 sets "
            "English only)"
        ),
    ]
    # no τ_sim given: each language's own, said per language, and no note
    model = multilingual_e5.model_id()
    assert language_lines(default)[2:] == [
        f"  English items embedded by {MINILM} at tau_sim 0.65",
        f"  Indonesian items embedded by {model} at tau_sim 0.91",
    ]


def test_a_tau_sim_by_language_sets_the_languages_it_names_only() -> None:
    english_only = evaluate(MIXED, metrics=["overlap"], settings=Settings(tau_sim={"en": 0.7}))
    assert english_only.scores["overlap"][1] == 0.0  # the Indonesian claim keeps 0.91
    signature = english_only.signatures["overlap"].settings
    assert (signature["tau_sim"], signature["tau_sim.id"]) == (0.7, 0.91)
    assert not any("given" in line for line in language_lines(english_only))
    indonesian_only = evaluate(MIXED, metrics=["overlap"], settings=Settings(tau_sim=parse_tau_sim("id=0.8")))
    assert indonesian_only.scores["overlap"][1] == 1.0
    signature = indonesian_only.signatures["overlap"].settings
    assert (signature["tau_sim"], signature["tau_sim.id"]) == (0.65, 0.8)


def test_tau_sim_values_are_read_and_checked() -> None:
    assert parse_tau_sim("0.7") == 0.7
    assert parse_tau_sim(" en = 0.7, id=0.93") == {"en": 0.7, "id": 0.93}
    for text, message in (
        ("fr=0.5", "names language codes \\(en, id\\), got 'fr'"),
        ("en=1.5", "tau_sim of en must lie in \\[0, 1\\], got 1.5"),
        ("en=0.7,en=0.8", "names each language once"),
        ("high", "must be a number"),
        ("en=0.7,0.8", "CODE=NUMBER pairs"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_tau_sim(text)
    with pytest.raises(ConfigError, match="got 'fr'"):
        Settings(tau_sim={"fr": 0.5})
    with pytest.raises(ConfigError, match="tau_sim of id must lie in"):
        Settings(tau_sim={"id": -0.1})
    assert Settings(tau_sim={"en": 0.7}) == Settings(tau_sim={"en": 0.7}) != Settings(tau_sim={"en": 0.8})


REFUSALS = [
    {"id": "e1", "question": "When was the library built?", "answer": "I don't know."},
    {"id": "i1", "question": "Kapan perpustakaan dibangun?", "answer": "Saya tidak tahu.", "language": "id"},
    {"id": "i2", "question": "Kapan pasar dibangun?", "answer": "Saya tidak tahu.", "language": "Indonesian"},
]


def test_a_records_language_field_wins_over_language_en_and_the_run_says_so() -> None:
    result = evaluate(REFUSALS, metrics=["abstained", "overlap"], settings=Settings(language="en"))
    # "Saya tidak tahu." is "I don't know": read with the Indonesian patterns its field names, it abstains
    assert list(result.scores["abstained"]) == [1.0, 1.0, 1.0]
    assert result.languages == ("en", "id", "id")
    without_field = [{k: v for k, v in record.items() if k != "language"} for record in REFUSALS]
    assert list(
        evaluate(without_field, metrics=["abstained"], settings=Settings(language="en")).scores["abstained"]
    ) == [1.0, 0.0, 0.0]
    assert language_lines(result)[1:] == [
        "Languages (--language en): 2 Indonesian, 1 English",
        "  2 records' own language field (id) overrode --language en: a record's field wins",
        f"  Indonesian items embedded by {multilingual_e5.model_id()} at tau_sim 0.91",
        f"  English items embedded by {MINILM} at tau_sim 0.65",
    ]
    signature = result.signatures["overlap"].settings
    assert signature["language"] == result.signatures["abstained"].settings["language"] == "en/en-1+id-3"
    assert (signature["embedder.id"], signature["tau_sim.id"]) == (multilingual_e5.model_id(), 0.91)


def test_no_override_is_said_under_auto_and_one_record_is_said_as_one() -> None:
    assert not any("overrode" in line for line in language_lines(evaluate(REFUSALS, metrics=["abstained"])))
    english_field = [{**REFUSALS[0], "language": "en"}, *REFUSALS[1:]]
    result = evaluate(english_field, metrics=["abstained"], settings=Settings(language="id"))
    assert "  1 record's own language field (en) overrode --language id: a record's field wins" in language_lines(
        result
    )


def test_the_run_report_says_which_records_overrode_language(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "refusals.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in REFUSALS), encoding="utf-8")
    assert main(["run", str(path), "--language", "en", "--metrics", "abstained", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "Languages (--language en): 2 Indonesian, 1 English" in out
    assert "2 records' own language field (id) overrode --language en: a record's field wins" in out
    assert "language:en/en-1+id-3" in out
