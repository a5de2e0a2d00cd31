// The metrics stack of docker-compose.yml fits the workers: Prometheus scrapes the port the workers
// serve /metrics on, the provisioned Grafana dashboard asks only for metrics a worker exports, and
// failures are counted under a few bounded reasons.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { UnrecoverableError } from 'bullmq';
import { pino } from 'pino';
import { register } from 'prom-client';

import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/queue/embedded-redis.js';
import { EngineHungError, PageTimeoutError } from '../../src/worker/page-worker.js';
import { failureReasonLabel, serveMetrics, type MetricsServer } from '../../src/worker/worker-metrics.js';
import { readYamlDocuments } from '../support/kustomize.js';
import { REDIS_SERVER_MISSING } from '../support/redis-server.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

interface Dashboard {
  panels: { title: string; targets: { expr: string }[] }[];
}
const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/dashboards/scriptorium.json'), 'utf8')) as Dashboard;
const [compose] = readYamlDocuments(path.join(ROOT, 'docker-compose.yml')) as { services: Record<string, { command?: string[]; volumes?: string[] }> }[];
const [prometheus] = readYamlDocuments(path.join(ROOT, 'deploy/prometheus/prometheus.yml')) as {
  scrape_configs: { job_name: string; dns_sd_configs: { names: string[]; port: number }[] }[];
}[];

test('failures are labelled with a few bounded reasons', () => {
  assert.equal(failureReasonLabel(new PageTimeoutError(600_000)), 'timeout');
  // The page worker rethrows a timed-out page's reason as a plain Error.
  assert.equal(failureReasonLabel(new Error(new PageTimeoutError(600_000).message)), 'timeout');
  assert.equal(failureReasonLabel(new EngineHungError(720_000, ['a'])), 'engine-hung');
  assert.equal(failureReasonLabel(new Error('job stalled more than allowable limit')), 'worker-died');
  assert.equal(failureReasonLabel(new UnrecoverableError('page 3 cannot be rendered')), 'unreadable');
  assert.equal(failureReasonLabel(new Error('put results/x: the storage backend is unreachable')), 'other');
});

test('Prometheus scrapes every worker replica on the port it serves /metrics on', () => {
  const command = compose.services.worker.command ?? [];
  const [job] = prometheus.scrape_configs;
  assert.deepEqual(job.dns_sd_configs.map(({ names, port }) => ({ names, port })), [{ names: ['worker'], port: Number(command[command.indexOf('--metrics-port') + 1]) }]);
  const workersAlive = dashboard.panels.find((panel) => panel.title === 'Workers alive');
  assert.match(workersAlive?.targets[0].expr ?? '', new RegExp(`up\\{job="${job.job_name}"\\}`));
});

test('Grafana is provisioned with the dashboard folder the provider reads', () => {
  const [provider] = readYamlDocuments(path.join(ROOT, 'deploy/grafana/provisioning/dashboards/scriptorium.yml')) as { providers: { options: { path: string } }[] }[];
  const volumes = compose.services.grafana.volumes ?? [];
  assert.ok(volumes.includes(`./deploy/grafana/dashboards:${provider.providers[0].options.path}:ro`), volumes.join(', '));
  assert.ok(volumes.includes('./deploy/grafana/provisioning:/etc/grafana/provisioning:ro'));
});

test('the dashboard has the panels an operator watches', () => {
  assert.deepEqual(dashboard.panels.map((panel) => panel.title).sort(), [
    'Failures by reason (pages per minute)',
    'Generated tokens per second',
    'Pages per minute',
    'Queue depth by state',
    'Stage latency percentiles',
    'Workers alive',
  ]);
});

describe('the dashboard queries', { skip: REDIS_SERVER_MISSING }, () => {
  let redis: EmbeddedRedis;
  let metrics: MetricsServer;
  before(async () => {
    redis = await startEmbeddedRedis();
    metrics = await serveMetrics({ port: 0, host: '127.0.0.1', redisUrl: redis.url, logger: pino({ level: 'silent' }) });
  });
  after(async () => {
    await metrics?.close();
    await redis?.close();
  });

  test('ask only for metrics a worker exports, with their labels', async () => {
    const exported = new Map((await register.getMetricsAsJSON()).map((metric) => [metric.name, metric]));
    for (const { title, targets } of dashboard.panels) {
      for (const { expr } of targets) {
        for (const [, name, suffix] of expr.matchAll(/\b(scriptorium_[a-z_]+?)(_bucket)?\b/g)) {
          const metric = exported.get(name);
          assert.ok(metric, `${title}: ${name} is not exported`);
          if (suffix !== undefined) assert.equal(metric.type, 'histogram', `${title}: ${name}${suffix}`);
        }
        for (const [, labels] of expr.matchAll(/by \(([^)]*)\)/g)) {
          const names = [...expr.matchAll(/\b(scriptorium_[a-z_]+?)(?:_bucket)?\b/g)].map(([, name]) => name);
          for (const label of labels.split(',').map((l) => l.trim()).filter((l) => l !== 'le')) {
            assert.ok(
              names.some((name) => (register.getSingleMetric(name) as unknown as { labelNames?: string[] } | undefined)?.labelNames?.includes(label) ?? false),
              `${title}: no metric in "${expr}" has the label ${label}`,
            );
          }
        }
      }
    }
  });
});
