// Where the tests' servers come from (test/support/test-services.ts): the choice between containers
// and local servers, and the Redis useTestRedis starts from it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { Redis } from 'ioredis';

import { TEST_REDIS_MISSING, useTestRedis } from '../support/redis-server.js';
import { chooseServiceSource, TEST_SERVICES } from '../support/test-services.js';

const answers = () => Promise.resolve({ info: 'a runtime' });
const noRuntime = () => Promise.reject(new Error('Could not find a working container runtime strategy'));

describe('choosing the test services', () => {
  test('auto takes containers when a runtime answers, and local servers with the reason when none does', async () => {
    for (const setting of [undefined, '', 'auto']) {
      assert.deepEqual(await chooseServiceSource(setting, answers), { source: 'containers', why: 'a container runtime answered' });
      assert.deepEqual(await chooseServiceSource(setting, noRuntime), {
        source: 'local',
        why: 'no container runtime answered (Could not find a working container runtime strategy)',
      });
    }
  });

  test('containers asked for with no runtime is an error, not local servers', async () => {
    assert.deepEqual(await chooseServiceSource('containers', answers), { source: 'containers', why: 'SCRIPTORIUM_TEST_SERVICES=containers' });
    await assert.rejects(chooseServiceSource('containers', noRuntime), /SCRIPTORIUM_TEST_SERVICES=containers, but no container runtime answered: Could not find/);
  });

  test('local never asks the runtime', async () => {
    const asked: string[] = [];
    const probe = () => {
      asked.push('probe');
      return answers();
    };
    assert.deepEqual(await chooseServiceSource('local', probe), { source: 'local', why: 'SCRIPTORIUM_TEST_SERVICES=local' });
    assert.deepEqual(asked, []);
  });

  test('any other setting is an error naming the three', async () => {
    await assert.rejects(chooseServiceSource('docker', answers), /SCRIPTORIUM_TEST_SERVICES is auto, containers or local, not "docker"/);
  });
});

describe(`the test Redis (${TEST_SERVICES.source}: ${TEST_SERVICES.why})`, { skip: TEST_REDIS_MISSING }, () => {
  const redis = useTestRedis();

  test('answers, and flush empties it', async () => {
    const client = new Redis(redis.url);
    try {
      assert.equal(await client.ping(), 'PONG');
      await client.set('test-services-key', '1');
      await redis.flush();
      assert.equal(await client.dbsize(), 0);
    } finally {
      client.disconnect();
    }
  });
});
