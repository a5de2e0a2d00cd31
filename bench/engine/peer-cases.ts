// The pages read side by side with the peer (ds-ocr): the pages of the comparison the speed issue
// states its targets on, the V2 page being the bench's own tiled case.
import { pageCase, type PageCase } from './page-cases.js';

export const PEER_CASES: readonly PageCase[] = [
  { id: 'v1-base-1600x2000', variant: 'v1', mode: 'base', task: 'markdown', pages: 1, pageSize: [1600, 2000], tiles: 0 },
  pageCase('v2-4tiles'),
  // 6 × 5 tiles of 640 (V3 allows up to 32) plus the 1024 global view.
  { id: 'v3-gundam-30tiles', variant: 'v3', mode: 'gundam', task: 'parse', pages: 1, pageSize: [1794, 1578], tiles: 30 },
];
