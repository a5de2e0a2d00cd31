// A small line plot written as standalone SVG: axes with round ticks, grid, one polyline per
// series (solid or dashed) and a legend. No dependencies.

export interface PlotSeries {
  name: string;
  /** [x, y] in data units, in drawing order. */
  points: readonly (readonly [number, number])[];
  /** Any SVG colour. */
  color: string;
  dashed?: boolean;
}

export interface PlotOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Pixels; default 900 × 500. */
  width?: number;
  height?: number;
}

/** Maps the domain [d0, d1] linearly onto the range [r0, r1] (r0 > r1 flips it, as SVG's y axis needs). */
export function linearScale(domain: readonly [number, number], range: readonly [number, number]): (value: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  if (d0 === d1) throw new Error('linearScale: the domain is a single point');
  return (value) => r0 + ((value - d0) / (d1 - d0)) * (r1 - r0);
}

/**
 * Round tick values covering [min, max]: steps of 1, 2 or 5 × 10^k, the smallest that gives at most
 * `count` intervals; the first tick is at or below min and the last at or above max.
 */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max) || min > max) throw new Error(`niceTicks: bad range [${min}, ${max}]`);
  if (min === max) {
    const pad = min === 0 ? 1 : Math.abs(min) / 2;
    return niceTicks(min - pad, max + pad, count);
  }
  const rough = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough * (1 - 1e-12))!;
  const first = Math.floor(min / step + 1e-9);
  const last = Math.ceil(max / step - 1e-9);
  const ticks: number[] = [];
  // toPrecision drops the binary noise of i × step (0.1 × 3 = 0.30000000000000004).
  for (let i = first; i <= last; i++) ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function formatTick(value: number): string {
  return Math.abs(value) >= 1e4 ? value.toExponential(1) : String(value);
}

const MARGIN = { left: 80, right: 24, top: 48, bottom: 56 };

/** The plot as an SVG document. The y axis starts at 0 unless a value is negative. */
export function linePlotSvg(series: readonly PlotSeries[], options: PlotOptions): string {
  const width = options.width ?? 900;
  const height = options.height ?? 500;
  const points = series.flatMap((s) => s.points);
  if (points.length === 0) throw new Error('linePlotSvg: nothing to plot');
  const xs = points.map(([x]) => x);
  const ys = points.map(([, y]) => y);
  const xTicks = niceTicks(Math.min(...xs), Math.max(...xs), 8);
  const yTicks = niceTicks(Math.min(0, ...ys), Math.max(...ys), 6);
  const left = MARGIN.left;
  const right = width - MARGIN.right;
  const top = MARGIN.top;
  const bottom = height - MARGIN.bottom;
  const x = linearScale([xTicks[0], xTicks[xTicks.length - 1]], [left, right]);
  const y = linearScale([yTicks[0], yTicks[yTicks.length - 1]], [bottom, top]);
  const px = (v: number) => v.toFixed(1);

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="${top / 2 + 6}" text-anchor="middle" font-size="16">${escapeXml(options.title)}</text>`,
  ];
  for (const tick of xTicks) {
    out.push(
      `<line x1="${px(x(tick))}" y1="${top}" x2="${px(x(tick))}" y2="${bottom}" stroke="#e4e4e4"/>`,
      `<text x="${px(x(tick))}" y="${bottom + 18}" text-anchor="middle">${formatTick(tick)}</text>`,
    );
  }
  for (const tick of yTicks) {
    out.push(
      `<line x1="${left}" y1="${px(y(tick))}" x2="${right}" y2="${px(y(tick))}" stroke="#e4e4e4"/>`,
      `<text x="${left - 8}" y="${px(y(tick) + 4)}" text-anchor="end">${formatTick(tick)}</text>`,
    );
  }
  out.push(
    `<line x1="${left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="black"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="black"/>`,
    `<text x="${(left + right) / 2}" y="${height - 14}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(18 ${(top + bottom) / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  out.push(`<rect x="${right - 188}" y="${top + 2}" width="184" height="${series.length * 18 + 8}" fill="white" fill-opacity="0.85"/>`);
  series.forEach((s, i) => {
    const coordinates = s.points.map(([vx, vy]) => `${px(x(vx))},${px(y(vy))}`).join(' ');
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    const legendY = top + 16 + i * 18;
    out.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="1.5"${dash} points="${coordinates}"/>`,
      `<line x1="${right - 180}" y1="${legendY - 4}" x2="${right - 156}" y2="${legendY - 4}" stroke="${s.color}" stroke-width="2"${dash}/>`,
      `<text x="${right - 150}" y="${legendY}">${escapeXml(s.name)}</text>`,
    );
  });
  out.push('</svg>', '');
  return out.join('\n');
}
