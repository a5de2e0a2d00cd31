// An encrypted PDF's password on its way from the producer to the workers. Page jobs carry it, and
// Redis keeps job data, persists it and shows it on the dashboard, so it travels sealed: AES-256-GCM
// under a key derived (HKDF-SHA256) from the SHA-256 of the PDF's own bytes. The job data alone
// reveals nothing; a worker, which fetches the staged source anyway, opens it. Whoever holds both the
// source and the job data can open it too, but can already read the document through its results.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

import { DocumentError } from './document-error.js';

/** Base64 fields. */
export interface SealedPdfPassword {
  iv: string;
  ciphertext: string;
  tag: string;
}

const CIPHER = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const KEY_INFO = 'scriptorium: sealed PDF password';

export function sealPdfPassword(password: string, pdf: Uint8Array): SealedPdfPassword {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, keyOf(pdf), iv, { authTagLength: TAG_BYTES });
  const ciphertext = Buffer.concat([cipher.update(password, 'utf8'), cipher.final()]);
  return { iv: iv.toString('base64'), ciphertext: ciphertext.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
}

/** The password; a DocumentError when `pdf` is not the document it was sealed to (or the seal was altered). */
export function openSealedPdfPassword(sealed: SealedPdfPassword, pdf: Uint8Array): string {
  try {
    const decipher = createDecipheriv(CIPHER, keyOf(pdf), Buffer.from(sealed.iv, 'base64'), { authTagLength: TAG_BYTES });
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new DocumentError('the PDF password in the job does not open with this source: it was sealed to other bytes or altered');
  }
}

function keyOf(pdf: Uint8Array): Buffer {
  const digest = createHash('sha256').update(pdf).digest();
  return Buffer.from(hkdfSync('sha256', digest, Buffer.alloc(0), KEY_INFO, KEY_BYTES));
}
