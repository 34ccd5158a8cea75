"""Scores forwarded downstream (``ragmeter serve --forward URL``): each scored trace's ``ragmeter.evaluation`` span,
a child of its root, POSTed as OTLP/JSON to another OTLP/HTTP receiver (an OTel Collector, Arize Phoenix, any
backend), so the scores show beside the traces there.

The spans are :func:`ragmeter.io.traces.write_back.evaluation_requests`'s, as ``ragmeter run --write-back otel``
writes them (the same attributes, and an id drawn from the trace, its root and the signatures, so a span sent twice
is one span downstream). A trace is marked forwarded in the store only once the receiver has answered 2xx, so a
receiver that is down, or a kill, delays the spans and loses none: they go with the next attempt (the thread tries
again after a pause); a trace scored with no record has no root to hang a span on and is not forwarded.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from ragmeter.core.errors import ConfigError
from ragmeter.io.traces.write_back import evaluation_requests
from ragmeter.serve.store import ScoredTrace, Store

__all__ = ["BATCH", "ForwardError", "Forwarder", "check_url"]

#: Scored traces forwarded per request at most.
BATCH = 500
TIMEOUT_S = 10.0


class ForwardError(RuntimeError):
    """The receiver did not take the spans (refused, or unreachable): they stay to be forwarded."""


def check_url(url: str) -> None:
    """A ConfigError unless ``url`` is an http(s) URL."""
    if not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"--forward {url}: give the http:// or https:// URL of an OTLP/HTTP traces endpoint "
            "(e.g. http://collector:4318/v1/traces)"
        )


class Forwarder:
    """Forwards ``store``'s scored traces to the OTLP/HTTP traces endpoint ``url`` (``…/v1/traces``)."""

    def __init__(self, store: Store, url: str, *, batch: int = BATCH) -> None:
        check_url(url)
        self.store, self.url, self.batch = store, url, batch

    def forward_due(self) -> int:
        """Forward up to one batch of the traces not forwarded yet; how many were (0: none was waiting). Raises
        :class:`ForwardError` when the receiver does not take them."""
        outcomes = self.store.unforwarded(self.batch)
        if not outcomes:
            return 0
        groups: dict[str, list[ScoredTrace]] = {}  # one request per set of signatures (the span ids draw on them)
        for outcome in outcomes:
            groups.setdefault(json.dumps(outcome.signatures, sort_keys=True), []).append(outcome)
        now_ns = time.time_ns()
        for group in groups.values():
            rows = [{"id": o.trace_id, "scores": o.scores, "undefined": o.undefined} for o in group]
            metadata = {o.trace_id: (o.record or {}).get("metadata") or {} for o in group}
            roots = {
                trace_id: (meta["trace_id"], meta["span_id"])
                for trace_id, meta in metadata.items()
                if "trace_id" in meta and "span_id" in meta
            }
            for request, _ in evaluation_requests(rows, roots, group[0].signatures, now_ns):
                self._post(request)
            self.store.mark_forwarded([o.trace_id for o in group])
        return len(outcomes)

    def _post(self, request: dict) -> None:
        body = json.dumps(request, separators=(",", ":")).encode()
        sent = urllib.request.Request(self.url, data=body, method="POST", headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(sent, timeout=TIMEOUT_S):
                return
        except (urllib.error.URLError, OSError) as exc:
            raise ForwardError(f"{self.url} did not take the evaluation spans: {getattr(exc, 'reason', exc)}") from exc
