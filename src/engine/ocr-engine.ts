// Whole-page OCR on one model: page image -> preprocessing -> vision encoders -> assembled visual
// embeddings -> prompt -> batched greedy decode -> markdown and blocks, with per-stage timings.
// V3 can also read several pages in one pass (one prefill, one decode; docs/model.md §9).
import type { RgbImage } from '../documents/rgb-image.js';
import { resolveBatchSize, type BatchSize, type ResolvedBatch } from './batch-size.js';
import type { DeviceSpec } from './compute-device.js';
import { spanConfidence, tokenTextSpans, type Confidence, type TextSpan } from './confidence.js';
import type { Precision } from './precision.js';
import { ContinuousBatch, type GenerateOptions, type GenerationRequest, type GenerationResult } from './generate.js';
import type { OcrTask, Variant, VisionMode } from '../vocabulary/ocr-vocabulary.js';
import type { PreprocessedPage } from './image-preprocess.js';
import type { EncodedViews, KvCacheDtype, WeightQuantization } from './native-binding.js';
import { NativeModel } from './native-model.js';
import type { OcrBlock, OcrPage, OcrParagraph } from './ocr-postprocess.js';
import { sharedPageCpuThreads, type PageCpuThreads } from './page-cpu-pool.js';
import { buildPromptIds, generationDefaults, promptText } from './prompts.js';
import type { Repetition } from './repetition.js';
import { Tokenizer } from './tokenizer.js';
import { assembleDeepEncoder, assembleDeepEncoderV2, type ViewFeatures } from './vision-assembly.js';

export interface StageTimings {
  preprocess: number;
  encode: number;
  prefill: number;
  decode: number;
  postprocess: number;
}

export interface OcrOptions {
  /** Default: 'markdown' for V1/V2, 'parse' for V3 (`parse-multi` for a single pass over several pages). */
  task?: OcrTask;
  /** Default: gundam, every variant's document mode (V3 single pass always reads pages in base mode). */
  mode?: VisionMode;
  /** Cap on generated tokens per page (the official limits apply as well). */
  maxNewTokens?: number;
  /** Streams text as it is decoded, per page (page index within the call). */
  onText?: (page: number, delta: string) => void;
  /** Stops decoding between steps once aborted: the call then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * The pages' deadline: once aborted, decoding stops between steps and every page keeps the text it
   * has, with finish 'timeout'. A call whose decode has not begun by then rejects with its reason.
   */
  deadline?: AbortSignal;
}

/** Everything the decoder needs for one prompt, before any decoding. */
export interface PreparedPrompt {
  /** BOS, text ids and K image ids per image; no EOS. */
  promptIds: number[];
  /** [K, hidden]: visual rows in the order they fill the image positions. */
  visionEmbeds: Float32Array;
  imagePositions: Int32Array;
  /** Preprocessed views and encoder outputs per page, for the debug dump. */
  pages: { preprocessed: PreprocessedPage; global: EncodedViews; tiles?: EncodedViews }[];
  timings: Pick<StageTimings, 'preprocess' | 'encode'>;
}

export interface PageResult extends OcrPage {
  /** Each block with the confidence of the tokens that produced it, its tag included. */
  blocks: Array<OcrBlock & { confidence: Confidence }>;
  /** Each markdown paragraph with the confidence of the tokens that produced it. */
  paragraphs: Array<OcrParagraph & { confidence: Confidence }>;
  /** The confidence of the page's generated tokens (all of them, a final EOS included; for V3 multi-page output, its page's). */
  confidence: Confidence;
  /** The decoded text with special tokens, before post-processing. */
  rawText: string;
  tokens: { prompt: number; generated: number; image: number };
  finish: GenerationResult['finish'];
  /** A loop in the generated ids (repetition.ts), if any; the pages of a single pass share their generation's. */
  repetition?: Repetition;
  /** Milliseconds; prefill and decode are shared by the pages decoded together. */
  timings: StageTimings;
}

export interface OcrEngineOptions {
  /** Overrides the variant detected from config.json. */
  variant?: Variant;
  /** Engine threads. Default: cpuLimit(), the CPUs this process may use. */
  threads?: number;
  /** Where the model runs (default cpu); on a GPU the decoder and every vision encoder, V2's Qwen2 included, run there. */
  device?: DeviceSpec;
  /** The decoder's KV cache storage, on the CPU or the GPU (default f16; see native-model.ts). */
  kvCache?: KvCacheDtype;
  /** Activation precision of the engine's products, on the CPU or the GPU (default exact); see precision.ts. */
  precision?: Precision;
  /** int8: experts and vocabulary head in int8 (default none). */
  quantize?: WeightQuantization;
  /** Most sequences in one decode step, across all concurrent recognitions; more wait for a place. Default auto (batch-size.ts). */
  maxSequences?: BatchSize;
  /** Where preprocessing and post-processing run. Default: the process-wide sharedPageCpuThreads(). */
  cpuThreads?: PageCpuThreads;
}

