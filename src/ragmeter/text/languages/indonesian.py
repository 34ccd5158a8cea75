"""Indonesian (Bahasa Indonesia, seed 001's language): the words and patterns the text tools use for Indonesian
answers.

The IDK patterns decide alone, so each is anchored to who or what fails to give the answer: the speaker (*saya …
tidak tahu / tidak dapat menemukan / tidak memiliki informasi*), the source (*dokumen … tidak menyebutkan /
menjelaskannya / memuat data*, *tidak ada dokumen yang membahas*, *menurut konteks, tidak disebutkan*), the
information (*informasi mengenai X tidak tersedia*, *tidak ada keterangan*), the question (*tidak dapat dijawab /
terjawab*), the source's scope (*di luar ruang lingkup dokumen*), or a sentence that opens with the refusal (*Maaf,
tidak tahu.*): "warga tidak tahu bahwa jalan ditutup", "tidak ditemukan korban jiwa" and "tidak ada biaya" answer.
They are built from classes of words, not from sentences: negations (*tidak, tak, belum, tiada, nggak, gak …*), the
names of a source, information words, and verbs of a text saying (*me-…-kan/-i*, with *-nya*), of being stated
(*di-*, *ter-*), of being there or found, of the speaker knowing, finding or having, in formal and informal
registers. A gap of a few words may stand between the speaker or the source and the negation; after information said
to be missing, what it is about may run to 20 words. Neither gap takes *bahwa* (that), which opens what the source
does say, nor a conjunction that opens another clause (*tetapi*, *karena*…). *There is no* needs an information
word; *data*, *fakta* and *petunjuk* count only with what they are about right after them (*tidak ada data
mengenai*) or with the source named: "tidak terdapat fakta apapun mengenai upaya pembakaran gereja" states a fact
(IndoNLI). What a speaker or a source *has* (*memiliki*, *memberikan*) must be information: "kami tidak memiliki
strategi" answers. The patterns are measured on a grammar of refusals and on real sentences that negate
(``benchmarks/README.md``, Indonesian). The abbreviations are the ones Indonesian texts write in the middle of a
sentence (addresses, titles, dates); *dll.*, *dsb.*, *dst.* and *dkk.* often end one and are left out.
"""

from __future__ import annotations

import re

from ragmeter.text.languages.base import Language

__all__ = ["INDONESIAN"]

_ABBREVIATIONS = (
    "jl",
    "jln",
    "gg",
    "kec",
    "kel",
    "kab",
    "prov",
    "ds",
    "kp",
    "dsn",
    "blk",
    "rt",
    "rw",
    "no",
    "bpk",
    "sdr",
    "sdri",
    "ny",
    "tn",
    "yth",
    "ir",
    "dr",
    "drs",
    "dra",
    "prof",
    "h",
    "hj",
    "kh",
    "s.h",
    "s.e",
    "s.kom",
    "s.pd",
    "s.t",
    "s.sos",
    "m.si",
    "m.m",
    "m.kom",
    "m.pd",
    "m.h",
    "a.md",
    "tgl",
    "pkl",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "agt",
    "ags",
    "sep",
    "sept",
    "okt",
    "nov",
    "des",
    "th",
    "thn",
    "a.n",
    "u.p",
    "tlp",
    "telp",
    "hp",
    "hlm",
    "pt",
    "tbk",
    "cv",
    "kol",
    "kapt",
    "letjen",
    "mayjen",
    "brigjen",
    "pol",
)

