// The option toolkit every command parses its line with: each kind of option turns good text into its
// value and refuses bad text with a usage error naming the option and what it accepts; --help and a
// usage error print the same usage (stdout and exit 0, stderr and exit 2).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';

import { defineCommand, parseCommandLine, type OptionSpecs, type PositionalSpec } from '../../src/cli/command-line.js';
import {
  byteSize,
  checkedChoice,
  choice,
  choices,
  duration,
  flag,
  httpUrl,
  integer,
  integers,
  notBoth,
  parsedBy,
  port,
  positiveNumber,
  text,
  texts,
} from '../../src/cli/options.js';
import { statusCommand } from '../../src/cli/status-command.js';
import { commandGroup, HelpRequested, runCommandLine, UsageError } from '../../src/cli/usage.js';

/** The value of `--x` read from `args` by a command with only that option. */
function read<T>(spec: OptionSpecs[string], args: string[], env: NodeJS.ProcessEnv = {}): T {
  return parseCommandLine(args, { x: spec }, undefined, env).options.x as T;
}

/** Asserts that the line is refused with exactly `message`. */
function refused(run: () => unknown, message: string): void {
  assert.throws(run, (error: unknown) => error instanceof UsageError && error.message === message);
}

describe('kinds of option', () => {
  test('text: the value given, undefined when absent, never empty', () => {
    assert.equal(read(text(), ['--x', 'a b']), 'a b');
    assert.equal(read(text(), []), undefined);
    refused(() => read(text(), ['--x', '']), '--x must not be empty');
  });

  test('default and required decide what an absent option is', () => {
    assert.equal(read(text().default('fallback'), []), 'fallback');
    assert.equal(read(text().default('fallback'), ['--x', 'given']), 'given');
    refused(() => read(text().required(), []), '--x is required');
  });

  test('texts: every value of a repeated option, in order; [] when absent', () => {
    assert.deepEqual(read(texts(), ['--x', 'a', '--x', 'b']), ['a', 'b']);
    assert.deepEqual(read(texts(), []), []);
    refused(() => read(texts(), ['--x', 'a', '--x', '']), '--x must not be empty');
  });

  test('flag: true when given, false when not, and takes no value', () => {
    assert.equal(read(flag(), ['--x']), true);
    assert.equal(read(flag(), []), false);
    assert.throws(() => read(flag(), ['--x=yes']), UsageError);
  });

  test('integer: decimal digits within the range; the message names the option and the range', () => {
    assert.equal(read(integer({ min: 1 }), ['--x', '42']), 42);
    assert.equal(read(integer({ min: 0, max: 9 }), ['--x', '0']), 0);
    assert.equal(read(integer({ min: -5 }), ['--x=-3']), -3);
    for (const bad of ['0', '1.5', '1e3', '0x10', ' 7', 'seven', '']) {
      refused(() => read(integer({ min: 1 }), [`--x=${bad}`]), `--x must be an integer >= 1 (got "${bad}")`);
    }
    refused(() => read(integer({ min: 1, max: 10 }), ['--x', '11']), '--x must be an integer from 1 to 10 (got "11")');
  });

  test('integers: a comma-separated list, each checked', () => {
    assert.deepEqual(read(integers({ min: 1 }), ['--x', '1,8, 16']), [1, 8, 16]);
    refused(() => read(integers({ min: 1 }), ['--x', '1,0']), '--x must be a list of integers, each >= 1 (got "0")');
  });

  test('port: 1 to 65535, and 0 only where it picks a free port', () => {
    assert.equal(read(port({ anyFreePort: true }), ['--x', '0']), 0);
    assert.equal(read(port({ anyFreePort: false }), ['--x', '65535']), 65_535);
    refused(() => read(port({ anyFreePort: false }), ['--x', '0']), '--x must be a port number from 1 to 65535 (got "0")');
    refused(() => read(port({ anyFreePort: true }), ['--x', '65536']), '--x must be a port number from 0 to 65535 (got "65536")');
  });

  test('duration: a bare number counts the unit; s, m, h (and ms) suffixes; milliseconds out', () => {
    const seconds = duration({ unit: 's', min: 1_000 });
    assert.equal(read(seconds, ['--x', '30']), 30_000);
    assert.equal(read(seconds, ['--x', '30s']), 30_000);
    assert.equal(read(seconds, ['--x', '5m']), 300_000);
    assert.equal(read(seconds, ['--x', '1.5m']), 90_000);
    assert.equal(read(seconds, ['--x', '2h']), 7_200_000);
    assert.equal(read(seconds, ['--x', '3000ms']), 3_000);
    const wrong = (given: string) => `--x must be a duration in whole seconds, at least 1s: 90 (seconds), 90s, 5m or 2h (got "${given}")`;
    for (const bad of ['0', '1500ms', '-5', '5 m', '5d', 'soon']) refused(() => read(seconds, [`--x=${bad}`]), wrong(bad));
  });

  test('duration in minutes: whole minutes within the range', () => {
    const minutes = duration({ unit: 'm', min: 60_000, max: 3_600_000 });
    assert.equal(read(minutes, ['--x', '10']), 600_000);
    assert.equal(read(minutes, ['--x', '1h']), 3_600_000);
    assert.equal(read(minutes, ['--x', '120s']), 120_000);
    const wrong = (given: string) => `--x must be a duration in whole minutes, from 1m to 1h: 10 (minutes), 10m or 1h (got "${given}")`;
    for (const bad of ['90s', '61', '2h', '0']) refused(() => read(minutes, ['--x', bad]), wrong(bad));
  });

  test('byteSize: bytes, or K, M, G, T in binary units (12G, 12Gi, 12GiB alike)', () => {
    const size = byteSize();
    assert.equal(read(size, ['--x', '4096']), 4096);
    assert.equal(read(size, ['--x', '512M']), 512 * 2 ** 20);
    for (const same of ['12G', '12g', '12Gi', '12GiB', '12GB']) assert.equal(read(size, ['--x', same]), 12 * 2 ** 30);
    assert.equal(read(size, ['--x', '1.5K']), 1536);
    assert.equal(read(size, [], { MAX_RSS: '2T' }), undefined);
    assert.equal(read(byteSize().orEnv('MAX_RSS'), [], { MAX_RSS: '2T' }), 2 * 2 ** 40);
    const wrong = (given: string) => `--x must be a size: bytes, or a number with K, M, G or T (binary: 12G is 12 GiB) (got "${given}")`;
    for (const bad of ['0', '12 G', '12P', '-1G', 'G', 'lots']) refused(() => read(size, [`--x=${bad}`]), wrong(bad));
  });

  test('choice and choices: words of a fixed set', () => {
    assert.equal(read(choice(['md', 'json']), ['--x', 'json']), 'json');
    refused(() => read(choice(['md', 'json']), ['--x', 'pdf']), '--x must be one of md, json (got "pdf")');
    assert.deepEqual(read(choices(['a', 'b', 'c']), ['--x', 'c,a,c']), ['c', 'a']);
    refused(() => read(choices(['a', 'b']), ['--x', 'a,z']), 'each of --x must be one of a, b (got "z")');
    refused(() => checkedChoice('parse', '--task', ['ocr', 'markdown']), '--task must be one of ocr, markdown (got "parse")');
  });

  test('httpUrl, positiveNumber and parsedBy', () => {
    assert.equal(read(httpUrl(), ['--x', 'https://sqs.example/q']), 'https://sqs.example/q');
    refused(() => read(httpUrl(), ['--x', 'sqs.example/q']), '--x must be an http:// or https:// URL (got "sqs.example/q")');
    assert.equal(read(positiveNumber(), ['--x', '1.3']), 1.3);
    refused(() => read(positiveNumber(), ['--x', '0']), '--x must be a number > 0 (got "0")');
    const even = parsedBy((given) => {
      if (Number(given) % 2 !== 0) throw new Error(`--x must be even (got "${given}")`);
      return Number(given);
    });
    assert.equal(read(even, ['--x', '4']), 4);
    refused(() => read(even, ['--x', '3']), '--x must be even (got "3")');
  });

  test('orEnv: the variable when the option is absent (blank is unset), named in its errors', () => {
    const spec = port({ anyFreePort: true }).orEnv('APP_PORT').default(3000);
    assert.equal(read(spec, [], { APP_PORT: '8081' }), 8081);
    assert.equal(read(spec, ['--x', '9000'], { APP_PORT: '8081' }), 9000);
    assert.equal(read(spec, [], { APP_PORT: ' ' }), 3000);
    refused(() => read(spec, [], { APP_PORT: 'eighty' }), 'APP_PORT must be a port number from 0 to 65535 (got "eighty")');
  });

  test('notBoth refuses two options given together', () => {
    notBoth({ dpi: 144, 'longest-side': undefined }, 'dpi', 'longest-side');
    refused(() => notBoth({ dpi: 144, 'longest-side': 1024 }, 'dpi', 'longest-side'), 'give --dpi or --longest-side, not both');
  });
});

