// RedisDataWatch against a real Redis: processes that shared Redis's data each find out, once, that
// it was emptied (FLUSHALL); a process that first meets an empty Redis, and checks that find the data
// kept, report nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Redis } from 'ioredis';

import { REDIS_DATA_ID_KEY, RedisDataWatch, type RedisDataLoss } from '../../src/queue/redis-data-watch.js';
import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';

describe('RedisDataWatch', { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();
  const clients: Redis[] = [];
  const watches: RedisDataWatch[] = [];

  const watch = async (): Promise<{ watch: RedisDataWatch; losses: RedisDataLoss[] }> => {
    const client = new Redis(redis.url);
    clients.push(client);
    const losses: RedisDataLoss[] = [];
    const started = await RedisDataWatch.start(client, { onLost: (loss) => losses.push(loss), intervalMs: 3_600_000 });
    watches.push(started);
    return { watch: started, losses };
  };

  before(() => redis.flush());
  after(() => {
    for (const started of watches) started.stop();
    for (const client of clients) client.disconnect();
  });

  test('every process that knew the data reports its loss once; a process started afterwards does not', async () => {
    const first = await watch();
    const second = await watch();
    await Promise.all([first.watch.check(), second.watch.check()]);
    assert.deepEqual([first.losses, second.losses], [[], []]);
    const client = clients[0];
    const before = await client.get(REDIS_DATA_ID_KEY);

    await redis.flush();
    const third = await watch();
    for (let i = 0; i < 2; i++) await Promise.all([first.watch.check(), second.watch.check(), third.watch.check()]);
    const after = await client.get(REDIS_DATA_ID_KEY);
    assert.ok(before !== null && after !== null && before !== after);
    assert.deepEqual(first.losses, [{ previousDataId: before, dataId: after }]);
    assert.deepEqual(second.losses, [{ previousDataId: before, dataId: after }]);
    assert.deepEqual(third.losses, []);
  });
});
