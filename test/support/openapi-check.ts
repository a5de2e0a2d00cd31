// Checks an API answer against the served OpenAPI document: the status is one the operation lists,
// and a JSON body has every required member of its schema (nested objects and arrays included),
// with values inside each enum and of each declared primitive type.
import assert from 'node:assert/strict';

import { OPENAPI_DOCUMENT } from '../../src/server/openapi.js';

type Schema = { $ref?: string; type?: string | readonly string[]; required?: readonly string[]; properties?: Record<string, Schema>; items?: Schema; enum?: readonly unknown[]; const?: unknown };

const document = OPENAPI_DOCUMENT as unknown as {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: Schema }> }> }>>;
  components: { schemas: Record<string, Schema> };
};

/** `path` is the template ('/v1/documents/{docId}'). */
export function checkAnswer(method: string, path: string, status: number, body: unknown): void {
  const operation = document.paths[path]?.[method.toLowerCase()];
  assert.ok(operation, `${method} ${path} is not in the OpenAPI document`);
  const response = operation.responses[String(status)];
  assert.ok(response, `${method} ${path} answered ${status}, which the OpenAPI document does not list`);
  const schema = response.content?.['application/json']?.schema;
  if (schema !== undefined) checkValue(schema, body, `${method} ${path} ${status}`);
}

function checkValue(schema: Schema, value: unknown, where: string): void {
  const resolved = schema.$ref === undefined ? schema : document.components.schemas[schema.$ref.split('/').pop() as string];
  if (resolved.const !== undefined) assert.equal(value, resolved.const, where);
  if (resolved.enum !== undefined) assert.ok(resolved.enum.includes(value), `${where}: ${JSON.stringify(value)} is not one of ${resolved.enum.join(', ')}`);
  const types = resolved.type === undefined ? [] : ([] as string[]).concat(resolved.type as string | string[]);
  if (types.length > 0) assert.ok(types.some((type) => hasType(value, type)), `${where}: ${JSON.stringify(value)} is not ${types.join(' or ')}`);
  if (resolved.type === 'object' && typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    for (const name of resolved.required ?? []) assert.ok(name in record, `${where}: no "${name}"`);
    for (const [name, member] of Object.entries(resolved.properties ?? {})) {
      if (record[name] !== undefined) checkValue(member, record[name], `${where}.${name}`);
    }
  }
  if (resolved.type === 'array' && Array.isArray(value) && resolved.items) value.forEach((item, i) => checkValue(resolved.items as Schema, item, `${where}[${i}]`));
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'integer':
      return Number.isInteger(value);
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}

/** Every path and method of the document, as 'GET /v1/documents/{docId}'. */
export function documentedOperations(): string[] {
  return Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
}
