// The searchable PDF of an assembled document, read back with pdftotext (poppler-utils): the
// recognised text is in the original PDF's page, invisible, at its grounding boxes, in any script
// (right-to-left ones in reading order); an image document becomes image pages with the same text
// layer; a page that has text of its own keeps it as its only text layer unless `add` is asked for.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { PageResultJson } from '../../src/jobs/result-json.js';
import { pageResultKey } from '../../src/jobs/storage-layout.js';
import { PDFDocument, StandardFonts } from 'pdf-lib';

import { searchablePdf } from '../../src/output/searchable-pdf.js';
import { FileStorage } from '../../src/storage/file-storage.js';
import { LETTER, makePdf, makePng } from '../support/make-documents.js';
import { pageResult, storeAssembledDocument } from '../support/stored-results.js';

const PDFTOTEXT_MISSING = spawnSync('pdftotext', ['-v']).error === undefined ? false : 'pdftotext is not installed (apt-get install poppler-utils)';
const PDF_DOC = 'ab'.repeat(16);
const PNG_DOC = 'cd'.repeat(16);
/** Tolerance of the positions pdftotext reports, in points: glyph extents differ from the box a little. */
const TOLERANCE_PT = 3;

interface Word {
  text: string;
  xMin: number;
  yMin: number;
  xMax: number;
  yMax: number;
}

/** The words pdftotext finds on page `page` (the first by default), with their boxes in points from the top left. */
function wordsOf(file: string, page = 1): Word[] {
  const html = execFileSync('pdftotext', ['-bbox', '-f', String(page), '-l', String(page), file, '-'], { encoding: 'utf8' });
  return [...html.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g)].map((m) => ({
    xMin: Number(m[1]),
    yMin: Number(m[2]),
    xMax: Number(m[3]),
    yMax: Number(m[4]),
    text: m[5].replace(/&amp;/g, '&'),
  }));
}

