import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { parseMultiPageOutput, parsePageOutput } from '../../src/engine/ocr-postprocess.js';

const A4 = { width: 1241, height: 1754 };

describe('V1/V2 <|ref|> tags', () => {
  const output =
    '<|ref|>title<|/ref|><|det|>[[100, 50, 900, 120]]<|/det|>\n# Annual Report\n\n' +
    '<|ref|>text<|/ref|><|det|>[[100, 150, 900, 400]]<|/det|>\nRevenue grew.\n\n' +
    '<|ref|>table<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\n<table><tr><td>1</td></tr></table>';

  test('each tag becomes a block with its label and the text up to the next tag', () => {
    const { blocks } = parsePageOutput(output, A4);
    assert.deepEqual(blocks.map((b) => [b.type, b.text]), [
      ['title', '# Annual Report'],
      ['text', 'Revenue grew.'],
      ['table', '<table><tr><td>1</td></tr></table>'],
    ]);
  });

  test('boxes are int(coord / 999 × side) in page pixels', () => {
    const { blocks } = parsePageOutput(output, A4);
    assert.deepEqual(blocks[0].box, [124, 87, 1118, 210]);
    assert.deepEqual(blocks[2].box, [0, 0, 1241, 1754]);
  });

  test('tags are removed from the markdown', () => {
    assert.equal(
      parsePageOutput(output, A4).markdown,
      '# Annual Report\n\nRevenue grew.\n\n<table><tr><td>1</td></tr></table>',
    );
  });

  test('a tag with several boxes keeps them all; box is the first', () => {
    const [block] = parsePageOutput('<|ref|>text<|/ref|><|det|>[[0, 0, 999, 999], [0, 0, 333, 333]]<|/det|>x', { width: 999, height: 999 }).blocks;
    assert.deepEqual(block.boxes, [[0, 0, 999, 999], [0, 0, 333, 333]]);
    assert.deepEqual(block.box, [0, 0, 999, 999]);
  });
});

describe('V3 <|det|>LABEL [box] tags', () => {
  test('label and single box inside det, content after it', () => {
    const output = '<|det|>title [10, 20, 30, 40]<|/det|># Title\n<|det|>text [0, 500, 999, 999]<|/det|>Body';
    const { blocks, markdown } = parsePageOutput(output, { width: 999, height: 1998 });
    const second = output.indexOf('<|det|>text');
    assert.deepEqual(blocks, [
      { type: 'title', text: '# Title', box: [10, 40, 30, 80], boxes: [[10, 40, 30, 80]], span: { start: 0, end: second - 1 } },
      { type: 'text', text: 'Body', box: [0, 1000, 999, 1998], boxes: [[0, 1000, 999, 1998]], span: { start: second, end: output.length } },
    ]);
    assert.equal(markdown, '# Title\nBody');
  });
});

describe('markdown rendering', () => {
  test('image regions become numbered image links images/<page>_<n>.png', () => {
    const page = parsePageOutput('<|ref|>image<|/ref|><|det|>[[0, 0, 9, 9]]<|/det|>\n<|det|>image [1, 1, 5, 5]<|/det|>caption', A4, 3);
    assert.equal(page.markdown, '![](images/3_0.png)\n\n![](images/3_1.png)\ncaption');
    assert.deepEqual(page.blocks.map((b) => b.imageLink), ['images/3_0.png', 'images/3_1.png']);
  });

  test('the image link can be chosen', () => {
    const page = parsePageOutput('<|det|>image [1, 1, 5, 5]<|/det|>', A4, 0, { imageLink: (p, n) => `figs/p${p}-${n}.jpg` });
    assert.equal(page.markdown, '![](figs/p0-0.jpg)');
  });

  test('\\coloneqq becomes := and \\eqqcolon becomes =:', () => {
    const page = parsePageOutput('<|det|>text [0, 0, 1, 1]<|/det|>$a \\coloneqq b$, $c \\eqqcolon d$', A4);
    assert.equal(page.markdown, '$a := b$, $c =: d$');
    assert.equal(page.blocks[0].text, '$a := b$, $c =: d$');
  });

  test('the end-of-sentence text is removed', () => {
    assert.equal(parsePageOutput('Hello.<｜end▁of▁sentence｜>', A4).markdown, 'Hello.');
  });

  test('three or more newlines collapse to two', () => {
    assert.equal(parsePageOutput('a\n\n\n\nb\n\n\nc\n\nd', A4).markdown, 'a\n\nb\n\nc\n\nd');
  });

  test('output without tags is all markdown and no blocks', () => {
    assert.deepEqual(parsePageOutput('  Free OCR text\n', A4), {
      markdown: 'Free OCR text',
      blocks: [],
      paragraphs: [{ text: 'Free OCR text', span: { start: 2, end: 15 } }],
      span: { start: 0, end: 16 },
    });
  });

  test('text before the first tag stays in the markdown but in no block', () => {
    const page = parsePageOutput('Preamble\n<|det|>text [0, 0, 1, 1]<|/det|>Body', A4);
    assert.equal(page.markdown, 'Preamble\nBody');
    assert.deepEqual(page.blocks.map((b) => b.text), ['Body']);
  });
});

