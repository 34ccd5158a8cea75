"""Text tools: SQuAD normalisation, sentences, citations, IDK detection."""

from ragmeter.text.citations import CITATION_PATTERN, find_citations, strip_citations
from ragmeter.text.idk import DEFAULT_IDK_PATTERNS, IdkDetector
from ragmeter.text.normalize import answer_tokens, normalize_answer
from ragmeter.text.sentences import split_sentences

__all__ = ["CITATION_PATTERN", "DEFAULT_IDK_PATTERNS", "IdkDetector", "answer_tokens", "find_citations",
           "normalize_answer", "split_sentences", "strip_citations"]
