// Command-line parsing shared by every command: node's parseArgs with strict checking, turning its
// errors into a UsageError that prints the command's usage.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

export function parseCommandArgs<T extends Options>(args: string[], options: T, usage: string) {
  try {
    return parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message, usage);
  }
}

export function requireOption(value: string | undefined, name: string, usage: string): string {
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`, usage);
  return value;
}

export function integerOption(value: string | undefined, name: string, fallback: number, usage: string, min = 0): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be an integer >= ${min} (got "${value}")`, usage);
  return n;
}

export function choiceOption<C extends string>(value: string | undefined, name: string, choices: readonly C[], usage: string): C {
  if (value === undefined || !choices.includes(value as C)) {
    throw new UsageError(`--${name} must be one of ${choices.join(', ')} (got ${value === undefined ? 'nothing' : `"${value}"`})`, usage);
  }
  return value as C;
}
