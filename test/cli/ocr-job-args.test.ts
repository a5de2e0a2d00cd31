// The reading options `enqueue` and `run` share: --dpi or --longest-side for PDF pages, and the
// password for encrypted PDFs from --password or --password-env.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseCommandLine } from '../../src/cli/command-line.js';
import { OCR_JOB_OPTIONS, ocrJobOptionsOf, pdfPasswordOf } from '../../src/cli/ocr-job-args.js';
import { UsageError } from '../../src/cli/usage.js';
import { checkSubmitOptions } from '../../src/server/submit-options.js';

function usageError(message: RegExp) {
  return (error: unknown) => error instanceof UsageError && message.test(error.message);
}

/** The job options of a command line holding only the reading options. */
function jobOptionsOf(args: string[], variant: 'v1' | 'v3') {
  return ocrJobOptionsOf(parseCommandLine(args, OCR_JOB_OPTIONS).options, variant);
}

test('PDF pages render at 144 dpi unless --dpi says otherwise', () => {
  assert.deepEqual(jobOptionsOf([], 'v1'), { variant: 'v1', task: 'markdown', mode: 'gundam', dpi: 144 });
  assert.deepEqual(jobOptionsOf(['--dpi', '200'], 'v1'), { variant: 'v1', task: 'markdown', mode: 'gundam', dpi: 200 });
});

test('--longest-side PX replaces the dpi in the job options', () => {
  assert.deepEqual(jobOptionsOf(['--longest-side', '1024', '--max-tokens', '50'], 'v3'), {
    variant: 'v3',
    task: 'parse',
    mode: 'gundam',
    longestSide: 1024,
    maxNewTokens: 50,
  });
});

test('--dpi and --longest-side together are refused', () => {
  assert.throws(() => jobOptionsOf(['--dpi', '144', '--longest-side', '1024'], 'v1'), usageError(/^give --dpi or --longest-side, not both$/));
});

test('--longest-side must be a positive integer', () => {
  for (const value of ['0', '-5', '12.5', 'big']) {
    assert.throws(() => jobOptionsOf([`--longest-side=${value}`], 'v1'), usageError(/^--longest-side must be an integer >= 1 /), value);
  }
});

test('a task or mode the variant lacks is refused with the ones it has', () => {
  assert.throws(() => jobOptionsOf(['--task', 'parse'], 'v1'), usageError(/^--task must be one of ocr, markdown \(got "parse"\)$/));
  assert.throws(() => jobOptionsOf(['--mode', 'huge'], 'v3'), usageError(/^--mode must be one of .*gundam.* \(got "huge"\)$/));
});

test('without --password or --password-env there is no password', () => {
  assert.equal(pdfPasswordOf({}, { SCRIPTORIUM_PDF_PASSWORD: 'unused' }), undefined);
});

test('--password gives the password itself', () => {
  assert.equal(pdfPasswordOf({ password: 's3cret' }, {}), 's3cret');
});

test('--password-env NAME reads the password from that environment variable', () => {
  assert.equal(pdfPasswordOf({ 'password-env': 'ARCHIVE_KEY' }, { ARCHIVE_KEY: 'from the environment' }), 'from the environment');
});

test('--password-env naming an unset or empty variable is refused, naming the variable', () => {
  assert.throws(() => pdfPasswordOf({ 'password-env': 'ARCHIVE_KEY' }, {}), usageError(/^--password-env ARCHIVE_KEY: that environment variable is not set or empty$/));
  assert.throws(() => pdfPasswordOf({ 'password-env': 'ARCHIVE_KEY' }, { ARCHIVE_KEY: '' }), usageError(/ARCHIVE_KEY/));
});

test('--password and --password-env together, or an empty --password, are refused without repeating the password', () => {
  assert.throws(
    () => pdfPasswordOf({ password: 's3cret', 'password-env': 'ARCHIVE_KEY' }, { ARCHIVE_KEY: 'x' }),
    (error: unknown) => usageError(/^give --password or --password-env, not both$/)(error) && !(error as Error).message.includes('s3cret'),
  );
  assert.throws(() => parseCommandLine(['--password', ''], OCR_JOB_OPTIONS), usageError(/^--password must not be empty$/));
});

test('a submission to the HTTP API gets the same defaults as the command line', () => {
  for (const variant of ['v1', 'v3'] as const) {
    assert.deepEqual(checkSubmitOptions({}, variant).ocr, jobOptionsOf([], variant));
    assert.deepEqual(checkSubmitOptions({ longestSide: '900', maxTokens: 20 }, variant).ocr, jobOptionsOf(['--longest-side', '900', '--max-tokens', '20'], variant));
  }
});