/** The text pdftotext extracts from each page. */
function pageTexts(file: string): string[] {
  return execFileSync('pdftotext', [file, '-'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).split('\f').slice(0, -1);
}

/**
 * Text compared whitespace aside, and without the directional embeddings (U+202A…U+202E) with which
 * pdftotext wraps every right-to-left run it outputs.
 */
function bare(text: string): string {
  return text.replace(/[\s\u202a-\u202e]/gu, '');
}

describe('searchable PDF', { skip: PDFTOTEXT_MISSING }, () => {
  let dir: string;
  let storage: FileStorage;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scriptorium-searchable-'));
    storage = new FileStorage(path.join(dir, 'storage'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('a PDF page gets its text at the grounding boxes, in points, Unicode included', async () => {
    // US Letter rendered at 144 dpi: 2 pixels per point.
    const render = { width: 1224, height: 1584, dpi: 144, pdfPage: { width: 612, height: 792 } };
    await storeAssembledDocument(storage, PDF_DOC, 'pdf', await makePdf([LETTER], 0), pageResult(PDF_DOC, render, [
      { type: 'title', text: 'Quarterly Übersicht café', box: [144, 144, 1008, 200] },
      { type: 'text', text: 'Revenue grew\nCosts fell', box: [200, 400, 700, 480] },
    ]));
    const file = path.join(dir, 'pdf-doc.pdf');
    await writeFile(file, await searchablePdf(PDF_DOC, storage));
    const words = wordsOf(file);
    assert.deepEqual(words.map((word) => word.text), ['Quarterly', 'Übersicht', 'café', 'Revenue', 'grew', 'Costs', 'fell']);
    const near = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) <= TOLERANCE_PT, `${what}: ${actual} pt, expected ${expected}`);
    // The title's box is x 72…504 pt, y 72…100 pt: the line starts at its left edge and fills its width.
    near(words[0].xMin, 72, 'title left');
    near(words[2].xMax, 504, 'title right');
    for (const word of words.slice(0, 3)) assert.ok(word.yMin >= 72 - TOLERANCE_PT && word.yMax <= 100 + TOLERANCE_PT, `${word.text} inside the title box`);
    // Two lines in x 100…350 pt, y 200…240 pt: one per half.
    near(words[3].xMin, 100, 'first line left');
    assert.ok(words[3].yMax <= 220 + TOLERANCE_PT && words[3].yMin >= 200 - TOLERANCE_PT, 'first line in the upper half');
    assert.ok(words[5].yMin >= 220 - TOLERANCE_PT && words[5].yMax <= 240 + TOLERANCE_PT, 'second line in the lower half');
  });

  test('an image document becomes image pages, one point per pixel, with the same text layer', async () => {
    const png = await makePng();
    const sharp = (await import('sharp')).default;
    const { width = 0, height = 0 } = await sharp(png).metadata();
    await storeAssembledDocument(storage, PNG_DOC, 'png', png, pageResult(PNG_DOC, { width, height }, [{ type: 'text', text: 'Invoice', box: [2, 2, width - 2, Math.round(height / 2)] }]));
    const file = path.join(dir, 'png-doc.pdf');
    await writeFile(file, await searchablePdf(PNG_DOC, storage));
    const [word] = wordsOf(file);
    assert.equal(word.text, 'Invoice');
    assert.ok(Math.abs(word.xMin - 2) <= TOLERANCE_PT, `left edge ${word.xMin}`);
    const pageSize = /<page width="([\d.]+)" height="([\d.]+)"/.exec(execFileSync('pdftotext', ['-bbox', file, '-'], { encoding: 'utf8' }));
    assert.deepEqual([Number(pageSize?.[1]), Number(pageSize?.[2])], [width, height]);
  });

  test('readings in any script come back from pdftotext as read, each word inside its block', async () => {
    const readings = {
      chinese: '光学字符识别 把档案变成可以搜索的文字',
      japanese: '𠮷野家で牛丼を食べる　東京の図書館',
      arabic: 'مرحبا بالعالم، هذا نص عربي يحتوي على الرقم 42 في وسطه.',
      arabicWithVowelMarks: 'مَرْحَبًا بِالعَالَم',
      hebrew: 'שָׁלוֹם עולם! זהו טקסט בעברית עם המספר 1,000 בתוכו.',
      thai: 'ภาษาไทยไม่เว้นวรรคระหว่างคำ แต่เว้นระหว่างประโยค',
      mathematics: '∑ᵢ xᵢ² ≤ ∫₀^∞ f(x) dx → ∞, ∀ε > 0 ∃δ: √2 ≠ π ± ½',
      emoji: 'Emoji 👍🏽 👨‍👩‍👧 🎉 ❤️ and a combining acute: Cafe\u0301',
    };
    // One reading per page: pdftotext picks each page's main direction from its characters.
    const render = { width: 1224, height: 1584, dpi: 144, pdfPage: { width: 612, height: 792 } };
    const docId = 'e1'.repeat(16);
    const entries = Object.entries(readings);
    await storeAssembledDocument(
      storage,
      docId,
      'pdf',
      await makePdf(entries.map(() => LETTER), 0),
      ...entries.map(([, text]) => pageResult(docId, render, [{ type: 'text', text, box: [144, 300, 1080, 360] }])),
    );
    const file = path.join(dir, 'scripts.pdf');
    await writeFile(file, await searchablePdf(docId, storage));
    const texts = pageTexts(file);
    entries.forEach(([script, reading], index) => {
      assert.equal(bare(texts[index]), bare(reading), `${script}: ${texts[index]}`);
      // The block is x 72…540 pt, y 150…180 pt: the line fills its width, no word leaves it.
      const words = wordsOf(file, index + 1);
      const left = Math.min(...words.map((word) => word.xMin));
      const right = Math.max(...words.map((word) => word.xMax));
      assert.ok(Math.abs(left - 72) <= TOLERANCE_PT && Math.abs(right - 540) <= TOLERANCE_PT, `${script}: the line spans ${left}…${right} pt`);
      for (const word of words) {
        assert.ok(word.yMin >= 150 - TOLERANCE_PT && word.yMax <= 180 + TOLERANCE_PT, `${script}: "${word.text}" at y ${word.yMin}…${word.yMax} pt`);
      }
    });
    // A right-to-left line is laid in the order it is printed: its first word at the right.
    const arabicWords = wordsOf(file, entries.findIndex(([script]) => script === 'arabic') + 1);
    assert.ok(Math.abs(Math.max(...arabicWords.map((word) => word.xMax)) - 540) <= TOLERANCE_PT);
    assert.equal(arabicWords.at(-1)?.text, 'ابحرم', 'pdftotext reports words as they are laid out, the first at the right');
  });

  test('more distinct characters than one font holds are carried by a second font', async () => {
    // 70,000 distinct ideographs (the BMP's and Extension B's), 35,000 per page: one font holds 65,535.
    const ideographs: string[] = [];
    for (const [first, last] of [[0x4e00, 0x9fff], [0x3400, 0x4dbf], [0x20000, 0x2a6df]]) {
      for (let code = first; code <= last && ideographs.length < 70_000; code++) ideographs.push(String.fromCodePoint(code));
    }
    const pageText = (half: string[]) => Array.from({ length: half.length / 500 }, (_, line) => half.slice(line * 500, (line + 1) * 500).join('')).join('\n');
    const halves = [ideographs.slice(0, 35_000), ideographs.slice(35_000)];
    const render = { width: 1224, height: 1584, dpi: 144, pdfPage: { width: 612, height: 792 } };
    const docId = 'e2'.repeat(16);
    await storeAssembledDocument(
      storage,
      docId,
      'pdf',
      await makePdf([LETTER, LETTER], 0),
      ...halves.map((half) => pageResult(docId, render, [{ type: 'text', text: pageText(half), box: [0, 0, 1224, 1584] }])),
    );
    const file = path.join(dir, 'ideographs.pdf');
    await writeFile(file, await searchablePdf(docId, storage));
    const fonts = execFileSync('pdffonts', [file], { encoding: 'utf8' }).split('\n').filter((line) => line.startsWith('GlyphLessFont'));
    assert.equal(fonts.length, 2);
    assert.deepEqual(pageTexts(file).map(bare), halves.map((half) => half.join('')));
  });

  test('a page with text of its own keeps it as its only text layer, unless the reading is added', async () => {
    // Page 1 is born digital, page 2 a blank scan; both were read.
    const original = await PDFDocument.create();
    const font = await original.embedFont(StandardFonts.Helvetica);
    original.addPage(LETTER).drawText('Annual report of the archive', { x: 72, y: 700, size: 14, font });
    original.addPage(LETTER);
    const render = { width: 1224, height: 1584, dpi: 144, pdfPage: { width: 612, height: 792 } };
    const docId = 'e3'.repeat(16);
    await storeAssembledDocument(
      storage,
      docId,
      'pdf',
      await original.save(),
      pageResult(docId, render, [{ type: 'title', text: 'Annual report of the archive', box: [144, 170, 1000, 200] }]),
      pageResult(docId, render, [{ type: 'text', text: 'Handwritten note', box: [144, 300, 800, 340] }]),
    );
    const kept = path.join(dir, 'kept.pdf');
    await writeFile(kept, await searchablePdf(docId, storage));
    assert.deepEqual(pageTexts(kept).map(bare), ['Annualreportofthearchive', 'Handwrittennote']);
    const added = path.join(dir, 'added.pdf');
    await writeFile(added, await searchablePdf(docId, storage, { textLayer: 'add' }));
    assert.deepEqual(pageTexts(added).map(bare), ['AnnualreportofthearchiveAnnualreportofthearchive', 'Handwrittennote']);

    // A searchable PDF made searchable again: its invisible layer is the page's own text now.
    const againId = 'e4'.repeat(16);
    const [first, second] = await Promise.all([1, 2].map(async (page) => JSON.parse((await storage.get(pageResultKey(docId, page, 'json'))).toString()) as PageResultJson));
    await storeAssembledDocument(storage, againId, 'pdf', await readFile(kept), first, second);
    const again = path.join(dir, 'again.pdf');
    await writeFile(again, await searchablePdf(againId, storage));
    assert.deepEqual(pageTexts(again).map(bare), ['Annualreportofthearchive', 'Handwrittennote']);
  });
});
