"""Indonesian refusals written as a grammar, and real Indonesian sentences that negate without refusing: the two
sets on which the Indonesian IDK patterns are measured (``test_indonesian_refusal_grammar.py``,
``benchmarks/validity/bench_indonesian.py``).

Every sentence the grammar writes is a refusal and every sentence of the negation set is not: the labels come
from how a sentence was made, never from the patterns under test, and nothing here imports them.

**The grammar** has twelve forms (:data:`FORMS`), each a template over slots of words: who or what is missing
(*jawaban*, *informasi*, *keterangan*…, with or without *mengenai / tentang X*), the negation (*tidak*, *tak*,
*belum*), the predicate (*dapat ditemukan*, *tersedia*, *disebutkan*, *tercantum*…), where it is missing (*dalam /
di / pada* + *konteks*, *dokumen*, *sumber*, *teks*, *bacaan*…), and the forms of the speaker (*Saya tidak
tahu…*, *Maaf, saya tidak menemukan…*), of the source (*Konteks tidak memberikan informasi…*), of existence
(*Tidak ada informasi … dalam dokumen*), of the question (*Pertanyaan ini tidak dapat dijawab…*) and of scope
(*… di luar cakupan dokumen*). *X* is an unanswerable question of IDK-MRC made an indirect one (*Kapan Raja
Antonious menikah?* → *mengenai kapan Raja Antonious menikah*).

**Held out**: every third form and every third value of every slot, in the order written (``index % 3 == 2``),
fixed before any pattern was measured on the grammar. The ``choose`` part uses the other forms and values only,
with the questions of IDK-MRC ``valid``; the ``held_out`` part has at least one held-out form or value in each
sentence, with the questions of IDK-MRC ``test``. Patterns are changed looking at ``choose`` only.

**The negation set**: the sentences with *tidak*, *tak*, *bukan* or *belum* of the IDK-MRC paragraphs that have an
answerable question, and of IndoNLI's premises and hypotheses (Wikipedia, news and people's sentences, none a
refusal); ``choose`` from IDK-MRC ``valid`` and IndoNLI ``val``, ``report`` from ``test`` and ``test_lay``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.text import LANGUAGES, split_sentences

__all__ = ["FORMS", "GrammarSentence", "negation_sentences", "refusals", "topics"]

#: Where a question of IDK-MRC, as an indirect question, starts with a question word, it is written in lowercase.
_QUESTION_WORDS = frozenset(
    {
        "apa",
        "apakah",
        "siapa",
        "siapakah",
        "kapan",
        "kapankah",
        "berapa",
        "berapakah",
        "di",
        "dimana",
        "dimanakah",
        "bagaimana",
        "bagaimanakah",
        "mengapa",
        "kenapa",
        "dari",
        "sejak",
        "pada",
        "tahun",
        "ada",
        "tentang",
        "untuk",
        "ke",
        "manakah",
        "mana",
    }
)
_NEGATION = re.compile(r"\b(?:tidak|tak|bukan|belum)\b", re.IGNORECASE)

OPENING = ("", "Maaf, ", "Mohon maaf, ", "Sayangnya, ", "Sayang sekali, ", "Maaf sekali, ")
NOUN = (
    "informasi",
    "jawaban",
    "keterangan",
    "data",
    "penjelasan",
    "rincian",
    "info",
    "detail",
    "uraian",
    "fakta",
    "jawaban yang pasti",
    "petunjuk",
)
ABOUT = (
    "",
    "mengenai {x}",
    "tentang {x}",
    "terkait {x}",
    "soal {x}",
    "atas pertanyaan ini",
    "{nya}",
    "untuk pertanyaan tersebut",
    "yang Anda tanyakan",
    "yang dimaksud",
    "tersebut",
    "itu",
    "yang dibutuhkan untuk menjawabnya",
    "seputar {x}",
    "perihal {x}",
    "mengenai hal ini",
)
NEGATION = ("tidak", "tak", "belum")
ADVERB = ("", "sama sekali ", "juga ")
PASSIVE = (
    "ditemukan",
    "dapat ditemukan",
    "tersedia",
    "disebutkan",
    "dijelaskan",
    "tercantum",
    "ada",
    "bisa ditemukan",
    "termuat",
    "dimuat",
    "terdapat",
    "dibahas",
    "diberikan",
    "disinggung",
    "tertulis",
    "dapat saya temukan",
    "diuraikan",
    "dipaparkan",
    "disajikan",
    "dicantumkan",
    "tertera",
    "diungkapkan",
    "dinyatakan",
    "terkandung",
    "disampaikan",
    "ditampilkan",
    "diketahui",
)
PREPOSITION = ("dalam", "di", "di dalam", "pada")
SOURCE = (
    "dokumen",
    "konteks",
    "sumber",
    "teks",
    "bacaan",
    "referensi",
    "passage",
    "paragraf",
    "artikel",
    "materi",
    "kutipan",
    "dokumen-dokumen",
    "sumber-sumber",
    "potongan teks",
    "cuplikan",
    "rujukan",
    "naskah",
    "wacana",
    "tulisan",
    "bahan bacaan",
    "hasil pencarian",
    "pasase",
    "teks bacaan",
    "dokumen rujukan",
)
SOURCE_MODIFIER = (
    "",
    "yang diberikan",
    "yang tersedia",
    "tersebut",
    "yang ada",
    "ini",
    "yang Anda berikan",
    "yang saya terima",
    "mana pun",
    "yang dilampirkan",
    "yang disediakan",
    "di atas",
)
SPEAKER = ("saya", "aku", "kami")
FIND = (
    "menemukan",
    "dapat menemukan",
    "melihat",
    "bisa menemukan",
    "memiliki",
    "berhasil menemukan",
    "mendapatkan",
    "punya",
    "menjumpai",
    "memperoleh",
    "mampu menemukan",
    "dapat melihat",
)
SAY = (
    "menyebutkan",
    "menjelaskan",
    "membahas",
    "menyinggung",
    "menerangkan",
    "memaparkan",
    "menguraikan",
    "mengungkapkan",
    "menyatakan",
    "mengulas",
    "menunjukkan",
    "menyebut",
    "mencantumkan",
    "memberi tahu",
    "mengatakan",
)
SAID = ("{x}", "{noun} {about}", "hal tersebut", "apa pun tentang {x}", "{nya}", "hal itu", "apa-apa soal {x}")
EXIST = (
    "ada",
    "terdapat",
    "ditemukan",
    "tersedia",
    "dijumpai",
    "tercantum",
    "ada satu pun",
    "disebutkan",
    "dijelaskan",
)
FRAME = ("berdasarkan", "menurut", "dari", "dalam", "di", "sesuai dengan")
KNOW = (
    "tahu",
    "mengetahui",
    "yakin",
    "dapat memastikan",
    "bisa menjawab",
    "dapat menjawab",
    "tahu pasti",
    "bisa memberi tahu",
    "mampu menjawab",
)
KNOWN = ("", "jawabannya", "jawaban atas pertanyaan ini", "{x}", "hal itu", "soal {x}", "mengenai {x}")
BECAUSE = (
    "",
    " karena {source} tidak menyebutkannya",
    " berdasarkan {source}",
    " dari {source}",
    " karena informasinya tidak ada",
    " sebab {source} tidak membahasnya",
)
QUESTION = ("pertanyaan ini", "pertanyaan tersebut", "pertanyaan Anda", "pertanyaan itu", "pertanyaan mengenai {x}")
CAN = ("dapat", "bisa", "mampu")
ANSWERED = ("dijawab", "saya jawab", "terjawab")
BASIS = ("berdasarkan", "dari", "dengan", "menggunakan", "hanya dari", "melalui")
TOPIC = ("{x}", "hal tersebut", "hal itu", "hal ini", "jawaban atas pertanyaan itu", "jawaban untuk {x}")
INSUFFICIENT = (
    "cukup untuk menjawab pertanyaan ini",
    "memadai untuk menjawab pertanyaan tersebut",
    "relevan dengan pertanyaan ini",
    "berkaitan dengan {x}",
    "membantu menjawab pertanyaan ini",
    "mendukung jawaban atas pertanyaan ini",
)
OUTSIDE_SUBJECT = ("pertanyaan ini", "hal tersebut", "pertanyaan mengenai {x}", "topik ini", "informasi tersebut")
OUTSIDE_VERB = ("", "berada ", "ada ", "terletak ")
SCOPE = ("cakupan", "lingkup", "isi", "bahasan", "jangkauan", "ruang lingkup")
HAVE = (
    "memiliki",
    "mempunyai",
    "memberikan",
    "punya",
    "menyediakan",
    "menyajikan",
    "berisi",
    "memuat",
    "mengandung",
    "mencantumkan",
    "menawarkan",
    "menyimpan",
)
NONE_OF = (
    "tidak satu pun {source} yang",
    "tak satu pun {source}",
    "tidak ada {source} yang",
    "tidak ada bagian dari {source} yang",
    "tidak ada satu pun {source} yang",
    "tak ada {source} yang",
)


@dataclass(frozen=True)
class GrammarSentence:
    """A refusal the grammar wrote: its ``form`` (a name of :data:`FORMS`), whether it is ``held_out``, and the
    held-out slot values it has (``values``)."""

    text: str
    form: str
    held_out: bool
    values: tuple[str, ...] = ()


class _Draw:
    """Draws slot values for one sentence, from the values its part may use, and notes a held-out one."""

    def __init__(self, rng: np.random.Generator, *, held_out_values: bool, topics: Sequence[str]) -> None:
        self.rng, self.all_values, self.topics = rng, held_out_values, topics
        self.values: list[str] = []  # the held-out ones drawn

    def __call__(self, slot: Sequence[str]) -> str:
        allowed = [i for i in range(len(slot)) if self.all_values or i % 3 != 2]
        index = allowed[int(self.rng.integers(len(allowed)))]
        if index % 3 == 2:
            self.values.append(slot[index])
        return slot[index]

    def topic(self) -> str:
        return self.topics[int(self.rng.integers(len(self.topics)))]

    def source(self) -> str:
        return _join(self(SOURCE), self(SOURCE_MODIFIER))

    def place(self) -> str:
        return f"{self(PREPOSITION)} {self.source()}"

    def noun(self) -> str:
        noun, about = self(NOUN), self(ABOUT)
        if about == "{nya}":
            return noun if " " in noun else noun + "nya"
        return _join(noun, about)


def _join(*words: str) -> str:
    return " ".join(word for word in words if word)


def _info_not_in_source(d: _Draw) -> str:
    return f"{d(OPENING)}{d.noun()} {d(ADVERB)}{d(NEGATION)} {d(PASSIVE)} {d.place()}"


def _speaker_found_nothing(d: _Draw) -> str:
    return f"{d(OPENING)}{d(SPEAKER)} {d(ADVERB)}{d(NEGATION)} {d(FIND)} {d.noun()} {d.place()}"


def _source_does_not_say(d: _Draw) -> str:
    verb, said = d(SAY), d(SAID)
    said = said.replace("{noun} {about}", d.noun())
    said_verb = f"{verb}nya" if said == "{nya}" else f"{verb} {said}"
    return f"{d(OPENING)}{d.source()} {d(ADVERB)}{d(NEGATION)} {said_verb}"


def _there_is_no_information(d: _Draw) -> str:
    return f"{d(OPENING)}{d(NEGATION)} {d(EXIST)} {d.noun()} {d.place()}"


def _source_first(d: _Draw) -> str:
    frame, source = d(FRAME), d.source()
    cores = (
        lambda: f"{d.noun()} {d(NEGATION)} {d(PASSIVE)}",
        lambda: f"{d(NEGATION)} {d(EXIST)} {d.noun()}",
        lambda: f"{d(SPEAKER)} {d(NEGATION)} {d(FIND)} {d.noun()}",
        lambda: f"{d(SPEAKER)} {d(NEGATION)} {d(CAN)} menjawab pertanyaan ini",
    )
    return f"{frame} {source}, {cores[int(d.rng.integers(len(cores)))]()}"


def _topic_not_stated(d: _Draw) -> str:
    return f"{d(OPENING)}{d(TOPIC)} {d(ADVERB)}{d(NEGATION)} {d(PASSIVE)} {d.place()}"


def _speaker_does_not_know(d: _Draw) -> str:
    because = d(BECAUSE).replace("{source}", d.source())
    return f"{d(OPENING)}{_join(d(SPEAKER), d(ADVERB) + d(NEGATION), d(KNOW), d(KNOWN))}{because}"


def _question_unanswerable(d: _Draw) -> str:
    return f"{d(OPENING)}{d(QUESTION)} {d(ADVERB)}{d(NEGATION)} {d(CAN)} {d(ANSWERED)} {d(BASIS)} {d.source()}"


def _source_insufficient(d: _Draw) -> str:
    return f"{d(OPENING)}{d.source()} {d(ADVERB)}{d(NEGATION)} {d(INSUFFICIENT)}"


def _outside_scope(d: _Draw) -> str:
    return f"{d(OPENING)}{d(OUTSIDE_SUBJECT)} {d(OUTSIDE_VERB)}di luar {d(SCOPE)} {d.source()}"


def _source_has_nothing(d: _Draw) -> str:
    return f"{d(OPENING)}{d.source()} {d(ADVERB)}{d(NEGATION)} {d(HAVE)} {d.noun()}"


def _none_of_the_sources(d: _Draw) -> str:
    return f"{d(OPENING)}{d(NONE_OF).replace('{source}', d(SOURCE))} {d(SAY)} {{x}}"


#: The forms in the order written; every third (``index % 3 == 2``) is held out whole.
FORMS: dict[str, Callable[[_Draw], str]] = {
    "information not in the source": _info_not_in_source,
    "the speaker found nothing": _speaker_found_nothing,
    "the source does not say": _source_does_not_say,
    "there is no information": _there_is_no_information,
    "the source first": _source_first,
    "the topic is not stated": _topic_not_stated,
    "the speaker does not know": _speaker_does_not_know,
    "the question cannot be answered": _question_unanswerable,
    "the source is not enough": _source_insufficient,
    "outside the source's scope": _outside_scope,
    "the source has nothing": _source_has_nothing,
    "none of the sources says": _none_of_the_sources,
}


def topics(questions: Iterable[dict[str, Any]]) -> list[str]:
    """IDK-MRC's unanswerable questions as indirect questions (*kapan Raja Antonious menikah*), in their order."""
    out = []
    for question in questions:
        if not question["is_impossible"]:
            continue
        text = re.sub(r"\s*\?+\s*$", "", " ".join(str(question["question"]).split()))
        first = text.split(" ", 1)[0]
        out.append(text[0].lower() + text[1:] if first.lower() in _QUESTION_WORDS else text)
    return out


