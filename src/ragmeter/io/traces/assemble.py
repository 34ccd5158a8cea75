"""Spans grouped into traces as a file streams past, in bounded memory.

A trace is complete when its root (the span without a parent) has been read and :data:`SETTLE_SPANS` more spans
after it: an exporter sends a span when it ends, and a child ends before its parent, so the spans of a trace come
before its root or close after it. Traces come out in the order their roots were read; at the end of the file,
every trace still open comes out (those without a root last).

Memory is bounded: at most :data:`MAX_OPEN_TRACES` traces without a root and :data:`MAX_HELD_SPANS` spans are held;
past either bound the oldest open trace comes out as it is. A span of a trace that already came out is an error
of its line (it would be lost silently otherwise); :data:`REMEMBERED_TRACES` ids of traces that came out are kept
to tell such late spans from a new trace.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ragmeter.core.errors import InputError
from ragmeter.io.traces.otlp import SpanRow

__all__ = ["MAX_HELD_SPANS", "MAX_OPEN_TRACES", "REMEMBERED_TRACES", "SETTLE_SPANS", "TraceSpans", "group_traces"]

SETTLE_SPANS = 2_000
MAX_OPEN_TRACES = 10_000
MAX_HELD_SPANS = 500_000
REMEMBERED_TRACES = 200_000


@dataclass
class TraceSpans:
    """The spans of one trace, in file order; ``roots`` are those without a parent."""

    trace_id: str
    spans: list[SpanRow] = field(default_factory=list)
    roots: list[SpanRow] = field(default_factory=list)


def group_traces(
    items: Iterable[SpanRow | InputError],
    path: str,
    *,
    settle: int = SETTLE_SPANS,
    max_open: int = MAX_OPEN_TRACES,
    max_held: int = MAX_HELD_SPANS,
) -> Iterator[TraceSpans | InputError]:
    """Each trace of ``items`` once complete, and each error of ``items`` as it comes (see the module docstring)."""
    open_traces: dict[str, TraceSpans] = {}  # insertion order: the oldest first
    due: deque[tuple[int, str]] = deque()  # (spans read when it may come out, trace id), in root order
    done: OrderedDict[str, int] = OrderedDict()  # trace id → the line of its root (0: it had none)
    held = read = rootless = 0

    def release(trace_id: str) -> TraceSpans:
        nonlocal held, rootless
        trace = open_traces.pop(trace_id)
        held -= len(trace.spans)
        rootless -= not trace.roots
        done[trace_id] = trace.roots[0].line if trace.roots else 0
        if len(done) > REMEMBERED_TRACES:
            done.popitem(last=False)
        return trace

    for item in items:
        if isinstance(item, InputError):
            yield item
            continue
        read += 1
        if item.trace_id in done:
            yield _late(item, done[item.trace_id], path, settle)
            continue
        trace = open_traces.get(item.trace_id)
        if trace is None:
            trace = open_traces[item.trace_id] = TraceSpans(item.trace_id)
            rootless += 1
        trace.spans.append(item)
        held += 1
        if item.parent_id is None:
            if not trace.roots:
                rootless -= 1
                due.append((read + settle, item.trace_id))
            trace.roots.append(item)
        while due and (due[0][0] <= read or due[0][1] not in open_traces):
            _, trace_id = due.popleft()
            if trace_id in open_traces:
                yield release(trace_id)
        while open_traces and (rootless > max_open or held > max_held):
            yield release(next(iter(open_traces)))
    for _, trace_id in due:
        if trace_id in open_traces:
            yield release(trace_id)
    while open_traces:
        yield release(next(iter(open_traces)))


def _late(span: SpanRow, root_line: int, path: str, settle: int) -> InputError:
    where = f"its root at line {root_line}" if root_line else "no root"
    return InputError(
        f"span {span.span_id} ({span.name!r}) of trace {span.trace_id} comes after that trace was read "
        f"({where}): a span must come within {settle:,} spans of its trace's root, or before "
        "it; this span is not part of the trace's record",
        path=path,
        line=span.line,
        field=f"trace {span.trace_id}",
    )
