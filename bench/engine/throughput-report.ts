// The throughput part's figures from its recorded steps and encodes: pages per hour over the whole
// run and while the batch was full, the decode step time with nothing joining, what joining pages
// (their encodes and prefills, which share the engine with the decode steps) cost the batch, the step's roofline from this
// run's ceilings, peak memory and the cost of a million pages at a price per core-hour.
import type { ThroughputAnswer, ThroughputStep } from './measure-jobs.js';
import type { MachineCeilings } from './native-probes.js';
import { median } from './stats.js';
import { decodeWeightBytes, KV_ELEMENT_BYTES, kvReadBytes, moeLayerCount, prefillFlops } from './work-counts.js';

export interface Roofline {
  /** Bytes one full-batch decode step reads (weights with the distinct experts measured, KV caches at the mean length). */
  bytesPerStep: number;
  /** BF16-weight and activation FLOPs of that step. */
  flopsPerStep: number;
  /** The step's time at the read bandwidth, and at the GEMM ceilings; the larger bounds it. */
  bandwidthMs: number;
  computeMs: number;
  /** Bound over the measured decode step time. */
  share: number;
}

export interface ThroughputSummary {
  caseId: string;
  variant: string;
  quantize: string;
  precision: string;
  batch: number;
  pages: number;
  tokens: number;
  promptTokens: number;
  seconds: number;
  pagesPerHour: number;
  tokensPerSecond: number;
  /** While every place of the batch was taken; undefined when no step had every place decoding with no page joining. */
  full?: {
    seconds: number;
    pagesPerHour: number;
    tokensPerSecond: number;
    /** Median engine time of a decode step with every place decoding and no prompt tokens. */
    decodeStepMs: number;
    /** Share of the full batch's decode rate lost to joining pages: 1 − measured ÷ (batch ÷ decodeStepMs). */
    joinCost: number;
    /** How much slower the pages already in the batch decode during the steps that overlap an encode or carry a prefill. */
    joinSlowdown: number;
    /**
     * What each page that joined in the window cost it: the window's time beyond its tokens at the
     * full rate, over the encodes that ended in it; undefined when none ended there.
     */
    joinMsPerPage?: number;
    /**
     * The share of the engine a steady stream of such pages needs for joining, so that every place
     * stays taken: a page's join time against it plus the page's tokens at the full rate. The join
     * slowdown cannot stay below it without places left empty.
     */
    streamJoinShare?: number;
    distinctExperts: number;
    roofline: Roofline;
  };
  peakRssBytes: number;
  /** US dollars per million pages at the given price per core-hour, from the full-batch rate (else the whole run's). */
  usdPerMillionPages?: number;
}

const overlaps = (step: ThroughputStep, [from, to]: readonly [number, number]) => step.at < to && from < step.at + step.ms;

export function summariseThroughput(answer: ThroughputAnswer, ceilings: MachineCeilings, coreHourUsd?: number): ThroughputSummary {
  const { batch, tokens, promptTokens, steps } = answer;
  const seconds = answer.wallMs / 1000;
  const summary: ThroughputSummary = {
    caseId: answer.caseId,
    variant: answer.variant,
    quantize: answer.quantize,
    precision: answer.precision,
    batch,
    pages: answer.pages,
    tokens,
    promptTokens,
    seconds,
    pagesPerHour: (answer.pages * 3600) / seconds,
    tokensPerSecond: (answer.pages * tokens) / seconds,
    peakRssBytes: answer.peakRssBytes,
  };
  const isFull = (step: ThroughputStep) => step.places === batch;
  const first = steps.findIndex(isFull);
  const last = steps.length - 1 - [...steps].reverse().findIndex(isFull);
  const window = first < 0 ? [] : steps.slice(first, last + 1);
  const joining = (step: ThroughputStep) => step.prefillTokens > 0 || answer.encodes.some((encode) => overlaps(step, encode));
  const plain = window.filter((step) => step.decodeRows === batch && !joining(step));
  // Without a full step free of joins (a run too short to have one) there is no decode rate to compare with.
  if (plain.length > 0) {
    const windowMs = steps[last].at + steps[last].ms - steps[first].at;
    const generated = window.reduce((sum, step) => sum + step.generated, 0);
    const decodeStepMs = median(plain.map((step) => step.computeMs));
    const fullRate = batch / decodeStepMs;
    const slowed = window.filter(joining);
    const slowedRate = slowed.length === 0 ? fullRate : slowed.reduce((sum, s) => sum + s.decodeRows, 0) / slowed.reduce((sum, s) => sum + s.ms, 0);
    const distinctExperts = median(plain.map((step) => step.expertPasses)) / moeLayerCount(answer.decoder);
    const tokensPerSecond = (generated / windowMs) * 1000;
    // A page is taken (and its encode queued) long before it joins; its encode ends just before it does.
    const windowStart = steps[first].at;
    const joined = answer.encodes.filter(([, to]) => to > windowStart && to <= windowStart + windowMs).length;
    // The window's time beyond its tokens at the full rate: what joining pages took from it.
    const joinMs = windowMs - generated / fullRate;
    const joinMsPerPage = joined === 0 ? undefined : joinMs / joined;
    const decodeMsPerPage = tokens / fullRate;
    summary.full = {
      seconds: windowMs / 1000,
      pagesPerHour: (tokensPerSecond * 3600) / tokens,
      tokensPerSecond,
      decodeStepMs,
      joinCost: joinMs / windowMs,
      joinSlowdown: 1 - slowedRate / fullRate,
      ...(joinMsPerPage === undefined ? {} : { joinMsPerPage, streamJoinShare: joinMsPerPage / (joinMsPerPage + decodeMsPerPage) }),
      distinctExperts,
      roofline: decodeRoofline(answer, distinctExperts, decodeStepMs, ceilings),
    };
  }
  if (coreHourUsd !== undefined) {
    const pagesPerHour = summary.full?.pagesPerHour ?? summary.pagesPerHour;
    summary.usdPerMillionPages = (1e6 / pagesPerHour) * ceilings.threads * coreHourUsd;
  }
  return summary;
}

