// A command's line parsed in one place: node's parseArgs with strict checking over the command's
// declared options (options.ts), --help / -h for every command, and the count of positional arguments.
import { parseArgs, type ParseArgsConfig } from 'node:util';

import type { GivenValue, Option } from './options.js';
import { HelpRequested, UsageError, type CliCommand } from './usage.js';

export type OptionSpecs = Readonly<Record<string, Option<unknown>>>;

/** Each option's value, typed by its kind. */
export type OptionValues<S extends OptionSpecs> = { -readonly [K in keyof S]: S[K] extends Option<infer T> ? T : never };

/** The positional arguments a command takes; `name` is how messages call one ("INPUT"). Default: none. */
export interface PositionalSpec {
  name: string;
  min: number;
  /** Default: no upper bound. */
  max?: number;
}

export interface CommandLine<S extends OptionSpecs> {
  options: OptionValues<S>;
  positionals: string[];
}

const NO_POSITIONALS: PositionalSpec = { name: 'argument', min: 0, max: 0 };

/** The options and positional arguments; HelpRequested for --help, a UsageError naming what is wrong. */
export function parseCommandLine<S extends OptionSpecs>(
  args: string[],
  specs: S,
  positionals: PositionalSpec = NO_POSITIONALS,
  env: NodeJS.ProcessEnv = process.env,
): CommandLine<S> {
  const config: NonNullable<ParseArgsConfig['options']> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, spec] of Object.entries(specs)) config[name] = { type: spec.type, multiple: spec.multiple };
  let parsed: { values: Record<string, GivenValue>; positionals: string[] };
  try {
    parsed = parseArgs({ args, options: config, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (parsed.values.help === true) throw new HelpRequested();
  checkPositionalCount(parsed.positionals, positionals);
  const options: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const given = parsed.values[name];
    const fromEnv = given === undefined && spec.env !== undefined && env[spec.env]?.trim() ? env[spec.env] : undefined;
    options[name] = fromEnv === undefined ? spec.read(given, `--${name}`) : spec.read(fromEnv, spec.env!);
  }
  return { options: options as OptionValues<S>, positionals: parsed.positionals };
}

function checkPositionalCount(given: readonly string[], { name, min, max }: PositionalSpec): void {
  if (min > 0 && min === max && given.length !== min) throw new UsageError(`give exactly ${count(min)} ${name} (got ${given.length})`);
  if (max !== undefined && given.length > max) throw new UsageError(`unexpected argument "${given[max]}"`);
  if (given.length < min) throw new UsageError(`give at least ${count(min)} ${name}`);
}

function count(n: number): string {
  return n === 1 ? 'one' : String(n);
}

export interface CommandDefinition<S extends OptionSpecs> {
  usage: string;
  options: S;
  positionals?: PositionalSpec;
  run(line: CommandLine<S>): Promise<number>;
}

/** A command whose run gets its line already parsed and checked. */
export function defineCommand<S extends OptionSpecs>(definition: CommandDefinition<S>): CliCommand {
  return {
    usage: definition.usage,
    run: async (args) => definition.run(parseCommandLine(args, definition.options, definition.positionals)),
  };
}
