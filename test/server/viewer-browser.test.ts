// The page viewer in a real browser (Debian's chromium, driven by puppeteer-core): signing in through
// the form, the documents list, a page view with one drawn box per block and no console error, the
// hover highlight shared by a box and its text, the keys (j/k, n for the next page needing review),
// and the retry button queueing exactly its page on Redis. Screenshots of the page view are saved
// under $SCRIPTORIUM_TEST_OUTPUT (default test-output/, which git ignores) for a person to look at.
// Skipped, saying so, when chromium is not installed (.ci/run installs it).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Queue } from 'bullmq';
import { pino } from 'pino';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

import { parsePageResultJson } from '../../src/jobs/result-json.js';
import { pageResultKey } from '../../src/jobs/storage-layout.js';
import { pageJobId } from '../../src/queue/job-ids.js';
import { pageQueue } from '../../src/queue/queue-names.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { redisOptions } from '../../src/queue/redis.js';
import { parseApiKeys } from '../../src/server/api-keys.js';
import { startApiServer, type ApiServer } from '../../src/server/api-server.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';
import { FAILED_PAGE, OTHER_FAILED_PAGE, writeViewerDocument } from '../support/viewer-documents.js';

const CHROMIUM = process.env.SCRIPTORIUM_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_MISSING = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install chromium): the browser tests of the viewer need it`;
/** The repository's root, from dist/test/server/ once built. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCREENSHOTS = path.resolve(ROOT, process.env.SCRIPTORIUM_TEST_OUTPUT ?? 'test-output', 'viewer');

const KEY = 'test-key-of-alice';
const API_KEYS = parseApiKeys('alice:sha256:c52d0df7d0d28e209a76fda1cf4b8d52bb604e648cc1e073947b17167e0408b2');
const silent = pino({ level: 'silent' });

describe('the viewer in chromium', { skip: CHROMIUM_MISSING || REDIS_SERVER_MISSING }, () => {
  let dir: string;
  let storage: FileStorage;
  let redis: EmbeddedRedis;
  let server: ApiServer;
  let browser: Browser;
  let page: Page;
  let docId: string;
  const consoleErrors: string[] = [];
  const url = (route: string) => new URL(route, server.url).href;
  const pageUrl = (n: number) => url(`/viewer/documents/${docId}/pages/${n}`);

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-viewer-browser-'));
    storage = new FileStorage(dir);
    ({ docId } = await writeViewerDocument(storage));
    redis = await startEmbeddedRedis();
    server = await startApiServer({ host: '127.0.0.1', port: 0, redisUrl: redis.url, storage, apiKeys: API_KEYS, defaultVariant: 'v1', logger: silent });
    await mkdir(SCREENSHOTS, { recursive: true });
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${page.url()}: ${message.text()}`);
    });
    page.on('pageerror', (error) => consoleErrors.push(`${page.url()}: ${String(error)}`));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await redis?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function blocksOf(n: number) {
    const key = pageResultKey(docId, n, 'json');
    return parsePageResultJson((await storage.get(key)).toString(), key).blocks;
  }

  test('signing in with the key through the form opens the documents list', async () => {
    await page.goto(url('/viewer/login'), { waitUntil: 'networkidle0' });
    await page.type('#key', KEY);
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('button[type=submit]')]);
    assert.equal(page.url(), url('/viewer/'));
    assert.equal(await page.$eval(`tr[data-doc-id="${docId}"] a`, (link) => link.textContent), '/in/minutes <draft>.pdf');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'documents.png') });
  });

  test('a page view draws one box per block of its page JSON, over its image, with no console error', async () => {
    await page.goto(pageUrl(1), { waitUntil: 'networkidle0' });
    assert.equal(await page.$$eval('svg.page-boxes rect.box', (boxes) => boxes.length), (await blocksOf(1)).length);
    assert.equal(await page.$$eval('rect.box.low', (boxes) => boxes.map((box) => box.getAttribute('data-block')).join()), 'p1-b1');
    const image = await page.$eval('svg.page-boxes image', (element) => element.getBoundingClientRect().width);
    assert.ok(image > 300, `the page image is drawn (${image} px wide)`);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'page-view.png'), fullPage: true });
    assert.deepEqual(consoleErrors, []);
  });

  test("hovering a box highlights its block's text, and hovering the text its box", async () => {
    await page.goto(pageUrl(1), { waitUntil: 'networkidle0' });
    const highlighted = () => page.$$eval('.highlight', (elements) => elements.map((element) => `${element.tagName.toLowerCase()}:${element.getAttribute('data-block')}`).sort());
    assert.deepEqual(await highlighted(), []);
    await page.hover('rect.box[data-block="p1-b2"]');
    assert.deepEqual(await highlighted(), ['div:p1-b2', 'rect:p1-b2']);
    await page.hover('div.block[data-block="p1-b0"]');
    assert.deepEqual(await highlighted(), ['div:p1-b0', 'rect:p1-b0']);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'page-view-hover.png') });
  });

  test('j and k move to the next and previous page; n lands on the next page that needs review', async () => {
    await page.goto(pageUrl(1), { waitUntil: 'networkidle0' });
    await Promise.all([page.waitForNavigation(), page.keyboard.press('j')]);
    assert.equal(page.url(), pageUrl(2));
    await Promise.all([page.waitForNavigation(), page.keyboard.press('k')]);
    assert.equal(page.url(), pageUrl(1));
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.keyboard.press('n')]);
    const landed = Number(/\/pages\/(\d+)$/.exec(page.url())?.[1]);
    const key = pageResultKey(docId, landed, 'json');
    assert.equal(parsePageResultJson((await storage.get(key)).toString(), key).needs_review, true, `page ${landed} needs review`);
    assert.equal(await page.$eval('.review', (element) => element.textContent), 'needs review');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'page-view-flagged.png'), fullPage: true });
    assert.deepEqual(consoleErrors, []);
  });

  test('the retry button of a failed page queues exactly that page', async () => {
    await page.goto(pageUrl(FAILED_PAGE), { waitUntil: 'networkidle0' });
    assert.match(await page.$eval('.failed', (element) => element.textContent ?? ''), /timed out after 600 s <while decoding>/);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'page-view-failed.png'), fullPage: true });
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('#retry')]);
    assert.equal(page.url(), `${pageUrl(FAILED_PAGE)}?retried=1`);
    assert.match(await page.$eval('.notice', (element) => element.textContent ?? ''), /queued again/);
    const pages = new Queue(pageQueue('v1').name, { connection: redisOptions(redis.url, 'client'), prefix: pageQueue('v1').prefix });
    try {
      const waiting = await pages.getJobs(['waiting', 'prioritized', 'delayed']);
      assert.deepEqual(waiting.map((job) => job.id), [pageJobId(docId, FAILED_PAGE, FAILED_PAGE)]);
      assert.equal(await pages.getJob(pageJobId(docId, OTHER_FAILED_PAGE, OTHER_FAILED_PAGE)), undefined, 'the other failed page is not queued');
    } finally {
      await pages.close();
    }
    assert.deepEqual(consoleErrors, []);
  });
});
