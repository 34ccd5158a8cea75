"""A RAG application's traces, sent to ``ragmeter serve`` as a production app sends them: the OpenTelemetry SDK's
OTLP/HTTP exporter, spans named by OpenInference's conventions (a chain, its retriever's documents, its model).

The "application" answers ragmeter's demo questions with the demo's logged answers and passages (no model is
called: the traces are what matters here). ``--degrade`` stands for a bad release: each question gets another
question's answer, which its passages do not support, so ``faithfulness_offline`` drops.

    pip install 'ragmeter[serve]' opentelemetry-sdk opentelemetry-exporter-otlp-proto-http
    python examples/production/app.py --traces 45 [--degrade] [--endpoint http://127.0.0.1:4318/v1/traces]
"""

from __future__ import annotations

import argparse
import json

from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragmeter import read_records
from ragmeter.io.demo import demo_path

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=45, help="questions asked (the demo's 45, in turn)")
    parser.add_argument("--degrade", action="store_true", help="answer each question with another one's answer")
    parser.add_argument("--endpoint", default="http://127.0.0.1:4318/v1/traces", help="ragmeter serve's receiver")
    parser.add_argument("--model", default="demo-rag-v1", help="the model name the traces carry")
    args = parser.parse_args()

    records = list(read_records(demo_path("v1")))
    provider = TracerProvider(resource=Resource.create({"service.name": "demo-rag"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=args.endpoint)))
    tracer = provider.get_tracer("examples.production")
    for n in range(args.traces):
        record = records[n % len(records)]
        answer = records[(n + 7) % len(records)].answer if args.degrade else record.answer
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
            root.set_attribute(SpanAttributes.INPUT_VALUE, record.question)
            root.set_attribute(SpanAttributes.METADATA, json.dumps({"release": "bad" if args.degrade else "good"}))
            with tracer.start_as_current_span("retrieve") as retriever:
                retriever.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                for k, chunk in enumerate(record.contexts[:4]):
                    prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{k}"
                    retriever.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_ID}", chunk.doc_id)
                    retriever.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_CONTENT}", chunk.text)
            with tracer.start_as_current_span("generate") as llm:
                llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
                llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, args.model)
                llm.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
    provider.shutdown()  # sends what is left, and waits for it
    print(f"sent {args.traces} traces to {args.endpoint}" + (" (degraded answers)" if args.degrade else ""))


if __name__ == "__main__":
    main()
