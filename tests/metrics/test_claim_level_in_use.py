"""Claim-level metrics where a team uses them: two runs from the command line sharing one verdict cache (the
nuggets the judge writes, ``--nugget-source judge``, written once per question for both), ``compare`` pairing every
metric by stage, the gate on ``nugget_recall_vital``, and Indonesian references. The scripted judge
(ragmeter.testing.scripted_judge) behind a fake OpenAI endpoint: a reference's first sentence is its vital nugget,
a nugget is stated where the answer holds its words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter import Settings, evaluate
from ragmeter.cli import main
from ragmeter.judges import Judge, ScriptedBackend
from ragmeter.testing.fake_openai import FakeOpenAIServer
from ragmeter.testing.scripted_judge import reply_to, respond

N = 12
METRICS = "nugget_recall_vital,nugget_recall,claim_recall,context_claim_recall,context_utilization"


def _records(states_vital: bool) -> list[dict]:
    """Per office: the reference's vital nugget (its opening hour) is in the retrieved chunk; the answer states it
    (``states_vital``) or states only the okay nugget (its desks)."""
    out = []
    for i in range(N):
        opens, desks = f"Office {i} opens at {i + 7}:00", f"Office {i} has {i + 2} desks"
        out.append(
            {
                "id": f"q{i}",
                "question": f"When does office {i} open?",
                "answer": f"{opens}." if states_vital else f"{desks}.",
                "references": [f"{opens}. {desks}."],
                "contexts": [{"doc_id": f"d{i}", "text": f"{opens} on weekdays."}],
            }
        )
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    folder = tmp_path_factory.mktemp("claim-level")
    with FakeOpenAIServer(respond) as server:
        for name, states in (("good", True), ("worse", False)):
            data = folder / f"{name}.jsonl"
            data.write_text("".join(json.dumps(r) + "\n" for r in _records(states)), encoding="utf-8")
            assert (
                main(
                    [
                        "run",
                        str(data),
                        "--out",
                        str(folder / name),
                        "--metrics",
                        METRICS,
                        "--judge",
                        "openai",
                        "--judge-model",
                        "scripted",
                        "--judge-base-url",
                        server.base_url,
                        "--judge-api-key-env",
                        "",
                        "--judge-cache",
                        str(folder / "verdicts.sqlite"),
                        "--nugget-source",
                        "judge",
                        "--no-progress",
                        "--format",
                        "json",
                        "--n-resamples",
                        "500",
                    ]
                )
                == 0
            )
        requests = list(server.requests)
    return folder / "good", folder / "worse", requests


def test_the_nuggets_are_written_once_per_question_for_both_runs(runs) -> None:
    *_, requests = runs
    asked = [r["response_format"]["json_schema"]["name"] for r in requests]
    assert asked.count("nuggets") == N  # the second run read them from the shared cache
    assert asked.count("nugget_grades") == 2 * N  # each run's answers graded


def test_compare_pairs_each_stage_and_the_gate_fails_on_lost_vital_nuggets(runs, capsys) -> None:
    good, worse, _ = runs
    assert (
        main(
            [
                "compare",
                str(good),
                str(worse),
                "--fail-on",
                "nugget_recall_vital",
                "--format",
                "json",
                "--n-resamples",
                "500",
            ]
        )
        == 1
    )
    (comparison,) = json.loads(capsys.readouterr().out)
    by_metric = {m["metric"]: m for m in comparison["groups"][0]["metrics"]}
    # the generator lost the vital nugget on every item (1 → 0), the retriever nothing (the same chunks)
    assert by_metric["nugget_recall_vital"]["difference"] == pytest.approx(-1.0)
    assert by_metric["nugget_recall"]["difference"] == pytest.approx(0.5 - 0.5)  # one nugget of two either way
    assert by_metric["context_claim_recall"]["difference"] == 0.0
    assert by_metric["context_utilization"]["difference"] == pytest.approx(-1.0)
    assert comparison["decision"]["passed"] is False
    assert main(["compare", str(good), str(worse), "--n-resamples", "500"]) == 0
    text = capsys.readouterr().out
    stages = text[text.index("Which stage moved (claim level):") :].splitlines()[1:3]
    assert stages == [
        "  retriever: no figure moved beyond its interval",
        "  generator: context_utilization worse (-1.000 [-1.000, -1.000])",
    ]
    assert main(["compare", str(good), str(good), "--fail-on", "nugget_recall_vital", "--n-resamples", "500"]) == 0


def test_indonesian_nuggets_come_from_the_indonesian_reference_in_an_indonesian_run() -> None:
    backend = ScriptedBackend(reply_to)
    record = {
        "id": "id1",
        "question": "Kapan perpustakaan buka?",
        "answer": "Perpustakaan buka pukul 08.00.",
        "references": ["Perpustakaan buka pukul 08.00. Perpustakaan tutup pukul 16.00."],
        "contexts": [{"doc_id": "p1", "text": "Perpustakaan buka pukul 08.00 setiap hari."}],
    }
    with Judge(backend, claims="verify") as judge:
        result = evaluate(
            [record],
            metrics=["nugget_recall", "nugget_recall_vital", "context_claim_recall"],
            judge=judge,
            settings=Settings(language="id", n_resamples=100, nugget_source="judge"),
        )
    nuggets = next(r for r in backend.requests if r.schema_name == "nuggets")
    assert "Perpustakaan tutup pukul 16.00." in nuggets.messages[1][1]
    # nuggets "Perpustakaan buka pukul 08.00." (vital, stated), "Perpustakaan tutup pukul 16.00." (okay, not)
    assert result.scores["nugget_recall"][0] == 0.5 and result.scores["nugget_recall_vital"][0] == 1.0
    assert result.scores["context_claim_recall"][0] == 0.5  # the chunk states the opening hour only
    assert result.languages == ("id",)
    assert "language:id" in next(s for s in result.summaries if s.metric == "nugget_recall").signature.render()


def _indonesian_vital_recall(reference: str, source: str) -> tuple[float, dict[str, str]]:
    """An Indonesian answer stating the reference's opening hour: its ``nugget_recall_vital`` under ``source``, and
    the user message of each kind of request the scripted judge got (one of each here)."""
    record = {
        "id": "id2",
        "question": "Kapan perpustakaan buka?",
        "answer": "Perpustakaan buka pukul 08.00.",
        "references": [reference],
    }
    backend = ScriptedBackend(reply_to)
    with Judge(backend, claims="verify") as judge:
        result = evaluate(
            [record],
            metrics=["nugget_recall_vital"],
            judge=judge,
            settings=Settings(language="id", n_resamples=100, nugget_source=source),
        )
    return float(result.scores["nugget_recall_vital"][0]), {r.schema_name: r.messages[1][1] for r in backend.requests}


def test_an_indonesian_references_sentences_are_split_as_indonesian() -> None:
    reference = "Perpustakaan buka pukul 08.00. Perpustakaan tutup pukul 16.00, kata Bpk. Budi."
    recall, asked = _indonesian_vital_recall(reference, "sentences")
    # two nuggets, both vital: "Bpk." (Bapak) ends no sentence in Indonesian, nor does the dot of "08.00"
    graded = asked["nugget_grades"]
    assert graded.count("<nugget n=") == 2 and "Perpustakaan tutup pukul 16.00, kata Bpk. Budi." in graded
    assert recall == 0.5


def test_an_indonesian_reference_is_split_into_indonesian_claims() -> None:
    recall, asked = _indonesian_vital_recall("Perpustakaan buka pukul 08.00. Perpustakaan tutup pukul 16.00.", "claims")
    assert "The TEXT is in Indonesian: write every claim in Indonesian" in asked["claim_split"]
    # the scripted split: the reference's two Indonesian sentences, each a vital claim; the answer states the first
    assert asked["nugget_grades"].count("<nugget n=") == 2 and recall == 0.5
