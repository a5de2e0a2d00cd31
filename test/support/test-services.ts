// Where the tests' Redis, Redis Cluster and S3 come from. Where a container runtime answers (a
// developer's laptop, a CI with Docker), real servers in containers started through testcontainers,
// from the images docker-compose.yml runs; elsewhere local ones: redis-server child processes and the
// in-process S3 server. SCRIPTORIUM_TEST_SERVICES=containers or =local forces one (containers with no
// runtime is an error, never a quiet fallback); auto, the default, asks the runtime once per test
// process. Tests that need what only a local server offers (a Redis killed and restarted on its
// append-only file, the S3 server's notifications and outages) always use the local one.
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { GenericContainer, getContainerRuntimeClient, Wait, type StartedTestContainer } from 'testcontainers';

export type ServiceSource = 'containers' | 'local';

export interface ServiceChoice {
  source: ServiceSource;
  /** Why, for the test report. */
  why: string;
}

/** The choice for a SCRIPTORIUM_TEST_SERVICES value; `probe` rejects when no container runtime answers. */
export async function chooseServiceSource(setting: string | undefined, probe: () => Promise<unknown>): Promise<ServiceChoice> {
  const mode = setting === undefined || setting === '' ? 'auto' : setting;
  if (mode === 'local') return { source: 'local', why: 'SCRIPTORIUM_TEST_SERVICES=local' };
  if (mode !== 'auto' && mode !== 'containers')
    throw new Error(`SCRIPTORIUM_TEST_SERVICES is auto, containers or local, not ${JSON.stringify(mode)}`);
  try {
    await probe();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (mode === 'containers') throw new Error(`SCRIPTORIUM_TEST_SERVICES=containers, but no container runtime answered: ${reason}`);
    return { source: 'local', why: `no container runtime answered (${reason})` };
  }
  return { source: 'containers', why: mode === 'auto' ? 'a container runtime answered' : 'SCRIPTORIUM_TEST_SERVICES=containers' };
}

/** This test process's choice. */
export const TEST_SERVICES: ServiceChoice = await chooseServiceSource(process.env.SCRIPTORIUM_TEST_SERVICES, getContainerRuntimeClient);

// docker-compose.yml's images, so that the tests meet the servers a deployment runs.
const REDIS_IMAGE = 'redis:7';
const MINIO_IMAGE = 'minio/minio:RELEASE.2025-09-07T16-13-09Z';
const REDIS_PORT = 6379;
const MINIO_PORT = 9000;
/** An image pull on a first run takes a while. */
const CONTAINER_START_TIMEOUT_MS = 180_000;

export interface ContainerServer {
  /** redis://… or http://… as the clients reach it. */
  url: string;
  /** Stops and removes the container. */
  close(): Promise<void>;
}

function closing(container: StartedTestContainer): () => Promise<void> {
  return async () => {
    await container.stop();
  };
}

/** A Redis in a container, configured as the local one: nothing persisted, `noeviction` as BullMQ needs. */
export async function startRedisContainer(): Promise<ContainerServer> {
  const container = await new GenericContainer(REDIS_IMAGE)
    .withCommand(['redis-server', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'])
    .withExposedPorts(REDIS_PORT)
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .withStartupTimeout(CONTAINER_START_TIMEOUT_MS)
    .start();
  return { url: `redis://${container.getHost()}:${container.getMappedPort(REDIS_PORT)}`, close: closing(container) };
}

/**
 * A Redis Cluster of one master per port in one container, each node on the same port inside as on
 * the host: the nodes announce 127.0.0.1 and their own ports, which are then right for the clients on
 * the host as well, so the container runtime must run on this host. Returns once `redis-cli --cluster
 * create` has run; the caller waits for cluster_state:ok as it does for local nodes. Returns what
 * stops the container.
 */
export async function startRedisClusterContainer(ports: number[]): Promise<() => Promise<void>> {
  const nodes = ports.map(
    (port) =>
      `redis-server --port ${port} --cluster-enabled yes --cluster-config-file nodes-${port}.conf --save '' ` +
      `--appendonly no --maxmemory-policy noeviction --daemonize yes`,
  );
  const create = `redis-cli --cluster create ${ports.map((port) => `127.0.0.1:${port}`).join(' ')} --cluster-yes`;
  const script = [...nodes, `until ${ports.map((port) => `redis-cli -p ${port} ping`).join(' && ')}; do sleep 0.1; done`, create];
  const container = await new GenericContainer(REDIS_IMAGE)
    .withCommand(['sh', '-c', `${script.join(' && ')} && echo 'cluster created' && exec sleep infinity`])
    .withExposedPorts(...ports.map((port) => ({ container: port, host: port })))
    .withWaitStrategy(Wait.forLogMessage('cluster created'))
    .withStartupTimeout(CONTAINER_START_TIMEOUT_MS)
    .start();
  return closing(container);
}

/** MinIO's root credentials in the container: the S3 keys its clients sign with. */
export const MINIO_CREDENTIALS = { accessKeyId: 'scriptorium-test', secretAccessKey: 'scriptorium-test-secret' };

/** Puts MinIO's credentials where the AWS SDK's default chain looks first. */
export function useMinioCredentials(): void {
  process.env.AWS_ACCESS_KEY_ID = MINIO_CREDENTIALS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = MINIO_CREDENTIALS.secretAccessKey;
}

/** A MinIO server in a container with `buckets` created; its endpoint is the url. */
export async function startMinioContainer(buckets: string[]): Promise<ContainerServer> {
  const container = await new GenericContainer(MINIO_IMAGE)
    .withCommand(['server', '/data'])
    .withEnvironment({ MINIO_ROOT_USER: MINIO_CREDENTIALS.accessKeyId, MINIO_ROOT_PASSWORD: MINIO_CREDENTIALS.secretAccessKey })
    .withExposedPorts(MINIO_PORT)
    .withWaitStrategy(Wait.forHttp('/minio/health/live', MINIO_PORT))
    .withStartupTimeout(CONTAINER_START_TIMEOUT_MS)
    .start();
  const endpoint = `http://${container.getHost()}:${container.getMappedPort(MINIO_PORT)}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: MINIO_CREDENTIALS });
  try {
    for (const bucket of buckets) await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    await container.stop();
    throw error;
  } finally {
    client.destroy();
  }
  return { url: endpoint, close: closing(container) };
}
