// Inference runs on native threads: the event loop keeps turning while a long prefill and a decode
// run. Event-loop delay is sampled every 10 ms; its maximum must stay under 50 ms.
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { test } from 'node:test';

import { generate } from '../../src/engine/generate.js';
import { NativeModel } from '../../src/engine/native-model.js';
import { tinyCheckpoint } from '../support/tiny-checkpoints.js';

test('event-loop delay stays under 50 ms during a long prefill and decode', async () => {
  const decoder = await NativeModel.load(await tinyCheckpoint('v1'));
  const prompt = [0, ...Array.from({ length: 1500 }, (_, i) => 100 + i)];
  const monitor = monitorEventLoopDelay({ resolution: 10 });
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 10);
  monitor.enable();
  const started = performance.now();
  await generate(decoder, [{ promptIds: prompt, maxNewTokens: 100, stopAtEos: false }]);
  const elapsed = performance.now() - started;
  monitor.disable();
  clearInterval(ticker);
  const maxDelayMs = monitor.max / 1e6;
  assert.ok(elapsed > 200, `the run took ${elapsed.toFixed(0)} ms; too short to show anything`);
  assert.ok(maxDelayMs < 50, `event-loop delay reached ${maxDelayMs.toFixed(1)} ms`);
  assert.ok(ticks > elapsed / 20, `only ${ticks} timer ticks in ${elapsed.toFixed(0)} ms`);
});
