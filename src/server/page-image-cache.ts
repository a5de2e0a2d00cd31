// The viewer's rendered page images, kept in memory up to a number of bytes: the least recently used
// go first. A page asked for again while it renders waits for that render instead of starting another.
export class PageImageCache {
  private readonly images = new Map<string, Buffer>();
  private readonly rendering = new Map<string, Promise<Buffer>>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** The image under `key`, rendered by `render` when it is not kept; a failed render is not kept. */
  async get(key: string, render: () => Promise<Buffer>): Promise<Buffer> {
    const kept = this.images.get(key);
    if (kept !== undefined) {
      this.images.delete(key); // re-inserted: the Map's order is the order of use
      this.images.set(key, kept);
      return kept;
    }
    let pending = this.rendering.get(key);
    if (pending === undefined) {
      pending = render().finally(() => this.rendering.delete(key));
      this.rendering.set(key, pending);
      const image = await pending;
      this.keep(key, image);
      return image;
    }
    return pending;
  }

  get size(): { images: number; bytes: number } {
    return { images: this.images.size, bytes: this.bytes };
  }

  private keep(key: string, image: Buffer): void {
    if (image.length > this.maxBytes || this.images.has(key)) return;
    this.images.set(key, image);
    this.bytes += image.length;
    for (const [oldest, old] of this.images) {
      if (this.bytes <= this.maxBytes) break;
      this.images.delete(oldest);
      this.bytes -= old.length;
    }
  }
}
