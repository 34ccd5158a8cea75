"""The judge's part of ``ragmeter run`` and ``ragmeter mtrag``: its options and the dry-run table."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from ragmeter.cli.common import path_arg
from ragmeter.core.errors import ConfigError
from ragmeter.engine.evaluation import JudgePlan
from ragmeter.io.run_folder import CACHE_FILE
from ragmeter.judges import CLAIM_MODES, LAYOUTS, LOCAL_TIMEOUT_S, REMOTE_TIMEOUT_S, JudgeConfig, JudgeUsage
from ragmeter.judges.accounting import token_cost
from ragmeter.judges.backends import backend_kind, backend_kinds
from ragmeter.judges.backends.openai import BOUNDS

__all__ = [
    "add_judge_options",
    "check_ray_judge",
    "judge_config",
    "judge_configs",
    "prices",
    "render_plan",
    "render_usage",
]


def add_judge_options(
    command: argparse.ArgumentParser, *, title: str, several: bool = False, cache_beside_output: bool = False
) -> None:
    """The judge options; ``several``: ``--judge`` may be given more than once and ``--judge-model`` may list
    several models (MT-RAG's RB_llm takes their median); ``cache_beside_output``: the verdict cache is
    ``OUTPUT.judge-cache.sqlite`` (commands that write one file), not ``OUT/judge-cache.sqlite``."""
    kinds = backend_kinds()
    named = " or ".join(f"--judge {kind}" for kind in kinds if backend_kind(kind).needs_model)
    judge = command.add_argument_group(title)
    judge.add_argument(
        "--judge",
        choices=kinds,
        action="append" if several else "store",
        help="; ".join(f"{kind}: {backend_kind(kind).description}" for kind in kinds)
        + ("; give it twice (local and openai) for several judges" if several else ""),
    )
    judge.add_argument(
        "--judge-model",
        help=f"model name at the endpoint (required with {named})"
        + ("; several, comma-separated, for several judges at that endpoint" if several else ""),
    )
    judge.add_argument(
        "--judge-base-url",
        help="endpoint base URL, e.g. http://localhost:8000/v1 (vLLM); default: $OPENAI_BASE_URL or OpenAI's",
    )
    judge.add_argument(
        "--judge-api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the key (OPENAI_API_KEY; '' for none); the key "
        "itself is never written anywhere",
    )
    judge.add_argument("--judge-model-file", type=path_arg, help="another GGUF file for --judge local")
    judge.add_argument(
        "--judge-claims",
        choices=CLAIM_MODES,
        help="verify: the judge splits the answer into claims and checks each against the chunks, "
        "in one call; split: it only splits (a third of the time), and the evidence check "
        "verifies (default: split for local, whose verdicts add nothing to the check; verify "
        "for openai; 'labels annotate' always verifies)",
    )
    judge.add_argument(
        "--judge-layout",
        choices=LAYOUTS,
        help="calls: each judge prompt a conversation of its own, with a reason before the verdict; "
        "shared: one system message for every task, the item (history, question, answer, "
        "references) once at the start of each call about it and the verdict alone, so an "
        "endpoint that caches prefixes computes the item once (default: shared for local, "
        "calls for openai; 'labels annotate' makes each prompt's own call)",
    )
    judge.add_argument(
        "--judge-bounds",
        choices=BOUNDS,
        help="schema: send the reply schemas' length bounds, which the endpoint's grammar enforces "
        "(llama.cpp, vLLM, Ollama); instructions: state them in the instructions only, for "
        "endpoints that refuse them (default: instructions for OpenAI's API and Azure OpenAI, "
        "schema elsewhere)",
    )
    judge.add_argument("--judge-concurrency", type=int, help="requests in flight at most (8; local: 1)")
    judge.add_argument(
        "--judge-timeout",
        type=float,
        default=None,
        help=f"seconds per request ({REMOTE_TIMEOUT_S:g}; local: {LOCAL_TIMEOUT_S:g})",
    )
    judge.add_argument("--judge-max-attempts", type=int, default=6, help="tries per call on 429/5xx/timeouts (6)")
    judge.add_argument(
        "--judge-backoff",
        type=float,
        default=1.0,
        help="first retry delay in seconds, doubled per retry, with jitter (1.0)",
    )
    judge.add_argument("--judge-seed", type=int, default=0, help="sampling seed sent to the judge (0)")
    judge.add_argument(
        "--judge-cache",
        type=path_arg,
        help="verdict cache (default: "
        + ("OUTPUT.judge-cache.sqlite)" if several or cache_beside_output else f"OUT/{CACHE_FILE})"),
    )
    judge.add_argument("--no-judge-cache", action="store_true", help="keep no verdict cache")
    judge.add_argument(
        "--dry-run",
        action="store_true",
        help="count the judge calls and estimate their tokens (and cost), call nothing",
    )
    judge.add_argument("--price-prompt", type=float, help="price per million prompt tokens, for the cost figure")
    judge.add_argument(
        "--price-completion", type=float, help="price per million completion tokens, for the cost figure"
    )


def judge_config(args: argparse.Namespace, default_cache: Path | None = None) -> JudgeConfig | None:
    """The judge the options describe, or ``None`` without ``--judge``; its cache is ``--judge-cache``, else
    ``default_cache``, else ``OUT/judge-cache.sqlite``."""
    if args.judge is None:
        return None
    return _config(args, args.judge, args.judge_model, args.judge_cache or default_cache or args.out / CACHE_FILE)


def judge_configs(args: argparse.Namespace, default_cache: Path) -> list[JudgeConfig]:
    """The judges the options describe (``--judge`` given once or more; ``--judge-model`` a list of models
    for a kind that is told its model, such as ``openai``), in the order the kinds were registered (the local
    judge first), one per model for such a kind."""
    models = [m.strip() for m in (args.judge_model or "").split(",") if m.strip()]
    cache = args.judge_cache or default_cache
    configs: list[JudgeConfig] = []
    for kind in (kind for kind in backend_kinds() if kind in (args.judge or [])):
        for_models = (models or [None]) if backend_kind(kind).needs_model else [None]
        configs += [_config(args, kind, model, cache) for model in for_models]
    return configs


def check_ray_judge(config: JudgeConfig | None) -> None:
    """Refuse, in the options' words, a judge that ``--engine ray`` cannot open on every actor (the CLI's
    wording of :func:`ragmeter.engine.ray.distributed.check_judge`)."""
    if config is not None and backend_kind(config.kind).capabilities.starts_server:
        raise ConfigError(
            f"--engine ray cannot start the server of --judge {config.kind} on every actor: serve the "
            "model once (llama-server, vLLM, …) and pass --judge openai --judge-model NAME "
            "--judge-base-url URL"
        )


def _config(args: argparse.Namespace, kind: str, model: str | None, cache: Path) -> JudgeConfig:
    needs_model = backend_kind(kind).needs_model
    if needs_model and not model:
        raise ConfigError(f"--judge {kind} needs a model name: --judge-model NAME")
    return JudgeConfig(
        kind=kind,
        model=model if needs_model else None,
        base_url=args.judge_base_url,
        api_key_env=args.judge_api_key_env or None,
        model_file=args.judge_model_file,
        cache=None if args.no_judge_cache else cache,
        concurrency=args.judge_concurrency,
        timeout_s=args.judge_timeout,
        max_attempts=args.judge_max_attempts,
        backoff_s=args.judge_backoff,
        seed=args.judge_seed,
        claims=args.judge_claims,
        bounds=args.judge_bounds,
        layout=args.judge_layout,
    )


def prices(args: argparse.Namespace) -> tuple[float, float] | None:
    if args.price_prompt is None and args.price_completion is None:
        return None
    return (args.price_prompt or 0.0, args.price_completion or 0.0)


def render_plan(plan: JudgePlan, judge: str, price: tuple[float, float] | None) -> str:
    header = f"{'prompt':<14}{'calls':>8}{'cached':>8}{'to make':>9}{'prompt tok ≈':>14}{'compl. tok ≤':>14}"
    lines = [f"Dry run: {plan.n_items} items, judge {judge}; nothing was called.", header, "─" * len(header)]
    rows = [*plan.by_prompt.items(), ("total", plan.totals())]
    for name, c in rows:
        lines.append(
            f"{name:<14}{c['calls']:>8}{c['cached']:>8}{c['calls'] - c['cached']:>9}"
            f"{c['prompt_tokens']:>14}{c['completion_tokens']:>14}"
        )
    lines.append("Prompt tokens are estimated as characters / 4; completion tokens are each call's limit.")
    if plan.undecided:
        lines.append(
            f"Not counted: the nugget_grades calls of the answers whose nuggets the {plan.undecided} call(s) still "
            "to make will write (one call per ten nuggets, each answer)."
        )
    if price is not None:
        totals = plan.totals()
        cost = token_cost(totals["prompt_tokens"], totals["completion_tokens"], price)
        lines.append(f"Cost at most ≈ {cost:.4f} at {price[0]:g} / {price[1]:g} per million prompt / completion tokens")
    return "\n".join(lines)


def render_usage(identity: str, usage: Mapping[str, JudgeUsage], price: tuple[float, float] | None) -> str:
    """One judge's calls and tokens by prompt (tokens spent by this run; cached verdicts cost nothing)."""
    parts = [
        f"{name}: {u.calls} calls ({u.cached} cached, {u.failures} failed, {u.repairs} repaired), "
        f"{u.prompt_tokens} + {u.completion_tokens} tokens"
        for name, u in usage.items()
    ]
    line = f"judge {identity} — " + "; ".join(parts)
    if price is not None:
        prompt = sum(u.prompt_tokens for u in usage.values())
        completion = sum(u.completion_tokens for u in usage.values())
        line += f"; cost ≈ {token_cost(prompt, completion, price):.4f}"
    return line
