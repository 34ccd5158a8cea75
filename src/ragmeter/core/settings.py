"""The settings of a run: every option that can change a score or an interval."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Answerability
from ragmeter.text.idk import IdkDetector
from ragmeter.text.languages import LANGUAGE_CHOICES, LANGUAGES

__all__ = [
    "AnswerNormalization",
    "CiMethod",
    "IdkEvalSource",
    "NdcgGain",
    "NdcgIdeal",
    "NuggetSource",
    "Settings",
    "SourceLabels",
    "parse_tau_sim",
]


# The choices of a setting are string enums: a member is equal to, hashes as, formats as and is written to JSON as
# its value, so ``Settings(ci_method="percentile")`` and signatures read as they always did.
class CiMethod(StrEnum):
    """The bootstrap interval of a mean."""

    BCA = "bca"
    PERCENTILE = "percentile"


class IdkEvalSource(StrEnum):
    """Where IDK conditioning takes ``idk_eval`` from."""

    DETECTOR = "detector"
    RECORD = "record"


class NdcgIdeal(StrEnum):
    """The ideal ranking behind NDCG's IDCG."""

    RETRIEVED = "retrieved"
    POOL = "pool"


class NdcgGain(StrEnum):
    """NDCG's gain of a grade w."""

    EXPONENTIAL = "exponential"
    LINEAR = "linear"


class AnswerNormalization(StrEnum):
    """How EM and token F1 normalise answers (:mod:`ragmeter.text.normalize`)."""

    SQUAD = "squad"
    EXTENDED = "extended"


class NuggetSource(StrEnum):
    """Where a record's claim-level nuggets come from when it has none of its own."""

    SENTENCES = "sentences"
    CLAIMS = "claims"
    JUDGE = "judge"


class SourceLabels(StrEnum):
    """Where ``source_cited`` and ``fabricated_source`` come from."""

    AUTO = "auto"
    HUMAN = "human"
    DERIVED = "derived"


#: Each field that takes one of an enum's values.
_CHOICES: dict[str, type[StrEnum]] = {
    "ci_method": CiMethod,
    "idk_eval_source": IdkEvalSource,
    "ndcg_ideal": NdcgIdeal,
    "ndcg_gain": NdcgGain,
    "source_labels": SourceLabels,
    "normalization": AnswerNormalization,
    "nugget_source": NuggetSource,
}