_SPEAKER = r"(?:saya|aku|kami|gue|gua|gw|sy)"
_GAP = r"(?:\s+(?!bahwa\b)[\w-]+){0,3}?"
#: A word of the clause a subject is in: what it is about (*mengenai kapan kota itu dibangun*, *Rp50.000*), who gave
#: it (*yang Anda berikan*), an adverb (*sama sekali*); not *bahwa* (that), which opens what the source does say, nor
#: a conjunction that opens another clause (*sementara* only after a comma: before, it is *temporary*), nor the end of
#: a sentence (an initial, *Paul F. Knitter*, or an abbreviation, *Jl.*, does not end one).
_CLAUSE_WORD = (
    r"(?:\s+(?!(?:bahwa|tetapi|tapi|namun|sedangkan|melainkan|karena|sebab|sehingga|padahal)\b)"
    r"(?!(?<=,\s)sementara\b)(?:(?:(?-i:[A-Z])|"
    + "|".join(re.escape(a) for a in _ABBREVIATIONS)
    + r")\.(?=\s)|[^\s.;!?]+(?:[.!?][^\s.;!?]+)*))"
)
_MODIFIER = rf"{_CLAUSE_WORD}{{0,20}}?"
_SOURCE_GAP = rf"{_CLAUSE_WORD}{{0,6}}?"
_NOT = r"(?:tidak|tak|tdk|belum|blm|nggak|ngga|enggak|engga|gak|ga|gk|ndak)"
#: *Kurang* (little) negates knowing, and being enough: *kurang tahu*, *kurang lengkap untuk menjawab*.
_NOT_KNOW = rf"(?:{_NOT}|kurang)"
#: What may stand between the negation and its verb: *tidak secara eksplisit menyebutkan*, *tidak pernah membahas*
#: (never *hanya*: "tidak hanya menyebutkan" answers).
_ADVERB = (
    r"(?:\s+(?:juga|pernah|sama\s+sekali|benar-benar|sepenuhnya|secara\s+[\w-]+|eksplisit|spesifik|jelas"
    r"|langsung|rinci))?"
)
_CAN = r"(?:dapat|bisa|mampu|sanggup|berhasil)"
_OPENING = (
    r"^\W*(?:(?:(?:mohon\s+)?maaf(?:kan)?(?:\s+(?:sekali|ya|kak))?|sayang(?:nya|\s+sekali)|sorry|sori|wah"
    r"|waduh|aduh|duh|h+m+)\W+)*"
)

#: What an answer is drawn from. *Sumber* is not one in *sumber daya / air / dana*…, nor *hasil* without
#: *pencarian*; *catatan* and *laporan* are left out: "namanya tidak tercantum dalam catatan sejarah" states a fact.
_DOCUMENT = (
    r"(?:dokumen|konteks|sumber(?!\s+(?:daya|air|dana|energi|makanan|pangan|pendapatan|penghasilan|listrik"
    r"|mata)\b)|teks|bacaan|artikel|referensi|rujukan|materi|paragraf|passage|pasase|naskah|tulisan|kutipan"
    r"|cuplikan|wacana|hasil\s+pencarian|literatur|lampiran)"
)
_SOURCE_DOCUMENT = rf"(?:{_DOCUMENT}|informasi\s+yang)"
_INFORMATION = (
    r"(?:informasi|info|keterangan|data|jawaban|penjelasan|rincian|detail|fakta|uraian|petunjuk"
    r"|deskripsi|gambaran|pembahasan|penyebutan|ulasan)"
)
#: The information words that make *there is no …* a refusal alone: not *data*, *fakta*, *petunjuk* (clue), which
#: news and encyclopaedias say there is none of (*tidak terdapat fakta apapun mengenai …*, IndoNLI).
_INFORMATION_ALONE = r"(?:informasi|info|keterangan|jawaban|penjelasan|rincian|detail|uraian|deskripsi)"
#: What a source has a scope of: *di luar ruang lingkup dokumen*, *bukan bagian dari cakupan materi*.
_SCOPE = r"(?:(?:ruang\s+)?lingkup|cakupan|isi|konteks|bahasan|pembahasan|jangkauan|topik|batas)"

