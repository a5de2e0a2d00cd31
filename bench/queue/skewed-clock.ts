// Bench-only preload for `scriptorium work` child processes of the soak: the process's clock is
// SKEWED by SCRIPTORIUM_BENCH_CLOCK_SKEW_MS (Date.now() reads that much ahead, or behind when
// negative), as on a node whose clock has drifted. Its heartbeats, job timestamps and retry delays
// use the skewed clock; locks and the live-worker registry's expiry are kept by Redis's own clock.
const skewMs = Number(process.env.SCRIPTORIUM_BENCH_CLOCK_SKEW_MS ?? 0);
if (!Number.isInteger(skewMs)) throw new Error('skewed-clock: SCRIPTORIUM_BENCH_CLOCK_SKEW_MS must be a whole number of milliseconds');

const trueNow = Date.now.bind(Date);
Date.now = () => trueNow() + skewMs;
