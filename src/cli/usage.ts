// How a command line fails and asks for help, and the one place that prints a command's usage for
// both: `scriptorium CMD --help` on stdout (exit 0), a usage error on stderr with the same usage (exit 2).

/** A wrong command line: the message names the option or argument and what it must be. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** --help or -h was given: the command prints its usage instead of running. */
export class HelpRequested extends Error {
  override name = 'HelpRequested';
  constructor() {
    super('help requested');
  }
}

export const EXIT_USAGE = 2;

const HELP_WORDS: readonly string[] = ['help', '--help', '-h'];

/** Sets the exit status from `run`; an error that escapes it prints `program: message` and exits 1. */
export function exitWith(program: string, run: Promise<number>): void {
  run.then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`${program}: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}

/** A command: its usage text, and how it runs on its arguments (those after its name). */
export interface CliCommand {
  readonly usage: string;
  run(args: string[]): Promise<number>;
}

/** Commands under one name (`model synth`, `model check`); `label` names them in messages ("model command"). */
export interface CommandGroup {
  readonly usage: string;
  readonly label: string;
  readonly commands: Readonly<Record<string, CliCommand | CommandGroup>>;
}

/** A group whose usage is its commands' usages, one after the other. */
export function commandGroup(label: string, commands: Readonly<Record<string, CliCommand>>): CommandGroup {
  return { label, commands, usage: Object.values(commands).map((command) => command.usage).join('\n\n') };
}

/**
 * Runs the command the arguments name (a group's first argument picks one of its commands). Help and
 * usage errors print the usage of the innermost command reached; other errors are left to the caller.
 * `program` starts the line of a usage error.
 */
export async function runCommandLine(entry: CliCommand | CommandGroup, args: string[], program = 'scriptorium'): Promise<number> {
  try {
    if (!('commands' in entry)) return await entry.run(args);
    const [name, ...rest] = args;
    if (name === undefined) throw new UsageError(`missing ${entry.label}`);
    if (HELP_WORDS.includes(name)) throw new HelpRequested();
    if (!Object.hasOwn(entry.commands, name)) throw new UsageError(`unknown ${entry.label} "${name}"`);
    return await runCommandLine(entry.commands[name], rest, program);
  } catch (error) {
    if (error instanceof HelpRequested) {
      process.stdout.write(`${entry.usage}\n`);
      return 0;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`${program}: ${error.message}\n\n${entry.usage}\n`);
      return EXIT_USAGE;
    }
    throw error;
  }
}
