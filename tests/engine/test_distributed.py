"""``ragmeter run --engine ray`` (ragmeter.engine.ray.distributed) on a local Ray cluster of 2 CPUs: the same items and
summaries as a local run, on the demo and on 2,000 synthetic records in four pieces; bad records reported as the local
reader reports them; an actor killed mid-run; a resumed run; pieces that number lines as the whole file.

The runs that test what the engine does with pieces and actors (shards, a killed actor, a resumed run) score the
lexical family only: what an actor scores is ``ragmeter.evaluate``'s work, the same for every metric, and the
default metrics (the embedder and the store the actors share) are compared with a local run on the demo and on
the 2,000 records."""

from __future__ import annotations

import functools
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter import evaluate, read_records
from ragmeter.cli import main
from ragmeter.core.errors import InputError
from ragmeter.io.demo import demo_path
from ragmeter.io.readers import iter_records, line_spans, raw_records

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'ragmeter[ray]' (in the test extra)")

from ragmeter.engine.ray import distributed
from ragmeter.testing.synthetic import write_synthetic_records

#: Small pools: records whose texts repeat, so the local and the Ray run take seconds, not minutes.
POOLS = {"n_sentences": 400, "n_chunks": 250}
#: The metrics of the runs that test pieces and actors (see the module's docstring): no model to load or run.
LEXICAL = "lexical"


@pytest.fixture(scope="module")
def cluster():
    distributed.connect(cpus=2)
    yield
    ray.shutdown()