#: Verbs of a text saying, explaining or holding a thing (any object; *-nya* for it: *tidak menjelaskannya*), formal
#: and informal (*nggak bahas*, *gak nyebutin*).
_SAYS = (
    r"(?:(?:menyebut(?:kan)?|menjelaskan|menerangkan|membahas|menyinggung|memaparkan|menguraikan"
    r"|mengungkap(?:kan)?|menyatakan|mengulas|mencantumkan|mengatakan|menulis(?:kan)?|mengemukakan|menyampaikan"
    r"|menyajikan|menampilkan|menggambarkan|mendeskripsikan|merinci|menjabarkan|membicarakan|menceritakan"
    r"|menginformasikan|memberi\s?tahu(?:kan)?|mengonfirmasi|mengkonfirmasi|menjawab|memuat|berisi(?:kan)?"
    r"|mengandung|mencakup|menyediakan|menyimpan)(?:nya)?|berbicara|bercerita|bilang|(?:nge)?bahas"
    r"|nyebut(?:in)?|sebut(?:in|kan)?|(?:nge)?jelasin|nerangin|(?:ngasih|kasih)\s+tau)"
)
#: Verbs of a document showing a thing: "data tidak menunjukkan peningkatan" is a finding, so not after *data*.
_SHOWS = r"(?:menunjukkan|memperlihatkan|mengindikasikan|menyiratkan)(?:nya)?"
#: Verbs of having or giving, which need an information word after them.
_HAS = r"(?:memiliki|mempunyai|punya|memberikan|memberi|menawarkan|menghadirkan)"
_NOT_ENOUGH = (
    r"(?:(?:cukup|memadai|lengkap|jelas)(?:\s+lengkap)?\s+untuk\s+(?:menjawab|memberikan|mengetahui"
    r"|menentukan|memastikan)|(?:relevan|berkaitan|berhubungan|terkait|berkenaan)\s+dengan|relevan"
    r"|(?:membantu|mendukung)\s+(?:untuk\s+)?(?:menjawab|jawaban|[\w-]+\s+pertanyaan))"
)
#: Passive verbs of a text stating a thing (*di-*, *ter-*): *tidak disebutkan*, *tidak tertera*, *tidak terjawab*.
_STATED = (
    r"(?:disebut(?:kan)?|dijelaskan|diterangkan|dibahas|disinggung|dipaparkan|diuraikan|diungkap(?:kan)?"
    r"|dinyatakan|diulas|dicantumkan|tercantum|dimuat|termuat|tertulis|ditulis(?:kan)?|tertera|terkandung"
    r"|tercakup|dikemukakan|disampaikan|disajikan|tersaji|ditampilkan|digambarkan|dideskripsikan|dirinci"
    r"|dijabarkan|dibicarakan|diceritakan|diinformasikan|diberitahukan|dikatakan|terjawab|dijawab)"
)
#: Verbs of a thing being there, or found: *tidak tersedia*, *tidak dijumpai*, *nggak ketemu*; *ada* (there is) is
#: apart, since "menurut data BPS, tidak ada kenaikan" answers.
_FOUND = r"(?:terdapat|tersedia|ditemukan|dijumpai|diketahui|diberikan|terlihat|ketemu)"
#: What cannot be made sure of: *tidak dapat dipastikan*, *tidak bisa diverifikasi*.
_MADE_SURE = r"(?:dipastikan|ditentukan|disimpulkan|diverifikasi|dikonfirmasi)"
#: What the speaker cannot do to it, the speaker between: *tidak dapat saya temukan*, *tidak bisa kami pastikan*.
_BY_SPEAKER = (
    r"(?:saya|kami|aku)\s+(?:temukan|ketahui|lihat|jumpai|pastikan|dapatkan|peroleh|berikan|jawab"
    r"|sebutkan|jelaskan|konfirmasi|miliki|punya)"
)
#: What information may be: stated, there, found, made sure of, by the speaker.
_SHOWN = rf"(?:{_CAN}\s+)?(?:{_STATED}|{_FOUND}|{_MADE_SURE}|{_BY_SPEAKER})\b"
_IN_SOURCE = (
    rf"(?:\s+[\w-]+){{0,3}}?\s+(?:dalam|di|pada|dari|oleh|berdasarkan|menurut)\s+(?:[\w-]+\s+){{0,2}}?"
    rf"{_SOURCE_DOCUMENT}"
)
#: What the speaker knows, finds, can do, or has; what is had must be information, a source or access to one.
_KNOW = r"(?:tahu|tau|yakin|pasti|paham|mengerti|ngerti|(?:mengetahui|menemukan|nemu)(?:nya)?|ketemu)"
_CAN_DO = (
    r"(?:menjawab|menemukan|memastikan|memberikan|menentukan|mengetahui|menjelaskan|memberi\s?tahu(?:kan)?"
    r"|mendapatkan|memperoleh|melihat|menjumpai|mengonfirmasi|mengkonfirmasi|memverifikasi|menyimpulkan"
    r"|menyebutkan|membantu|mengidentifikasi)(?:nya)?"
)
_GET = (
    r"(?:memiliki|mempunyai|punya|mendapat(?:kan)?|memperoleh|melihat|menjumpai|menemui|mendapati|menerima"
    rf"|diberi(?:kan)?)(?:\s+[\w-]+){{0,2}}?\s+(?:{_INFORMATION}|{_DOCUMENT}|akses|pengetahuan|wawasan|ide)"
)

