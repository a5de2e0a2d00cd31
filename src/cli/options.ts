// The kinds of command-line option every command is built from. Each kind turns the text given
// (or nothing) into a typed value, and refuses bad text with a UsageError that names the option
// and what it accepts. Commands declare their options as an object of these (command-line.ts).
import { UsageError } from './usage.js';

/** What node's parseArgs hands over for one option: undefined when it was not given. */
export type GivenValue = string | boolean | (string | boolean)[] | undefined;

/** One option: how parseArgs reads it and how that becomes a T. */
export interface Option<T> {
  readonly type: 'string' | 'boolean';
  readonly multiple: boolean;
  /** An environment variable read when the option is not given; blank counts as unset. */
  readonly env?: string;
  /** `name` is how messages call it: "--port", or the environment variable it came from. */
  read(given: GivenValue, name: string): T;
}

/** An option taking one value; undefined when absent unless given a default or made required. */
export interface ValueOption<T> extends Option<T | undefined> {
  default(value: T): Option<T>;
  required(): Option<T>;
  /** Read $variable when the option is not given. */
  orEnv(variable: string): ValueOption<T>;
}

function valueOption<T>(convert: (text: string, name: string) => T, env?: string): ValueOption<T> {
  const withAbsent = (absent: (name: string) => T): Option<T> => ({
    type: 'string',
    multiple: false,
    env,
    read: (given, name) => (given === undefined ? absent(name) : convert(given as string, name)),
  });
  return {
    ...withAbsent(() => undefined as T),
    default: (value) => withAbsent(() => value),
    required: () =>
      withAbsent((name) => {
        throw new UsageError(`${name} is required`);
      }),
    orEnv: (variable) => valueOption(convert, variable),
  };
}

function nonEmpty(text: string, name: string): string {
  if (text === '') throw new UsageError(`${name} must not be empty`);
  return text;
}

/** Any text but the empty string. */
export function text(): ValueOption<string> {
  return valueOption(nonEmpty);
}

/** An option that may be repeated (--image a --image b); each value non-empty; [] when absent. */
export function texts(): Option<string[]> {
  return { type: 'string', multiple: true, read: (given, name) => ((given as string[] | undefined) ?? []).map((one) => nonEmpty(one, name)) };
}

/** A switch without a value: true when given. */
export function flag(): Option<boolean> {
  return { type: 'boolean', multiple: false, read: (given) => given === true };
}

export interface IntegerRange {
  min: number;
  /** Default: no upper bound. */
  max?: number;
}

/** A whole number, in decimal digits, within the range. */
export function integer(range: IntegerRange): ValueOption<number> {
  return valueOption((given, name) => integerIn(given, name, range, 'an integer'));
}

/** Comma-separated integers (1,8,16), each within the range. */
export function integers(range: IntegerRange): ValueOption<number[]> {
  return valueOption((given, name) => given.split(',').map((item) => integerIn(item.trim(), name, range, 'a list of integers, each')));
}

/** A TCP port; 0 (any free port, as bound) only when `anyFreePort`. */
export function port({ anyFreePort }: { anyFreePort: boolean }): ValueOption<number> {
  return valueOption((given, name) => integerIn(given, name, { min: anyFreePort ? 0 : 1, max: 65_535 }, 'a port number'));
}

function integerIn(given: string, name: string, { min, max }: IntegerRange, what: string): number {
  const value = /^-?\d{1,15}$/.test(given) ? Number(given) : Number.NaN;
  if (!(value >= min && value <= (max ?? Infinity))) {
    throw new UsageError(`${name} must be ${what} ${max === undefined ? `>= ${min}` : `from ${min} to ${max}`} (got "${given}")`);
  }
  return value;
}

/** A number above zero, fractions allowed (1.3). */
export function positiveNumber(): ValueOption<number> {
  return valueOption((given, name) => {
    const value = /^\d+(\.\d+)?$/.test(given) ? Number(given) : Number.NaN;
    if (!(value > 0)) throw new UsageError(`${name} must be a number > 0 (got "${given}")`);
    return value;
  });
}

const BYTE_UNITS = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 } as const;

