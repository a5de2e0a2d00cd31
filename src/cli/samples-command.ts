// `scriptorium samples --out DIR`: a small folder of mixed documents to try the pipeline on: a
// two-page PDF, a PNG rendered from its first page, and a text file the pipeline must reject.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';

import { renderPage } from '../documents/document.js';
import { defineCommand, type CommandLine } from './command-line.js';
import { text } from './options.js';

const USAGE = `Usage: scriptorium samples --out DIR

Writes report.pdf (two pages of text), scan.png (the report's first page as an image) and
notes.txt (not a document: the pipeline reports it as rejected) into DIR.`;

const LINES = [
  'Quarterly report',
  'Revenue grew 12% over the previous quarter.',
  'Operating costs stayed flat at 4.2 million.',
  'The new archive service digitised 18,000 pages.',
];

async function samplePdf(): Promise<Buffer> {
  const document = await PDFDocument.create();
  const font = await document.embedFont(StandardFonts.Helvetica);
  for (let page = 1; page <= 2; page++) {
    const sheet = document.addPage([612, 792]);
    LINES.forEach((line, i) => sheet.drawText(i === 0 ? `${line}, page ${page}` : line, { x: 72, y: 700 - i * 28, size: i === 0 ? 22 : 13, font }));
  }
  return Buffer.from(await document.save());
}

const OPTIONS = { out: text().required() };

export const samplesCommand = defineCommand({ usage: USAGE, options: OPTIONS, run: writeSamples });

async function writeSamples({ options: { out } }: CommandLine<typeof OPTIONS>): Promise<number> {
  await mkdir(out, { recursive: true });
  const pdf = await samplePdf();
  const page = await renderPage(pdf, 'pdf', 0, { dpi: 100 });
  const png = await sharp(Buffer.from(page.data), { raw: { width: page.width, height: page.height, channels: 3 } }).png().toBuffer();
  await writeFile(path.join(out, 'report.pdf'), pdf);
  await writeFile(path.join(out, 'scan.png'), png);
  await writeFile(path.join(out, 'notes.txt'), 'Meeting notes: this text file is not a document the pipeline reads.\n');
  process.stdout.write(`wrote report.pdf (2 pages), scan.png and notes.txt to ${out}\n`);
  return 0;
}