describe('the command line', () => {
  const positionals = (args: string[], spec?: PositionalSpec) => parseCommandLine(args, {}, spec).positionals;

  test('positional arguments are counted against what the command takes', () => {
    refused(() => positionals(['stray']), 'unexpected argument "stray"');
    assert.deepEqual(positionals(['a.pdf'], { name: 'FILE', min: 1, max: 1 }), ['a.pdf']);
    refused(() => positionals([], { name: 'FILE', min: 1, max: 1 }), 'give exactly one FILE (got 0)');
    refused(() => positionals(['a', 'b'], { name: 'FILE', min: 1, max: 1 }), 'give exactly one FILE (got 2)');
    refused(() => positionals([], { name: 'INPUT', min: 1 }), 'give at least one INPUT');
    assert.deepEqual(positionals(['a', 'b', 'c'], { name: 'INPUT', min: 1 }), ['a', 'b', 'c']);
  });

  test('an unknown option is a usage error naming it', () => {
    assert.throws(() => parseCommandLine(['--bogus'], { x: text() }), (error: unknown) => error instanceof UsageError && /'--bogus'/.test(error.message));
  });

  test('--help and -h ask for the usage, whatever else is on the line', () => {
    for (const args of [['--help'], ['-h'], ['--x', '0', '--help']]) {
      assert.throws(() => parseCommandLine(args, { x: integer({ min: 1 }) }), HelpRequested, args.join(' '));
    }
  });
});

