// Log lines of the queue commands: pino JSON on stderr (stdout carries the command's own output),
// written synchronously so that nothing is lost when the command exits. $LOG_LEVEL overrides the
// command's default level (trace, debug, info, warn, error, fatal, silent).
import { pino, type Level, type Logger } from 'pino';

export function commandLogger(defaultLevel: Level, env: NodeJS.ProcessEnv = process.env): Logger {
  return pino({ level: env.LOG_LEVEL?.trim() || defaultLevel }, pino.destination({ dest: 2, sync: true }));
}
