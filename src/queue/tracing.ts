// OpenTelemetry traces across the queue, through BullMQ's own telemetry (bullmq-otel): adding a
// document's flow is a producer span whose context travels in the jobs, and each page job and the
// document's assembly are consumer spans of that same trace, so one trace shows a document from
// enqueue to document.md. Traces are exported by OTLP over HTTP when OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (the standard OpenTelemetry variables, read by the
// exporter: OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, …); otherwise nothing is traced and the
// SDK is never loaded.
import type { Telemetry } from 'bullmq';

interface Tracing {
  telemetry: Telemetry;
  flush(): Promise<void>;
}

let started: Promise<Tracing | undefined> | undefined;

/** The telemetry to give BullMQ queues, flow producers and workers; undefined when tracing is off. */
export async function queueTelemetry(env: NodeJS.ProcessEnv = process.env): Promise<Telemetry | undefined> {
  started ??= startTracing(env);
  return (await started)?.telemetry;
}

/** Sends the spans still buffered; before a process exits. */
export async function flushTraces(): Promise<void> {
  await (await started)?.flush();
}

async function startTracing(env: NodeJS.ProcessEnv): Promise<Tracing | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()) return undefined;
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, { BullMQOtel }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('bullmq-otel'),
  ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || 'scriptorium' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // BullMQOtel takes its tracer from the global API: the provider must be registered first.
  provider.register();
  return { telemetry: new BullMQOtel('scriptorium'), flush: () => provider.forceFlush() };
}
