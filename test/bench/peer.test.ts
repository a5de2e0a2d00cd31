// The bench's side-by-side part with the peer (ds-ocr): reading the peer's output, running it, pairing
// its runs with ours, and the whole part on a tiny checkpoint with a stand-in for the peer. Speed is
// never asserted.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { parseBenchArgs } from '../../bench/engine/bench-options.js';
import { runMeasureProcess } from '../../bench/engine/measure-client.js';
import type { PeerAnswer, PeerJob } from '../../bench/engine/measure-jobs.js';
import { parsePeerProfile } from '../../bench/engine/peer-profile.js';
import { mergePeerAnswers, peerText, summarisePeer } from '../../bench/engine/peer-report.js';
import { checkPeerBinary, peerArgs, runPeer } from '../../bench/engine/peer-run.js';
import { UsageError } from '../../src/cli/usage.js';
import { DS_OCR_V1_STDERR, DS_OCR_V2_STDERR, FAKE_PEER_SCRIPT } from '../support/ds-ocr-output.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

describe("the peer's --profile output", () => {
  test('a recorded V1 run: total, generated tokens, the three stages and the prompt length', () => {
    assert.deepEqual(parsePeerProfile(DS_OCR_V1_STDERR), {
      totalMs: 103707,
      generatedTokens: 8,
      encodeMs: 92349,
      prefillMs: 9459,
      decodeMs: 1899,
      promptTokens: 280,
    });
  });

  test('a recorded V2 run, with Windows line ends, reads the same as with Unix ones', () => {
    const expected = { totalMs: 107182, generatedTokens: 3, encodeMs: 91067, prefillMs: 14752, decodeMs: 1364, promptTokens: 262 };
    assert.deepEqual(parsePeerProfile(DS_OCR_V2_STDERR), expected);
    assert.deepEqual(parsePeerProfile(DS_OCR_V2_STDERR.replace(/\n/g, '\r\n')), expected);
  });

  test('fractional milliseconds and no prompt line', () => {
    const profile = parsePeerProfile('Inference: 12.5 ms, 4 text tokens (1.00 tok/s decode)\n  Encoding: 1.25 ms | Prefill: 2 ms | Decode: 9.25 ms\n');
    assert.deepEqual(profile, { totalMs: 12.5, generatedTokens: 4, encodeMs: 1.25, prefillMs: 2, decodeMs: 9.25 });
  });

  test('output without the stage line is an error naming it and quoting the last lines', () => {
    const truncated = DS_OCR_V1_STDERR.split('\n').filter((line) => !line.includes('Encoding:')).join('\n');
    assert.throws(() => parsePeerProfile(truncated), (error: Error) => {
      assert.match(error.message, /no "Encoding: N ms \| Prefill: N ms \| Decode: N ms" line/);
      assert.match(error.message, /11 +1\.444 +0\.335/);
      return true;
    });
    assert.throws(() => parsePeerProfile('Failed to load model from /nowhere\n'), /no "Inference: N ms, N text tokens" line;.*\nFailed to load model/s);
  });
});

