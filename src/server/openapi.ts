// The OpenAPI 3.1 description of the HTTP API, served at /openapi.json. The API tests check that
// every route the server has is described here and that real answers fit the schemas.
import { PAGE_FLAGS } from '../jobs/page-flags.js';
import { OCR_TASKS, VARIANTS, VISION_MODES } from '../vocabulary/ocr-vocabulary.js';
import { MAX_PRIORITY, MIN_PRIORITY, PRIORITY_CLASSES } from '../queue/job-options.js';
import { TEXT_LAYERS } from '../output/searchable-pdf.js';
import { PAGE_FORMATS, RESULT_FORMATS } from './api-types.js';
import { UPLOAD_FIELD } from './submit-document.js';

const json = (schema: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } });
const error = (description: string) => ({ description, content: json('ApiError') });
const docIdParameter = { name: 'docId', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } };
const formatParameter = { name: 'format', in: 'query', required: false, schema: { type: 'string', enum: [...RESULT_FORMATS], default: 'md' } };
const textLayerParameter = {
  name: 'textLayer',
  in: 'query',
  required: false,
  description: 'with format=pdf, for pages of the original PDF that already have text of their own: keep lays no second text layer over them, add lays the reading over them as well',
  schema: { type: 'string', enum: [...TEXT_LAYERS], default: 'keep' },
};
const pageFormatParameter = { name: 'format', in: 'query', required: false, schema: { type: 'string', enum: [...PAGE_FORMATS], default: 'md' } };
const refused = {
  '400': error('a malformed request or docId'),
  '401': error('no API key, or not a configured one'),
  '429': error("over the key's rate limit; Retry-After says when to try again"),
};
const links = { type: 'object', required: ['self', 'result', 'events'], properties: { self: { type: 'string' }, result: { type: 'string' }, events: { type: 'string' } } };