#: After *tidak ada* (or *tiada*): information (not from someone, "belum ada jawaban dari pemerintah" is news, nor
#: wrong), *data / fakta / petunjuk* with what they are about, or any information word and then the source.
_NO_INFORMATION = (
    rf"(?:satu\s*pun\s+)?(?:{_INFORMATION_ALONE}(?:nya)?\b(?!\s+(?:resmi\s+)?(?:dari|oleh)\s+"
    rf"(?!(?:[\w-]+\s+){{0,2}}?{_SOURCE_DOCUMENT}))(?!\s+(?:yang\s+)?(?:salah|keliru|palsu|bohong|menyesatkan)\b)"
    r"|(?:data|fakta|petunjuk)(?:nya)?\s+(?:mengenai|tentang|terkait|soal|seputar|perihal|untuk|atas|tersebut|itu"
    r"|ini|yang\s+(?:dibutuhkan|diperlukan|dimaksud|relevan|cukup|tersedia|ditanyakan|anda))\b"
    rf"|{_INFORMATION}(?:nya)?\b{_MODIFIER}\s+(?:dalam|di|pada|dari)\s+(?:[\w-]+\s+){{0,2}}?{_SOURCE_DOCUMENT})"
)
#: After *tidak ada* (or *tiada*, *tak satu pun*): a source that says it (*tidak ada dokumen yang menyebutkan*).
_NO_SOURCE_SAYS = (
    rf"(?:satu\s*pun\s+)?(?:(?:bagian|isi)\s+(?:dari\s+)?)?(?:potongan\s+|bahan\s+)?{_DOCUMENT}"
    rf"(?:-\w+)?\b{_SOURCE_GAP}\s+(?:yang\s+)?(?:{_SAYS}|{_SHOWS}|{_NOT_ENOUGH})\b"
)

