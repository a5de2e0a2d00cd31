// Graceful shutdown for long-running commands: the first SIGTERM or SIGINT asks the command to stop
// (stop taking jobs, finish the claimed ones, close connections); a second one exits at once.

/** Exit status after a second signal: 128 + SIGINT's number, as shells report an interrupt. */
const FORCED_EXIT_CODE = 130;

/**
 * Calls `stop` once, on the first SIGTERM or SIGINT, with the signal's name. Returns a function that
 * removes the handlers, for when the command ends on its own.
 */
export function onShutdownSignal(stop: (signal: NodeJS.Signals) => void): () => void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`scriptorium: ${signal} again: exiting without waiting for claimed jobs (they will be retried)\n`);
      process.exit(FORCED_EXIT_CODE);
    }
    stopping = true;
    process.stderr.write(`scriptorium: ${signal}: finishing claimed jobs, then exiting (send it again to exit now)\n`);
    stop(signal);
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
  return () => {
    process.off('SIGTERM', handle);
    process.off('SIGINT', handle);
  };
}