const submitOptions = {
  variant: { type: 'string', enum: [...VARIANTS], description: "default: the server's" },
  task: { type: 'string', enum: [...OCR_TASKS], description: 'ocr|markdown (V1/V2, default markdown), parse|parse-multi (V3, default parse)' },
  mode: { type: 'string', enum: [...VISION_MODES], default: 'gundam' },
  dpi: { type: 'integer', minimum: 1, default: 144 },
  longestSide: { type: 'integer', minimum: 1, description: 'pixels on the longer side of rendered PDF pages, instead of dpi' },
  maxTokens: { type: 'integer', minimum: 1 },
  priority: { type: 'integer', minimum: MIN_PRIORITY, maximum: MAX_PRIORITY, default: 1000 },
  password: { type: 'string', description: 'opens an encrypted PDF; jobs carry it sealed, never in clear' },
  callbackUrl: { type: 'string', description: "receives one signed POST (see callbacks) when the document settles; its host must be in the server's SCRIPTORIUM_CALLBACK_HOSTS" },
};

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'Scriptorium', version: '1', description: 'Submit documents for OCR, follow them, fetch their results.' },
  components: {
    securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API key>' } },
    schemas: {
      ApiError: { type: 'object', required: ['error'], properties: { error: { type: 'string' } } },
      Refusal: {
        type: 'object',
        description: "a submission refused for now: over the key's rate limit, the queue's capacity, or one of the key's quotas (then quota, limit, usage and resetsAt say which)",
        required: ['error'],
        properties: {
          error: { type: 'string' },
          quota: { enum: ['pages-per-day', 'documents-in-flight'] },
          limit: { type: 'integer' },
          usage: { type: 'integer', description: 'pages submitted today, or documents in flight, before this submission' },
          resetsAt: { type: ['string', 'null'], description: 'pages-per-day: the next UTC midnight; documents-in-flight: null, a place frees when a document of the key settles' },
        },
      },
      Capacity: {
        type: 'object',
        required: ['variants', 'redis', 'key'],
        properties: {
          variants: {
            type: 'object',
            required: [...VARIANTS],
            properties: Object.fromEntries(VARIANTS.map((variant) => [variant, { $ref: '#/components/schemas/VariantCapacity' }])),
          },
          redis: {
            type: 'object',
            required: ['usedMemoryBytes', 'maxMemoryBytes', 'accepting'],
            properties: {
              usedMemoryBytes: { type: 'integer' },
              maxMemoryBytes: { type: ['integer', 'null'], description: 'null: Redis has no maxmemory' },
              accepting: { type: 'boolean', description: 'false from 90% of maxmemory: submissions are answered 503' },
            },
          },
          key: {
            type: 'object',
            description: "the calling key's priority class and quotas (null: no limit)",
            required: ['name', 'priorityClass', 'pagesToday', 'pagesPerDay', 'documentsInFlight', 'documentsInFlightLimit', 'resetsAt'],
            properties: {
              name: { type: 'string' },
              priorityClass: { enum: [...PRIORITY_CLASSES] },
              pagesToday: { type: 'integer' },
              pagesPerDay: { type: ['integer', 'null'] },
              documentsInFlight: { type: 'integer' },
              documentsInFlightLimit: { type: ['integer', 'null'] },
              resetsAt: { type: 'string', description: 'when pagesToday starts again from 0: the next UTC midnight' },
            },
          },
        },
      },
      VariantCapacity: {
        type: 'object',
        required: ['queue', 'queuedPages', 'maxQueuedPages', 'acceptingPages'],
        properties: {
          queue: { type: 'string' },
          queuedPages: { type: 'integer', description: 'page jobs queued or being read (a V3 parse-multi page group is one)' },
          maxQueuedPages: { type: ['integer', 'null'], description: "the server's --max-queued-pages; null: no limit" },
          acceptingPages: { type: ['integer', 'null'], description: 'page jobs still accepted: 0 while Redis is short of memory; null: no limit' },
        },
      },
      Health: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } },
      Readiness: {
        type: 'object',
        required: ['redis', 'storage'],
        properties: { redis: { enum: ['ok', 'unreachable'] }, storage: { enum: ['ok', 'unreachable'] } },
      },
      SubmitByReference: {
        type: 'object',
        description: 'exactly one of uri and url',
        properties: {
          uri: { type: 'string', pattern: '^s3://', description: 's3://bucket/key' },
          url: { type: 'string', pattern: '^https://', description: "fetched by the server; its host must be in the server's SCRIPTORIUM_FETCH_HOSTS" },
          ...submitOptions,
        },
      },
      SubmitUpload: {
        type: 'object',
        required: [UPLOAD_FIELD],
        properties: { [UPLOAD_FIELD]: { type: 'string', contentMediaType: 'application/octet-stream' }, ...submitOptions },
      },
      CallbackBody: {
        type: 'object',
        required: ['event', 'status'],
        properties: { event: { const: 'document.settled' }, status: { $ref: '#/components/schemas/DocumentStatus' } },
      },
      SubmitAnswer: {
        type: 'object',
        required: ['docId', 'state', 'pages', 'links'],
        properties: {
          docId: { type: 'string' },
          state: { enum: ['enqueued', 'already-done', 'already-queued', 'retried'] },
          pages: { type: 'integer' },
          links,
        },
      },
      DocumentStatus: {
        type: 'object',
        required: ['docId', 'state', 'pages', 'failedPages', 'flaggedPages', 'etaSeconds', 'links'],
        properties: {
          docId: { type: 'string' },
          state: { enum: ['queued', 'running', 'completed', 'partial', 'failed'] },
          pages: {
            type: 'object',
            required: ['total', 'done', 'failed', 'pending', 'flagged'],
            properties: {
              total: { type: 'integer' },
              done: { type: 'integer' },
              failed: { type: 'integer' },
              pending: { type: 'integer' },
              flagged: { type: 'integer', description: 'the done pages that carry flags (they count as done too)' },
            },
          },
          failedPages: {
            type: 'array',
            items: { type: 'object', required: ['page', 'reason'], properties: { page: { type: 'integer' }, reason: { type: 'string' } } },
          },
          flaggedPages: {
            type: 'array',
            description: 'the done pages that carry flags: max_tokens, timeout and repetition mean the page needs review; empty, that it has no text',
            items: {
              type: 'object',
              required: ['page', 'flags'],
              properties: { page: { type: 'integer' }, flags: { type: 'array', minItems: 1, items: { enum: [...PAGE_FLAGS] } } },
            },
          },
          reason: { type: 'string' },
          etaSeconds: { type: ['integer', 'null'], description: 'when the pages queue as it stands is drained at its recent rate: an upper bound; null while no worker serves it or without a recent rate' },
          links,
        },
      },
    },
  },
  security: [{ apiKey: [] }],
  paths: {
    '/healthz': { get: { summary: 'the server is up', security: [], responses: { '200': { description: 'up', content: json('Health') } } } },
    '/readyz': {
      get: {
        summary: 'Redis and the storage answer',
        security: [],
        responses: { '200': { description: 'ready', content: json('Readiness') }, '503': { description: 'not ready', content: json('Readiness') } },
      },
    },
    '/openapi.json': { get: { summary: 'this document', responses: { '200': { description: 'OpenAPI 3.1' }, ...refused } } },
    '/v1/documents': {
      post: {
        summary: 'submit a document: upload it, or name an s3:// object or an https URL',
        requestBody: { required: true, content: { 'multipart/form-data': { schema: { $ref: '#/components/schemas/SubmitUpload' } }, ...json('SubmitByReference') } },
        callbacks: {
          settled: {
            '{$request.body#/callbackUrl}': {
              post: {
                summary: 'the document settled; X-Scriptorium-Signature: sha256=<hex HMAC-SHA256 of the body> with the server\'s secret, X-Scriptorium-Delivery names the delivery; retried with backoff until answered 2xx',
                requestBody: { content: json('CallbackBody') },
                responses: { '200': { description: 'received' } },
              },
            },
          },
        },
        responses: {
          '202': { description: 'queued (or queued or finished earlier: see state)', content: json('SubmitAnswer') },
          ...refused,
          '429': { description: "over the key's rate limit, the queue's --max-queued-pages, or a quota of the key; Retry-After says when to try again", content: json('Refusal') },
          '403': error("the url's or the callbackUrl's host is not allowed"),
          '413': error("the document or a form field is over the size limit, or the document has more pages than the key's daily quota"),
          '415': error('neither multipart/form-data nor JSON'),
          '422': error('no usable document (unsupported type, damaged, encrypted without the right password)'),
          '502': error('the URL could not be fetched'),
          '503': error('Redis is short of memory (90% of its maxmemory used); Retry-After says when to try again'),
        },
      },
    },
    '/v1/capacity': {
      get: {
        summary: "what each variant's page queue holds and still accepts, Redis's memory, and the calling key's quotas",
        responses: { '200': { description: 'capacity', content: json('Capacity') }, ...refused },
      },
    },
    '/v1/documents/{docId}': {
      get: {
        summary: 'where the document stands: page counts, failed pages, ETA',
        parameters: [docIdParameter],
        responses: { '200': { description: 'status', content: json('DocumentStatus') }, ...refused, '404': error('unknown docId') },
      },
      delete: {
        summary: "cancel the pages still queued (given back to the key's pages-per-day quota); pages being read finish",
        parameters: [docIdParameter],
        responses: {
          '202': { description: 'cancelled; the document settles with those pages failed', content: json('DocumentStatus') },
          ...refused,
          '404': error('unknown docId'),
          '409': error('the document has settled already'),
        },
      },
    },
    '/v1/documents/{docId}/events': {
      get: {
        summary: "server-sent events: 'status' at once and whenever a page settles, then 'settled' with the final status; data is a DocumentStatus",
        parameters: [docIdParameter],
        responses: { '200': { description: 'text/event-stream', content: { 'text/event-stream': {} } }, ...refused, '404': error('unknown docId') },
      },
    },
    '/v1/documents/{docId}/result': {
      get: {
        summary: "the document's result: markdown, JSON, HTML, or a searchable PDF (the original pages with an invisible text layer at the grounding boxes)",
        parameters: [docIdParameter, formatParameter, textLayerParameter],
        responses: {
          '200': {
            description: 'document.md, document.json, the HTML export or the searchable PDF',
            content: { 'text/markdown': {}, 'application/json': {}, 'text/html': {}, 'application/pdf': {} },
          },
          ...refused,
          '404': error('unknown docId'),
          '409': error('not settled yet'),
          '422': error("a searchable PDF cannot be written: the original PDF cannot be rewritten (encrypted, damaged), or its own text cannot be looked for"),
        },
      },
    },
    '/v1/documents/{docId}/pages/{page}': {
      get: {
        summary: "one page's result: markdown or JSON",
        parameters: [docIdParameter, { name: 'page', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } }, pageFormatParameter],
        responses: {
          '200': { description: 'pages/<nnnn>.md or .json', content: { 'text/markdown': {}, 'application/json': {} } },
          ...refused,
          '404': error('unknown docId, or the page has no result'),
        },
      },
    },
    '/dashboard': { get: { summary: 'the queue dashboard (bull-board); browsers may send the key as the Basic password', responses: { '200': { description: 'HTML' }, ...refused } } },
  },
} as const;
