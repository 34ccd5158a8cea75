"""English: the words and patterns the text tools use for English answers (ragmeter's first language; its lists
have not changed since they were chosen on MT-RAG's dev split)."""

from __future__ import annotations

from ragmeter.text.languages.base import Language

__all__ = ["ENGLISH"]

_HAVE_NO_INFO = (
    r"(?:specific |enough |sufficient |any |the |relevant )?"
    r"(?:information|details|data|knowledge)"
)

_IDK_PATTERNS = (
    r"\bi (?:do not|don't|dont) know\b",
    rf"\bi (?:do not|don't|dont) have {_HAVE_NO_INFO}\b",
    rf"\bi have no {_HAVE_NO_INFO}\b",
    r"\bi(?:'m| am) (?:not sure|unsure|unable to (?:answer|find|determine|say))\b",
    r"\bi (?:cannot|can't|can not|could not|couldn't) (?:answer|find|determine|say|tell)\b",
    r"\b(?:there is|there's) no (?:information|mention|data)\b",
    r"\bno (?:information|relevant information|details) (?:is |are )?(?:available|provided|given)\b",
    (
        r"\bthe (?:provided |given |retrieved )?(?:context|documents?|passages?|sources?) "
        r"(?:do|does) not (?:contain|provide|mention|include|say|specify)\b"
    ),
)

_NEGATED = (
    r"(?:do|does|did|can|could)(?: not|n't) (?:know|have|mention|specify|say|provide|contain|include|state"
    r"|cover|find|answer|help|tell|determine)"
)
_REFUSAL_CUES = (
    r"\b(?:"
    + _NEGATED
    + r"|(?:is|are|was|were)(?: not|n't) (?:available|provided|mentioned|specified|stated|included|given|clear|known"
    r"|sure|able)"
    + r"|not (?:available|provided|mentioned|specified|stated|included|sure|able|found)"
    + r"|no (?:information|details|mention|data|specific|answer|way to know)"
    + r"|cannot|can not|unable|unfortunately|sorry|apologi[sz]e"
    + r"|you(?:'re| are) welcome|anything else|glad (?:I|to) (?:could )?help|thank(?:s| you)"
    + r")\b"
)

ENGLISH = Language(
    code="en",
    name="English",
    version="en-1",
    idk_patterns=_IDK_PATTERNS,
    refusal_cues=_REFUSAL_CUES,
    abbreviations=(),
    stemmer="english",
    function_words=frozenset(
        [
            "the",
            "and",
            "for",
            "are",
            "was",
            "were",
            "been",
            "its",
            "this",
            "that",
            "these",
            "those",
            "with",
            "from",
            "can",
            "may",
            "will",
            "would",
            "should",
            "could",
            "does",
            "did",
            "not",
            "you",
            "your",
            "they",
            "their",
            "them",
            "she",
            "his",
            "her",
            "our",
            "which",
            "who",
            "what",
            "when",
            "where",
            "how",
            "than",
            "then",
            "also",
            "but",
            "there",
            "here",
            "has",
            "have",
            "had",
            "into",
            "about",
            "any",
            "some",
            "such",
            "more",
            "most",
            "other",
        ]
    ),
    scope_words=frozenset(
        {"all", "every", "everyone", "everybody", "everything", "always", "never", "only", "none", "nobody"}
    ),
    decimal_comma=False,
)
