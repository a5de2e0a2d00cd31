// The decoder of one checkpoint on two architectures: run on one (x86-64) it writes what it computed,
// run on the other (arm64, under emulation) it computes the same and compares. Driven by
// native/test/run-decoder-across-arch.sh, which writes a tiny synthetic checkpoint and its decoder
// dimensions first.
//
//   decoder_across_arch CHECKPOINT_DIR DIMS_JSON write FILE
//   decoder_across_arch CHECKPOINT_DIR DIMS_JSON compare FILE
//
// For each mode (exact, fast, int8 experts and head in exact and in fast precision): a seeded prompt of
// kPromptTokens ids, then kSteps greedy steps, each step's full logits kept. `compare` feeds the
// written run's ids (teacher forcing, so one near tie cannot send the two runs down different
// paths) and fails when a step's largest logit difference exceeds the mode's tolerance, in units of
// that step's largest written logit. The kernel sets differ between the runs (avx512bf16 against
// neonbf16 or neon), so the tolerances are those of two runs each within its own bound of float64.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/thread_pool.h"
#include "cpu/cpu_decoder.h"

using namespace scriptorium;

namespace {

constexpr int kPromptTokens = 24;
constexpr int kSteps = 8;

struct Mode {
  const char* name;
  Precision precision;
  WeightQuantization quantization;
  // Largest |logit difference| between the two runs over the largest |logit|. Exact: each run is
  // about 6e-6 from float64 on these checkpoints (docs/model.md), so 1e-4 leaves room for the
  // steps; fast: each is within 1e-2 of float64 on the prefill and drifts further with the steps;
  // int8: the same int8 weights, activations kept in F32 (arm64 without dot products) or rounded to
  // 16 bits (x86 VNNI, arm64 SDOT); int8 fast: fast's bound, the experts' activations in 8 bits on both.
  double tolerance;
};

constexpr Mode kModes[] = {
    {"exact", Precision::Exact, WeightQuantization::None, 1e-4},
    {"fast", Precision::Fast, WeightQuantization::None, 5e-2},
    {"int8", Precision::Exact, WeightQuantization::Int8, 1e-3},
    {"int8 fast", Precision::Fast, WeightQuantization::Int8, 5e-2},
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

DecoderDims read_dims(const std::string& path) {
  const std::string text = read_file(path);
  const JsonValue json = parse_json(text.data(), text.size());
  const auto number = [&](const char* key) {
    const JsonValue* v = json.find(key);
    if (v == nullptr || v->kind != JsonValue::Kind::Number) throw std::runtime_error(path + ": " + key + " must be a number");
    return v->number;
  };
  const auto integer = [&](const char* key) { return static_cast<int64_t>(number(key)); };
  const auto real = [&](const char* key) { return static_cast<float>(number(key)); };
  const auto boolean = [&](const char* key) {
    const JsonValue* v = json.find(key);
    return v != nullptr && v->kind == JsonValue::Kind::Bool && v->boolean;
  };
  const DecoderDims d = decoder_dims_from(integer, real, boolean);
  d.validate();
  return d;
}

// One mode's run: the ids fed after the prompt (kSteps) and the logits of the prompt's last token
// and of each step ((kSteps + 1) x vocab).
struct Run {
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

// The prompt, then kSteps steps, each feeding `forced[step]` when given, else the last argmax.
Run run_mode(const Checkpoint& checkpoint, const DecoderDims& dims, ThreadPool& pool, const Mode& mode,
             const std::vector<int32_t>* forced) {
  Decoder decoder(checkpoint, dims, pool, mode.precision, mode.quantization);
  KvCache cache(dims, KvCacheDtype::F32);
  std::mt19937 draw(20261207);
  std::vector<ForwardEntry> batch(1);
  batch[0].cache = &cache;
  for (int i = 0; i < kPromptTokens; ++i) batch[0].ids.push_back(static_cast<int32_t>(draw() % static_cast<uint32_t>(dims.vocab)));
  Run run;
  run.logits.resize(static_cast<size_t>((kSteps + 1) * dims.vocab));
  for (int step = 0; step <= kSteps; ++step) {
    int32_t best = 0;
    float logprob = 0;
    decoder.forward(batch, run.logits.data() + step * dims.vocab, &best, &logprob);
    if (step == kSteps) break;
    const int32_t next = forced != nullptr ? (*forced)[step] : best;
    run.ids.push_back(next);
    batch[0].ids = {next};
  }
  return run;
}

void write_runs(const std::string& path, const std::vector<Run>& runs) {
  std::ofstream out(path, std::ios::binary);
  for (const Run& run : runs) {
    out.write(reinterpret_cast<const char*>(run.ids.data()), static_cast<std::streamsize>(run.ids.size() * sizeof(int32_t)));
    out.write(reinterpret_cast<const char*>(run.logits.data()), static_cast<std::streamsize>(run.logits.size() * sizeof(float)));
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<Run> read_runs(const std::string& path, int64_t vocab) {
  const std::string bytes = read_file(path);
  const size_t ids = kSteps * sizeof(int32_t), logits = static_cast<size_t>((kSteps + 1) * vocab) * sizeof(float);
  const size_t modes = sizeof(kModes) / sizeof(kModes[0]);
  if (bytes.size() != modes * (ids + logits)) throw std::runtime_error(path + " is not a written run of this checkpoint (wrong size)");
  std::vector<Run> runs(modes);
  for (size_t m = 0; m < modes; ++m) {
    const char* at = bytes.data() + m * (ids + logits);
    runs[m].ids.resize(kSteps);
    runs[m].logits.resize(static_cast<size_t>((kSteps + 1) * vocab));
    std::memcpy(runs[m].ids.data(), at, ids);
    std::memcpy(runs[m].logits.data(), at + ids, logits);
  }
  return runs;
}

// The worst step's largest |difference| over its largest |written logit|.
double worst_step_error(const Run& got, const Run& want, int64_t vocab) {
  double worst = 0;
  for (int step = 0; step <= kSteps; ++step) {
    double largest = 0, diff = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      const double w = want.logits[step * vocab + v], g = got.logits[step * vocab + v];
      largest = std::fmax(largest, std::fabs(w));
      diff = std::isfinite(g) ? std::fmax(diff, std::fabs(g - w)) : INFINITY;
    }
    worst = std::fmax(worst, diff / std::fmax(largest, 1e-30));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 || (std::strcmp(argv[3], "write") != 0 && std::strcmp(argv[3], "compare") != 0)) {
    std::fprintf(stderr, "usage: %s CHECKPOINT_DIR DIMS_JSON write|compare FILE\n", argv[0]);
    return 2;
  }
  try {
    const Checkpoint checkpoint(argv[1]);
    const DecoderDims dims = read_dims(argv[2]);
    ThreadPool pool(2);
    const bool write = std::strcmp(argv[3], "write") == 0;
    std::printf("kernels: %s, %s\n", active_kernels().name, active_quant_kernels().name);
    if (write) {
      std::vector<Run> runs;
      for (const Mode& mode : kModes) runs.push_back(run_mode(checkpoint, dims, pool, mode, nullptr));
      write_runs(argv[4], runs);
      std::printf("wrote %d steps of %s logits for each mode\n", kSteps + 1, std::to_string(dims.vocab).c_str());
      return 0;
    }
    const std::vector<Run> want = read_runs(argv[4], dims.vocab);
    int failed = 0;
    for (size_t m = 0; m < want.size(); ++m) {
      const Mode& mode = kModes[m];
      const Run got = run_mode(checkpoint, dims, pool, mode, &want[m].ids);
      const Run own = run_mode(checkpoint, dims, pool, mode, nullptr);
      int same_ids = 0;
      for (int step = 0; step < kSteps; ++step) same_ids += own.ids[step] == want[m].ids[step];
      const double error = worst_step_error(got, want[m], dims.vocab);
      const bool ok = error <= mode.tolerance;
      failed += ok ? 0 : 1;
      std::printf("%s  %s: largest logit difference %.2e of the largest logit (tolerance %.0e); its own greedy ids: %d of %d the same\n",
                  ok ? "ok  " : "FAIL", mode.name, error, mode.tolerance, same_ids, kSteps);
    }
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decoder_across_arch: %s\n", e.what());
    return 1;
  }
}