/** A size in bytes, written 12G, 512M or 12GiB (binary units, as Docker's memory limits), or bare bytes. */
export function byteSize(): ValueOption<number> {
  return valueOption((given, name) => {
    const match = /^(\d+(?:\.\d+)?)(?:([KMGT])(?:i?B?)?|B)?$/i.exec(given);
    const bytes = match === null ? Number.NaN : Math.round(Number(match[1]) * BYTE_UNITS[(match[2]?.toUpperCase() ?? '') as keyof typeof BYTE_UNITS]);
    if (!(bytes >= 1)) throw new UsageError(`${name} must be a size: bytes, or a number with K, M, G or T (binary: 12G is 12 GiB) (got "${given}")`);
    return bytes;
  });
}

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, min: 60_000, h: 3_600_000 } as const;

export interface DurationRange {
  /** What a bare number counts, and the smallest step: a value must be a whole number of it. */
  unit: 's' | 'm';
  /** Milliseconds. */
  min: number;
  /** Milliseconds; default: no upper bound. */
  max?: number;
}

/** A duration in milliseconds, written 90 (in `unit`), 90s, 5m or 2h. */
export function duration(range: DurationRange): ValueOption<number> {
  const step = UNIT_MS[range.unit];
  const bounds = range.max === undefined ? `at least ${formatDuration(range.min)}` : `from ${formatDuration(range.min)} to ${formatDuration(range.max)}`;
  const examples = range.unit === 's' ? '90 (seconds), 90s, 5m or 2h' : '10 (minutes), 10m or 1h';
  const shape = `a duration in whole ${range.unit === 's' ? 'seconds' : 'minutes'}, ${bounds}: ${examples}`;
  return valueOption((given, name) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|min|h)?$/.exec(given);
    const ms = match === null ? Number.NaN : Math.round(Number(match[1]) * UNIT_MS[(match[2] ?? range.unit) as keyof typeof UNIT_MS]);
    if (!(ms % step === 0 && ms >= range.min && ms <= (range.max ?? Infinity))) throw new UsageError(`${name} must be ${shape} (got "${given}")`);
    return ms;
  });
}

/** 90000 → "90s", 3600000 → "1h": the largest unit that divides it. */
function formatDuration(ms: number): string {
  if (ms % UNIT_MS.h === 0) return `${ms / UNIT_MS.h}h`;
  if (ms % UNIT_MS.m === 0) return `${ms / UNIT_MS.m}m`;
  if (ms % UNIT_MS.s === 0) return `${ms / UNIT_MS.s}s`;
  return `${ms}ms`;
}

/** One of a fixed set of words. */
export function choice<C extends string>(choices: readonly C[]): ValueOption<C> {
  return valueOption((given, name) => checkedChoice(given, name, choices));
}

/** Comma-separated words of a fixed set (a,c), each kept once, in the order given. */
export function choices<C extends string>(allowed: readonly C[]): ValueOption<C[]> {
  return valueOption((given, name) => [...new Set(given.split(',').map((item) => checkedChoice(item.trim(), `each of ${name}`, allowed)))]);
}

/** `value` when it is one of `choices`, for choices that depend on other options (the task on the variant). */
export function checkedChoice<C extends string>(value: string, name: string, choices: readonly C[]): C {
  if (!choices.includes(value as C)) throw new UsageError(`${name} must be one of ${choices.join(', ')} (got "${value}")`);
  return value as C;
}

/** An http:// or https:// URL. */
export function httpUrl(): ValueOption<string> {
  return valueOption((given, name) => {
    if (!/^https?:\/\/[^/]/i.test(given) || !URL.canParse(given)) throw new UsageError(`${name} must be an http:// or https:// URL (got "${given}")`);
    return given;
  });
}

/** Text turned into a T by `parse`, whose Error message becomes the usage error's (it names the option). */
export function parsedBy<T>(parse: (text: string) => T): ValueOption<T> {
  return valueOption((given) => {
    try {
      return parse(given);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  });
}

/** Refuses two value options (without defaults) given together: `give --a or --b, not both`. */
export function notBoth(values: Readonly<Record<string, unknown>>, a: string, b: string): void {
  if (values[a] !== undefined && values[b] !== undefined) throw new UsageError(`give --${a} or --${b}, not both`);
}
