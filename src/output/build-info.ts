// Which Scriptorium wrote a result: the package version and the git commit it was built from, stamped
// into every page and document result. The commit is $SCRIPTORIUM_COMMIT when set (container images
// have no .git: pass it as a build argument), else what git says about the installed tree, else 'unknown'.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ScriptoriumBuild {
  version: string;
  commit: string;
}

/** The package root: this file is src/output/ in the sources and dist/src/output/ once built. */
const PACKAGE_ROOT = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url));

let build: ScriptoriumBuild | undefined;

/** Read once per process (the git lookup is a short child process at the first call). */
export function scriptoriumBuild(env: NodeJS.ProcessEnv = process.env): ScriptoriumBuild {
  build ??= { version: packageVersion(), commit: env.SCRIPTORIUM_COMMIT?.trim() || gitCommit() };
  return build;
}

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: string };
  return manifest.version ?? 'unknown';
}

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: PACKAGE_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5_000 }).trim();
  } catch {
    return 'unknown';
  }
}
