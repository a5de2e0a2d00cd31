// A PDF whose end is missing (a cut download, a half-copied file) has no cross-reference table and
// no trailer, so PDFium cannot find its catalog. PDFium rebuilds the table by scanning the objects
// when the trailer names the catalog; this gives it one: the bytes up to the last complete object,
// then a trailer whose /Root is the catalog found among them. Pages whose objects were cut off stay
// unreadable; the others read as they were.
const LATIN1 = 'latin1';
const END_OBJECT = 'endobj';
/** The first object declaring /Type /Catalog: 'N G obj << … /Type /Catalog'. */
const CATALOG = /(\d+)\s+(\d+)\s+obj\s*<<(?:(?!endobj)[\s\S])*?\/Type\s*\/Catalog\b/;

/** The bytes with a trailer that names the catalog; undefined when no complete catalog object is left. */
export function withRebuiltTrailer(bytes: Uint8Array): Uint8Array | undefined {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(LATIN1);
  const lastObjectEnd = text.lastIndexOf(END_OBJECT);
  if (lastObjectEnd === -1) return undefined;
  const objects = text.slice(0, lastObjectEnd + END_OBJECT.length);
  const catalog = CATALOG.exec(objects);
  if (catalog === null) return undefined;
  return Buffer.concat([Buffer.from(objects, LATIN1), Buffer.from(`\ntrailer\n<< /Root ${catalog[1]} ${catalog[2]} R >>\n%%EOF\n`, LATIN1)]);
}
