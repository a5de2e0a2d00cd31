// Runs the peer, the C engine ds-ocr (built outside this repository, see bench/README.md), on one
// page image and reads its stage timings. Each run is a process of its own: the peer loads the
// checkpoint, reads the page greedily with exactly `tokens` generated tokens (EOS is held back
// until then), prints its timings and exits.
import { spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';

import { parsePeerProfile, type PeerProfile } from './peer-profile.js';

export interface PeerRun {
  /** The ds_ocr executable. */
  bin: string;
  modelDir: string;
  /** The page image file. */
  image: string;
  threads: number;
  tokens: number;
  /** The peer's own 8-bit experts (its --int4 option quantizes per row to int8). */
  int8: boolean;
}

export function peerArgs(run: PeerRun): string[] {
  const tokens = String(run.tokens);
  return ['-d', run.modelDir, '-i', run.image, '-t', String(run.threads), '-n', tokens, '--min-tokens', tokens, '--profile', ...(run.int8 ? ['--int4'] : [])];
}

/** Throws an error naming --peer-bin unless `bin` is an executable file. */
export async function checkPeerBinary(bin: string): Promise<void> {
  try {
    await access(bin, constants.X_OK);
  } catch {
    throw new Error(`--peer-bin ${bin}: no executable file there; build the peer (ds-ocr) as bench/README.md describes and pass its ds_ocr`);
  }
}

/** One page read by the peer; rejects when it fails or generates another number of tokens. */
export function runPeer(run: PeerRun): Promise<PeerProfile> {
  return new Promise((resolve, reject) => {
    const child = spawn(run.bin, peerArgs(run), { stdio: ['ignore', 'ignore', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', (error) => reject(new Error(`the peer ${run.bin} did not start: ${error.message}`)));
    child.on('close', (code, signal) => {
      const stderr = Buffer.concat(chunks).toString('utf8');
      if (code !== 0) {
        const tail = stderr.trimEnd().split('\n').slice(-5).join('\n');
        reject(new Error(`the peer ${run.bin} exited with ${signal ?? `status ${code}`}; its last lines:\n${tail}`));
        return;
      }
      try {
        const profile = parsePeerProfile(stderr);
        if (profile.generatedTokens !== run.tokens) throw new Error(`the peer generated ${profile.generatedTokens} tokens, not ${run.tokens}`);
        resolve(profile);
      } catch (error) {
        reject(error);
      }
    });
  });
}
