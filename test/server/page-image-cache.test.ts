// The viewer's page image cache: bounded in bytes, least recently used out first, one render per
// image however many ask at once, and a failed render not kept.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { PageImageCache } from '../../src/server/page-image-cache.js';

function counting() {
  const renders: string[] = [];
  const render = (key: string, bytes: number) => async () => {
    renders.push(key);
    return Buffer.alloc(bytes);
  };
  return { renders, render };
}

test('the least recently used images go first once the bytes exceed the bound', async () => {
  const cache = new PageImageCache(300);
  const { renders, render } = counting();
  await cache.get('a', render('a', 100));
  await cache.get('b', render('b', 100));
  await cache.get('c', render('c', 100));
  await cache.get('a', render('a', 100)); // a is now the most recently used
  await cache.get('d', render('d', 100)); // b goes
  assert.deepEqual(cache.size, { images: 3, bytes: 300 });
  await cache.get('a', render('a', 100));
  await cache.get('b', render('b', 100));
  assert.deepEqual(renders, ['a', 'b', 'c', 'd', 'b']);
});

test('an image larger than the bound is served but not kept', async () => {
  const cache = new PageImageCache(50);
  const { renders, render } = counting();
  assert.equal((await cache.get('big', render('big', 100))).length, 100);
  await cache.get('big', render('big', 100));
  assert.deepEqual(renders, ['big', 'big']);
  assert.deepEqual(cache.size, { images: 0, bytes: 0 });
});

test('concurrent requests for one image share one render; a failed render is tried again next time', async () => {
  const cache = new PageImageCache(1000);
  const { renders, render } = counting();
  const [first, second] = await Promise.all([cache.get('p', render('p', 10)), cache.get('p', render('p', 10))]);
  assert.equal(first, second);
  assert.deepEqual(renders, ['p']);
  await assert.rejects(cache.get('bad', () => Promise.reject(new Error('no source'))), /no source/);
  assert.equal((await cache.get('bad', render('bad', 10))).length, 10);
});
