"""Signatures (ragmeter.core.signature): rendering in sorted or given order, parsing back every signature a demo
run writes, the settings two signatures disagree on, and the analyses' signatures pinned to their text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter import Settings, __version__
from ragmeter.analysis.calibration import calibrate_tau
from ragmeter.analysis.compare import NO_SIGNATURE, ScoredRun, compare
from ragmeter.cli import main
from ragmeter.core.signature import Signature, diff
from ragmeter.human.with_people import agreement
from ragmeter.report.comparison import render_comparison
from ragmeter.results.paired import Quadrant, Threshold

V = __version__


def test_settings_render_sorted_by_key_or_in_the_order_given() -> None:
    settings = {"seed": 0, "ci": "percentile", "stemmer": True, "idk": ["a", "b"], "on": frozenset({"y", "x"})}
    assert Signature("m", settings).render() == f"m|ci:percentile|idk:a,b|on:x,y|seed:0|stemmer:yes|ragmeter:{V}"
    assert (
        Signature("m", settings, sort_keys=False).render()
        == f"m|seed:0|ci:percentile|stemmer:yes|idk:a,b|on:x,y|ragmeter:{V}"
    )
    assert Signature("m").render() == f"m|ragmeter:{V}" and str(Signature("m", {}, "9")) == "m|ragmeter:9"


@pytest.fixture(scope="module")
def demo_summary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("demo") / "run"
    assert main(["run", "--demo", "--out", str(out), "--metrics", "citation,lexical,efficiency,mtrag"]) == 0
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def test_parse_is_the_inverse_of_render_on_every_signature_a_demo_run_writes(demo_summary: dict[str, Any]) -> None:
    texts = [
        *demo_summary["signatures"].values(),
        *(s["signature"] for s in demo_summary["summaries"]),
        demo_summary["paired_analysis"]["signature"],
    ]
    assert len(texts) > 40
    for text in texts:
        parsed = Signature.parse(text)
        assert parsed.render() == text and parsed.version == V and parsed.metric == text.split("|")[0]
        assert len(parsed.settings) == text.count("|") - 1
    sorted_texts = [*demo_summary["signatures"].values(), *(s["signature"] for s in demo_summary["summaries"])]
    assert all(Signature.parse(text).sort_keys for text in sorted_texts)  # a metric's settings are sorted
    assert not Signature.parse(demo_summary["paired_analysis"]["signature"]).sort_keys


def test_a_parsed_signature_equals_the_built_one_with_its_values_as_text() -> None:
    built = Signature("overlap", {"tau_sim": 0.65, "embedder": "minilm@sha256:8199be6f/max_len:256", "fast": False})
    assert Signature.parse(built.render()) == Signature(
        "overlap", {"embedder": "minilm@sha256:8199be6f/max_len:256", "fast": "no", "tau_sim": "0.65"}
    )
    assert diff(built, Signature.parse(built.render())) == {}


def test_a_judge_setting_is_one_key_whatever_colons_its_value_holds() -> None:
    settings = {
        "judge:claims": "llama3:8b@t0/s0/claims:ab12",
        "judge:idk": "llama3:8b@t0/s0/idk:cd34",
        "idk_eval_source": "judge",
    }
    text = Signature("RL_F_idk", settings).render()
    assert text == (
        "RL_F_idk|idk_eval_source:judge|judge:claims:llama3:8b@t0/s0/claims:ab12"
        f"|judge:idk:llama3:8b@t0/s0/idk:cd34|ragmeter:{V}"
    )
    assert Signature.parse(text) == Signature("RL_F_idk", settings)


@pytest.mark.parametrize(
    "text",
    [
        "unknown",
        "",
        "m|x:1",
        "m|ragmeter:",
        f"|x:1|ragmeter:{V}",
        f"m|x|ragmeter:{V}",
        f"m|:1|ragmeter:{V}",
        f"m|x:1|x:2|ragmeter:{V}",
        f"m|judge:claims|ragmeter:{V}",
        f"m|x:1|version:{V}",
    ],
)
def test_parse_refuses_a_text_that_is_not_a_signature(text: str) -> None:
    with pytest.raises(ValueError, match="not a signature"):
        Signature.parse(text)


def test_diff_names_the_settings_that_differ_with_each_side_as_rendered() -> None:
    rouge = Signature("rouge_l", {"tokenizer": "rouge-score"}, "0.1.0")
    assert diff(rouge, Signature("rouge_l", {"tokenizer": "rouge-score", "stemmer": "porter"}, "0.1.0")) == {
        "stemmer": (None, "porter")
    }
    assert diff(
        Signature("m", {"n": 10, "seed": 0, "fast": True}, "0.1.0"),
        Signature("other name", {"n": 20, "fast": "yes"}, "0.2.0"),
    ) == {"n": ("10", "20"), "ragmeter": ("0.1.0", "0.2.0"), "seed": ("0", None)}
    ordered = Signature("m", {"b": 1, "a": 2}, sort_keys=False)
    assert (
        diff(ordered, Signature("m", {"a": 2, "b": 1})) == {}
        and ordered.render() != Signature("m", {"a": 2, "b": 1}).render()
    )


def test_the_analyses_signatures_keep_their_text(tmp_path: Path) -> None:
    """The order of their settings predates sorting; the text is what earlier outputs hold."""
    settings = Settings(n_resamples=300, confidence=0.9, seed=7, ci_method="percentile")
    grounded, correct = Threshold("faithfulness_offline", 0.5), Threshold("token_f1", 0.5)
    assert Quadrant(grounded, correct, {}, 0, 0).signature == (
        f"paired_analysis|grounded:faithfulness_offline≥0.5|correct:token_f1≥0.5|ragmeter:{V}"
    )

    rng = np.random.default_rng(0)
    ratings = rng.integers(1, 6, 24)
    scores = tmp_path / "items.jsonl"
    scores.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "conversation_id": f"c{i // 3}", "scores": {"m": float(r) + rng.random()}})
            + "\n"
            for i, r in enumerate(ratings)
        ),
        encoding="utf-8",
    )
    human = tmp_path / "human.jsonl"
    human.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "rating": int(r), "good": int(r >= 3)}) + "\n" for i, r in enumerate(ratings)
        ),
        encoding="utf-8",
    )
    common = f"ci:percentile|confidence:0.9|n_resamples:300|resample:clusters|seed:7|ragmeter:{V}"
    assert agreement(scores, human, metric="m", label="rating", settings=settings).signature == (
        f"agree|metric:m|label:rating|kind:scale|{common}"
    )
    assert agreement(scores, human, metric="m", label="good", threshold=3.25, settings=settings).signature == (
        f"agree|metric:m|label:good|kind:binary|threshold:3.25|{common}"
    )

    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(
        "".join(
            json.dumps(
                {
                    "sentence": f"the cat sat {i}",
                    "chunk": "the cat sat" if i % 2 else "a dog ran far",
                    "label": "supported" if i % 2 else "not supported",
                    "conversation_id": f"c{i // 2}",
                }
            )
            + "\n"
            for i in range(12)
        ),
        encoding="utf-8",
    )
    calibration = calibrate_tau(
        labelled, settings=Settings(embedder="hashing", n_resamples=300, confidence=0.9, seed=7)
    )
    assert calibration.signature == f"calibrate-tau|embedder:{calibration.embedder}|{common}"

    run = tmp_path / "run.jsonl"
    run.write_text(
        "".join(json.dumps({"id": f"q{i}", "scores": {"m": i / 10}}) + "\n" for i in range(4)), encoding="utf-8"
    )
    [comparison] = compare(run, run, settings=settings, allow_different_settings=True)
    assert comparison.signature == (
        "compare|ci:percentile|confidence:0.9|n_resamples:300|permutations:9999"
        f"|resample:clusters|correction:holm|mcnemar_exact_below:25|seed:7|ragmeter:{V}"
    )


def test_a_signature_a_run_lacks_is_none_in_a_comparison_and_unknown_in_its_json_and_report() -> None:
    keys, scores = tuple((f"q{i}", None) for i in range(6)), {m: np.linspace(0, 1, 6) for m in ("f1", "em")}
    signed = {"f1": f"f1|normalizer:squad|ragmeter:{V}", "em": f"em|ragmeter:{V}"}
    a = ScoredRun("A", keys, scores, signed, (None,) * 6, ({},) * 6)
    b = ScoredRun("B", keys, scores, {"f1": f"f1|normalizer:other|ragmeter:{V}"}, (None,) * 6, ({},) * 6)
    [comparison] = compare(a, b, allow_different_settings=True)
    assert comparison.different_settings == {
        "f1": (signed["f1"], f"f1|normalizer:other|ragmeter:{V}"),
        "em": (signed["em"], None),
    }
    assert NO_SIGNATURE == "unknown" and comparison.to_dict()["different_settings"]["em"] == [signed["em"], "unknown"]
    [reverse] = compare(b, a, allow_different_settings=True)
    assert {m.metric: m.signature for m in reverse.overall}["em"] is None
    assert {m["metric"]: m["signature"] for m in reverse.to_dict()["groups"][0]["metrics"]}["em"] == "unknown"
    text = render_comparison(reverse)
    assert f"Settings differ for em (compared anyway): unknown against {signed['em']}." in text
    assert "\n  unknown" not in text and f"\n  f1|normalizer:other|ragmeter:{V}" in text
