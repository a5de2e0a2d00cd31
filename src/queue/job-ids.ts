// Job ids and names derived from the docId (docs/design.md "Data flow"): enqueueing the same document
// twice gives the same ids, and BullMQ adds nothing for an id it already holds. BullMQ refuses ':'
// in custom job ids, so a page job is '<docId>.p<first>-<last>' rather than '<docId>:<first>-<last>'.

/** The document's parent job: its docId. */
export function documentJobId(docId: string): string {
  return docId;
}

/** A page job: '<docId>.p3-3' for page 3, '<docId>.p1-12' for a V3 group of pages 1 to 12. */
export function pageJobId(docId: string, firstPage: number, lastPage: number): string {
  return `${docId}.p${firstPage}-${lastPage}`;
}

/** The pages a page job id covers, 1-based and inclusive; undefined for any other id. */
export function pagesOfJobId(jobId: string): { docId: string; firstPage: number; lastPage: number } | undefined {
  const match = /^(.+)\.p(\d+)-(\d+)$/.exec(jobId);
  if (!match) return undefined;
  return { docId: match[1], firstPage: Number(match[2]), lastPage: Number(match[3]) };
}

/** Job names, for people reading queue listings: 'document <docId>', 'page <docId>:3', 'pages <docId>:1-12'. */
export function documentJobName(docId: string): string {
  return `document ${docId}`;
}

export function pageJobName(docId: string, firstPage: number, lastPage: number): string {
  return firstPage === lastPage ? `page ${docId}:${firstPage}` : `pages ${docId}:${firstPage}-${lastPage}`;
}
