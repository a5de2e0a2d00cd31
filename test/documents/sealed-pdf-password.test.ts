// A PDF password as page jobs carry it: sealed to the document's bytes, opened only with them.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DocumentError, openSealedPdfPassword, sealPdfPassword } from '../../src/documents/document.js';

const PDF = Buffer.from('%PDF-1.4 the bytes of an encrypted document');

test('a sealed password opens again with the bytes it was sealed to', () => {
  for (const password of ['s3cret', 'pässwörd 🔑', ' spaces around ']) {
    assert.equal(openSealedPdfPassword(sealPdfPassword(password, PDF), PDF), password);
  }
});

test('the seal holds the password neither in clear nor merely encoded', () => {
  const password = 'correct horse battery staple';
  const sealed = JSON.stringify(sealPdfPassword(password, PDF));
  for (const form of [password, Buffer.from(password).toString('base64'), Buffer.from(password).toString('hex')]) {
    assert.ok(!sealed.includes(form), `the seal holds ${form}`);
  }
});

test('sealing the same password twice gives two different seals', () => {
  assert.notDeepEqual(sealPdfPassword('s3cret', PDF), sealPdfPassword('s3cret', PDF));
});

test('other bytes cannot open the seal: a DocumentError, not the password', () => {
  const sealed = sealPdfPassword('s3cret', PDF);
  const other = Buffer.from(PDF);
  other[other.length - 1] ^= 1;
  assert.throws(
    () => openSealedPdfPassword(sealed, other),
    (error: unknown) => error instanceof DocumentError && /does not open with this source/.test(error.reason) && !error.message.includes('s3cret'),
  );
});

test('an altered seal does not open', () => {
  const sealed = sealPdfPassword('s3cret', PDF);
  const ciphertext = Buffer.from(sealed.ciphertext, 'base64');
  ciphertext[0] ^= 1;
  assert.throws(() => openSealedPdfPassword({ ...sealed, ciphertext: ciphertext.toString('base64') }, PDF), DocumentError);
  assert.throws(() => openSealedPdfPassword({ ...sealed, tag: '' }, PDF), DocumentError);
  const shortTag = Buffer.from(sealed.tag, 'base64').subarray(0, 4).toString('base64');
  assert.throws(() => openSealedPdfPassword({ ...sealed, tag: shortTag }, PDF), DocumentError);
});
