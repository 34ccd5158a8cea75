"""The registry of judge backend kinds: a kind registered in one line is what ``open_judge``, ``planning_judge``,
the CLI's ``--judge`` and the Ray engine use; the built-in kinds record their capabilities."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from ragmeter.cli.judge_options import add_judge_options, check_ray_judge, judge_configs
from ragmeter.core.errors import ConfigError
from ragmeter.core.records import Record
from ragmeter.engine.ray import distributed
from ragmeter.judges import ChatRequest, JudgeCall, JudgeConfig, ScriptedBackend, open_judge, planning_judge
from ragmeter.judges.backends import (
    BackendKind,
    Capabilities,
    OpenedBackend,
    backend_kind,
    backend_kinds,
    register_backend,
    registry,
)
from ragmeter.judges.prompts import CORRECTNESS, correctness_request
from ragmeter.testing.scripted_judge import respond


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry as it is, restored after the test: a kind registered here leaks into no other test."""
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))


def _reply(request: ChatRequest) -> str:
    body: dict[str, Any] = {
        "messages": [{"role": role, "content": content} for role, content in request.messages],
        "response_format": {"json_schema": {"name": request.schema_name}},
    }
    return respond(body)


def _scripted_kind(opened: list[JudgeConfig], closed: list[str], *, starts_server: bool = False) -> BackendKind:
    def factory(config: JudgeConfig, timeout_s: float) -> OpenedBackend:
        opened.append(config)
        backend = ScriptedBackend(
            _reply, model=f"scripted-{config.model}", temperature=config.temperature, seed=config.seed
        )
        return OpenedBackend(backend, close=lambda: closed.append(f"closed after {timeout_s:g} s"))

    return BackendKind(
        "scripted",
        factory,
        lambda config: f"scripted-{config.model}",
        "answers from a script",
        Capabilities(schema_bounds=True, starts_server=starts_server),
        needs_model=True,
        concurrency=3,
        timeout_s=7.0,
        claims="split",
    )


def test_a_registered_kind_is_opened_by_open_judge_with_its_defaults(fresh_registry: None) -> None:
    opened: list[JudgeConfig] = []
    closed: list[str] = []
    register_backend(_scripted_kind(opened, closed))
    config = JudgeConfig(kind="scripted", model="m1", seed=4)
    judge = open_judge(config)
    try:
        assert opened == [config]
        assert isinstance(judge.backend, ScriptedBackend)
        assert (judge.concurrency, judge.timeout_s, judge.claims) == (3, 7.0, "split")
        call = JudgeCall(CORRECTNESS, correctness_request(Record("q", "Question?", "Answer.", references=("Answer.",))))
        [outcome] = judge.run([call])
        assert outcome.failure is None and outcome.verdict is not None
        assert len(judge.backend.requests) == 1
    finally:
        judge.close()
    assert closed == ["closed after 7 s"]
    with planning_judge(config) as planned:  # the same identity, and nothing opened
        assert planned.identity == judge.identity == "scripted-m1@t0/s4"
    assert len(opened) == 1


def test_a_kind_that_needs_a_model_refuses_a_config_without_one(fresh_registry: None) -> None:
    register_backend(_scripted_kind([], []))
    with pytest.raises(ConfigError, match="a judge of kind 'scripted' needs a model name"):
        JudgeConfig(kind="scripted")


def test_unknown_and_taken_names_are_refused(fresh_registry: None) -> None:
    with pytest.raises(ConfigError, match="judge kind must be one of local, openai, got 'nope'"):
        JudgeConfig(kind="nope")
    with pytest.raises(ConfigError, match="needs a name of its own"):
        register_backend(backend_kind("openai"))


def test_the_cli_choices_and_help_come_from_the_registry(fresh_registry: None) -> None:
    register_backend(_scripted_kind([], []))
    parser = argparse.ArgumentParser()
    add_judge_options(parser, title="judge", several=True)
    action = next(a for a in parser._actions if a.dest == "judge")
    assert tuple(action.choices or ()) == backend_kinds() == ("local", "openai", "scripted")
    assert action.help is not None and "scripted: answers from a script" in action.help
    args = parser.parse_args(["--judge", "scripted", "--judge", "local", "--judge-model", "a,b"])
    configs = judge_configs(args, Path("judges.sqlite"))
    assert [(c.kind, c.model) for c in configs] == [("local", None), ("scripted", "a"), ("scripted", "b")]


def test_the_built_in_kinds_record_their_capabilities() -> None:
    local, remote = backend_kind("local"), backend_kind("openai")
    # the local llama.cpp server's grammar takes the schemas' maxLength/maxItems (OpenAI's strict mode refuses them),
    # and it continues a reply begun for the judge (OpenAI's API would take it as an earlier turn)
    assert local.capabilities == Capabilities(schema_bounds=True, starts_server=True, continues_replies=True)
    assert remote.capabilities == Capabilities(schema_bounds=False, starts_server=False, continues_replies=False)
    assert (local.needs_model, local.concurrency, local.timeout_s, local.claims) == (False, 1, 600.0, "split")
    assert (remote.needs_model, remote.concurrency, remote.timeout_s, remote.claims) == (True, 8, 120.0, "verify")


def test_the_ray_engine_refuses_a_kind_that_starts_a_server(fresh_registry: None) -> None:
    register_backend(_scripted_kind([], [], starts_server=True))
    config = JudgeConfig(kind="scripted", model="m")
    with pytest.raises(ConfigError, match="cannot start the server of a 'scripted' judge on every actor"):
        distributed.check_judge(config)
    with pytest.raises(ConfigError, match="--engine ray cannot start the server of --judge scripted"):
        check_ray_judge(config)
    distributed.check_judge(JudgeConfig(kind="openai", model="m"))