def _sentence(template: str, topic: str) -> str:
    text = " ".join(template.replace("{x}", topic).split())
    return text[0].upper() + text[1:] + "."


def refusals(part: str, questions: Sequence[str], *, per_form: int = 250, seed: int = 45) -> list[GrammarSentence]:
    """``per_form`` sentences of each form the part uses (distinct ones; a few fewer where draws repeat).

    ``part`` is ``"choose"`` (the forms and values not held out; ``questions`` from IDK-MRC ``valid``) or
    ``"held_out"`` (every form, each sentence with a held-out form or value; ``questions`` from ``test``), and
    ``questions`` the output of :func:`topics`.
    """
    if part not in ("choose", "held_out"):
        raise ValueError(f"part must be 'choose' or 'held_out', not {part!r}")
    rng = np.random.default_rng(seed)
    out: dict[str, GrammarSentence] = {}
    for index, (name, form) in enumerate(FORMS.items()):
        held_form = index % 3 == 2
        if part == "choose" and held_form:
            continue
        for _ in range(per_form):
            while True:  # a held-out sentence of a chosen form draws again until it has a held-out value
                draw = _Draw(rng, held_out_values=part == "held_out", topics=questions)
                text = _sentence(form(draw), draw.topic())
                if part == "choose" or held_form or draw.values:
                    break
            out.setdefault(text, GrammarSentence(text, name, part == "held_out", tuple(draw.values)))
    return list(out.values())


