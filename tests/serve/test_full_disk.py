"""``ragmeter serve``'s receiver on a disk that fills up (a small tmpfs the test mounts: root only, skipped elsewhere
with the reason): while the store cannot write, a request is answered 503 with Retry-After (which the OTLP exporters
retry), never 500 (which they drop); everything it acknowledged is stored, nothing it refused; once there is room
again, the same exports are taken, each span once, by the same process."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import running

from ragmeter.serve.app import RETRY_AFTER_S, create_app
from ragmeter.serve.store import SqliteStore


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True, text=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"no small tmpfs here (mount: {mounted.stderr.strip()}): the test mounts one, as root")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=False)


def export(n: int) -> bytes:
    """One trace (id ``n``) of a root span whose answer is 8 KB: a disk of 256 KB holds a few dozen."""
    attributes = [
        {"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
        {"key": "input.value", "value": {"stringValue": f"question {n}"}},
        {"key": "output.value", "value": {"stringValue": f"answer {n} " + "x" * 8_000}},
    ]
    span = {
        "traceId": f"{n + 1:032x}",
        "spanId": f"{n + 1:016x}",
        "name": "rag",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": attributes,
    }
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}).encode()


def post(url: str, body: bytes) -> tuple[int, str | None]:
    request = urllib.request.Request(
        f"{url}/v1/traces", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.headers.get("Retry-After")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("Retry-After")


def test_a_full_disk_asks_exporters_to_retry_and_loses_nothing_acknowledged(small_disk: Path) -> None:
    store = SqliteStore(small_disk / "store.sqlite")
    replies: dict[int, tuple[int, str | None]] = {}
    with running(create_app(store)) as url:
        for n in range(200):
            replies[n] = post(url, export(n))
            if sum(status == 503 for status, _ in replies.values()) >= 5:
                break
        statuses = {status for status, _ in replies.values()}
        acknowledged = [n for n, (status, _) in replies.items() if status == 200]
        refused = [n for n, (status, _) in replies.items() if status == 503]
        assert statuses == {200, 503} and len(refused) == 5
        assert {after for status, after in replies.values() if status == 503} == {str(RETRY_AFTER_S)}
        assert all(store.spans(f"{n + 1:032x}") for n in acknowledged)
        assert not any(store.spans(f"{n + 1:032x}") for n in refused)

        subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
        assert [post(url, export(n))[0] for n in refused] == [200] * len(refused)
        assert post(url, export(acknowledged[0]))[0] == 200  # an exporter's retry of what was stored: kept once
        assert store.backlog()["open"] == len(replies)
    store.close()
