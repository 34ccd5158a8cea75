"""Which language a text is written in: py3langid (a Naive Bayes identifier whose model ships in its wheel), told to
choose between the languages ragmeter knows.

The model ships xz-compressed (68 MB unpacked): unpacking it took 1.2 s of every process that met a record. The
arrays the identifier needs for ragmeter's languages (its byte automaton and the two languages' columns) are kept
unpacked in ragmeter's cache folder (:func:`~ragmeter.core.files.cache_dir`) after the first use, and read back
in a few milliseconds; a cache that cannot be written or read is rebuilt from the wheel, with the same result.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from functools import lru_cache
from importlib.metadata import version
from typing import Any

import numpy as np

from ragmeter.core.errors import ConfigError
from ragmeter.core.files import cache_dir, writing

__all__ = ["DETECTOR_ID", "identifier"]

#: The detector, in the signatures of runs that use it.
DETECTOR_ID = f"py3langid-{version('py3langid')}"


def _arrays(codes: Sequence[str]) -> dict[str, np.ndarray]:
    """The identifier's arrays for ``codes``, unpacked from the wheel's model."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE
    from py3langid.modelio import load_model

    ptc, pc, classes, nextmove, row, output = load_model(MODEL_DIR / MODEL_FILE)
    keep = [list(classes).index(code) for code in codes]
    return {
        "ptc": np.asarray(ptc)[:, keep],
        "pc": np.asarray(pc)[keep],
        "classes": np.asarray(codes),
        "nextmove": np.asarray(nextmove, dtype=np.uint32),
        "row": np.asarray(row, dtype=np.uint16),
        "output": np.asarray(output, dtype=np.int64),
    }


def _cached_arrays(codes: Sequence[str]) -> dict[str, np.ndarray]:
    path = cache_dir() / "languages" / f"{DETECTOR_ID}-{'-'.join(codes)}.npz"
    try:
        with np.load(path) as stored:
            return {name: stored[name] for name in stored.files}
    except (OSError, ValueError, KeyError):
        pass
    arrays = _arrays(codes)
    try:
        with writing(path) as temporary, temporary.open("wb") as handle:
            np.savez(handle, **arrays)
    except ConfigError:  # a cache folder that cannot be written (or a race with another process): not kept
        pass
    return arrays


@lru_cache(maxsize=4)
def identifier(codes: tuple[str, ...]) -> Any:
    """A py3langid identifier choosing between ``codes``, with normalised probabilities."""
    from py3langid.langid import LanguageIdentifier

    arrays = _cached_arrays(codes)
    return LanguageIdentifier(
        arrays["ptc"],
        arrays["pc"],
        [str(code) for code in arrays["classes"]],
        array("I", arrays["nextmove"].tobytes()),
        arrays["output"].tolist(),
        norm_probs=True,
        tk_row=array("H", arrays["row"].tobytes()),
    )
