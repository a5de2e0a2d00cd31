// Job data read back from Redis is checked before a worker acts on it (src/jobs schemas). Data that
// is no such job (another version's producer, a hand-made job) fails at once: no try can help.
import { UnrecoverableError } from 'bullmq';

export function checkedJobData<T>(parse: (data: unknown) => T, data: unknown): T {
  try {
    return parse(data);
  } catch (error) {
    throw new UnrecoverableError((error as Error).message);
  }
}