export class OcrEngine {
  /** The learned assembly vectors (§5.6), read once: image_newline is absent in V2. */
  private readonly newline: Float32Array | undefined;
  private readonly separator: Float32Array;
  /** Every recognition on this engine decodes here: concurrent calls share their decode steps. */
  private readonly decoding: ContinuousBatch;

  private constructor(
    readonly model: NativeModel,
    readonly tokenizer: Tokenizer,
    /** The continuous batch's size, and why it is that. */
    readonly batch: ResolvedBatch,
    private readonly cpuThreads: PageCpuThreads,
  ) {
    this.newline = model.vision!.kind === 'deepencoderv2' ? undefined : model.specialVector('image_newline');
    this.separator = model.specialVector('view_seperator');
    this.decoding = new ContinuousBatch(model, batch.size);
  }

  static async load(modelDir: string, options: OcrEngineOptions = {}): Promise<OcrEngine> {
    const [model, tokenizer] = await Promise.all([NativeModel.load(modelDir, options), Tokenizer.fromDir(modelDir)]);
    if (!model.vision) throw new Error(`${modelDir}: config.json has no vision_config; this checkpoint cannot read pages`);
    const batch = resolveBatchSize(options.maxSequences ?? 'auto', model);
    return new OcrEngine(model, tokenizer, batch, options.cpuThreads ?? sharedPageCpuThreads());
  }

  get variant(): Variant {
    return this.model.config.variant;
  }

  defaultTask(pages = 1): OcrTask {
    if (this.variant === 'v3') return pages > 1 ? 'parse-multi' : 'parse';
    return 'markdown';
  }

  /**
   * Preprocesses and encodes pages into one prompt; several pages only for V3's `parse-multi`.
   * keepIntermediates keeps the SAM and encoder outputs of every view (debug dumps).
   */
  async prepare(images: readonly RgbImage[], task: OcrTask, mode: VisionMode, keepIntermediates = false): Promise<PreparedPrompt> {
    if (images.length === 0) throw new Error('prepare: no pages');
    if (images.length > 1 && task !== 'parse-multi') throw new Error(`task ${task} reads one page per prompt`);
    const pageMode: VisionMode = task === 'parse-multi' ? 'base' : mode;
    let started = performance.now();
    const preprocessed = await Promise.all(images.map((image) => this.cpuThreads.preprocess(image, this.variant, pageMode)));
    const preprocessMs = performance.now() - started;

    started = performance.now();
    const globalSide = preprocessed[0].globalSide;
    const globals = await this.model.encodeImages(concat(preprocessed.map((p) => p.global)), images.length, globalSide, keepIntermediates);
    const pages: PreparedPrompt['pages'] = [];
    const rows: Float32Array[] = [];
    for (const [i, page] of preprocessed.entries()) {
      const global = sliceView(globals, images.length, i);
      const tiles = page.tiles
        ? await this.model.encodeImages(page.tiles, page.grid[0] * page.grid[1], page.tileSide, keepIntermediates)
        : undefined;
      pages.push({ preprocessed: page, global, tiles });
      rows.push(this.assemble(page, global, tiles));
    }
    const encodeMs = performance.now() - started;

    const counts = rows.map((r) => r.length / this.model.config.decoder.hidden);
    preprocessed.forEach((page, i) => {
      if (counts[i] !== page.imageTokens) {
        throw new Error(`page ${i}: assembled ${counts[i]} visual rows but the prompt expects K = ${page.imageTokens}`);
      }
    });
    const prompt = buildPromptIds(this.tokenizer, this.model.config.bosId, promptText(this.variant, task), counts);
    return {
      promptIds: prompt.ids,
      visionEmbeds: concat(rows),
      imagePositions: Int32Array.from(prompt.imagePositions),
      pages,
      timings: { preprocess: preprocessMs, encode: encodeMs },
    };
  }

  /**
   * OCR of pages, one prompt each. Their decodes join the engine's running batch, beside those of
   * any other call in flight, and leave it one by one as they finish.
   */
  async recognizePages(images: readonly RgbImage[], options: OcrOptions = {}): Promise<PageResult[]> {
    const task = options.task ?? this.defaultTask();
    const mode = options.mode ?? 'gundam';
    const prepared: PreparedPrompt[] = [];
    for (const image of images) prepared.push(await this.prepare([image], task, mode));
    const results = await Promise.all(
      prepared.map((p, i) => this.decoding.generate(this.request(p, task, options, i), stopsOf(options))),
    );
    return Promise.all(
      results.map(async (result, i) => {
        const started = performance.now();
        const rawText = this.tokenizer.decode(result.ids);
        const [page, repetition] = await Promise.all([
          this.cpuThreads.postprocess(rawText, { width: images[i].width, height: images[i].height }, i),
          this.cpuThreads.repetition(result.ids),
        ]);
        return this.pageResult(page, rawText, result, this.tokenSpans(result), repetition, prepared[i], performance.now() - started, 1);
      }),
    );
  }

