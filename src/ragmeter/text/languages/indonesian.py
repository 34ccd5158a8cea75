"""Indonesian (Bahasa Indonesia, seed 001's language): the words and patterns the text tools use for Indonesian
answers.

The IDK patterns decide alone, so each is anchored to the speaker (*saya … tidak tahu*), to the source (*dokumen …
tidak menyebutkan*), to a sentence that opens with the refusal (*Maaf, tidak tahu.*), or to information said to be
missing (*tidak ada informasi*): "warga tidak tahu bahwa jalan ditutup" and "tidak ada biaya" answer. A gap of a few
words may stand between the subject and the negation, but not *bahwa* (that), which opens what the source does
say. The abbreviations are the ones Indonesian texts write in the middle of a sentence (addresses, titles, dates);
*dll.*, *dsb.*, *dst.* and *dkk.* often end one and are left out.
"""

from __future__ import annotations

from ragmeter.text.languages.base import Language

__all__ = ["INDONESIAN"]

_SPEAKER = r"(?:saya|aku|kami|gue|gw)"
_GAP = r"(?:\s+(?!bahwa\b)[\w-]+){0,3}?"
_NOT = r"(?:tidak|tak|nggak|gak|enggak|kurang|belum)"
_OPENING = r"^\W*(?:(?:maaf|mohon maaf|sayangnya)\W+)?"
_SOURCE = r"(?:dokumen|konteks|sumber|teks|bacaan|artikel|referensi|materi|informasi|keterangan|data|paragraf)"
_SOURCE_DOCUMENT = r"(?:dokumen|konteks|sumber|teks|bacaan|artikel|referensi|materi|informasi yang)"
_INFORMATION = r"(?:informasi|info|keterangan|data|jawaban|penjelasan|rincian|detail)"

_IDK_PATTERNS = (
    # the speaker does not know, is not sure, has no information, found nothing
    (rf"\b{_SPEAKER}\b{_GAP}\s+{_NOT}\s+(?:tahu|yakin|pasti|paham|mengetahui|menemukan|memiliki|punya"
     r"|mempunyai)\b"),
    # the speaker cannot answer
    (rf"\b{_SPEAKER}\b{_GAP}\s+{_NOT}\s+(?:dapat|bisa|mampu|sanggup)\s+(?:\w+\s+)?(?:menjawab|menemukan"
     r"|memastikan|memberikan|menentukan|mengetahui|menjelaskan)\b"),
    # a sentence that opens with the refusal: "Tidak tahu.", "Maaf, tidak dapat menemukan jawabannya."
    rf"{_OPENING}{_NOT}\s+(?:tahu|yakin|(?:dapat|bisa|mampu)\s+(?:menjawab|menemukan|memastikan))\b",
    rf"{_OPENING}entah(?:lah)?\b",
    # the source does not say
    (rf"\b{_SOURCE}(?:nya)?\b(?:\s+(?!bahwa\b)[\w-]+){{0,4}}?\s+(?:tidak|tak|belum)\s+(?:menyebutkan|memuat|berisi"
     r"|mengandung|menjelaskan|menyediakan|mencantumkan|membahas|menyinggung|mencakup|menyatakan|menyebut"
     r"|mengatakan|bilang|memberikan (?:informasi|keterangan|jawaban|penjelasan)"
     r"|(?:cukup|memadai) untuk menjawab|(?:relevan|berkaitan|berhubungan) dengan pertanyaan)\b"),
    # the information is not there
    (rf"\b{_INFORMATION}(?:nya)?\b(?:\s+(?!bahwa\b)[\w-]+){{0,3}}?\s+(?:tidak|tak|belum)\s+(?:tersedia|ditemukan"
     r"|disebutkan|terdapat|dijelaskan|tercantum|diketahui|dimuat)\b"),
    rf"\b{_INFORMATION}\b(?:\s+[\w-]+){{0,3}}?\s+(?:tidak|tak|belum)\s+ada\s+(?:di|dalam|pada)\s+{_SOURCE_DOCUMENT}",
    # not mentioned in the source
    (r"\b(?:tidak|tak|belum)\s+(?:disebutkan|dijelaskan|tercantum|dibahas|terdapat|ditemukan|tersedia|dimuat"
     rf"|diketahui|disinggung)\b(?:\s+[\w-]+){{0,3}}?\s+(?:dalam|di|pada|dari|oleh|berdasarkan)\s+(?:\w+\s+)?"
     rf"{_SOURCE_DOCUMENT}"),
    # the matter is not explained, or lies outside the source
    r"\bhal (?:itu|tersebut|ini)\s+(?:tidak|tak|belum)\s+(?:dijelaskan|disebutkan|diketahui|tercantum|dibahas)\b",
    rf"\bdi luar (?:cakupan|lingkup|isi|konteks) (?:\w+\s+)?{_SOURCE_DOCUMENT}",
    # there is no information
    (r"\b(?:tidak|tak|nggak|gak|belum)\s+(?:ada|terdapat|ditemukan|tersedia)\s+(?:informasi|info|keterangan"
     r"|penjelasan|rincian|jawaban)\b"),
    r"\b(?:tidak|tak|belum)\s+(?:ada|terdapat|ditemukan)\s+data\s+(?:mengenai|tentang|terkait|soal)\b",
    # the question cannot be answered
    r"\b(?:tidak|tak|belum)\s+(?:dapat|bisa|mampu)\s+(?:saya\s+)?(?:dijawab|jawab)\b",
)