describe('summarisePeer', () => {
  const stages = (encodeMs: number, prefillMs: number, decodeMs: number, totalMs: number) => ({ encodeMs, prefillMs, decodeMs, totalMs });
  const answer: PeerAnswer = {
    caseId: 'v1-base-1600x2000',
    tokens: 11,
    promptTokens: 280,
    peer: [
      { int8: false, runs: [{ ...stages(900, 200, 500, 1600), generatedTokens: 11, promptTokens: 280 }, { ...stages(1000, 100, 400, 1500), generatedTokens: 11 }, { ...stages(800, 300, 600, 1700), generatedTokens: 11 }] },
      { int8: true, runs: [{ ...stages(900, 200, 300, 1400), generatedTokens: 11 }, { ...stages(900, 200, 300, 1400), generatedTokens: 11 }, { ...stages(900, 200, 300, 1400), generatedTokens: 11 }] },
    ],
    ours: [
      { precision: 'exact', quantize: 'none', runs: [stages(300, 100, 100, 500), stages(500, 50, 200, 750), stages(200, 100, 100, 400)] },
      { precision: 'fast', quantize: 'int8', runs: [stages(300, 100, 150, 550), stages(300, 100, 150, 550), stages(300, 100, 150, 550)] },
    ],
  };

  test('medians per stage, decode per forward call after the prefill, and the median of the runs\' peer ÷ ours', () => {
    const [exact] = summarisePeer(answer).rows;
    assert.equal(exact.peerInt8, false);
    assert.deepEqual(exact.peer, { encodeMs: 900, prefillMs: 200, decodeMsPerToken: 50, totalMs: 1600 });
    assert.deepEqual(exact.ours, { encodeMs: 300, prefillMs: 100, decodeMsPerToken: 10, totalMs: 500 });
    // Runs' ratios: encode 3, 2, 4; prefill 2, 2, 3; decode 5, 2, 6; total 3.2, 2, 4.25.
    assert.deepEqual(exact.ratio, { encodeMs: 3, prefillMs: 2, decodeMsPerToken: 5, totalMs: 3.2 });
    assert.deepEqual(exact.oursRuns[1], { encodeMs: 500, prefillMs: 50, decodeMsPerToken: 20, totalMs: 750 });
    assert.deepEqual(exact.peerRuns.map((r) => r.totalMs), [1600, 1500, 1700]);
  });

  test('int8 is compared with the peer\'s 8-bit runs, and the table says so', () => {
    const comparison = summarisePeer(answer);
    const int8 = comparison.rows[1];
    assert.equal(int8.peerInt8, true);
    assert.deepEqual(int8.ratio, { encodeMs: 3, prefillMs: 2, decodeMsPerToken: 2, totalMs: 1400 / 550 });
    const text = peerText([comparison]);
    assert.match(text, /v1-base-1600x2000 +fast \+ int8 +--int4 +280 \/ 280 +3 +900 \/ 300 +3\.00×/);
    assert.match(text, /v1-base-1600x2000 +exact +bf16 /);
  });

  test('runs of ours without as many of the peer are an error', () => {
    const unpaired = { ...answer, peer: [answer.peer[0]] };
    assert.throws(() => summarisePeer(unpaired), /3 runs of ours with --quantize int8 but 0 of the peer/);
  });
});

describe('bench options of the peer part', () => {
  test('--only peer without --peer-bin is a usage error naming the option', () => {
    assert.throws(() => parseBenchArgs(['--only', 'peer'], {}), (error: Error) => error instanceof UsageError && /--peer-bin PATH/.test(error.message));
  });

  test('every part runs by default, the peer only when its executable is given', () => {
    const without = parseBenchArgs([], {});
    const withPeer = parseBenchArgs(['--peer-bin', 'ds_ocr'], {});
    assert.ok(without !== 'help' && withPeer !== 'help');
    assert.equal(without.parts.has('peer'), false);
    assert.equal(without.parts.has('batch'), true);
    assert.equal(withPeer.parts.has('peer'), true);
    assert.equal(withPeer.peerBin, path.resolve('ds_ocr'));
  });

  test('256 generated tokens and all three pages unless told otherwise', () => {
    const read = (args: string[]) => {
      const options = parseBenchArgs(['--peer-bin', 'ds_ocr', ...args], {});
      assert.ok(options !== 'help');
      return { tokens: options.peerTokens, cases: options.peerCases.map((c) => c.id) };
    };
    assert.deepEqual(read([]), { tokens: 256, cases: ['v1-base-1600x2000', 'v2-4tiles', 'v3-gundam-30tiles'] });
    assert.deepEqual(read(['--quick', '--peer-cases', 'v3-gundam-30tiles']), { tokens: 16, cases: ['v3-gundam-30tiles'] });
    assert.equal(read(['--decode-tokens', '40']).tokens, 40);
  });
});

