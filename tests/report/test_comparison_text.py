"""The comparison as text (``ragmeter.report.comparison``): what a run's item ids carry never reaches the terminal
raw, in the unpaired-items line or anywhere else."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter import compare
from ragmeter.analysis.compare import ScoredRun
from ragmeter.report.comparison import render_comparison

SIGNATURES = {"token_f1": "token_f1|normalizer:squad-v1.1|ragmeter:0.1.0"}
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: a terminal shows what follows it backwards


def _run(name: str, ids: list[str], scores: list[float]) -> ScoredRun:
    return ScoredRun(
        name,
        tuple((item, None) for item in ids),
        {"token_f1": np.array(scores)},
        SIGNATURES,
        (None,) * len(ids),
        ({},) * len(ids),
    )


@pytest.mark.parametrize("markdown", [False, True])
def test_a_bidi_override_in_an_unpaired_id_is_escaped(markdown: bool) -> None:
    shared = ["q1", "q2", "q3"]
    a = _run("A", [*shared, f"evil{RLO}txt.exe"], [0.1, 0.2, 0.3, 0.4])
    b = _run("B", [*shared, "\u2066iso\u2069", "bell\x07"], [0.2, 0.3, 0.4, 0.5, 0.6])
    text = render_comparison(compare(a, b)[0], markdown=markdown)
    assert not any(char in text for char in (RLO, "\u2066", "\u2069", "\x07"))
    assert (
        "Unpaired items, left out: 1 only in A (evil\\u202etxt.exe), 2 only in B (\\u2066iso\\u2069, bell\\x07)."
    ) in text.splitlines()


def test_text_that_is_only_unusual_is_kept() -> None:
    # Arabic and Hebrew letters carry their own direction, and a zero-width joiner builds emoji: none is a control
    ids = ["q1", "q2", "q3"]
    a = _run("A", [*ids, "سؤال"], [0.1, 0.2, 0.3, 0.4])
    b = _run("B", [*ids, "שאלה", "👩\u200d💻"], [0.2, 0.3, 0.4, 0.5, 0.6])
    text = render_comparison(compare(a, b)[0])
    assert "Unpaired items, left out: 1 only in A (سؤال), 2 only in B (שאלה, 👩\u200d💻)." in text.splitlines()
