"""Indonesian (``--language id``): each text tool against the English pipeline it replaces, on Indonesian data.

Data (``../shared/data/indonesian/``, see its README): IndoNLI (premise/hypothesis pairs labelled entailment,
neutral or contradiction by people; ``val`` to choose, ``test_lay`` to report) and IDK-MRC (Indonesian Wikipedia
questions, about half unanswerable, with answer spans; ``valid`` to choose, ``test`` to report). Written for
ragmeter, in ``tests/text/data/``: 73 texts with abbreviations and their sentences, and two disjoint lists of
20 refusals (``idk_refusal_templates.json``: ``choose`` while writing the patterns, ``report`` held out).

1. **Language detection** (``--language auto``): IDK-MRC questions with an answer span or a refusal, all
   Indonesian, and the records of MT-RAG's human-eval tasks, all English: how many each way.
2. **IDK detection**: a refusal for each unanswerable question (the refusal lists taken in turn) against the
   span answer of each answerable one: balanced accuracy and the share of span answers flagged, with the IDK
   detector of the record's language (an answer is a refusal when every sentence is IDK), beside the English
   patterns and beside the previous detector (``idk-en-id-1``, English and Indonesian patterns together).
3. **IDK patterns on a grammar of refusals** (issue 45, ``tests/text/id_refusal_grammar.py``): the sentences of a
   grammar of Indonesian refusals (every one a refusal) missed, on its ``choose`` part (the forms and words the
   first round, ``id-2``, was changed on) and its ``held_out`` part (every third form and every third word of each
   slot: held out from ``id-2``, looked at for ``id-3``), and the sentences with a negation of IDK-MRC's answerable
   paragraphs and of IndoNLI (none a refusal) flagged, ``choose`` (valid, val) and ``report`` (test, test_lay):
   the patterns now (``id-3``), as ``id-2`` and as before the issue (``id-1``); and the seconds each takes on
   IDK-MRC's test paragraphs whole (best of 5, one thread).
4. **Sentences**: the 73 texts split right by nupunkt as it is and with the Indonesian abbreviations.
5. **Evidence check** on IndoNLI (hypothesis as the claim, premise as the only chunk): AUROC of entailed vs not,
   for the verdict (supported or not) and for a graded score (the share of the claim's content words the chunk
   holds, 0 when a number or scope word is missing), with English and with Indonesian words; on ``val``, the
   three readings of a negation (*tidak*, *bukan*…) the Indonesian words were chosen from (function, content or
   scope word: scope, the highest there).
6. **Overlap's cosine** on IndoNLI: τ_sim of the multilingual embedder set with ``ragmeter calibrate-tau`` on
   ``val`` (the τ of highest balanced accuracy, :data:`~ragmeter.models.multilingual_e5.TAU_SIM`), then on
   ``test_lay`` the AUROC of each embedder's cosine and the balanced accuracy at its τ (MiniLM at 0.65).
7. **EM/F1**: IDK-MRC's questions with two reference spans, one against the other, and every reference against
   itself respelled (a hyphen between words as a space, ``Rp`` apart from its number), under the SQuAD
   normalisation and the extended one.

Runs in about four minutes on two cores (the two embedders on 8,800 IndoNLI texts take most of it); results:
``benchmarks/results/indonesian.json``.

    python -m benchmarks.validity.bench_indonesian
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import write_result
from benchmarks._indonesian_data import ID_1_PATTERNS, INDONESIAN, TEXTS, grammar, idk_mrc, indonli, refusal_lists
from benchmarks._mtrag_data import HUMAN_EVAL_TASKS
from ragmeter.io.readers import read_records
from ragmeter.judges.checks.evidence import content_words, numbers_found, scope_kept, supports
from ragmeter.metrics.lexical import exact_match, token_f1
from ragmeter.metrics.mtrag.algorithmic import idk_eval_from_detector
from ragmeter.models import load_embedder
from ragmeter.models.multilingual_e5 import TAU_SIM
from ragmeter.stats.correlation import auroc
from ragmeter.text import LANGUAGES, IdkDetector, detect_language, split_sentences
from ragmeter.text.languages import record_language

ENGLISH, ID = LANGUAGES["en"], LANGUAGES["id"]
#: The default detector before the language setting (``idk-en-id-1``): its Indonesian patterns, with the English
#: ones, for every record.
PREVIOUS_ID_PATTERNS = (
    r"\btidak tahu\b",
    r"\btidak (?:ada|memiliki|punya|mempunyai|menemukan|ditemukan) (?:informasi|data|keterangan)\b",
    r"\b(?:informasi|data|keterangan)\b.*\btidak (?:tersedia|ditemukan|ada)\b",
    r"\btidak (?:dapat|bisa|mampu) (?:menjawab|menemukan|memastikan)\b",
    r"\bbelum ada informasi\b",
)


def _id_2_patterns() -> tuple[str, ...]:
    """The Indonesian IDK patterns of ``id-2`` (issue 45's first round), verbatim."""
    _SPEAKER = r"(?:saya|aku|kami|gue|gw)"
    _GAP = r"(?:\s+(?!bahwa\b)[\w-]+){0,3}?"
    _MODIFIER = (
        r"(?:\s+(?!(?:bahwa|tetapi|tapi|namun|sedangkan|sementara|melainkan|karena|sebab|sehingga)\b)"
        r"[^\s.;!?]+){0,20}?"
    )
    _NOT = r"(?:tidak|tak|nggak|gak|enggak|kurang|belum)"
    _OPENING = r"^\W*(?:(?:maaf|mohon maaf|sayangnya)\W+)?"
    _SOURCE = (
        r"(?:dokumen|konteks|sumber|teks|bacaan|artikel|referensi|rujukan|materi|paragraf|passage|pasase"
        r"|naskah|tulisan|kutipan|informasi|keterangan|data)"
    )
    _SOURCE_DOCUMENT = (
        r"(?:dokumen|konteks|sumber|teks|bacaan|artikel|referensi|rujukan|materi|paragraf|passage"
        r"|pasase|naskah|tulisan|kutipan|informasi yang)"
    )
    _INFORMATION = r"(?:informasi|info|keterangan|data|jawaban|penjelasan|rincian|detail|fakta)"
    _SHOWN = (
        r"(?:(?:dapat|bisa|mampu)\s+)?(?:(?:saya|kami|aku)\s+)?(?:temukan|tersedia|ditemukan|disebutkan|terdapat"
        r"|dijelaskan|tercantum|diketahui|dimuat|diberikan|disajikan|dicantumkan|diungkapkan|dinyatakan"
        r"|disampaikan|ditampilkan|disinggung|diuraikan|dibahas)"
    )
    _THERE = r"(?:ada|terdapat|ditemukan|tersedia|dijumpai|disebutkan|dijelaskan|diberikan)\s+(?:satu pun\s+)?"
    _IN_SOURCE = rf"(?:\s+[\w-]+){{0,2}}?\s+(?:dalam|di|pada|dari|oleh)\s+(?:[\w-]+\s+)?{_SOURCE_DOCUMENT}"

    return (
        # the speaker does not know, is not sure, has no information, found nothing
        (
            rf"\b{_SPEAKER}\b{_GAP}\s+{_NOT}\s+(?:tahu|yakin|pasti|paham|mengetahui|menemukan|memiliki|punya"
            r"|mempunyai|mendapatkan|memperoleh)\b"
        ),
        # the speaker cannot answer
        (
            rf"\b{_SPEAKER}\b{_GAP}\s+{_NOT}\s+(?:dapat|bisa|mampu|sanggup)\s+(?:\w+\s+)?(?:menjawab|menemukan"
            r"|memastikan|memberikan|menentukan|mengetahui|menjelaskan|memberi\s?tahu(?:kan)?|mendapatkan|memperoleh)\b"
        ),
        # a sentence that opens with the refusal: "Tidak tahu.", "Maaf, tidak dapat menemukan jawabannya."
        rf"{_OPENING}{_NOT}\s+(?:tahu|yakin|(?:dapat|bisa|mampu)\s+(?:menjawab|menemukan|memastikan))\b",
        rf"{_OPENING}entah(?:lah)?\b",
        # the source does not say, or has nothing
        (
            rf"\b{_SOURCE}(?:nya)?\b(?:\s+(?!bahwa\b)[\w-]+){{0,6}}?\s+(?:tidak|tak|belum)\s+(?:menyebutkan|memuat"
            r"|berisi|mengandung|menjelaskan|menyediakan|mencantumkan|membahas|menyinggung|mencakup|menyatakan|menyebut"
            r"|mengatakan|bilang|(?:memberikan|memiliki|mempunyai|punya|menawarkan)\s+(?:\w+\s+)?"
            rf"{_INFORMATION}(?:nya)?|(?:cukup|memadai) untuk menjawab"
            r"|(?:relevan|berkaitan|berhubungan) dengan pertanyaan)\b"
        ),
        # the information is not there, is not said, is not (any passive verb) in the source, is not there at all
        (
            rf"\b{_INFORMATION}(?:nya)?\b{_MODIFIER}\s+(?:tidak|tak|belum)\s+(?:{_SHOWN}\b"
            rf"|(?:ada|di\w+|ter\w+){_IN_SOURCE}|ada\s*(?:[.,;!]|$))"
        ),
        # not mentioned in the source
        (
            r"\b(?:tidak|tak|belum)\s+(?:disebutkan|dijelaskan|tercantum|dibahas|terdapat|ditemukan|tersedia|dimuat"
            rf"|diketahui|disinggung)\b(?:\s+[\w-]+){{0,3}}?\s+(?:dalam|di|pada|dari|oleh|berdasarkan)\s+(?:\w+\s+)?"
            rf"{_SOURCE_DOCUMENT}"
        ),
        # the matter is not explained, or lies outside the source
        r"\bhal (?:itu|tersebut|ini)\s+(?:tidak|tak|belum)\s+(?:dijelaskan|disebutkan|diketahui|tercantum|dibahas)\b",
        rf"\bdi luar (?:cakupan|lingkup|isi|konteks|bahasan|pembahasan|jangkauan) (?:\w+\s+)?{_SOURCE_DOCUMENT}",
        # there is no information, none about the matter, none in the source
        (
            rf"\b(?:tidak|tak|nggak|gak|belum)\s+{_THERE}(?:informasi|info|keterangan|penjelasan|rincian|jawaban"
            r"|detail)(?:nya)?\b"
        ),
        rf"\b(?:tidak|tak|belum)\s+{_THERE}(?:data|fakta)\s+(?:mengenai|tentang|terkait|soal|seputar|untuk)\b",
        (
            rf"\b(?:tidak|tak|belum)\s+{_THERE}{_INFORMATION}(?:nya)?\b{_MODIFIER}\s+(?:dalam|di|pada)\s+(?:[\w-]+\s+)?"
            rf"{_SOURCE_DOCUMENT}"
        ),
        # the question cannot be answered
        r"\b(?:tidak|tak|belum)\s+(?:dapat|bisa|mampu)\s+(?:saya\s+)?(?:dijawab|jawab)\b",
    )


ID_2_PATTERNS = _id_2_patterns()


def balanced(predicted: Sequence[bool], actual: Sequence[bool]) -> dict[str, float]:
    p, a = np.asarray(predicted, bool), np.asarray(actual, bool)
    tpr, tnr = float(p[a].mean()), float((~p[~a]).mean())
    return {
        "balanced_accuracy": (tpr + tnr) / 2,
        "true_positive_rate": tpr,
        "true_negative_rate": tnr,
        "positives": int(a.sum()),
        "negatives": int((~a).sum()),
    }


def answers_of(split: str, refusals: list[str]) -> list[tuple[str, str, bool]]:
    """(question, answer, is_refusal): a refusal for each unanswerable question in turn, else the first span."""
    out, turn = [], 0
    for question in idk_mrc(split):
        if question["is_impossible"]:
            out.append((question["question"], refusals[turn % len(refusals)], True))
            turn += 1
        else:
            out.append((question["question"], question["answers"][0]["text"], False))
    return out


def detection() -> dict[str, Any]:
    indonesian = [f"{q}\n{a}" for q, a, _ in answers_of("test", refusal_lists()["report"])]
    got_id = Counter(detect_language(text) for text in indonesian)
    got_en = Counter(record_language(record, "auto").code for record in read_records(HUMAN_EVAL_TASKS))
    return {"idk_mrc_test (Indonesian)": dict(got_id), "mtrag human_eval_tasks (English)": dict(got_en)}


def idk_detection() -> dict[str, Any]:
    out: dict[str, Any] = {}
    detectors: dict[str, Callable[[str], bool]] = {
        "id (idk-en-1+id-3, Indonesian patterns)": lambda a: idk_eval_from_detector(a, IdkDetector(), ID) == 1,
        "id-2": lambda a: idk_eval_from_detector(a, IdkDetector(patterns=ID_2_PATTERNS), ID) == 1,
        "id-1 before issue 45": lambda a: idk_eval_from_detector(a, IdkDetector(patterns=ID_1_PATTERNS), ID) == 1,
        "en (English patterns)": lambda a: idk_eval_from_detector(a, IdkDetector(), ENGLISH) == 1,
        "previous (idk-en-id-1, both)": lambda a: (
            idk_eval_from_detector(a, IdkDetector(patterns=ENGLISH.idk_patterns + PREVIOUS_ID_PATTERNS)) == 1
        ),
    }
    for split, listed in (("valid", "choose"), ("test", "report")):
        answers = answers_of(split, refusal_lists()[listed])
        for name, is_refusal in detectors.items():
            predicted = [is_refusal(answer) for _, answer, _ in answers]
            actual = [refusal for _, _, refusal in answers]
            figures = balanced(predicted, actual)
            figures["spans_flagged"] = 1 - figures.pop("true_negative_rate")
            figures["refusals_found"] = figures.pop("true_positive_rate")
            figures["distinct_refusals_found"] = sum(is_refusal(r) for r in refusal_lists()[listed])
            out[f"{split} ({listed} refusals)/{name}"] = figures
    return out


def refusal_grammar() -> dict[str, Any]:
    """Misses on the grammar's parts (the held-out one also split into held-out words in the chosen forms and the
    held-out forms), flags on the negation set's, and the seconds to match IDK-MRC's test paragraphs, for the
    patterns now (``id-3``), as ``id-2`` and before issue 45 (``id-1``); misses by form."""
    made = {
        "choose": grammar.refusals("choose", grammar.topics(idk_mrc("valid"))),
        "held_out": grammar.refusals("held_out", grammar.topics(idk_mrc("test"))),
    }
    held_forms = {name for index, name in enumerate(grammar.FORMS) if index % 3 == 2}
    made["held_out: held-out words in chosen forms"] = [s for s in made["held_out"] if s.form not in held_forms]
    made["held_out: held-out forms"] = [s for s in made["held_out"] if s.form in held_forms]
    negating = {part: grammar.load_negation_sentences(INDONESIAN, part) for part in ("choose", "report")}
    paragraphs = [p["context"] for p in json.loads((INDONESIAN / "idk_mrc" / "test.json").read_text("utf-8"))]
    out: dict[str, Any] = {}
    for name, detector in (
        ("now (id-3)", IdkDetector()),
        ("id-2", IdkDetector(patterns=ID_2_PATTERNS)),
        ("id-1 before issue 45", IdkDetector(patterns=ID_1_PATTERNS)),
    ):
        figures: dict[str, Any] = {}
        for part, sentences in made.items():
            missed = [s for s in sentences if not detector.is_idk(s.text, ID)]
            figures[f"grammar {part}"] = {
                "sentences": len(sentences),
                "missed": len(missed),
                "miss_rate": len(missed) / len(sentences),
                "missed_by_form": dict(Counter(s.form for s in missed)),
            }
        for part, texts in negating.items():
            flagged = [text for text in texts if detector.is_idk(text, ID)]
            figures[f"negation {part}"] = {
                "sentences": len(texts),
                "flagged": len(flagged),
                "flag_rate": len(flagged) / len(texts),
                "flagged_sentences": flagged,
            }
        figures["seconds on idk_mrc test paragraphs (best of 5)"] = min(
            matching_seconds(detector, paragraphs) for _ in range(5)
        )
        figures["paragraphs, characters"] = [len(paragraphs), sum(map(len, paragraphs))]
        out[name] = figures
    return out


def matching_seconds(detector: IdkDetector, texts: list[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        detector.is_idk(text, ID)
    return time.perf_counter() - start


def sentences() -> dict[str, Any]:
    cases = [json.loads(line) for line in (TEXTS / "id_sentences.jsonl").open(encoding="utf-8")]
    return {
        name: sum(split_sentences(c["text"], language) == c["sentences"] for c in cases) / len(cases)
        for name, language in (("nupunkt as it is", None), ("with the Indonesian abbreviations", ID))
    }


def evidence_score(claim: str, chunk: str, language: Any) -> float:
    wanted = content_words(claim, language)
    if not (numbers_found(claim, [chunk], language=language) and scope_kept(claim, [chunk], language=language)):
        return 0.0
    return len(wanted & content_words(chunk, language)) / len(wanted) if wanted else 1.0


def negation_variants() -> dict[str, Any]:
    """The Indonesian language with its negations as a function word (as English "not"), as a content word, and
    as a scope word (the frozen choice)."""
    negations = {"tidak", "tak", "bukan", "belum", "tanpa"}
    plain = dataclasses.replace(ID, scope_words=ID.scope_words - negations)
    return {
        "negation a function word": dataclasses.replace(plain, function_words=plain.function_words | negations),
        "negation a content word": plain,
        "negation a scope word (frozen)": ID,
    }


def evidence() -> dict[str, Any]:
    """Before (English words) and after (Indonesian words) on both splits; on val, the three ways of reading a
    negation the Indonesian words were chosen from."""
    out: dict[str, Any] = {}
    for split in ("val", "test_lay"):
        rows = indonli(split)
        entailed = np.array([row["label"] == "e" for row in rows], int)
        languages = {"English words": ENGLISH, "Indonesian words": ID}
        if split == "val":
            languages |= negation_variants()
        for name, language in languages.items():
            verdicts = np.array([supports([r["premise"]], r["hypothesis"], language=language) for r in rows], float)
            graded = np.array([evidence_score(r["hypothesis"], r["premise"], language) for r in rows])
            out[f"{split}/{name}"] = {
                "auroc_verdict": auroc(verdicts, entailed),
                "auroc_graded": auroc(graded, entailed),
                "supported_share": float(verdicts.mean()),
            }
    return out


def calibrate_on_val(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """``ragmeter calibrate-tau`` on IndoNLI's val pairs with the multilingual embedder."""
    with tempfile.TemporaryDirectory() as folder:
        labelled = Path(folder) / "indonli-val.jsonl"
        labelled.write_text(
            "".join(
                json.dumps(
                    {
                        "sentence": r["hypothesis"],
                        "chunk": r["premise"],
                        "label": int(r["label"] == "e"),
                        "conversation_id": r["premise_id"],
                    },
                    ensure_ascii=False,
                )
                + "\n"
                for r in pairs
            ),
            encoding="utf-8",
        )
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ragmeter.cli",
                "calibrate-tau",
                str(labelled),
                "--language",
                "id",
                "--format",
                "json",
                "--n-resamples",
                "200",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    result = json.loads(done.stdout)
    return {key: result[key] for key in ("embedder", "n", "auroc", "auroc_interval", "best_balanced_accuracy")}


def cosines(embedder: Any, rows: list[dict[str, Any]]) -> np.ndarray:
    premises = embedder.encode([r["premise"] for r in rows])
    hypotheses = embedder.encode([r["hypothesis"] for r in rows])
    return np.einsum("ij,ij->i", premises, hypotheses)


def overlap_cosine() -> dict[str, Any]:
    out: dict[str, Any] = {
        "calibrate-tau on val (multilingual)": calibrate_on_val(indonli("val")),
        "tau_sim frozen": TAU_SIM,
    }
    test = indonli("test_lay")
    entailed = np.array([row["label"] == "e" for row in test])
    for backend, tau in (("onnx", 0.65), ("multilingual", TAU_SIM)):
        embedder = load_embedder(backend)
        start = time.perf_counter()
        values = cosines(embedder, test)
        seconds = time.perf_counter() - start
        out[f"test_lay/{backend}"] = {
            "model": embedder.model_id,
            "auroc": auroc(values, entailed.astype(int)),
            "tau_sim": tau,
            **balanced(values >= tau, entailed),
            "texts_per_second": 2 * len(test) / seconds,
        }
    return out


def respelled(text: str) -> str:
    text = re.sub(r"(?<=\w)-(?=\w)", " ", text)
    return re.sub(r"\b(Rp)\.?\s*(?=\d)", lambda m: "Rp" if m.group(0).strip() != "Rp" else "Rp ", text)


def lexical() -> dict[str, Any]:
    questions = [q for q in idk_mrc("test") if not q["is_impossible"]]
    two = [q for q in questions if len(q["answers"]) == 2]
    spans = [q["answers"][0]["text"] for q in questions]
    variants = [(span, respelled(span)) for span in spans if respelled(span) != span]
    out: dict[str, Any] = {"two references": len(two), "references with a hyphen or Rp": len(variants)}
    for name, extended in (("squad", False), ("extended", True)):
        out[name] = {
            "em one reference against the other": float(
                np.mean(
                    [exact_match(q["answers"][0]["text"], [q["answers"][1]["text"]], extended=extended) for q in two]
                )
            ),
            "f1 one reference against the other": float(
                np.mean([token_f1(q["answers"][0]["text"], [q["answers"][1]["text"]], extended=extended) for q in two])
            ),
            "em reference against its respelling": float(
                np.mean([exact_match(v, [s], extended=extended) for s, v in variants])
            )
            if variants
            else None,
        }
    return out


def main() -> None:
    if not INDONESIAN.is_dir():
        sys.exit(f"no Indonesian data at {INDONESIAN}: this benchmark reads ../shared/data/indonesian/")
    started = time.perf_counter()
    out = {
        "language detection": detection(),
        "idk detection": idk_detection(),
        "idk patterns on the refusal grammar": refusal_grammar(),
        "sentences": sentences(),
        "evidence check (IndoNLI)": evidence(),
        "lexical (IDK-MRC references)": lexical(),
        "overlap cosine (IndoNLI)": overlap_cosine(),
    }
    out["seconds"] = time.perf_counter() - started
    print(json.dumps(out, indent=2, ensure_ascii=False))
    write_result("indonesian", out)


if __name__ == "__main__":
    main()