describe('running the peer', () => {
  let dir: string;
  let fake: string;
  let log: string;
  let modelDir: string;
  let image: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-test-peer-'));
    fake = path.join(dir, 'ds_ocr');
    log = path.join(dir, 'peer-calls.jsonl');
    await writeFile(fake, FAKE_PEER_SCRIPT);
    await chmod(fake, 0o755);
    process.env.FAKE_PEER_LOG = log;
    modelDir = await tinyCheckpoint('v1');
    image = path.join(dir, 'page.png');
    // A 1×1 PNG header is all the stand-in reads.
    await writeFile(image, Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000100080200000090774d', 'hex'));
  });
  after(async () => {
    delete process.env.FAKE_PEER_LOG;
    await rm(dir, { recursive: true, force: true });
  });
  const calls = async () => (await readFile(log, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { args: string[]; size: number[] });

  test('greedy, exactly the tokens asked for, on the given threads, with --int4 for its 8-bit experts', () => {
    const run = { bin: fake, modelDir: '/models/v1', image: '/pages/p.png', threads: 2, tokens: 256, int8: true };
    assert.deepEqual(peerArgs(run), ['-d', '/models/v1', '-i', '/pages/p.png', '-t', '2', '-n', '256', '--min-tokens', '256', '--profile', '--int4']);
    assert.equal(peerArgs({ ...run, int8: false }).includes('--int4'), false);
  });

  test('an absent executable is an error naming --peer-bin', async () => {
    await assert.rejects(checkPeerBinary(path.join(dir, 'missing')), /--peer-bin .*missing: no executable file there/);
    await checkPeerBinary(fake);
  });

  test('reads the stand-in\'s timings; a failing run or another token count is an error', async () => {
    const run = { bin: fake, modelDir, image, threads: 1, tokens: 5, int8: false };
    assert.deepEqual(await runPeer(run), { totalMs: 4000, generatedTokens: 5, encodeMs: 2000, prefillMs: 500, decodeMs: 1500, promptTokens: 77 });
    await assert.rejects(runPeer({ ...run, modelDir: dir }), /exited with status 1; its last lines:\nFailed to load model/);
    await writeFile(path.join(dir, 'short'), FAKE_PEER_SCRIPT.replace("Number(value('-n'))", '3'));
    await chmod(path.join(dir, 'short'), 0o755);
    await assert.rejects(runPeer({ ...run, bin: path.join(dir, 'short') }), /the peer generated 3 tokens, not 5/);
  });

  test('the part on a tiny checkpoint: one process per mode, the peer interleaved where a job runs it', async () => {
    await rm(log, { force: true });
    const job: Omit<PeerJob, 'mode' | 'withPeer'> = {
      part: 'peer',
      modelDir,
      threads: 2,
      device: { kind: 'cpu' },
      runs: 2,
      pageCase: { id: 'tiny-page', variant: 'v1', mode: 'tiny', task: 'markdown', pages: 1, pageSize: [300, 400], tiles: 0 },
      peerBin: fake,
      tokens: 3,
    };
    const answers = [
      await runMeasureProcess({ ...job, mode: { precision: 'exact', quantize: 'none' }, withPeer: true }),
      await runMeasureProcess({ ...job, mode: { precision: 'fast', quantize: 'none' }, withPeer: false }),
      await runMeasureProcess({ ...job, mode: { precision: 'fast', quantize: 'int8' }, withPeer: true }),
    ];
    const peerCalls = await calls();
    assert.deepEqual(
      peerCalls.map((c) => c.args.includes('--int4')),
      [false, false, true, true],
    );
    for (const call of peerCalls) {
      assert.deepEqual(call.size, [300, 400]);
      assert.deepEqual(call.args.slice(0, 2), ['-d', modelDir]);
      assert.deepEqual(call.args.slice(4, 10), ['-t', '2', '-n', '3', '--min-tokens', '3']);
    }
    assert.deepEqual(answers[1].peer, []);
    const answer = mergePeerAnswers(answers);
    assert.deepEqual(answer.peer.map((p) => [p.int8, p.runs.map((r) => r.encodeMs)]), [[false, [2000, 2000]], [true, [1500, 1500]]]);
    assert.deepEqual(answer.ours.map((o) => [o.precision, o.quantize, o.runs.length]), [['exact', 'none', 2], ['fast', 'none', 2], ['fast', 'int8', 2]]);
    for (const run of answer.ours.flatMap((o) => o.runs)) {
      assert.ok(run.encodeMs > 0 && run.prefillMs > 0 && run.decodeMs > 0, JSON.stringify(run));
      assert.ok(run.totalMs >= run.encodeMs + run.prefillMs + run.decodeMs, JSON.stringify(run));
    }
    assert.deepEqual(summarisePeer(answer).rows.map((r) => r.peerInt8), [false, false, true]);
  });
});
