"""The Indonesian IDK patterns on a grammar of refusals and on real sentences that negate without refusing
(``id_refusal_grammar.py``; issue 45).

The truth is how each sentence was made: the grammar writes refusals only, the negation set is Wikipedia, news and
people's sentences from IDK-MRC and IndoNLI. The bounds are the figures measured when the patterns were last
changed (``benchmarks/README.md``, Indonesian): a change that misses more, or flags a sentence that negates, fails.
The first change (``id-2``) looked at the ``choose`` parts only; the second (``id-3``) at both parts of the grammar
and both negation sets, so the grammar's ``held_out`` part is held out no longer: the held-out check of ``id-3`` is a
set written afresh by someone else.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import shared_data_file
from id_refusal_grammar import FORMS, GrammarSentence, load_negation_sentences, refusals, topics

from ragmeter.text import LANGUAGES, IdkDetector

ID = LANGUAGES["id"]
#: Misses measured on the grammar's parts.
CHOOSE_MISSES, HELD_OUT_MISSES = 0, 0


def questions(split: str) -> list[str]:
    path = shared_data_file("indonesian", "idk_mrc", f"{split}.json")
    paragraphs = json.loads(path.read_text(encoding="utf-8"))
    return topics(question for paragraph in paragraphs for question in paragraph["qas"])


@pytest.fixture(scope="module")
def grammar() -> dict[str, list[GrammarSentence]]:
    return {"choose": refusals("choose", questions("valid")), "held_out": refusals("held_out", questions("test"))}


def missed(sentences: list[GrammarSentence]) -> list[GrammarSentence]:
    return [s for s in sentences if not IdkDetector().is_idk(s.text, ID)]


def test_the_grammar_writes_its_parts_apart(grammar: dict[str, list[GrammarSentence]]) -> None:
    choose, held_out = grammar["choose"], grammar["held_out"]
    assert len(choose) >= 1900 and len(held_out) >= 2900
    assert not {s.text for s in choose} & {s.text for s in held_out}
    held_forms = {name for index, name in enumerate(FORMS) if index % 3 == 2}
    assert {s.form for s in choose} == set(FORMS) - held_forms and {s.form for s in held_out} == set(FORMS)
    assert all(s.form in held_forms or s.values for s in held_out) and not any(s.values for s in choose)
    # the same seed writes the same sentences
    assert refusals("choose", questions("valid"), per_form=5) == refusals("choose", questions("valid"), per_form=5)
    with pytest.raises(ValueError, match="part must be"):
        refusals("report", [])


def test_misses_on_the_grammar_stay_at_most_as_measured(grammar: dict[str, list[GrammarSentence]]) -> None:
    # choose: 0 of 1,998 (6 with id-2, 881 with id-1); held out: 0 of 3,000 (1,133 with id-2, 1,871 with id-1)
    assert len(missed(grammar["choose"])) <= CHOOSE_MISSES
    assert len(missed(grammar["held_out"])) <= HELD_OUT_MISSES


@pytest.mark.parametrize(
    "text",
    [
        "Informasi mengenai kapan Raja Antonious menikah tidak dapat ditemukan dalam dokumen yang diberikan.",
        "Sayangnya, penjelasan tentang siapa penemu televisi pada tahun 1871 sama sekali tak disajikan pada teks.",
        "Menurut konteks yang diberikan, tidak ada data untuk pertanyaan tersebut.",
        "Tidak dijumpai informasinya dalam bacaan yang ada.",
        "Materi tersebut tidak memiliki info mengenai hal ini.",
        "Maaf, topik ini di luar jangkauan kutipan yang ada.",
        "Data yang Anda cari tidak ada.",
        # id-3: verbs of saying with -nya, none of the sources, scope, the question, the speaker, informal registers
        "Artikel itu tidak menerangkannya.",
        "Dokumen yang diberikan tidak secara eksplisit menyebutkan tanggal pendirian perusahaan itu.",
        "Tidak ada satu pun sumber-sumber yang mengulas siapa pendirinya.",
        "Pertanyaan Anda berada di luar ruang lingkup dokumen yang tersedia.",
        "Pertanyaan tersebut tidak bisa terjawab dari dokumen yang ada.",
        "Hal tersebut tidak dapat saya pastikan dari dokumen yang tersedia.",
        "Kami tidak berhasil menemukan uraian soal itu di hasil pencarian.",
        "Dalam dokumen tidak disebutkan siapa yang memimpin rapat.",
        "Tiada informasi mengenai jadwal itu dalam dokumen.",
        "Saya tidak punya akses ke data tersebut.",
        "Wah, infonya nggak ada di dokumen.",
        "Aku gak nemu jawabannya.",
        "Konteksnya nggak bahas soal itu.",
        "Informasi tentang tarif Rp50.000 di Jl. Sudirman tidak tersedia di dokumen.",
    ],
)
def test_refusals_of_the_forms_the_change_covers(text: str) -> None:
    assert IdkDetector().is_idk(text, ID)


@pytest.mark.parametrize(
    "text",
    [
        "Tidak terdapat fakta apapun mengenai upaya pembakaran gereja.",  # IndoNLI: a fact, not a refusal
        "Informasi jadwal kereta tersedia di stasiun, tetapi tidak disebutkan di situs.",
        "Data pribadi pemohon tidak dibagikan kepada pihak ketiga.",
        "Penjelasan itu tidak sulit: dokumen menyebutkan bahwa kantor buka pukul 08.00.",
        # id-3: a negation about the world, not the answer; what is had is not information; a document's finding
        "Tidak ditemukan korban jiwa dalam kecelakaan itu.",
        "Kami tidak memiliki strategi.",  # IndoNLI; flagged by id-1 and id-2
        "Menurut data BPS, tidak ada kenaikan harga beras bulan ini.",
        "Data tidak menunjukkan adanya peningkatan penjualan.",
        "Belum ada jawaban dari pemerintah daerah soal tuntutan warga.",
        "Sumber air tidak mengalir selama musim kemarau.",
        "Faktanya, korban tidak ditemukan di lokasi.",
        "Dokumen tidak hanya menyebutkan biayanya, tetapi juga syaratnya.",
        "Penyebab kebakaran belum dapat dipastikan.",
    ],
)
def test_sentences_that_only_negate_are_not_flagged(text: str) -> None:
    assert not IdkDetector().is_idk(text, ID)


@pytest.mark.parametrize("part", ["choose", "report"])
def test_no_sentence_that_only_negates_is_flagged(part: str) -> None:
    mrc, nli = {"choose": ("valid.json", "val.jsonl"), "report": ("test.json", "test_lay.jsonl")}[part]
    shared_data_file("indonesian", "idk_mrc", mrc)
    sentences = load_negation_sentences(shared_data_file("indonesian", "indonli", nli).parent.parent, part)
    assert len(sentences) >= 700
    assert all(re.search(r"\b(?:tidak|tak|bukan|belum)\b", s, re.IGNORECASE) for s in sentences)
    flagged = {s for s in sentences if IdkDetector().is_idk(s, ID)}
    # choose: 0 of 734 with id-1, id-2 and id-3; report: 0 of 729 (1 with id-1 and id-2: "Kami tidak memiliki
    # strategi.")
    assert not flagged


def test_the_grammar_reads_no_pattern() -> None:
    source = (Path(__file__).parent / "id_refusal_grammar.py").read_text(encoding="utf-8")
    assert "IdkDetector" not in source and "idk_patterns" not in source and "languages.indonesian" not in source
