// A typed client of the HTTP API (`scriptorium serve`), on Node's fetch: submit a document, follow
// it, fetch its results, cancel it. Every method rejects with a ScriptoriumApiError carrying the
// server's status and message when the answer is not a success.
import type { DocumentResultJson, PageResultJson } from '../jobs/result-json.js';
import type {
  ApiError,
  CapacityAnswer,
  DocumentStatus,
  HealthAnswer,
  PageFormat,
  ReadinessAnswer,
  ResultFormat,
  SubmitAnswer,
  SubmitByReference,
  SubmitOptions,
  TextLayer,
} from '../server/api-types.js';

export type * from '../server/api-types.js';

export class ScriptoriumApiError extends Error {
  override readonly name = 'ScriptoriumApiError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(`${status}: ${message}`);
  }
}

export interface ScriptoriumClientOptions {
  /** Where the server listens, e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  apiKey: string;
}

/** States after which a document changes no more. */
const SETTLED_STATES = new Set<DocumentStatus['state']>(['completed', 'partial', 'failed']);

export class ScriptoriumClient {
  readonly #baseUrl: string;
  readonly #apiKey: string;

  constructor(options: ScriptoriumClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
  }

  /** Uploads a document (multipart) with its options. */
  async submitFile(document: Uint8Array | Blob, filename: string, options: SubmitOptions = {}): Promise<SubmitAnswer> {
    const form = new FormData();
    for (const [name, value] of Object.entries(options)) {
      if (value !== undefined) form.append(name, String(value));
    }
    form.append('document', document instanceof Blob ? document : new Blob([Uint8Array.from(document)]), filename);
    return (await this.#request('POST', '/v1/documents', { body: form })).json() as Promise<SubmitAnswer>;
  }

  /** Submits an s3://bucket/key object (`uri`) or an https URL the server may fetch (`url`). */
  async submitReference(reference: SubmitByReference): Promise<SubmitAnswer> {
    return (await this.#request('POST', '/v1/documents', { json: reference })).json() as Promise<SubmitAnswer>;
  }

  async status(docId: string): Promise<DocumentStatus> {
    return (await this.#request('GET', `/v1/documents/${encodeURIComponent(docId)}`)).json() as Promise<DocumentStatus>;
  }

  /**
   * The document's status as it changes (server-sent events): at once, after every page that settles,
   * and last the settled status, after which the stream ends.
   */
  async *follow(docId: string, signal?: AbortSignal): AsyncGenerator<DocumentStatus> {
    const response = await this.#request('GET', `/v1/documents/${encodeURIComponent(docId)}/events`, { signal });
    if (response.body === null) return;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const data = buffer
          .slice(0, end)
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => line.slice('data: '.length))
          .join('\n');
        buffer = buffer.slice(end + 2);
        if (data !== '') yield JSON.parse(data) as DocumentStatus;
      }
    }
  }

  /** Follows the document until it has settled (completed, partial or failed). */
  async waitUntilSettled(docId: string, signal?: AbortSignal): Promise<DocumentStatus> {
    for await (const status of this.follow(docId, signal)) {
      if (SETTLED_STATES.has(status.state)) return status;
    }
    throw new Error(`the event stream of ${docId} ended before the document settled`);
  }

  result(docId: string, format: 'md' | 'html'): Promise<string>;
  result(docId: string, format: 'json'): Promise<DocumentResultJson>;
  /** `textLayer`: what the searchable PDF does on pages that already have text (the server's default: keep). */
  result(docId: string, format: 'pdf', options?: { textLayer?: TextLayer }): Promise<Uint8Array>;
  async result(docId: string, format: ResultFormat, { textLayer }: { textLayer?: TextLayer } = {}): Promise<string | DocumentResultJson | Uint8Array> {
    const query = textLayer === undefined ? `format=${format}` : `format=${format}&textLayer=${textLayer}`;
    const response = await this.#request('GET', `/v1/documents/${encodeURIComponent(docId)}/result?${query}`);
    if (format === 'json') return (await response.json()) as DocumentResultJson;
    if (format === 'pdf') return new Uint8Array(await response.arrayBuffer());
    return response.text();
  }

  page(docId: string, page: number, format: 'md'): Promise<string>;
  page(docId: string, page: number, format: 'json'): Promise<PageResultJson>;
  async page(docId: string, page: number, format: PageFormat): Promise<string | PageResultJson> {
    const response = await this.#request('GET', `/v1/documents/${encodeURIComponent(docId)}/pages/${page}?format=${format}`);
    return format === 'json' ? ((await response.json()) as PageResultJson) : response.text();
  }

  /** Cancels the pages still queued; pages being read finish. */
  async cancel(docId: string): Promise<DocumentStatus> {
    return (await this.#request('DELETE', `/v1/documents/${encodeURIComponent(docId)}`)).json() as Promise<DocumentStatus>;
  }

  /** What each variant's queue holds and still accepts, Redis's memory, and this key's quotas and usage. */
  async capacity(): Promise<CapacityAnswer> {
    return (await this.#request('GET', '/v1/capacity')).json() as Promise<CapacityAnswer>;
  }

  async openapi(): Promise<Record<string, unknown>> {
    return (await this.#request('GET', '/openapi.json')).json() as Promise<Record<string, unknown>>;
  }

  async health(): Promise<HealthAnswer> {
    return (await this.#request('GET', '/healthz')).json() as Promise<HealthAnswer>;
  }

  /** The readiness answer, 200 or 503 alike. */
  async readiness(): Promise<ReadinessAnswer> {
    const response = await fetch(`${this.#baseUrl}/readyz`);
    return (await response.json()) as ReadinessAnswer;
  }

  async #request(method: string, path: string, body: { body?: FormData; json?: unknown; signal?: AbortSignal } = {}): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#apiKey}` };
    let payload: FormData | string | undefined = body.body;
    if (body.json !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body.json);
    }
    const response = await fetch(`${this.#baseUrl}${path}`, { method, headers, body: payload, signal: body.signal });
    if (response.ok) return response;
    const text = await response.text();
    let message = text;
    try {
      message = (JSON.parse(text) as ApiError).error ?? text;
    } catch {
      // not JSON: the text as it is
    }
    throw new ScriptoriumApiError(response.status, message);
  }
}
