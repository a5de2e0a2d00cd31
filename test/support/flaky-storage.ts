// file:// storage whose writes fail as an unreachable backend's would while `failing` is set, and
// whose reads of the keys in `unreadable` fail so.
import { FileStorage } from '../../src/storage/file-storage.js';
import { StorageError } from '../../src/storage/storage-error.js';

export class FlakyStorage extends FileStorage {
  failing = false;
  /** Writes refused so far. */
  failedPuts = 0;

  override put(key: string, body: Parameters<FileStorage['put']>[1]): Promise<void> {
    if (this.failing) {
      this.failedPuts++;
      return Promise.reject(new StorageError('transient', `put ${key}: the storage backend is unreachable`, { key }));
    }
    return super.put(key, body);
  }

  readonly unreadable = new Set<string>();

  override get(key: string): Promise<Buffer> {
    if (this.unreadable.has(key)) return Promise.reject(new StorageError('transient', `get ${key}: the storage backend is unreachable`, { key }));
    return super.get(key);
  }
}