_IDK_PATTERNS = (
    # the speaker does not know, is not sure, cannot answer, found or has no information
    (
        rf"\b{_SPEAKER}\b{_GAP}\s+{_NOT_KNOW}{_ADVERB}\s+(?:{_KNOW}\b|{_CAN}\s+(?:[\w-]+\s+)?{_CAN_DO}\b"
        rf"|(?:{_CAN}\s+)?{_GET})"
    ),
    # a sentence that opens with the refusal: "Tidak tahu.", "Maaf, tidak dapat menemukan jawabannya.", "Entahlah."
    (
        rf"{_OPENING}(?:entah(?:lah)?\b|{_NOT_KNOW}{_ADVERB}\s+(?:tahu|tau|yakin|paham|ngerti|menemukan|nemu|ketemu"
        rf"|{_CAN}\s+(?:menjawab|menemukan|memastikan|melihat|mengetahui|menentukan|memberi\s?tahu)"
        rf"|(?:memiliki|mempunyai|punya|mendapatkan)\s+(?:[\w-]+\s+)?{_INFORMATION})\b)"
    ),
    # the source does not say, does not show, has no information, is not enough
    (
        rf"\b(?:{_DOCUMENT}|informasi|keterangan|data(?!{_SOURCE_GAP}\s+{_NOT}{_ADVERB}\s+{_SHOWS}))(?:nya)?\b"
        rf"{_SOURCE_GAP}\s+(?:{_NOT}{_ADVERB}\s+(?:{_SAYS}|{_SHOWS}|{_NOT_ENOUGH}"
        rf"|{_HAS}(?:\s+[\w-]+){{0,2}}?\s+{_INFORMATION}(?:nya)?)|kurang\s+{_NOT_ENOUGH})\b"
    ),
    # the source named first: "Menurut konteks, tidak disebutkan …", "Dalam dokumen tidak ada keterangan …"
    (
        rf"\b(?:berdasarkan|menurut|dari|dalam|di|pada|sesuai\s+dengan|merujuk\s+(?:pada|ke)|mengacu\s+(?:pada|ke))"
        rf"\s+(?:[\w-]+\s+){{0,2}}?{_SOURCE_DOCUMENT}(?:[^.;!?,]{{0,80}},\s*|{_GAP}\s+){_NOT}{_ADVERB}\s+"
        rf"(?:(?:dapat|bisa)\s+)?(?:(?:{_STATED}|{_MADE_SURE}|diketahui)\b"
        rf"|(?:ada|{_FOUND})\s+(?:satu\s*pun\s+)?{_INFORMATION}(?:nya)?\b)"
    ),
    # the information is not there, is not said, is not (any passive verb) in the source, is not there at all
    (
        rf"\b{_INFORMATION}(?:nya)?\b(?!,){_MODIFIER}\s+{_NOT}{_ADVERB}\s+(?:{_SHOWN}"
        rf"|(?:ada|di\w+|ter\w+){_IN_SOURCE}|ada\s*(?:[.,;!]|$))"
    ),
    # after a negation: one pattern, since the joined expression tries each of its patterns at every position
    (
        rf"\b(?:tiada\s+(?:{_NO_INFORMATION}|{_NO_SOURCE_SAYS})|{_NOT}{_ADVERB}\s+(?:"
        # there is no information, no source that says it, none that says it in the source
        rf"(?:(?:dapat|bisa)\s+)?(?:ada|{_FOUND}|{_STATED})\s+{_NO_INFORMATION}|(?:ada\s+)?{_NO_SOURCE_SAYS}"
        rf"|ada\s+(?:satu\s*pun\s+)?yang\s+(?:{_SAYS}|{_STATED})\b{_MODIFIER}\s+(?:dalam|di|pada|dari)\s+"
        rf"(?:[\w-]+\s+){{0,2}}?{_SOURCE_DOCUMENT}"
        # anything not stated, not there, not found, not clear in the source, or not by the speaker
        rf"|(?:{_CAN}\s+)?(?:{_STATED}|ada|{_FOUND}|{_MADE_SURE}|jelas|pasti|(?:saya|kami|aku)\s+\w+)\b{_IN_SOURCE}"
        # not part of the source, not related to it
        rf"|(?:termasuk|tercakup|masuk)\s+(?:dalam|di|ke)\s+(?:bagian\s+(?:dari\s+)?)?{_SCOPE}?\s*"
        rf"(?:[\w-]+\s+){{0,2}}?{_SOURCE_DOCUMENT}"
        rf"|(?:relevan|berkaitan|berhubungan|terkait)\s+dengan\s+(?:[\w-]+\s+){{0,2}}?{_SOURCE_DOCUMENT}"
        # the question cannot be answered, a thing cannot be made sure of by the speaker
        rf"|(?:dapat|bisa|mampu|sanggup)\s+(?:dijawab|terjawab|jawab|{_BY_SPEAKER})\b))"
    ),
    # the matter is not explained
    rf"\bhal\s+(?:itu|tersebut|ini)\b{_GAP}\s+{_NOT}{_ADVERB}\s+(?:(?:dapat|bisa)\s+)?(?:{_STATED}|{_FOUND})\b",
    # outside the source, or the speaker's knowledge; not part of the source, not a thing it says
    (
        rf"\bdi\s+luar\s+(?:{_SCOPE}\s+(?:[\w-]+\s+){{0,2}}?{_SOURCE_DOCUMENT}"
        rf"|(?:pengetahuan|kemampuan|wewenang)\s+{_SPEAKER}\b)"
    ),
    (
        rf"\bbukan\s+(?:(?:bagian\s+(?:dari\s+)?)?{_SCOPE}?\s*(?:[\w-]+\s+){{0,2}}?{_SOURCE_DOCUMENT}"
        rf"|(?:sesuatu|hal|topik|informasi)\s+yang\s+(?:{_STATED}|diketahui)\b)"
    ),
)