describe('help and usage errors of commands and groups', () => {
  const echo = defineCommand({
    usage: 'Usage: echo --times N',
    options: { times: integer({ min: 1 }).required() },
    run: async ({ options }) => options.times,
  });
  const group = { label: 'command', usage: 'Usage: tool COMMAND', commands: { echo, tools: commandGroup('tools command', { echo }) } };

  /** Exit status and what went to stdout and stderr. */
  async function runCaptured(args: string[]) {
    const written = { stdout: '', stderr: '' };
    const saved = { stdout: process.stdout.write, stderr: process.stderr.write };
    process.stdout.write = ((chunk: string) => ((written.stdout += chunk), true)) as typeof process.stdout.write;
    process.stderr.write = ((chunk: string) => ((written.stderr += chunk), true)) as typeof process.stderr.write;
    try {
      return { code: await runCommandLine(group, args, 'tool'), ...written };
    } finally {
      Object.assign(process.stdout, { write: saved.stdout });
      Object.assign(process.stderr, { write: saved.stderr });
    }
  }

  test('a command runs with its parsed options', async () => {
    assert.deepEqual(await runCaptured(['echo', '--times', '7']), { code: 7, stdout: '', stderr: '' });
  });

  test('--help prints the usage on stdout and exits 0; a usage error prints the same usage on stderr and exits 2', async () => {
    assert.deepEqual(await runCaptured(['echo', '--help']), { code: 0, stdout: 'Usage: echo --times N\n', stderr: '' });
    assert.deepEqual(await runCaptured(['echo', '--times', 'x']), {
      code: 2,
      stdout: '',
      stderr: 'tool: --times must be an integer >= 1 (got "x")\n\nUsage: echo --times N\n',
    });
  });

  test('a group names a missing or unknown command with its own usage; its commands keep theirs', async () => {
    assert.deepEqual(await runCaptured(['nope']), { code: 2, stdout: '', stderr: 'tool: unknown command "nope"\n\nUsage: tool COMMAND\n' });
    assert.deepEqual(await runCaptured(['tools']), { code: 2, stdout: '', stderr: 'tool: missing tools command\n\nUsage: echo --times N\n' });
    assert.deepEqual(await runCaptured(['tools', 'help']), { code: 0, stdout: 'Usage: echo --times N\n', stderr: '' });
    assert.deepEqual(await runCaptured(['tools', 'echo']), { code: 2, stdout: '', stderr: 'tool: --times is required\n\nUsage: echo --times N\n' });
  });

  test('scriptorium: a bad option prints the message and the command usage --help prints, exit 2', async () => {
    const main = path.resolve('dist/src/cli/main.js');
    const wrong = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(process.execPath, [main, 'status', '--window', '0'], (error, _stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code), stderr }));
    });
    assert.equal(wrong.code, 2);
    const message = '--window must be a duration in whole minutes, from 1m to 1h: 10 (minutes), 10m or 1h (got "0")';
    assert.equal(wrong.stderr, `scriptorium: ${message}\n\n${statusCommand.usage}\n`);
  });
});
