// Data that crosses a process boundary (job data and return values read from Redis, JSON read from
// storage) is checked against its schema before use: whatever wrote it may be another version, a
// person, or a bug.
import type { z } from 'zod';

/** Data read from outside that is not what its schema says; the message names every wrong field. */
export class InvalidBoundaryDataError extends Error {
  override readonly name = 'InvalidBoundaryDataError';
}

/** `value` as `schema` reads it; an InvalidBoundaryDataError saying what `what` lacks otherwise. */
export function parseBoundaryData<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.length === 0 ? '(root)' : issue.path.join('.')}: ${issue.message}`);
  throw new InvalidBoundaryDataError(`${what} is invalid: ${problems.join('; ')}`);
}
