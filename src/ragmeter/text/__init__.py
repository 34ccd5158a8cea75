"""Text tools: SQuAD normalisation, sentences, citations, IDK detection, and the languages they know."""

from ragmeter.text.citations import CITATION_PATTERN, find_citations, strip_citations
from ragmeter.text.idk import IdkDetector
from ragmeter.text.languages import LANGUAGES, Language, detect_language
from ragmeter.text.normalize import answer_tokens, normalize_answer
from ragmeter.text.sentences import split_sentences

__all__ = [
    "CITATION_PATTERN",
    "LANGUAGES",
    "IdkDetector",
    "Language",
    "answer_tokens",
    "detect_language",
    "find_citations",
    "normalize_answer",
    "split_sentences",
    "strip_citations",
]