def _run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _same_run(local: Path, remote: Path) -> None:
    """The two run folders hold the same items, byte for byte, and the same summary."""
    assert (local / "items.jsonl").read_bytes() == (remote / "items.jsonl").read_bytes()
    summary = json.loads((local / "summary.json").read_text(encoding="utf-8"))
    assert summary == json.loads((remote / "summary.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- pieces


def test_pieces_number_their_lines_as_the_whole_file(tmp_path: Path) -> None:
    """Spans cut at line ends give the records, lines and errors of the whole file, BOM and lone \\r too."""
    path = tmp_path / "r.jsonl"
    lines = [json.dumps({"id": f"q{i}", "question": "Q?", "answer": f"A {i}."}) for i in range(23)]
    lines[4] = '{"id": "broken"'
    lines[9] = json.dumps({"id": "q9", "question": "Q?"})  # no answer
    text = "\ufeff" + "\n".join(lines[:12]) + "\n\n" + "\r".join(lines[12:15]) + "\r\n" + "\n".join(lines[15:])
    path.write_bytes(text.encode("utf-8"))

    def key(item: Any) -> Any:
        return str(item) if isinstance(item, InputError) else (item.id, item.answer)

    whole = [(line, key(item)) for line, item in raw_records(path, "native", {})]
    for size in (1, 3, 7, 100):
        spans = list(line_spans(path, size))
        pieced = [(line, key(item)) for span in spans for line, item in raw_records(path, "native", {}, span)]
        assert pieced == whole, size
    assert [key(item) for item in iter_records(path)] == [key for _, key in whole]
    assert len(whole) == 23 and sum(isinstance(k, str) for _, k in whole) == 2


def test_inputs_are_a_file_a_folder_or_a_glob(tmp_path: Path) -> None:
    for name in ("b.jsonl", "a.jsonl", "notes.txt"):
        (tmp_path / name).write_text('{"id": "x", "question": "Q?", "answer": "A."}\n', encoding="utf-8")
    assert [p.name for p in distributed.input_files(tmp_path)] == ["a.jsonl", "b.jsonl"]
    assert [p.name for p in distributed.input_files(tmp_path / "*.jsonl")] == ["a.jsonl", "b.jsonl"]
    assert distributed.input_files(tmp_path / "a.jsonl") == [tmp_path / "a.jsonl"]
    with pytest.raises(InputError, match="no such file, folder or glob match"):
        distributed.input_files(tmp_path / "missing-*.jsonl")


# ---------------------------------------------------------------- the same results as a local run


def test_the_demo_gives_the_local_run_exactly(cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, local_report, _ = _run(capsys, "run", "--demo", "--out", tmp_path / "local")
    assert code == 0
    code, ray_report, err = _run(capsys, "run", "--demo", "--out", tmp_path / "ray", "--engine", "ray")
    assert code == 0 and err.strip() == f"Per-item scores: {tmp_path / 'ray' / 'items.jsonl'}"
    _same_run(tmp_path / "local", tmp_path / "ray")
    assert ray_report == local_report  # the printed report too


def test_two_thousand_records_in_pieces_and_shards_give_the_local_run_exactly(
    cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # pieces of 500 lines instead of PIECE_LINES: four pieces and four shards at a quarter of the records
    monkeypatch.setattr(distributed, "plan_pieces", functools.partial(distributed.plan_pieces, lines=500))
    whole = tmp_path / "records.jsonl"
    write_synthetic_records(whole, 2_000, seed=3, **POOLS)
    shards = tmp_path / "shards"
    shards.mkdir()
    lines = whole.read_text(encoding="utf-8").splitlines(keepends=True)
    for i in range(4):  # the same records as four shard files
        (shards / f"part-{i}.jsonl").write_text("".join(lines[i * 500 : (i + 1) * 500]), encoding="utf-8")
    assert len(distributed.plan_pieces([whole])) == 4
    assert _run(capsys, "run", whole, "--out", tmp_path / "local", "--no-progress")[0] == 0
    assert _run(capsys, "run", whole, "--out", tmp_path / "ray", "--engine", "ray")[0] == 0
    _same_run(tmp_path / "local", tmp_path / "ray")
    assert (
        _run(capsys, "run", whole, "--out", tmp_path / "local-lexical", "--no-progress", "--metrics", LEXICAL)[0] == 0
    )
    assert (
        _run(
            capsys,
            "run",
            shards,
            "--out",
            tmp_path / "sharded",
            "--engine",
            "ray",
            "--workers",
            "2",
            "--metrics",
            LEXICAL,
        )[0]
        == 0
    )
    local = json.loads((tmp_path / "local-lexical" / "summary.json").read_text(encoding="utf-8"))
    sharded = json.loads((tmp_path / "sharded" / "summary.json").read_text(encoding="utf-8"))
    assert sharded["summaries"] == local["summaries"] and sharded["n_items"] == 2_000
    assert (tmp_path / "sharded" / "items.jsonl").read_bytes() == (
        tmp_path / "local-lexical" / "items.jsonl"
    ).read_bytes()


# ---------------------------------------------------------------- bad input, faults, resume


def test_a_shard_with_bad_records_is_reported_as_the_local_reader_reports_it(
    cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    good = demo_path().read_text(encoding="utf-8").splitlines(keepends=True)
    (shards / "a.jsonl").write_text("".join(good[:20]), encoding="utf-8")
    broken = good[20:]
    broken[3] = broken[3].replace('"answer":', '"answr":')
    broken[7] = '{"id": "q28", "question": \n'
    broken[9] = good[0]  # q01 again: an id already in a.jsonl
    (shards / "b.jsonl").write_text("".join(broken), encoding="utf-8")
    code, _, err = _run(capsys, "run", shards, "--out", tmp_path / "out", "--engine", "ray")
    b = shards / "b.jsonl"
    local_errors = [f"error: {e}" for e in iter_records(b) if isinstance(e, InputError)]
    assert code == 2 and all(line in err for line in local_errors) and len(local_errors) == 2
    assert f"error: {b}:10 field 'id': repeats the id 'q01' for model_id 'demo-rag-1' of {shards / 'a.jsonl'}:1" in err
    assert "3 bad record(s), 42 valid" in err and not (tmp_path / "out" / "items.jsonl").exists()
    code, _, err = _run(capsys, "run", shards, "--out", tmp_path / "out", "--engine", "ray", "--skip-invalid")
    assert code == 0 and "scoring 42" in err
    assert len((tmp_path / "out" / "items.jsonl").read_text(encoding="utf-8").splitlines()) == 42


def _scorer_pids() -> list[int]:
    """The processes of the scoring actors (Ray titles them after the actor's class)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if title.startswith("ray::") and "Scorer" in title:
                pids.append(int(entry.name))
    return pids


def test_an_actor_killed_mid_run_loses_no_item(cluster, tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    write_synthetic_records(path, 6_000, seed=5, **POOLS)
    pieces = distributed.plan_pieces([path], lines=500)
    check = distributed.check_pieces(pieces, {})
    metrics = [LEXICAL]
    expected: list[str] = []
    evaluate(read_records(path), metrics=metrics, on_items=lambda rows: expected.extend(json.dumps(r) for r in rows))

    got: list[str] = []
    killed: list[int] = []
    rows_before_the_kill: list[int] = []

    def kill_one_actor_after_the_first_piece() -> None:
        deadline = time.monotonic() + 120
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = _scorer_pids()
        if pids:
            rows_before_the_kill.append(len(got))
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    killer = threading.Thread(target=kill_one_actor_after_the_first_piece)
    killer.start()
    result = distributed.evaluate_ray(
        pieces, check, metrics=metrics, workers=2, on_items=lambda rows: got.extend(json.dumps(r) for r in rows)
    )
    killer.join()
    assert killed, "no scoring actor was found to kill"
    assert rows_before_the_kill[0] < 6_000, "the actor was killed after the run had every row"
    assert got == expected and len(result) == 6_000


def test_a_stopped_run_resumes_from_its_items_and_the_pieces_its_actors_finished(
    cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(distributed, "plan_pieces", functools.partial(distributed.plan_pieces, lines=500))
    path = tmp_path / "records.jsonl"
    write_synthetic_records(path, 1_250, seed=7, **POOLS)  # pieces: lines 1–500, 501–1,000, 1,001–1,250
    assert _run(capsys, "run", path, "--out", tmp_path / "whole", "--engine", "ray", "--metrics", LEXICAL)[0] == 0
    assert not (tmp_path / "whole" / "items.parts").exists()  # a finished run keeps items.jsonl only
    items = (tmp_path / "whole" / "items.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    stopped = tmp_path / "stopped"
    (stopped / "items.parts").mkdir(parents=True)
    manifest = json.loads((tmp_path / "whole" / "run.json").read_text(encoding="utf-8"))
    (stopped / "run.json").write_text(json.dumps({**manifest, "status": "running"}), encoding="utf-8")
    # stopped inside the first piece (its last line torn), after an actor had finished the third piece
    (stopped / "items.jsonl").write_text("".join(items[:375]) + items[375][:40], encoding="utf-8")
    third = items[1_000:]
    marked = json.loads(third[0])
    marked["scores"]["rouge_l"] = 0.123456  # to see that the shard is read back, not scored again
    third[0] = json.dumps(marked, ensure_ascii=False) + "\n"
    (stopped / "items.parts" / "piece-000002.jsonl").write_text("".join(third), encoding="utf-8")
    code, _, err = _run(capsys, "run", path, "--out", stopped, "--engine", "ray", "--metrics", LEXICAL)
    assert code == 2 and "holds an interrupted run: pass --resume" in err
    code, _, err = _run(capsys, "run", path, "--out", stopped, "--engine", "ray", "--resume", "--metrics", LEXICAL)
    assert code == 0 and "resuming: 625 finished item(s) kept (250 from the piece shards in " in err
    assert "items.parts), 625 to score" in err
    got = (stopped / "items.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert got == items[:1_000] + third and not (stopped / "items.parts").exists()


def test_an_address_where_nothing_listens_fails_in_seconds_saying_what_to_give() -> None:
    from ragmeter.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--ray-address 127.0.0.1:1: nothing answers there \(Connection refused\)"):
        distributed._check_reachable("127.0.0.1:1")
    with pytest.raises(ConfigError, match="expected HOST:PORT, ray://HOST:PORT or auto"):
        distributed._check_reachable("headnode")


def test_the_packaged_judge_is_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "run", "--demo", "--out", tmp_path / "o", "--engine", "ray", "--judge", "local")
    assert code == 2 and "serve the model once" in err and not (tmp_path / "o").exists()


def test_pieces_are_numbered_in_input_order(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text(
            "".join(f'{{"id": "{name}{i}", "question": "Q?", "answer": "A."}}\n' for i in range(25)), encoding="utf-8"
        )
    pieces = distributed.plan_pieces(distributed.input_files(tmp_path), lines=10)
    assert [p.index for p in pieces] == list(range(6))
    assert [(Path(p.path).name, p.span.first_line) for p in pieces if p.span] == [
        ("a.jsonl", 1),
        ("a.jsonl", 11),
        ("a.jsonl", 21),
        ("b.jsonl", 1),
        ("b.jsonl", 11),
        ("b.jsonl", 21),
    ]


def test_the_embedding_store_shares_the_work_and_hands_on_a_dead_actors_claims(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmeter.engine.ray import shared_embeddings as shared

    store = shared.EmbeddingStore(max_bytes=3 * 16)
    texts = [f"t{i}" for i in range(shared.CLAIM + 5)]
    found, first = store.take(texts)
    assert found == {} and first == texts[: shared.CLAIM]  # one call claims a slice, not everything
    found, second = store.take(texts)
    assert found == {} and second == texts[shared.CLAIM :]  # the next caller gets the rest
    assert store.take(texts) == ({}, [])  # all claimed: wait for them
    vectors = np.arange(12, dtype=np.float32).reshape(3, 4)  # 16 bytes each
    store.put(texts[:3], vectors)
    found, mine = store.take(texts[:4])
    assert list(found) == texts[:3] and mine == []
    assert np.array_equal(found["t1"], vectors[1])
    store.put(["x"], vectors[:1])  # over max_bytes: the oldest is forgotten
    assert list(store.take(["t0", "t1"])[0]) == ["t1"]
    later = shared.time.monotonic() + shared.CLAIM_TIMEOUT_S + 1
    monkeypatch.setattr(shared.time, "monotonic", lambda: later)
    assert store.take(texts[3:6])[1] == texts[3:6]  # claims of a dead actor expire


def test_judged_metrics_on_the_actors_give_the_local_run(
    cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each actor opens the judge with its share of the concurrency; the verdicts, tokens and summaries (with the
    judge's usage) are those of a local run against the same scripted judge, the claim-level family's (nuggets
    written once per question, then the grades that need them) included."""
    from ragmeter.testing.fake_openai import FakeOpenAIServer
    from ragmeter.testing.scripted_judge import records, respond

    data = tmp_path / "records.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records(12)), encoding="utf-8")
    with FakeOpenAIServer(respond) as server:
        judge = [
            "--metrics",
            "judged,claim_level",
            "--judge",
            "openai",
            "--judge-model",
            "scripted",
            "--judge-base-url",
            server.base_url,
            "--judge-api-key-env",
            "",
            "--judge-concurrency",
            "4",
            "--no-progress",
        ]
        assert _run(capsys, "run", data, "--out", tmp_path / "local", *judge)[0] == 0
        requests_local = len(server.requests)
        code, _, err = _run(capsys, "run", data, "--out", tmp_path / "ray", "--engine", "ray", *judge)
        assert code == 0, err
        assert len(server.requests) == 2 * requests_local  # the same calls again (each run its own cache)
    _same_run(tmp_path / "local", tmp_path / "ray")


def test_a_csv_with_a_column_mapping_gives_the_local_run(
    cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv

    path = tmp_path / "answers.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "query", "answer", "contexts", "references"])
        for line in demo_path().read_text(encoding="utf-8").splitlines()[:20]:
            record = json.loads(line)
            writer.writerow(
                [
                    record["id"],
                    record["question"],
                    record["answer"],
                    json.dumps(record["contexts"]),
                    json.dumps(record["references"]),
                ]
            )
    mapping = ["--map", "question=query"]
    assert _run(capsys, "run", path, "--out", tmp_path / "local", *mapping)[0] == 0
    assert _run(capsys, "run", path, "--out", tmp_path / "ray", "--engine", "ray", *mapping)[0] == 0
    _same_run(tmp_path / "local", tmp_path / "ray")


def test_ids_with_unicode_line_separators_come_back_whole(
    cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "records.jsonl"
    ids = ["a\u2028b", "c\x85d", "e\u2029f"]  # JSON written unescaped keeps them as they are
    path.write_text(
        "".join(
            json.dumps(
                {"id": i, "question": "Q?", "answer": "It opens at nine.", "references": ["at nine"]},
                ensure_ascii=False,
            )
            + "\n"
            for i in ids
        ),
        encoding="utf-8",
    )
    assert _run(capsys, "run", path, "--out", tmp_path / "local", "--metrics", "lexical")[0] == 0
    assert _run(capsys, "run", path, "--out", tmp_path / "ray", "--metrics", "lexical", "--engine", "ray")[0] == 0
    _same_run(tmp_path / "local", tmp_path / "ray")
