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
3. **Sentences**: the 73 texts split right by nupunkt as it is and with the Indonesian abbreviations.
4. **Evidence check** on IndoNLI (hypothesis as the claim, premise as the only chunk): AUROC of entailed vs not,
   for the verdict (supported or not) and for a graded score (the share of the claim's content words the chunk
   holds, 0 when a number or scope word is missing), with English and with Indonesian words; on ``val``, the
   three readings of a negation (*tidak*, *bukan*…) the Indonesian words were chosen from (function, content or
   scope word: scope, the highest there).
5. **Overlap's cosine** on IndoNLI: τ_sim of the multilingual embedder set with ``ragmeter calibrate-tau`` on
   ``val`` (the τ of highest balanced accuracy, :data:`~ragmeter.models.multilingual_e5.TAU_SIM`), then on
   ``test_lay`` the AUROC of each embedder's cosine and the balanced accuracy at its τ (MiniLM at 0.65).
6. **EM/F1**: IDK-MRC's questions with two reference spans, one against the other, and every reference against
   itself respelled (a hyphen between words as a space, ``Rp`` apart from its number), under the SQuAD
   normalisation and the extended one.

Runs in about four minutes on two cores (the two embedders on 8,800 IndoNLI texts take most of it); results:
``benchmarks/results/indonesian.json``.

    python benchmarks/bench_indonesian.py
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
from _common import write_result
from _indonesian_data import INDONESIAN, TEXTS, idk_mrc, indonli, refusal_lists
from _mtrag_data import HUMAN_EVAL_TASKS

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


def balanced(predicted: Sequence[bool], actual: Sequence[bool]) -> dict[str, float]:
    p, a = np.asarray(predicted, bool), np.asarray(actual, bool)
    tpr, tnr = float(p[a].mean()), float((~p[~a]).mean())
    return {"balanced_accuracy": (tpr + tnr) / 2, "true_positive_rate": tpr, "true_negative_rate": tnr,
            "positives": int(a.sum()), "negatives": int((~a).sum())}


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
        "id (idk-en-1+id-1, Indonesian patterns)": lambda a: idk_eval_from_detector(a, IdkDetector(), ID) == 1,
        "en (English patterns)": lambda a: idk_eval_from_detector(a, IdkDetector(), ENGLISH) == 1,
        "previous (idk-en-id-1, both)": lambda a: idk_eval_from_detector(
            a, IdkDetector(patterns=ENGLISH.idk_patterns + PREVIOUS_ID_PATTERNS)) == 1,
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


def sentences() -> dict[str, Any]:
    cases = [json.loads(line) for line in (TEXTS / "id_sentences.jsonl").open(encoding="utf-8")]
    return {name: sum(split_sentences(c["text"], language) == c["sentences"] for c in cases) / len(cases)
            for name, language in (("nupunkt as it is", None), ("with the Indonesian abbreviations", ID))}


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
    return {"negation a function word": dataclasses.replace(plain, function_words=plain.function_words | negations),
            "negation a content word": plain, "negation a scope word (frozen)": ID}


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
            out[f"{split}/{name}"] = {"auroc_verdict": auroc(verdicts, entailed),
                                      "auroc_graded": auroc(graded, entailed),
                                      "supported_share": float(verdicts.mean())}
    return out


def calibrate_on_val(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """``ragmeter calibrate-tau`` on IndoNLI's val pairs with the multilingual embedder."""
    with tempfile.TemporaryDirectory() as folder:
        labelled = Path(folder) / "indonli-val.jsonl"
        labelled.write_text("".join(json.dumps({"sentence": r["hypothesis"], "chunk": r["premise"],
                                                "label": int(r["label"] == "e"),
                                                "conversation_id": r["premise_id"]}, ensure_ascii=False) + "\n"
                                    for r in pairs), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "ragmeter.cli", "calibrate-tau", str(labelled), "--language", "id",
                               "--format", "json", "--n-resamples", "200"],
                              capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    return {key: result[key] for key in ("embedder", "n", "auroc", "auroc_interval", "best_balanced_accuracy")}


def cosines(embedder: Any, rows: list[dict[str, Any]]) -> np.ndarray:
    premises = embedder.encode([r["premise"] for r in rows])
    hypotheses = embedder.encode([r["hypothesis"] for r in rows])
    return np.einsum("ij,ij->i", premises, hypotheses)


def overlap_cosine() -> dict[str, Any]:
    out: dict[str, Any] = {"calibrate-tau on val (multilingual)": calibrate_on_val(indonli("val")),
                           "tau_sim frozen": TAU_SIM}
    test = indonli("test_lay")
    entailed = np.array([row["label"] == "e" for row in test])
    for backend, tau in (("onnx", 0.65), ("multilingual", TAU_SIM)):
        embedder = load_embedder(backend)
        start = time.perf_counter()
        values = cosines(embedder, test)
        seconds = time.perf_counter() - start
        out[f"test_lay/{backend}"] = {"model": embedder.model_id, "auroc": auroc(values, entailed.astype(int)),
                                      "tau_sim": tau, **balanced(values >= tau, entailed),
                                      "texts_per_second": 2 * len(test) / seconds}
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
            "em one reference against the other": float(np.mean(
                [exact_match(q["answers"][0]["text"], [q["answers"][1]["text"]], extended=extended) for q in two])),
            "f1 one reference against the other": float(np.mean(
                [token_f1(q["answers"][0]["text"], [q["answers"][1]["text"]], extended=extended) for q in two])),
            "em reference against its respelling": float(np.mean(
                [exact_match(v, [s], extended=extended) for s, v in variants])) if variants else None,
        }
    return out


def main() -> None:
    if not INDONESIAN.is_dir():
        sys.exit(f"no Indonesian data at {INDONESIAN}: this benchmark reads ../shared/data/indonesian/")
    started = time.perf_counter()
    out = {"language detection": detection(), "idk detection": idk_detection(), "sentences": sentences(),
           "evidence check (IndoNLI)": evidence(), "lexical (IDK-MRC references)": lexical(),
           "overlap cosine (IndoNLI)": overlap_cosine()}
    out["seconds"] = time.perf_counter() - started
    print(json.dumps(out, indent=2, ensure_ascii=False))
    write_result("indonesian", out)


if __name__ == "__main__":
    main()