describe('malformed tags', () => {
  test('an unterminated det does not swallow the text or the next tag', () => {
    const page = parsePageOutput('<|ref|>text<|/ref|><|det|>[[1, 2, 3\nKept text\n<|ref|>title<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>Title', A4);
    assert.deepEqual(page.blocks.map((b) => [b.type, b.text]), [['title', 'Title']]);
    assert.equal(page.markdown, 'text[[1, 2, 3\nKept text\nTitle');
  });

  test('coordinates that are not numbers give a block without a box', () => {
    const output = '<|det|>text [12, abc, 5, 6]<|/det|>Hello';
    const [block] = parsePageOutput(output, A4).blocks;
    assert.deepEqual(block, { type: 'text', text: 'Hello', boxes: [], span: { start: 0, end: output.length } });
  });

  test('a box of three numbers gives a block without a box', () => {
    const [block] = parsePageOutput('<|ref|>text<|/ref|><|det|>[[1, 2, 3]]<|/det|>Hi', A4).blocks;
    assert.equal(block.box, undefined);
    assert.equal(block.text, 'Hi');
  });

  test('without a page size blocks have no boxes', () => {
    assert.deepEqual(parsePageOutput('<|det|>text [1, 2, 3, 4]<|/det|>x', undefined).blocks[0].boxes, []);
  });
});

describe('V3 multi-page output', () => {
  const sizes = [{ width: 999, height: 999 }, { width: 1998, height: 1998 }];

  test('splits on <PAGE> and drops what precedes the first marker', () => {
    const pages = parseMultiPageOutput('stray<PAGE>\nFirst page\n<PAGE>\n<|det|>text [0, 0, 999, 999]<|/det|>Second<｜end▁of▁sentence｜>', sizes);
    assert.deepEqual(pages.map((p) => p.markdown), ['First page', 'Second']);
    assert.deepEqual(pages[1].blocks[0].box, [0, 0, 1998, 1998]);
  });

  test('image links are numbered per page', () => {
    const pages = parseMultiPageOutput('<PAGE><|det|>image [0, 0, 1, 1]<|/det|><PAGE><|det|>image [0, 0, 1, 1]<|/det|>', sizes);
    assert.deepEqual(pages.map((p) => p.markdown), ['![](images/0_0.png)', '![](images/1_0.png)']);
  });

  test('output without any marker is one page', () => {
    assert.deepEqual(parseMultiPageOutput('just text', sizes).map((p) => p.markdown), ['just text']);
  });

  test('pages beyond the images given keep their text without boxes', () => {
    const output = '<PAGE>a<PAGE>b<PAGE><|det|>text [0, 0, 9, 9]<|/det|>c';
    const pages = parseMultiPageOutput(output, sizes);
    assert.equal(pages.length, 3);
    assert.deepEqual(pages[2].blocks, [{ type: 'text', text: 'c', boxes: [], span: { start: 20, end: output.length } }]);
  });
});

describe('spans in the decoded output', () => {
  const spanned = (text: string, span: { start: number; end: number }) => text.slice(span.start, span.end);

  test('a block spans its tag and its content, without the white space after it; the page spans all the output', () => {
    const output = 'Intro\n<|ref|>title<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\n# Title\n\n<|det|>text [0, 0, 9, 9]<|/det|>Body\n<｜end▁of▁sentence｜>';
    const page = parsePageOutput(output, A4);
    assert.deepEqual(page.blocks.map((b) => spanned(output, b.span)), [
      '<|ref|>title<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\n# Title',
      '<|det|>text [0, 0, 9, 9]<|/det|>Body',
    ]);
    assert.deepEqual(page.span, { start: 0, end: output.length });
  });

  test('paragraphs are the markdown split on blank lines, each spanning the output that made it', () => {
    const output = '<|det|>title [0, 0, 9, 9]<|/det|># Title\n\n\n\nFirst line\nsecond line\n<|det|>image [0, 0, 9, 9]<|/det|>\n \nLast';
    const page = parsePageOutput(output, A4);
    assert.equal(page.markdown, '# Title\n\nFirst line\nsecond line\n![](images/0_0.png)\n\n \nLast');
    assert.deepEqual(page.paragraphs.map((p) => p.text), ['# Title', 'First line\nsecond line\n![](images/0_0.png)', 'Last']);
    assert.deepEqual(page.paragraphs.map((p) => spanned(output, p.span)), [
      '# Title',
      'First line\nsecond line\n<|det|>image [0, 0, 9, 9]<|/det|>',
      'Last',
    ]);
  });

  test('rewritten text spans what it replaced', () => {
    const output = '$a \\coloneqq b$';
    const [paragraph] = parsePageOutput(output, A4).paragraphs;
    assert.equal(paragraph.text, '$a := b$');
    assert.deepEqual(paragraph.span, { start: 0, end: output.length });
  });

  test('multi-page output: each page spans its segment and its blocks are offsets in the whole output', () => {
    const output = 'stray<PAGE>First\n<PAGE>\n<|det|>text [0, 0, 9, 9]<|/det|>Second<｜end▁of▁sentence｜>';
    const pages = parseMultiPageOutput(output, [A4, A4]);
    assert.deepEqual(pages.map((p) => spanned(output, p.span)), ['First\n', '\n<|det|>text [0, 0, 9, 9]<|/det|>Second<｜end▁of▁sentence｜>']);
    assert.equal(spanned(output, pages[1].blocks[0].span), '<|det|>text [0, 0, 9, 9]<|/det|>Second');
    assert.equal(spanned(output, pages[0].paragraphs[0].span), 'First');
  });
});
