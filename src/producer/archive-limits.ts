// Limits on what one archive may make the producer read, so that a zip or tar bomb is skipped and
// reported instead of filling memory or running for hours. Defaults suit archives of scans.

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

export interface ArchiveLimits {
  /** Largest uncompressed entry read; larger entries are skipped. Default 512 MiB. */
  maxEntryBytes: number;
  /**
   * Uncompressed bytes read from one archive: for tar everything it decompresses to (headers, padding
   * and skipped entries too, since they are streamed through to get past them), for zip the entries
   * read. The entry that would pass the limit and all after it are not read. Default 8 GiB.
   */
  maxArchiveBytes: number;
  /**
   * Largest uncompressed ÷ compressed size of a zip entry of COMPRESSION_RATIO_MIN_BYTES (1 MiB) or more;
   * entries above it are skipped. Default 200.
   */
  maxCompressionRatio: number;
  /** Entries (directories included) read from one archive; the rest are not read. Default 100,000. */
  maxEntries: number;
}

export const DEFAULT_ARCHIVE_LIMITS: Readonly<ArchiveLimits> = {
  maxEntryBytes: 512 * MIB,
  maxArchiveBytes: 8 * GIB,
  maxCompressionRatio: 200,
  maxEntries: 100_000,
};

/**
 * Smaller entries are not ratio-checked: they cannot blow up, and small blank pages or text compress
 * far beyond 200:1 in earnest.
 */
export const COMPRESSION_RATIO_MIN_BYTES = MIB;

/** The defaults completed with `limits`; throws a RangeError naming a limit that is not a positive number. */
export function resolveArchiveLimits(limits: Partial<ArchiveLimits> = {}): ArchiveLimits {
  const resolved = { ...DEFAULT_ARCHIVE_LIMITS, ...limits };
  for (const [name, value] of Object.entries(resolved)) {
    if (typeof value !== 'number' || !(value > 0)) {
      throw new RangeError(`archiveLimits.${name} must be a positive number, got ${value}; leave it out for the default`);
    }
  }
  return resolved;
}

/** The reason to skip an entry of `size` uncompressed bytes, or undefined if it may be read. */
export function entrySizeProblem(size: number, limits: ArchiveLimits): string | undefined {
  if (size <= limits.maxEntryBytes) return undefined;
  return `its uncompressed size ${size} bytes is over the limit of ${limits.maxEntryBytes} (archiveLimits.maxEntryBytes)`;
}

/** The reason to stop reading an archive at its entry number `count` (1-based), or undefined. */
export function entryCountProblem(count: number, limits: ArchiveLimits): string | undefined {
  if (count <= limits.maxEntries) return undefined;
  return (
    `the archive has more than ${limits.maxEntries} entries (archiveLimits.maxEntries): the entries after ` +
    `the first ${limits.maxEntries} were not read; split the archive or raise the limit`
  );
}

/** The reason to stop reading an archive before an entry that would bring it to `total` uncompressed bytes, or undefined. */
export function archiveBytesProblem(entryPath: string, total: number, limits: ArchiveLimits): string | undefined {
  if (total <= limits.maxArchiveBytes) return undefined;
  return (
    `reading ${entryPath} would bring the archive to ${total} uncompressed bytes, over the limit of ` +
    `${limits.maxArchiveBytes} (archiveLimits.maxArchiveBytes): it and the entries after it were not read; ` +
    'split the archive or raise the limit'
  );
}
