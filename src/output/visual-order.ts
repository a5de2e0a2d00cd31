// The visual order of one line of text, the order in which a PDF shows its characters from left to
// right: right-to-left runs (Hebrew, Arabic, …) reversed, numbers inside them still left to right.
// Text extractors (pdftotext, PDFium, pdf.js) take a page's characters in that order, as every PDF
// typesets them, and apply the bidirectional algorithm back to give the text in reading order; text
// laid over a page in reading order comes out reversed. This is the Unicode Bidirectional Algorithm
// (UAX #9) for a line without explicit embeddings: the paragraph's direction from its first strong
// character (P2, P3), numbers and their separators (W4, W7), neutrals between runs (N1, N2), runs
// reversed by level (L2). Brackets keep their code points (L4 mirrors only glyphs), since extractors
// do not mirror them back.

const RIGHT_TO_LEFT_SCRIPT =
  /^[\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}\p{Script=Samaritan}\p{Script=Mandaic}\p{Script=Adlam}\p{Script=Hanifi_Rohingya}\p{Script=Yezidi}]/u;
const LETTER = /^\p{L}/u;
const DIGIT = /^\p{Nd}/u;
/** Separators that join the numbers on either side into one (UAX #9's CS and ES). */
const NUMBER_SEPARATOR = /^[.,:/+\-\u060C\u066B\u066C]$/u;

/** L: left-to-right, R: right-to-left, number, or neutral (spaces, punctuation, symbols). */
type BidiClass = 'L' | 'R' | 'number' | 'neutral';

/** The units (a line's grapheme clusters, in reading order) in the order they are shown, left to right. */
export function visualOrder(units: string[]): string[] {
  const classes = units.map(bidiClass);
  if (!classes.includes('R')) return units;
  const base = classes.find((kind) => kind === 'L' || kind === 'R') ?? 'L';
  joinSeparatedNumbers(units, classes);
  numbersAfterLeftToRight(classes, base);
  resolveNeutrals(classes, base);
  const levels = classes.map((kind) => (kind === 'number' ? 2 : base === 'L' ? (kind === 'L' ? 0 : 1) : kind === 'L' ? 2 : 1));
  const shown = [...units];
  for (let level = Math.max(...levels); level >= 1; level--) {
    for (let start = 0; start < levels.length; start++) {
      if (levels[start] < level) continue;
      let end = start;
      while (end + 1 < levels.length && levels[end + 1] >= level) end++;
      reverse(shown, start, end);
      reverse(levels, start, end);
      start = end;
    }
  }
  // A unit reversed an odd number of times has its characters reversed too: its marks come before
  // their base, as the algorithm leaves them (L3), and extractors reverse them back.
  return shown.map((unit, index) => (levels[index] % 2 === 1 ? [...unit].reverse().join('') : unit));
}

/** A grapheme cluster's class is its first character's. */
function bidiClass(unit: string): BidiClass {
  if (DIGIT.test(unit)) return 'number';
  if (LETTER.test(unit)) return RIGHT_TO_LEFT_SCRIPT.test(unit) ? 'R' : 'L';
  return 'neutral';
}

/** W4: one separator between two numbers (1,000; 3.14) is part of the number. */
function joinSeparatedNumbers(units: string[], classes: BidiClass[]): void {
  for (let index = 1; index + 1 < units.length; index++) {
    if (classes[index - 1] === 'number' && classes[index + 1] === 'number' && NUMBER_SEPARATOR.test(units[index])) classes[index] = 'number';
  }
}

/** W7: a number whose last strong character before it is left-to-right (or the line's start, in a left-to-right line) is left-to-right. */
function numbersAfterLeftToRight(classes: BidiClass[], base: 'L' | 'R'): void {
  let strong = base;
  classes.forEach((kind, index) => {
    if (kind === 'L' || kind === 'R') strong = kind;
    else if (kind === 'number' && strong === 'L') classes[index] = 'L';
  });
}

/** N1, N2: neutrals between two characters of one direction (numbers count as right-to-left) take it; others the line's. */
function resolveNeutrals(classes: BidiClass[], base: 'L' | 'R'): void {
  const direction = (kind: BidiClass | undefined): 'L' | 'R' => (kind === undefined ? base : kind === 'L' ? 'L' : 'R');
  for (let start = 0; start < classes.length; start++) {
    if (classes[start] !== 'neutral') continue;
    let end = start;
    while (end + 1 < classes.length && classes[end + 1] === 'neutral') end++;
    const before = direction(classes[start - 1]);
    const resolved = before === direction(classes[end + 1]) ? before : base;
    classes.fill(resolved, start, end + 1);
    start = end;
  }
}

function reverse<T>(items: T[], start: number, end: number): void {
  for (let low = start, high = end; low < high; low++, high--) [items[low], items[high]] = [items[high], items[low]];
}