def negation_sentences(paragraphs: Iterable[dict[str, Any]], pairs: Iterable[dict[str, str]]) -> list[str]:
    """The distinct sentences with a negation of the IDK-MRC ``paragraphs`` that have an answerable question and of
    IndoNLI's premises and hypotheses (``pairs``), split with the Indonesian sentence splitter."""
    texts = [p["context"] for p in paragraphs if any(not q["is_impossible"] for q in p["qas"])]
    for pair in pairs:
        texts += [pair["premise"], pair["hypothesis"]]
    seen: dict[str, None] = {}
    for text in texts:
        for sentence in split_sentences(text, LANGUAGES["id"]):
            if _NEGATION.search(sentence):
                seen.setdefault(sentence.strip(), None)
    return list(seen)


def load_negation_sentences(indonesian: Path, part: str) -> list[str]:
    """:func:`negation_sentences` of ``part`` (``"choose"`` or ``"report"``) from the data folder ``indonesian``."""
    mrc, nli = {"choose": ("valid", "val"), "report": ("test", "test_lay")}[part]
    paragraphs = json.loads((indonesian / "idk_mrc" / f"{mrc}.json").read_text(encoding="utf-8"))
    with (indonesian / "indonli" / f"{nli}.jsonl").open(encoding="utf-8") as handle:
        pairs = [json.loads(line) for line in handle]
    return negation_sentences(paragraphs, pairs)
