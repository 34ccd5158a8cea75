"""Signatures: what produced a score.

A signature lists every setting that can change a value, sacrebleu-style, so two numbers are
comparable exactly when their signatures are equal::

    >>> Signature("overlap", {"tau_sim": 0.65, "embedder": "minilm"}).render()
    'overlap|embedder:minilm|tau_sim:0.65|ragmeter:0.1.0'

The text is ``NAME|KEY:VALUE|…|ragmeter:VERSION``: the settings sorted by key, or in the order given with
``sort_keys=False`` (the analyses' own signatures, whose order predates sorting and is kept so that their text
does not change). :meth:`Signature.parse` reads such a text back and :func:`diff` says which settings two
signatures disagree on::

    >>> before = Signature.parse("rouge_l|tokenizer:rouge-score|ragmeter:0.1.0")
    >>> after = Signature("rouge_l", {"tokenizer": "rouge-score", "stemmer": "porter"})
    >>> diff(before, after)
    {'stemmer': (None, 'porter')}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ragmeter._version import __version__

__all__ = ["Signature", "diff"]

#: The key of the version, the text's last part.
VERSION_KEY = "ragmeter"
#: Key prefixes that name one setting of a family (``judge:claims:<the judge's signature>``): the key is the
#: prefix and the next part, the value what follows.
NAMESPACES = frozenset({"judge"})


@dataclass(frozen=True)
class Signature:
    """The metric (or analysis) name, its settings and the ragmeter version.

    ``sort_keys``: render the settings sorted by key (the default), or in the mapping's order.
    """

    metric: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    version: str = __version__
    _: KW_ONLY
    sort_keys: bool = True

    def render(self) -> str:
        items = sorted(self.settings.items()) if self.sort_keys else self.settings.items()
        parts = [self.metric, *(f"{key}:{_format(value)}" for key, value in items)]
        parts.append(f"{VERSION_KEY}:{self.version}")
        return "|".join(parts)

    @classmethod
    def parse(cls, text: str) -> Signature:
        """The signature whose :meth:`render` is ``text``: ``parse(text).render() == text`` for every text it
        accepts. The settings' values come back as their text (``"0.65"``, ``"yes"``), in the text's order
        (``sort_keys`` is true when that order is sorted). A part is split at its first ``:``, or its second for
        a key in ``NAMESPACES`` (``judge:claims:gpt-4o@t0/s0/claims:…`` is the setting ``judge:claims``).

        Raises :class:`ValueError` for a text that is not a signature: no ``ragmeter:VERSION`` last, a part
        without ``KEY:``, a key twice. A value holding ``|`` renders to a text that cannot be read back.

        >>> Signature.parse("compare|ci:percentile|seed:0|ragmeter:0.1.0").settings
        {'ci': 'percentile', 'seed': '0'}
        >>> text = "agree|metric:overlap|label:supported|ragmeter:0.1.0"
        >>> Signature.parse(text).render() == text
        True
        """
        metric, *parts = text.split("|")
        version_key, _, version = parts[-1].partition(":") if parts else ("", "", "")
        if not metric or version_key != VERSION_KEY or not version:
            raise ValueError(f"not a signature (NAME|KEY:VALUE|…|{VERSION_KEY}:VERSION): {text!r}")
        settings: dict[str, str] = {}
        for part in parts[:-1]:
            key, colon, value = part.partition(":")
            if key in NAMESPACES:
                member, colon, value = value.partition(":")
                key = f"{key}:{member}"
            if not colon or not key:
                raise ValueError(f"not a signature: the part {part!r} has no KEY:VALUE form, in {text!r}")
            if key in settings:
                raise ValueError(f"not a signature: the setting {key!r} is given twice, in {text!r}")
            settings[key] = value
        return cls(metric, settings, version, sort_keys=list(settings) == sorted(settings))

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "settings": dict(self.settings), "version": self.version, "text": self.render()}

    def __str__(self) -> str:
        return self.render()


def diff(a: Signature, b: Signature) -> dict[str, tuple[str | None, str | None]]:
    """The settings ``a`` and ``b`` disagree on, sorted by key: each side's value as rendered, ``None`` on the
    side that lacks it. A version that differs is the key ``ragmeter``; the names are not compared. Empty
    exactly when the two render to texts that differ at most in the name and the settings' order.

    >>> diff(Signature("m", {"n": 10, "seed": 0}, "0.1.0"), Signature("m", {"n": 20}, "0.2.0"))
    {'n': ('10', '20'), 'ragmeter': ('0.1.0', '0.2.0'), 'seed': ('0', None)}
    """
    left, right = _values(a), _values(b)
    return {
        key: (left.get(key), right.get(key))
        for key in sorted(left.keys() | right.keys())
        if left.get(key) != right.get(key)
    }


def _values(signature: Signature) -> dict[str, str]:
    return {**{key: _format(value) for key, value in signature.settings.items()}, VERSION_KEY: signature.version}


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple, frozenset, set)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return ",".join(str(item) for item in items)
    return str(value)
