// The benchmark's dependency-free SVG line plot (bench/engine/svg-plot.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { linearScale, linePlotSvg, niceTicks } from '../../bench/engine/svg-plot.js';

describe('linearScale', () => {
  test('maps the domain ends onto the range ends and interpolates between them', () => {
    const x = linearScale([0, 4096], [80, 876]);
    assert.equal(x(0), 80);
    assert.equal(x(4096), 876);
    assert.equal(x(2048), 478);
  });

  test('a reversed range flips the axis, as SVG y coordinates need', () => {
    const y = linearScale([0, 10], [444, 48]);
    assert.equal(y(0), 444);
    assert.equal(y(10), 48);
    assert.equal(y(2.5), 345);
  });

  test('a single-point domain is an error', () => {
    assert.throws(() => linearScale([3, 3], [0, 1]), /single point/);
  });
});

describe('niceTicks', () => {
  test('round steps of 1, 2 or 5 × 10^k that cover the range', () => {
    assert.deepEqual(niceTicks(0, 4096, 8), [0, 1000, 2000, 3000, 4000, 5000]);
    assert.deepEqual(niceTicks(0, 10, 6), [0, 2, 4, 6, 8, 10]);
    assert.deepEqual(niceTicks(0.013, 0.087, 5), [0, 0.02, 0.04, 0.06, 0.08, 0.1]);
    assert.deepEqual(niceTicks(-3, 7, 5), [-4, -2, 0, 2, 4, 6, 8]);
  });

  test('a single value gets a range around it', () => {
    assert.deepEqual(niceTicks(5, 5, 5), [2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(niceTicks(0, 0, 4), [-1, -0.5, 0, 0.5, 1]);
  });
});

describe('linePlotSvg', () => {
  test('draws each series through its data points in plot coordinates', () => {
    // 900 × 500 with margins left 80, right 24, top 48, bottom 56: x 0..10 -> 80..876, y 0..10 -> 444..48.
    const svg = linePlotSvg([{ name: 'v1', color: 'red', points: [[0, 0], [5, 2.5], [10, 10]] }], {
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
    });
    assert.match(svg, /<polyline fill="none" stroke="red" stroke-width="1.5" points="80.0,444.0 478.0,345.0 876.0,48.0"\/>/);
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="900" height="500"/);
  });

  test('dashed series and escaped labels', () => {
    const svg = linePlotSvg([{ name: 'a <b> & c', color: 'blue', dashed: true, points: [[1, 1], [2, 3]] }], {
      title: '"quoted"',
      xLabel: 'x',
      yLabel: 'y',
    });
    assert.match(svg, /stroke-dasharray="6 4" points=/);
    assert.ok(svg.includes('>a &lt;b&gt; &amp; c</text>'));
    assert.ok(svg.includes('>&quot;quoted&quot;</text>'));
  });

  test('nothing to plot is an error', () => {
    assert.throws(() => linePlotSvg([{ name: 'empty', color: 'red', points: [] }], { title: 't', xLabel: 'x', yLabel: 'y' }), /nothing to plot/);
  });
});
