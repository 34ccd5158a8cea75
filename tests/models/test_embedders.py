"""The packaged MiniLM run offline: known properties, checksum, cache, and ONNX/torch agreement."""

import numpy as np
import pytest

from ragmeter import CachedEmbedder, HashingEmbedder, OnnxMiniLM
from ragmeter.core.errors import ModelError
from ragmeter.models.base import check_sha256, length_sorted_batches
from ragmeter.models.onnx_minilm import ATTENTION_CELLS

SENTENCES = [
    "The central library opens at nine in the morning on weekdays.",
    "On weekdays the main library opens its doors at 9 am.",
    "Monthly bus passes cost forty-two dollars for adults.",
    "Volcanic eruptions can cool the global climate for several years.",
    "Residents must apply for a parking permit at the town hall.",
    "The committee approved the new budget after a long debate.",
]


@pytest.fixture(scope="module")
def onnx():
    return OnnxMiniLM()


def test_vectors_are_unit_length_and_identical_texts_have_cosine_one(onnx):
    vectors = onnx.encode(SENTENCES + [SENTENCES[0]])
    assert vectors.shape == (7, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[6]) == pytest.approx(1.0, abs=1e-5)


def test_a_paraphrase_scores_higher_than_unrelated_sentences(onnx):
    vectors = onnx.encode(SENTENCES)
    paraphrase = float(vectors[0] @ vectors[1])
    unrelated = [float(vectors[0] @ vectors[i]) for i in range(2, len(SENTENCES))]
    assert paraphrase > 0.7 and max(unrelated) < 0.4


def test_batching_order_and_threads_do_not_change_vectors_by_a_bit(onnx, monkeypatch):
    """Bit for bit: the Ray engine embeds each text in whichever actor, batch and thread count comes first,
    and still gives the local run's scores."""
    together = onnx.encode(SENTENCES)
    alone = np.stack([onnx.encode([s])[0] for s in reversed(SENTENCES)])[::-1]
    assert np.array_equal(together, alone)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as Ray sets it in an actor of one CPU
    assert np.array_equal(OnnxMiniLM().encode(SENTENCES[::-1])[::-1], together)


def test_batches_hold_similar_lengths_and_stay_under_the_attention_bound():
    lengths = [500, 3, 120, 512, 7, 130, 64, 511, 5]
    plain = length_sorted_batches(lengths, 4)
    assert [list(batch) for batch in plain] == [[1, 8, 4, 6], [2, 5, 0, 7], [3]]
    bounded = length_sorted_batches(lengths, 4, max_attention=2 * 512**2)
    # worked out by hand, in sorted order: 3, 5, 7, 64 (4 × 64²); 120, 130 (with 500 it would be 3 × 500² >
    # 2 × 512²); 500, 511 (2 × 511² ≤ 2 × 512², with 512 it would be 3 × 512²); 512, the last
    assert [list(batch) for batch in bounded] == [[1, 8, 4, 6], [2, 5], [0, 7], [3]]
    assert all(len(batch) * max(lengths[i] for i in batch) ** 2 <= 2 * 512**2 for batch in bounded)
    assert [list(b) for b in length_sorted_batches([600], 4, max_attention=10)] == [[0]]  # one text always goes


def test_token_embeddings_of_long_passages_do_not_depend_on_the_batch_bound(onnx, monkeypatch):
    """Passages of 512 tokens are encoded two at a time under the attention bound (issue 34): the same
    token vectors, bit for bit, as one batch of all of them."""
    passages = [" ".join(SENTENCES * 8)[start:] for start in range(0, 60, 10)]
    bounded = onnx.encode_tokens(passages)
    assert max(len(t.vectors) for t in bounded) == 512 and ATTENTION_CELLS < 4 * 512**2
    monkeypatch.setattr("ragmeter.models.onnx_minilm.ATTENTION_CELLS", 32 * 512**2)
    whole = onnx.encode_tokens(passages)
    for a, b in zip(bounded, whole, strict=True):
        assert np.array_equal(a.vectors, b.vectors) and np.array_equal(a.weights, b.weights)


def test_long_texts_are_truncated_not_rejected(onnx):
    vector = onnx.encode(["word " * 2000])
    assert np.isfinite(vector).all() and vector.shape == (1, 384)


def test_model_id_names_model_checksum_and_truncation(onnx):
    assert onnx.model_id == "all-MiniLM-L6-v2-int8-onnx@sha256:8199be6f/max_len:256"


def test_a_corrupt_model_file_is_refused(tmp_path):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="sha256"):
        check_sha256(fake, "8199be6f" + "0" * 56, "the packaged embedding model")
    with pytest.raises(ModelError, match="missing"):
        check_sha256(tmp_path / "absent.onnx", "0" * 64, "the packaged embedding model")


def test_cache_embeds_each_distinct_text_once_and_returns_the_same_vectors():
    inner = HashingEmbedder()
    cache = CachedEmbedder(inner)
    first = cache.encode(["a b", "c d", "a b"])
    second = cache.encode(["c d", "e f"])
    assert cache.texts_encoded == 3
    assert np.array_equal(first[0], first[2]) and np.array_equal(first[1], second[0])
    assert np.allclose(second[1], inner.encode(["e f"])[0])


def test_cache_forgets_least_recently_used_vectors_beyond_its_budget():
    cache = CachedEmbedder(HashingEmbedder(dim=4), max_bytes=2 * 16)  # two float32[4] vectors
    cache.encode(["a", "b"])
    cache.encode(["a"])  # a is now the most recent
    cache.encode(["c"])  # evicts b
    cache.encode(["a", "b"])  # a cached, b re-encoded
    assert cache.texts_encoded == 4


def test_onnx_and_torch_backends_agree(onnx, extra_module):
    extra_module("torch", "torch")  # skips without the torch extra, fails in CI (tests/conftest.py)
    from ragmeter.models.torch_minilm import TorchEmbedder

    a = onnx.encode(SENTENCES)
    b = TorchEmbedder().encode(SENTENCES)
    assert np.min(np.sum(a * b, axis=1)) >= 0.999