# the cues: every IDK pattern, and the broader words a refusal is made of
#: Negations are scope words: a claim that says "tidak" where the chunks never do is not what they state. Chosen
#: on IndoNLI's validation pairs over a function word (as English "not") and a content word: the evidence check's
#: AUROC of entailed vs not was 0.739 against 0.644 and 0.676 (``benchmarks/bench_indonesian.py``).
_NEGATIONS = ("tidak", "tak", "bukan", "belum", "tanpa")

_REFUSAL_CUES = "|".join(f"(?:{pattern})" for pattern in _IDK_PATTERNS) + (
    r"|\b(?:(?:tidak|tak|nggak|gak|enggak|kurang|belum)\s+(?:tahu|yakin|pasti|menyebutkan|memuat|berisi|mengandung"
    r"|menjelaskan|mencantumkan|membahas|menyediakan|tersedia|ditemukan|disebutkan|dijelaskan|tercantum|diketahui"
    r"|terdapat|dapat|bisa|mampu|ada (?:informasi|keterangan|data|penjelasan|jawaban|rincian))"
    r"|maaf|sayangnya|terima ?kasih|sama-sama|ada (?:lagi|hal lain) yang (?:bisa|dapat)"
    r"|senang (?:bisa|dapat) membantu"
    r")\b")

INDONESIAN = Language(
    code="id",
    name="Indonesian",
    version="id-1",
    idk_patterns=_IDK_PATTERNS,
    refusal_cues=_REFUSAL_CUES,
    abbreviations=(
        "jl", "jln", "gg", "kec", "kel", "kab", "prov", "ds", "kp", "dsn", "blk", "rt", "rw", "no", "bpk",
        "sdr", "sdri", "ny", "tn", "yth", "ir", "dr", "drs", "dra", "prof", "h", "hj", "kh", "s.h", "s.e", "s.kom",
        "s.pd", "s.t", "s.sos", "m.si", "m.m", "m.kom", "m.pd", "m.h", "a.md", "tgl", "pkl", "jan", "feb", "mar",
        "apr", "jun", "jul", "agt", "ags", "sep", "sept", "okt", "nov", "des", "th", "thn", "a.n", "u.p", "tlp",
        "telp", "hp", "hlm", "pt", "tbk", "cv", "kol", "kapt", "letjen", "mayjen", "brigjen", "pol"),
    stemmer="indonesian",
    function_words=frozenset(
        ["yang", "dan", "dari", "untuk", "dengan", "ini", "itu", "pada", "dalam", "adalah", "ialah", "akan", "atau",
         "juga", "oleh", "karena", "tersebut", "sebagai", "bahwa", "telah", "sudah", "dapat", "bisa", "ada", "para",
         "kepada", "bagi", "saat", "ketika", "jika", "kalau", "maka", "namun",
         "tetapi", "tapi", "serta", "secara", "agar", "supaya", "lebih", "sangat", "masih", "pun", "lah", "kah",
         "nya", "apa", "siapa", "mana", "kapan", "bagaimana", "mengapa", "kenapa", "berapa", "saya", "kami", "kita",
         "anda", "mereka", "dia", "ia", "beliau", "harus", "boleh", "sedang", "antara", "sejak", "hingga",
         "sampai", "tentang", "mengenai", "terhadap", "seperti", "yaitu", "yakni", "oleh", "per", "atas", "bawah",
         "begitu", "demikian", "lain", "lainnya", "hal"]),
    scope_words=frozenset({"semua", "semuanya", "seluruh", "seluruhnya", "setiap", "tiap", "segala", "selalu",
                           "senantiasa", "pernah", "hanya", "cuma", "satunya", "siapapun", "apapun",
                           *_NEGATIONS}),
    decimal_comma=True,
    currency_prefixes=("rp",),
    whole_numbers=True,
    number_words=(("ribu", 10**3), ("rb", 10**3), ("juta", 10**6), ("jt", 10**6), ("miliar", 10**9),
                  ("milyar", 10**9), ("triliun", 10**12)),
    same_words=(("rupiah", "rp"),),
    # without it the packaged judge wrote 12 of 30 answers' claims in English, which no Indonesian chunk holds;
    # chosen on 30 IndoNLI val pairs over no note and the same note in Indonesian (bench_judge_indonesian.py)
    claims_note=("The TEXT is in Indonesian: write every claim in Indonesian, in the TEXT's own words, and translate "
                 "nothing."),
)