  /** V3: several pages in one prefill and one decode; the output is split on the page markers. */
  async recognizeSinglePass(images: readonly RgbImage[], options: OcrOptions = {}): Promise<PageResult[]> {
    if (this.variant !== 'v3') throw new Error('single-pass multi-page reading is a V3 (Unlimited-OCR) feature');
    const prepared = await this.prepare(images, 'parse-multi', 'base');
    const result = await this.decoding.generate(this.request(prepared, 'parse-multi', options, 0), stopsOf(options));
    const started = performance.now();
    const rawText = this.tokenizer.decode(result.ids);
    const [pages, repetition] = await Promise.all([
      this.cpuThreads.postprocessMulti(rawText, images.map((image) => ({ width: image.width, height: image.height }))),
      this.cpuThreads.repetition(result.ids),
    ]);
    const postprocess = performance.now() - started;
    const spans = this.tokenSpans(result);
    // A page the model wrote nothing for holds no token: its confidence is 0.
    const unwritten: OcrPage = { markdown: '', blocks: [], paragraphs: [], span: { start: rawText.length, end: rawText.length } };
    return images.map((_, i) => this.pageResult(pages[i] ?? unwritten, i === 0 ? rawText : '', result, spans, repetition, prepared, postprocess, images.length));
  }

  /** Where each generated token's text lies in the decoded output. */
  private tokenSpans(result: GenerationResult): TextSpan[] {
    return tokenTextSpans(result.ids.map((id) => this.tokenizer.tokenBytes(id)));
  }

  private assemble(page: PreprocessedPage, global: EncodedViews, tiles: EncodedViews | undefined): Float32Array {
    const width = this.model.config.decoder.hidden;
    const features = (views: EncodedViews, n: number): ViewFeatures => ({
      values: views.projected,
      views: n,
      side: Math.round(Math.sqrt(views.tokensPerView)),
      width,
    });
    const tileCount = page.grid[0] * page.grid[1];
    if (!this.newline) {
      return assembleDeepEncoderV2(features(global, 1), tiles && features(tiles, tileCount), this.separator);
    }
    return assembleDeepEncoder(
      features(global, 1),
      tiles && { features: features(tiles, tileCount), columns: page.grid[0], rows: page.grid[1] },
      this.newline,
      this.separator,
    );
  }

  private request(prepared: PreparedPrompt, task: OcrTask, options: OcrOptions, page: number): GenerationRequest {
    const defaults = generationDefaults(this.variant, task);
    const budget = Math.min(
      options.maxNewTokens ?? defaults.maxNewTokens,
      defaults.maxNewTokens,
      defaults.maxTotalTokens - prepared.promptIds.length,
    );
    if (budget < 1) {
      throw new Error(`the prompt (${prepared.promptIds.length} tokens) leaves no room in the ${defaults.maxTotalTokens}-token context`);
    }
    const onText = options.onText;
    return {
      promptIds: prepared.promptIds,
      embeds: { rows: prepared.imagePositions, values: prepared.visionEmbeds },
      maxNewTokens: budget,
      noRepeatNgram: defaults.noRepeatNgram,
      stream: onText && { text: this.tokenizer.streamDecoder(), onText: (delta) => onText(page, delta) },
    };
  }

  private pageResult(
    page: OcrPage,
    rawText: string,
    result: GenerationResult,
    tokenSpans: readonly TextSpan[],
    repetition: Repetition | undefined,
    prepared: PreparedPrompt,
    postprocess: number,
    pagesInPrompt: number,
  ): PageResult {
    const confidence = (span: TextSpan) => spanConfidence(result.logprobs, tokenSpans, span);
    return {
      ...page,
      blocks: page.blocks.map((block) => ({ ...block, confidence: confidence(block.span) })),
      paragraphs: page.paragraphs.map((paragraph) => ({ ...paragraph, confidence: confidence(paragraph.span) })),
      confidence: confidence(page.span),
      ...(repetition === undefined ? {} : { repetition }),
      rawText,
      tokens: {
        prompt: result.promptTokens,
        generated: result.ids.length,
        image: prepared.imagePositions.length / pagesInPrompt,
      },
      finish: result.finish,
      timings: {
        preprocess: prepared.timings.preprocess / pagesInPrompt,
        encode: prepared.timings.encode / pagesInPrompt,
        prefill: result.timings.prefillMs / pagesInPrompt,
        decode: result.timings.decodeMs / pagesInPrompt,
        postprocess: postprocess / pagesInPrompt,
      },
    };
  }
}

function stopsOf({ signal, deadline }: OcrOptions): GenerateOptions {
  return { signal, deadline };
}

function concat(parts: readonly Float32Array[]): Float32Array {
  if (parts.length === 1) return parts[0];
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** View `index` of an encode result over `total` views (projected and intermediates). */
function sliceView(views: EncodedViews, total: number, index: number): EncodedViews {
  const cut = (values: Float32Array | undefined) => {
    if (!values) return undefined;
    const size = values.length / total;
    return values.subarray(index * size, (index + 1) * size);
  };
  return {
    projected: cut(views.projected)!,
    tokensPerView: views.tokensPerView,
    sam: cut(views.sam),
    samShape: views.samShape && [1, ...views.samShape.slice(1)],
    encoder: cut(views.encoder),
  };
}