# the cues: every IDK pattern, and the broader words a refusal is made of
#: Negations are scope words: a claim that says "tidak" where the chunks never do is not what they state. Chosen
#: on IndoNLI's validation pairs over a function word (as English "not") and a content word: the evidence check's
#: AUROC of entailed vs not was 0.739 against 0.644 and 0.676 (``benchmarks/validity/bench_indonesian.py``).
_NEGATIONS = ("tidak", "tak", "bukan", "belum", "tanpa")

_REFUSAL_CUES = "|".join(f"(?:{pattern})" for pattern in _IDK_PATTERNS) + (
    r"|\b(?:(?:tidak|tak|nggak|gak|enggak|kurang|belum)\s+(?:tahu|yakin|pasti|menyebutkan|memuat|berisi|mengandung"
    r"|menjelaskan|mencantumkan|membahas|menyediakan|tersedia|ditemukan|disebutkan|dijelaskan|tercantum|diketahui"
    r"|terdapat|dapat|bisa|mampu|ada (?:informasi|keterangan|data|penjelasan|jawaban|rincian))"
    r"|maaf|sayangnya|terima ?kasih|sama-sama|ada (?:lagi|hal lain) yang (?:bisa|dapat)"
    r"|senang (?:bisa|dapat) membantu"
    r")\b"
)

INDONESIAN = Language(
    code="id",
    name="Indonesian",
    version="id-3",
    idk_patterns=_IDK_PATTERNS,
    refusal_cues=_REFUSAL_CUES,
    abbreviations=_ABBREVIATIONS,
    stemmer="indonesian",
    function_words=frozenset(
        [
            "yang",
            "dan",
            "dari",
            "untuk",
            "dengan",
            "ini",
            "itu",
            "pada",
            "dalam",
            "adalah",
            "ialah",
            "akan",
            "atau",
            "juga",
            "oleh",
            "karena",
            "tersebut",
            "sebagai",
            "bahwa",
            "telah",
            "sudah",
            "dapat",
            "bisa",
            "ada",
            "para",
            "kepada",
            "bagi",
            "saat",
            "ketika",
            "jika",
            "kalau",
            "maka",
            "namun",
            "tetapi",
            "tapi",
            "serta",
            "secara",
            "agar",
            "supaya",
            "lebih",
            "sangat",
            "masih",
            "pun",
            "lah",
            "kah",
            "nya",
            "apa",
            "siapa",
            "mana",
            "kapan",
            "bagaimana",
            "mengapa",
            "kenapa",
            "berapa",
            "saya",
            "kami",
            "kita",
            "anda",
            "mereka",
            "dia",
            "ia",
            "beliau",
            "harus",
            "boleh",
            "sedang",
            "antara",
            "sejak",
            "hingga",
            "sampai",
            "tentang",
            "mengenai",
            "terhadap",
            "seperti",
            "yaitu",
            "yakni",
            "oleh",
            "per",
            "atas",
            "bawah",
            "begitu",
            "demikian",
            "lain",
            "lainnya",
            "hal",
        ]
    ),
    scope_words=frozenset(
        {
            "semua",
            "semuanya",
            "seluruh",
            "seluruhnya",
            "setiap",
            "tiap",
            "segala",
            "selalu",
            "senantiasa",
            "pernah",
            "hanya",
            "cuma",
            "satunya",
            "siapapun",
            "apapun",
            *_NEGATIONS,
        }
    ),
    decimal_comma=True,
    currency_prefixes=("rp",),
    whole_numbers=True,
    number_words=(
        ("ribu", 10**3),
        ("rb", 10**3),
        ("juta", 10**6),
        ("jt", 10**6),
        ("miliar", 10**9),
        ("milyar", 10**9),
        ("triliun", 10**12),
    ),
    same_words=(("rupiah", "rp"),),
    # without it the packaged judge wrote 12 of 30 answers' claims in English, which no Indonesian chunk holds;
    # chosen on 30 IndoNLI val pairs over no note and the same note in Indonesian (bench_judge_indonesian.py)
    claims_note=(
        "The TEXT is in Indonesian: write every claim in Indonesian, in the TEXT's own words, and translate nothing."
    ),
)