@dataclass(frozen=True)
class Settings:
    """Every option that can change a score or an interval; each lands in the signatures it affects.

    - ``language``: the language of the records' text: ``auto`` (each record's own, detected from its question
      and answer; the default), or a code of :data:`~ragmeter.text.languages.LANGUAGES` (``en``, ``id``). A
      record's ``language`` field wins over it, over a code too (the report counts the records whose field
      overrode one). It chooses the IDK patterns, the refusal cues, the sentence splitter's abbreviations, the
      evidence check's words and numbers, and, under ``embedder="auto"``, the embedder
      (:mod:`ragmeter.text.languages`).
    - ``tau_sim``: cosine threshold for a supported sentence (seeds 000/001: 0.6–0.7); ``None`` (the default)
      takes each record's embedder's own (0.65 for MiniLM; the multilingual one's, 0.91, is calibrated on
      IndoNLI). One number applies to every record, whatever its language and embedder: the signatures carry it
      per language (``tau_sim.id``) and the report notes each language whose embedder's own it replaced. A
      mapping by language code (``{"en": 0.7}``; :func:`parse_tau_sim` reads ``en=0.7,id=0.93``) sets those
      languages' only, the others keeping their embedder's own.
    - ``idk``: the IDK sentence detector (versioned pattern list).
    - ``abstain_correct_for``: answerability classes on which abstaining is the right action for the
      fallback Faithfulness (default UNANSWERABLE and CONVERSATIONAL, as MT-RAG's IDK conditioning).
    - ``embedder``: backend name used when no embedder is given: ``auto`` (the default: the language's own,
      MiniLM ONNX for English, the multilingual one for Indonesian), ``onnx``, ``torch``, ``multilingual``,
      ``hashing``.
    - ``bertscore_model``: ``minilm`` (the packaged ONNX MiniLM, layer 6) or a local Hugging Face
      model directory, with ``bertscore_layer``; ``bertscore_baseline``: ``None``, ``mtrag-deberta``
      (MT-RAG's DeBERTa-xlarge-MNLI layer-40 values) or a bert-score baseline CSV file.
    - ``idk_eval_source``: where IDK conditioning takes ``idk_eval`` from: ``detector`` (ragmeter's
      IDK patterns, an offline stand-in for MT-RAG's judge) or ``record`` (the record's
      ``labels.idk_eval``, the detector where a record has none). The judged ``*_idk`` metrics take the IDK
      judge's verdict instead of the detector's.
    - ``rb_llm_unparsed``: what a failed RADBench verdict counts as in ``RB_llm``: ``None`` (undefined, the
      default) or a value in [0, 1] (0.5: MT-RAG's released scripts), noted.
    - ``check_evidence``: check a judge's verdicts against the texts they are about: keep a *supported*
      claim only when the record's chunks hold most of its content words, its numbers and its scope words,
      and check each sentence of the text the judge's claims leave out as a claim of its own
      (:mod:`ragmeter.judges.checks.evidence`), and an IDK verdict of declines or partly only when the
      response has words that decline (:mod:`ragmeter.judges.checks.refusal_cues`); on by default.
    - ``ndcg_ideal``: the ideal ranking behind NDCG's IDCG: ``retrieved`` (the retrieved chunks'
      grades re-sorted) or ``pool`` (the record's qrels, as trec_eval); ``ndcg_gain``: ``exponential``
      (2^w − 1, seed 003) or ``linear`` (w, trec_eval's default).
    - ``source_labels``: where ``source_cited`` and ``fabricated_source`` come from: ``human`` (the
      record's labels), ``derived`` (the answer's ``[CIT:…]`` markers against the retrieved doc_ids) or
      ``auto`` (human where given, else derived).
    - ``normalization``: how EM and token F1 normalise answers: ``squad`` (the SQuAD v1.1 script's, exactly;
      the default) or ``extended`` (also hyphenated reduplication and a currency symbol's spacing,
      :func:`~ragmeter.text.normalize.normalize_answer_extended`).
    - ``n_resamples``, ``ci_method`` (``bca`` or ``percentile``), ``confidence``, ``seed``: the
      bootstrap behind every mean's interval.
    """

    language: str = "auto"
    # a per-language tau_sim is a plain dict, so that run.json reads it back equal: left out of the hash
    tau_sim: float | Mapping[str, float] | None = field(default=None, hash=False)
    idk: IdkDetector = field(default_factory=IdkDetector)
    abstain_correct_for: frozenset[Answerability] = frozenset(
        {Answerability.UNANSWERABLE, Answerability.CONVERSATIONAL}
    )
    embedder: str = "auto"
    bertscore_model: str = "minilm"
    bertscore_layer: int | None = None
    bertscore_baseline: str | None = None
    idk_eval_source: IdkEvalSource = IdkEvalSource.DETECTOR
    rb_llm_unparsed: float | None = None
    check_evidence: bool = True
    ndcg_ideal: NdcgIdeal = NdcgIdeal.RETRIEVED
    ndcg_gain: NdcgGain = NdcgGain.EXPONENTIAL
    source_labels: SourceLabels = SourceLabels.AUTO
    normalization: AnswerNormalization = AnswerNormalization.SQUAD
    nugget_source: NuggetSource = NuggetSource.SENTENCES
    n_resamples: int = 2000
    ci_method: CiMethod = CiMethod.BCA
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        for name, choices in _CHOICES.items():
            value = getattr(self, name)
            if value not in set(choices):
                raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
            object.__setattr__(self, name, choices(value))  # a string given becomes the enum's member
        if self.language not in LANGUAGE_CHOICES:
            raise ConfigError(f"language must be one of {', '.join(LANGUAGE_CHOICES)}, got {self.language!r}")
        if isinstance(self.tau_sim, Mapping):
            object.__setattr__(self, "tau_sim", _tau_sims(self.tau_sim))
        elif self.tau_sim is not None:
            _check_tau_sim(self.tau_sim, "tau_sim")
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(f"confidence must lie strictly between 0 and 1, got {self.confidence}")
        if self.n_resamples < 100:
            raise ConfigError(f"n_resamples must be at least 100, got {self.n_resamples}")
        if self.seed < 0:
            raise ConfigError(f"the seed must be a whole number at least 0, got {self.seed}")
        if self.rb_llm_unparsed is not None and not 0.0 <= self.rb_llm_unparsed <= 1.0:
            raise ConfigError(f"rb_llm_unparsed must lie in [0, 1], got {self.rb_llm_unparsed}")
        if self.bertscore_model != "minilm" and self.bertscore_layer is None:
            raise ConfigError(
                "a BERTScore model directory needs its layer: set bertscore_layer (MT-RAG: 40 for deberta-xlarge-mnli)"
            )


def _check_tau_sim(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must lie in [0, 1], got {value!r}")
    return float(value)


def _tau_sims(given: Mapping[str, float]) -> dict[str, float]:
    """A per-language ``tau_sim``, checked: known codes, values in [0, 1] (a plain dict, so that ``run.json``
    reads it back equal)."""
    unknown = [code for code in given if code not in LANGUAGES]
    if unknown or not given:
        raise ConfigError(
            f"a per-language tau_sim names language codes ({', '.join(LANGUAGES)}), "
            f"got {', '.join(map(repr, unknown)) or 'none'}"
        )
    return {code: _check_tau_sim(value, f"tau_sim of {code}") for code, value in given.items()}


def parse_tau_sim(text: str) -> float | dict[str, float]:
    """``--tau-sim``'s value: one number for every language (``0.7``), or numbers by language code
    (``en=0.7,id=0.93``, the languages not named keeping their embedder's own).

    >>> parse_tau_sim("0.7"), parse_tau_sim("en=0.7, id=0.93")
    (0.7, {'en': 0.7, 'id': 0.93})
    """

    def number(value: str, name: str) -> float:
        try:
            parsed = float(value)
        except ValueError:
            raise ConfigError(f"{name} must be a number in [0, 1], got {value.strip()!r}") from None
        return _check_tau_sim(parsed, name)

    if "=" not in text:
        return number(text, "tau_sim")
    pairs = [part.partition("=") for part in text.split(",")]
    if any(not sep for _, sep, _ in pairs):
        raise ConfigError(f"write a per-language tau_sim as CODE=NUMBER pairs (en=0.7,id=0.93), got {text!r}")
    codes = [code.strip() for code, _, _ in pairs]
    if len(set(codes)) < len(codes):
        raise ConfigError(f"a per-language tau_sim names each language once, got {text!r}")
    return _tau_sims(
        {code: number(value, f"tau_sim of {code}") for code, (_, _, value) in zip(codes, pairs, strict=True)}
    )