/**
 * A full-batch decode step's roofline, every sequence at the run's mean length (prompt plus half
 * the generated tokens): its bytes at the read ceiling against its FLOPs at the GEMM ceilings of the
 * run's precision (the BF16 ceiling for int8 experts too: the probe measures no int8 peak).
 */
export function decodeRoofline(answer: ThroughputAnswer, distinctExperts: number, decodeStepMs: number, ceilings: MachineCeilings): Roofline {
  const d = answer.decoder;
  const meanLength = answer.promptTokens + answer.tokens / 2;
  const weights = decodeWeightBytes(d, answer.batch, { quantize: answer.quantize, distinctExperts });
  const caches = answer.batch * kvReadBytes(d, answer.promptTokens, meanLength, KV_ELEMENT_BYTES[answer.kvCache]);
  const bytesPerStep = weights + caches;
  const flops = prefillFlops(d, 1, meanLength);
  const gemmGflops = answer.precision === 'fast' ? ceilings.gemmBf16FastGflops : ceilings.gemmBf16Gflops;
  const bandwidthMs = bytesPerStep / (ceilings.readGBps * 1e6);
  const computeMs = answer.batch * (flops.bf16 / (gemmGflops * 1e6) + flops.f32 / (ceilings.gemmF32Gflops * 1e6));
  return {
    bytesPerStep,
    flopsPerStep: answer.batch * (flops.bf16 + flops.f32),
    bandwidthMs,
    computeMs,
    share: Math.max(bandwidthMs, computeMs) / decodeStepMs,
  };
}

const fixed = (value: number, digits: number, width: number) => value.toFixed(digits).padStart(width);
const percent = (share: number, width: number) => `${(share * 100).toFixed(0)}%`.padStart(width);

/** One table per case, quantization and precision, its rows by batch size, ratios to the first row's pages/hour. */
export function throughputText(rows: readonly ThroughputSummary[], ceilings: MachineCeilings): string {
  const groups = new Map<string, ThroughputSummary[]>();
  for (const row of rows) {
    const key = `${row.caseId}, ${row.precision} precision, ${row.quantize === 'int8' ? 'int8' : 'BF16'} experts, ${row.tokens} tokens per page`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  const gemm = rows[0]?.precision === 'fast' ? `gemm_bf16_fast ${ceilings.gemmBf16FastGflops.toFixed(0)}` : `gemm_bf16 ${ceilings.gemmBf16Gflops.toFixed(0)}`;
  const lines = [`Throughput on ${ceilings.threads} threads (read ${ceilings.readGBps.toFixed(1)} GB/s, ${gemm} GFLOP/s in this run)`];
  const withCost = rows.some((row) => row.usdPerMillionPages !== undefined);
  for (const [key, group] of groups) {
    lines.push(
      '',
      key,
      `batch  pages  pages/h  × first  full: pages/h  tok/s  step ms  experts  roofline  join cost  join slowdown  join s/page  stream needs  peak RSS${withCost ? '  $/M pages' : ''}`,
    );
    for (const row of group) {
      const full = row.full;
      const cells = [
        String(row.batch).padStart(5),
        String(row.pages).padStart(5),
        fixed(row.pagesPerHour, 0, 7),
        fixed(row.pagesPerHour / group[0].pagesPerHour, 2, 7),
        full ? fixed(full.pagesPerHour, 0, 13) : '—'.padStart(13),
        full ? fixed(full.tokensPerSecond, 1, 6) : fixed(row.tokensPerSecond, 1, 6),
        full ? fixed(full.decodeStepMs, 1, 7) : '—'.padStart(7),
        full ? fixed(full.distinctExperts, 1, 7) : '—'.padStart(7),
        full ? `${percent(full.roofline.share, 4)} ${full.roofline.bandwidthMs >= full.roofline.computeMs ? 'mem' : 'cpu'}` : '—'.padStart(8),
        full ? percent(full.joinCost, 9) : '—'.padStart(9),
        full ? percent(full.joinSlowdown, 13) : '—'.padStart(13),
        full?.joinMsPerPage === undefined ? '—'.padStart(11) : fixed(full.joinMsPerPage / 1000, 2, 11),
        full?.streamJoinShare === undefined ? '—'.padStart(12) : percent(full.streamJoinShare, 12),
        `${(row.peakRssBytes / 2 ** 30).toFixed(2)} GiB`.padStart(8),
      ];
      if (withCost) cells.push(row.usdPerMillionPages === undefined ? '' : fixed(row.usdPerMillionPages, 0, 9));
      lines.push(cells.join('  '));
    }
  }
  lines.push(
    '',
    'full: while every place of the batch was taken. roofline: the decode step\'s bound (mem: bytes at the read',
    'ceiling; cpu: FLOPs at the GEMM ceiling) over its measured time. join cost: decode rate lost to joining',
    'pages while full; join slowdown: how much slower the batch decodes in steps that overlap an encode or',
    'carry a prefill. join s/page: engine time each page that joined while full cost the batch;',
    'stream needs: the share of the engine that joining takes when pages keep coming and every place stays',
    'taken (a page\'s join time against it plus its tokens at the full rate).',
  );
  return lines.join('\n');
}
