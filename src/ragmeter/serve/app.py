"""The HTTP side of ``ragmeter serve``: the OTLP/HTTP receiver (``POST /v1/traces``) and Prometheus's ``/metrics``
(:mod:`ragmeter.serve.prometheus`) on a Starlette app, and the thread that scores what it stored.

A request is answered 200 only once its spans are committed to the store; spans that cannot be read are counted in
the reply's ``partial_success`` with the first reason, never stored. When scoring falls behind (more than
``max_backlog`` traces received and not yet scored), the receiver answers 503 with ``Retry-After`` before reading
the body — the OTLP exporters retry then — so memory stays bounded however fast traces come; a body larger than
the limit is refused (413) as it streams in.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from ragmeter.serve.otlp_http import MAX_BODY_BYTES, BadExport, decode_export, export_response
from ragmeter.serve.prometheus import StoreCollector
from ragmeter.serve.scorer import Scorer
from ragmeter.serve.store import SqliteStore

__all__ = ["MAX_BACKLOG", "RETRY_AFTER_S", "create_app"]

_LOG = logging.getLogger("ragmeter.serve")
#: Traces received and not yet scored from which the receiver asks exporters to retry later.
MAX_BACKLOG = 10_000
RETRY_AFTER_S = 5
#: Seconds the scoring thread waits when nothing is due.
IDLE_S = 1.0


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadExport(413, f"the body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadExport(413, f"the body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(store: SqliteStore, scorer: Scorer | None = None, *, max_backlog: int = MAX_BACKLOG,
               max_body_bytes: int = MAX_BODY_BYTES, idle_s: float = IDLE_S) -> Starlette:
    """The app receiving into ``store``; with ``scorer``, a thread scores what is due while the app runs."""

    async def traces(request: Request) -> Response:
        backlog = await run_in_threadpool(store.backlog)
        if backlog["open"] + backlog["due"] >= max_backlog:
            return PlainTextResponse(f"scoring is behind ({backlog['open'] + backlog['due']} traces waiting): retry "
                                     "later", status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)})
        content_type = request.headers.get("content-type")
        try:
            body = await _body(request, max_body_bytes)
            export = decode_export(body, content_type, request.headers.get("content-encoding"),
                                   max_bytes=max_body_bytes)
        except BadExport as refused:
            return PlainTextResponse(refused.message, status_code=refused.status)
        accepted = await run_in_threadpool(store.accept, export, source="POST /v1/traces")
        first = str(accepted.problems[0]) if accepted.problems else ""
        reply, media = export_response(content_type, len(accepted.problems), first)
        return Response(reply, media_type=media)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        stop = threading.Event()
        worker = None
        if scorer is not None:
            def score() -> None:
                while not stop.is_set():
                    try:
                        busy = scorer.score_due()
                    except Exception:  # noqa: BLE001 -- a failing batch stays due: logged, tried again after a pause
                        _LOG.exception("scoring the due traces failed; trying again in %s s", RETRY_AFTER_S)
                        stop.wait(RETRY_AFTER_S)
                        continue
                    if not busy:
                        stop.wait(idle_s)
            worker = threading.Thread(target=score, name="ragmeter-scorer", daemon=True)
            worker.start()
        try:
            yield
        finally:
            stop.set()
            if worker is not None:
                worker.join()

    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store))

    async def metrics(request: Request) -> Response:
        return Response(await run_in_threadpool(generate_latest, registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/metrics", metrics)],
                     lifespan=lifespan)
