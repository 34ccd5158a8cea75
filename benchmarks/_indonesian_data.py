"""The Indonesian data of the Indonesian benchmarks: IndoNLI and IDK-MRC from ``shared/data/indonesian/`` next to the
repository, the refusal lists written for ragmeter in ``tests/text/data/``, the grammar of refusals and the negation
set of ``tests/text/id_refusal_grammar.py`` (:data:`grammar`), and the Indonesian IDK patterns as they were before
issue 45 (:data:`ID_1_PATTERNS`)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
INDONESIAN = HERE.parent.parent / "shared" / "data" / "indonesian"
TEXTS = HERE.parent / "tests" / "text" / "data"


def indonli(split: str) -> list[dict[str, Any]]:
    with (INDONESIAN / "indonli" / f"{split}.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def idk_mrc(split: str) -> list[dict[str, Any]]:
    paragraphs = json.loads((INDONESIAN / "idk_mrc" / f"{split}.json").read_text(encoding="utf-8"))
    return [question for paragraph in paragraphs for question in paragraph["qas"]]


def refusal_lists() -> dict[str, list[str]]:
    return json.loads((TEXTS / "idk_refusal_templates.json").read_text(encoding="utf-8"))


def _grammar() -> ModuleType:
    path = TEXTS.parent / "id_refusal_grammar.py"
    spec = importlib.util.spec_from_file_location("id_refusal_grammar", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the refusal grammar from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


#: ``tests/text/id_refusal_grammar.py``: the grammar of Indonesian refusals and the negation set.
grammar = _grammar()


def _id_1_patterns() -> tuple[str, ...]:
    """The Indonesian IDK patterns of ``id-1`` as they were before issue 45, verbatim."""
    _SPEAKER = r"(?:saya|aku|kami|gue|gw)"
    _GAP = r"(?:\s+(?!bahwa\b)[\w-]+){0,3}?"
    _NOT = r"(?:tidak|tak|nggak|gak|enggak|kurang|belum)"
    _OPENING = r"^\W*(?:(?:maaf|mohon maaf|sayangnya)\W+)?"
    _SOURCE = r"(?:dokumen|konteks|sumber|teks|bacaan|artikel|referensi|materi|informasi|keterangan|data|paragraf)"
    _SOURCE_DOCUMENT = r"(?:dokumen|konteks|sumber|teks|bacaan|artikel|referensi|materi|informasi yang)"
    _INFORMATION = r"(?:informasi|info|keterangan|data|jawaban|penjelasan|rincian|detail)"

    return (
        # the speaker does not know, is not sure, has no information, found nothing
        (
            rf"\b{_SPEAKER}\b{_GAP}\s+{_NOT}\s+(?:tahu|yakin|pasti|paham|mengetahui|menemukan|memiliki|punya"
            r"|mempunyai)\b"
        ),
        # the speaker cannot answer
        (
            rf"\b{_SPEAKER}\b{_GAP}\s+{_NOT}\s+(?:dapat|bisa|mampu|sanggup)\s+(?:\w+\s+)?(?:menjawab|menemukan"
            r"|memastikan|memberikan|menentukan|mengetahui|menjelaskan)\b"
        ),
        # a sentence that opens with the refusal: "Tidak tahu.", "Maaf, tidak dapat menemukan jawabannya."
        rf"{_OPENING}{_NOT}\s+(?:tahu|yakin|(?:dapat|bisa|mampu)\s+(?:menjawab|menemukan|memastikan))\b",
        rf"{_OPENING}entah(?:lah)?\b",
        # the source does not say
        (
            rf"\b{_SOURCE}(?:nya)?\b(?:\s+(?!bahwa\b)[\w-]+){{0,4}}?\s+(?:tidak|tak|belum)\s+(?:menyebutkan|memuat|berisi"
            r"|mengandung|menjelaskan|menyediakan|mencantumkan|membahas|menyinggung|mencakup|menyatakan|menyebut"
            r"|mengatakan|bilang|memberikan (?:informasi|keterangan|jawaban|penjelasan)"
            r"|(?:cukup|memadai) untuk menjawab|(?:relevan|berkaitan|berhubungan) dengan pertanyaan)\b"
        ),
        # the information is not there
        (
            rf"\b{_INFORMATION}(?:nya)?\b(?:\s+(?!bahwa\b)[\w-]+){{0,3}}?\s+(?:tidak|tak|belum)\s+(?:tersedia|ditemukan"
            r"|disebutkan|terdapat|dijelaskan|tercantum|diketahui|dimuat)\b"
        ),
        rf"\b{_INFORMATION}\b(?:\s+[\w-]+){{0,3}}?\s+(?:tidak|tak|belum)\s+ada\s+(?:di|dalam|pada)\s+{_SOURCE_DOCUMENT}",
        # not mentioned in the source
        (
            r"\b(?:tidak|tak|belum)\s+(?:disebutkan|dijelaskan|tercantum|dibahas|terdapat|ditemukan|tersedia|dimuat"
            rf"|diketahui|disinggung)\b(?:\s+[\w-]+){{0,3}}?\s+(?:dalam|di|pada|dari|oleh|berdasarkan)\s+(?:\w+\s+)?"
            rf"{_SOURCE_DOCUMENT}"
        ),
        # the matter is not explained, or lies outside the source
        r"\bhal (?:itu|tersebut|ini)\s+(?:tidak|tak|belum)\s+(?:dijelaskan|disebutkan|diketahui|tercantum|dibahas)\b",
        rf"\bdi luar (?:cakupan|lingkup|isi|konteks) (?:\w+\s+)?{_SOURCE_DOCUMENT}",
        # there is no information
        (
            r"\b(?:tidak|tak|nggak|gak|belum)\s+(?:ada|terdapat|ditemukan|tersedia)\s+(?:informasi|info|keterangan"
            r"|penjelasan|rincian|jawaban)\b"
        ),
        r"\b(?:tidak|tak|belum)\s+(?:ada|terdapat|ditemukan)\s+data\s+(?:mengenai|tentang|terkait|soal)\b",
        # the question cannot be answered
        r"\b(?:tidak|tak|belum)\s+(?:dapat|bisa|mampu)\s+(?:saya\s+)?(?:dijawab|jawab)\b",
    )


ID_1_PATTERNS = _id_1_patterns()
