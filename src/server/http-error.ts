// An error whose message is meant for the API client, with the HTTP status that goes with it. Any
// other error is answered 500 without its message (it may name internals) and logged.
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    /** Extra response headers, such as Retry-After. */
    readonly headers: Record<string, string> = {},
    /** Members of the JSON answer besides `error`, such as what a quota refusal names. */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
