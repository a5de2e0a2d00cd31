// Entry names inside archives are untrusted: a name may climb out of the archive ('../x'), be
// absolute ('/etc/x', 'C:\x', '\\server\x') or carry a NUL. Such entries are skipped; the others get
// a clean relative path for their `archive!path` URI.

export type EntryPath = { ok: true; path: string } | { ok: false; problem: string };

/** `name` as a relative '/'-separated path without '.' or empty segments, or why it is unsafe. */
export function archiveEntryPath(name: string): EntryPath {
  // Backslashes separate segments on Windows, where 'a\..\..\x' climbs just as well.
  const slashed = name.replaceAll('\\', '/');
  if (slashed.includes('\0')) return unsafe('it contains a NUL character');
  if (slashed.startsWith('/')) return unsafe('it is an absolute path');
  if (/^[a-z]:/i.test(slashed)) return unsafe('it starts with a drive letter');
  const segments = slashed.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) return unsafe("it has a '..' segment (path traversal)");
  if (segments.length === 0) return unsafe('it has an empty name');
  return { ok: true, path: segments.join('/') };
}

function unsafe(problem: string): EntryPath {
  return { ok: false, problem: `unsafe entry name: ${problem}` };
}
