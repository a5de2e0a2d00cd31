// Graceful shutdown for long-running commands: the first SIGTERM or SIGINT (or SIGHUP: the terminal
// went away) asks the command to stop (stop taking jobs, finish the claimed ones, close
// connections); a second one exits at once, after saying what is left.

/** Exit status after a second signal: 128 + SIGINT's number, as shells report an interrupt. */
const FORCED_EXIT_CODE = 130;
/** How long the second signal waits for `forcedLine` before exiting without it. */
const FORCED_LINE_WAIT_MS = 1_000;

export interface ShutdownMessages {
  /** The line after the first signal. Default: finishing claimed jobs, then exiting. */
  stoppingLine?: (signal: NodeJS.Signals) => string;
  /** The line after the second signal: what is left undone. Default: claimed jobs will be retried. */
  forcedLine?: (signal: NodeJS.Signals) => Promise<string> | string;
}

export const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * Calls `stop` once, on the first signal, with the signal's name. Returns a function that removes
 * the handlers, for when the command ends on its own.
 */
export function onShutdownSignal(stop: (signal: NodeJS.Signals) => void, messages: ShutdownMessages = {}): () => void {
  const stoppingLine = messages.stoppingLine ?? ((signal) => `${signal}: finishing claimed jobs, then exiting (send it again to exit now)`);
  const forcedLine = messages.forcedLine ?? ((signal) => `${signal} again: exiting without waiting for claimed jobs (they will be retried)`);
  let stopping = false;
  let forcing = false;
  const handle = (signal: NodeJS.Signals) => {
    if (forcing) return;
    if (stopping) {
      forcing = true;
      const exit = (line: string) => {
        process.stderr.write(`scriptorium: ${line}\n`);
        process.exit(FORCED_EXIT_CODE);
      };
      const timer = setTimeout(() => exit(`${signal} again: exiting now`), FORCED_LINE_WAIT_MS);
      void Promise.resolve()
        .then(() => forcedLine(signal))
        .then(exit, () => exit(`${signal} again: exiting now`))
        .finally(() => clearTimeout(timer));
      return;
    }
    stopping = true;
    process.stderr.write(`scriptorium: ${stoppingLine(signal)}\n`);
    stop(signal);
  };
  for (const signal of SIGNALS) process.on(signal, handle);
  return () => {
    for (const signal of SIGNALS) process.off(signal, handle);
  };
}

/** The lines of a command that serves requests and holds no jobs (serve, dashboard). */
export function serverStopMessages(server: string): ShutdownMessages {
  return {
    stoppingLine: (signal) => `${signal}: stopping ${server} (send it again to exit now)`,
    forcedLine: (signal) => `${signal} again: exiting now`,
  };
}

/** The first shutdown signal, for commands that run until one comes (a second still exits at once). */
export function shutdownSignal(messages: ShutdownMessages = {}): Promise<NodeJS.Signals> {
  return new Promise((resolve) => onShutdownSignal(resolve, messages));
}
