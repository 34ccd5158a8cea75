"""The table of MT-RAG's steps (``ragmeter.pipelines.mtrag.steps.PIPELINE``): names, order, what each computes."""

from __future__ import annotations

import pytest

from ragmeter.core.errors import ConfigError
from ragmeter.metrics import get_metric
from ragmeter.pipelines.mtrag.steps import JUDGED_STEPS, PIPELINE, STEPS, get_step, selected_steps


def test_the_steps_run_in_mtrag_order() -> None:
    assert STEPS == ("algorithmic", "idk", "ragas", "radbench", "idk_condition", "all")
    assert JUDGED_STEPS == ("idk", "ragas", "radbench")


def test_all_runs_every_step_with_a_judge_and_the_unjudged_ones_without() -> None:
    assert [s.name for s in selected_steps("all", judged=True)] == list(STEPS[:-1])
    assert [s.name for s in selected_steps("all", judged=False)] == ["algorithmic", "idk_condition"]
    assert selected_steps("ragas", judged=False) == (get_step("ragas"),)


def test_every_step_names_registered_metrics_and_only_radbench_asks_every_judge() -> None:
    for step in PIPELINE:
        assert step.metrics and all(get_metric(name).name == name for name in step.metrics), step.name
    assert [s.name for s in PIPELINE if s.every_judge] == ["radbench"]
    assert {s.name: s.writes[0] for s in PIPELINE if s.judged} == {
        "idk": "idk_eval",
        "ragas": "RL_F",
        "radbench": "RB_llm",
    }


def test_an_unknown_step_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown step 'nope'"):
        get_step("nope")
