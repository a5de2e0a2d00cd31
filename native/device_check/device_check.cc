// The device check: everything a bare GPU machine needs to say how the Vulkan backend runs on it,
// with nothing there but the GPU driver (no Node.js, no npm, no checkpoints). Built, with its plans,
// by native/device_check/build.sh; bench/README.md says how to run it on a lent GPU machine.
//
//   device-check [--plans DIR] [--sizes tiny,full] [--device N] [--work DIR] [--threads N]
//   device-check write-checkpoint PLAN.json DIR
//
// For each plan (DIR/<size>-<variant>.json, written by bench/engine/device-check-plans.ts): writes
// its synthetic checkpoint (the seeded values of the TypeScript generator), then
//  - its check: the decoder's prefill logits and greedy ids on the device against the CPU engine's,
//    computed where the plans were written and carried beside them (<plan>.reference.bin), in exact
//    and fast precision, on the portable shader path and on the cooperative-matrix one where the
//    device has it; a mismatch beyond the tolerance makes the exit status 1;
//  - its cases: vision encodes, a prefill and decode steps at several batch sizes, each timed and
//    given as a share of the device's ceilings, measured first in the same run.
// `write-checkpoint` writes a plan's checkpoint alone (the plans' writer compares it with the
// TypeScript generator's).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "common/json.h"
#include "common/vision_dims.h"
#include "device_check/synthetic_checkpoint.h"
#include "probes/gpu_ceilings.h"
#include "vulkan/device.h"
#include "vulkan/gpu_decoder.h"
#include "vulkan/gpu_vision_encoder.h"

using namespace scriptorium;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A reader of one object of a plan: a missing or mistyped field is an error naming it.
class JsonReader {
 public:
  JsonReader(const JsonValue& value, std::string where) : value_(value), where_(std::move(where)) {
    if (value.kind != JsonValue::Kind::Object) fail("must be an object");
  }

  const JsonValue& at(const char* key) const {
    const JsonValue* v = value_.find(key);
    if (v == nullptr) fail(std::string(key) + " is missing");
    return *v;
  }
  bool has(const char* key) const { return value_.find(key) != nullptr; }
  double real(const char* key) const {
    const JsonValue& v = at(key);
    if (v.kind != JsonValue::Kind::Number) fail(std::string(key) + " must be a number");
    return v.number;
  }
  int64_t integer(const char* key) const {
    const JsonValue& v = at(key);
    if (v.kind != JsonValue::Kind::Number || !v.is_integer) fail(std::string(key) + " must be an integer");
    return v.integer;
  }
  bool boolean(const char* key) const {
    const JsonValue& v = at(key);
    if (v.kind != JsonValue::Kind::Bool) fail(std::string(key) + " must be true or false");
    return v.boolean;
  }
  std::string text(const char* key) const {
    const JsonValue& v = at(key);
    if (v.kind != JsonValue::Kind::String) fail(std::string(key) + " must be a string");
    return v.string;
  }
  JsonReader object(const char* key) const { return JsonReader(at(key), where_ + "." + key); }
  std::vector<JsonReader> objects(const char* key) const {
    std::vector<JsonReader> out;
    for (const JsonValue& item : list(key)) out.emplace_back(item, where_ + "." + key + "[]");
    return out;
  }
  std::vector<int64_t> integers(const char* key) const {
    std::vector<int64_t> out;
    for (const JsonValue& item : list(key)) {
      if (item.kind != JsonValue::Kind::Number || !item.is_integer) fail(std::string(key) + " must hold integers");
      out.push_back(item.integer);
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& message) const { throw std::runtime_error(where_ + ": " + message); }

 private:
  const std::vector<JsonValue>& list(const char* key) const {
    const JsonValue& v = at(key);
    if (v.kind != JsonValue::Kind::Array) fail(std::string(key) + " must be an array");
    return v.array;
  }

  const JsonValue& value_;
  std::string where_;
};

// One timed stage of a plan, with the work the plans' writer counted for it (bench/engine/work-counts.ts).
struct Case {
  std::string kind;  // encode, prefill or decode
  std::string name;
  std::vector<std::pair<int64_t, int64_t>> views;  // encode: (side, count) per call
  int64_t tokens = 0, image_tokens = 0;             // prefill: prompt length, image rows from 1
  int64_t batch = 0, prompt = 0, warmup = 0, steps = 0;  // decode
  double flops = 0, bytes = 0;                      // encode, prefill: FLOPs; decode: bytes read by the timed steps
};

struct Check {
  std::vector<int32_t> prompt;
  int steps = 0;  // greedy ids compared, the first from the prefill
  std::string reference;
};

struct Plan {
  std::string name;
  uint32_t seed = 0;
  int runs = 1;  // timed runs of an encode or a prefill after a warm-up run; the best counts
  std::vector<SyntheticTensor> tensors;
  DecoderDims decoder;
  std::unique_ptr<VisionDims> vision;
  std::unique_ptr<Check> check;
  std::vector<Case> cases;
};

Plan read_plan(const std::string& path) {
  const std::string text = read_file(path);
  const JsonValue json = parse_json(text.data(), text.size());
  const JsonReader root(json, path);
  Plan plan;
  plan.name = root.text("name");
  plan.seed = static_cast<uint32_t>(root.integer("seed"));
  plan.runs = static_cast<int>(root.integer("runs"));
  if (plan.runs < 1) root.fail("runs must be at least 1");
  for (const JsonReader& t : root.objects("tensors"))
    plan.tensors.push_back({t.text("name"), t.integers("shape"), t.real("mean"), t.real("std")});
  const JsonReader d = root.object("decoder");
  plan.decoder = decoder_dims_from([&](const char* key) { return d.integer(key); },
                                   [&](const char* key) { return static_cast<float>(d.real(key)); },
                                   [&](const char* key) { return d.boolean(key); });
  plan.decoder.validate();
  if (root.has("vision")) {
    plan.vision = std::make_unique<VisionDims>(vision_dims_from(root.object("vision")));
    plan.vision->validate();
  }
  if (root.has("check")) {
    const JsonReader c = root.object("check");
    plan.check = std::make_unique<Check>();
    for (int64_t id : c.integers("prompt")) plan.check->prompt.push_back(static_cast<int32_t>(id));
    plan.check->steps = static_cast<int>(c.integer("steps"));
    plan.check->reference = path.substr(0, path.rfind('/') + 1) + c.text("reference");
  }
  for (const JsonReader& c : root.objects("cases")) {
    Case one;
    one.kind = c.text("kind");
    one.name = c.text("name");
    if (one.kind == "encode") {
      for (const JsonReader& v : c.objects("views")) one.views.emplace_back(v.integer("side"), v.integer("count"));
      one.flops = c.real("flops");
    } else if (one.kind == "prefill") {
      one.tokens = c.integer("tokens");
      one.image_tokens = c.integer("imageTokens");
      one.flops = c.real("flops");
    } else if (one.kind == "decode") {
      one.batch = c.integer("batch");
      one.prompt = c.integer("prompt");
      one.warmup = c.integer("warmup");
      one.steps = c.integer("steps");
      one.bytes = c.real("bytes");
    } else {
      c.fail("kind must be encode, prefill or decode");
    }
    plan.cases.push_back(std::move(one));
  }
  return plan;
}

// One row of the closing table.
struct Row {
  std::string plan, stage, time, rate, share;
};

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// Ceilings to give each figure as a share of: the read bandwidth for decode, the matrix-product
// path the timed model runs (its fast precision) for encodes and prefills.
struct Ceilings {
  double read_gbps = 0, matmul_gflops = 0;
  std::string matmul_path;
};

// The reference of one precision: the CPU engine's prefill logits, then for each greedy step its id,
// the gap between its best and second-best logit, and its largest |logit| (written by the plans' writer).
struct Reference {
  std::vector<float> logits;
  std::vector<int32_t> ids;
  std::vector<float> gaps, largest;
};

std::vector<Reference> read_references(const Check& check, int64_t vocab, size_t modes) {
  const std::string bytes = read_file(check.reference);
  const size_t per_mode = static_cast<size_t>(vocab) * 4 + static_cast<size_t>(check.steps) * 12;
  if (bytes.size() != modes * per_mode)
    throw std::runtime_error(check.reference + ": " + std::to_string(bytes.size()) + " bytes where this plan's reference holds " +
                             std::to_string(modes * per_mode));
  std::vector<Reference> out(modes);
  for (size_t m = 0; m < modes; ++m) {
    const char* at = bytes.data() + m * per_mode;
    Reference& r = out[m];
    r.logits.resize(static_cast<size_t>(vocab));
    std::memcpy(r.logits.data(), at, r.logits.size() * 4);
    at += r.logits.size() * 4;
    r.ids.resize(check.steps);
    r.gaps.resize(check.steps);
    r.largest.resize(check.steps);
    for (int s = 0; s < check.steps; ++s, at += 12) {
      std::memcpy(&r.ids[s], at, 4);
      std::memcpy(&r.gaps[s], at + 4, 4);
      std::memcpy(&r.largest[s], at + 8, 4);
    }
  }
  return out;
}

// The check's runs, in the order the reference file holds its precisions (exact, then fast), plus
// the fast run on the cooperative-matrix path, compared with the exact reference. Tolerances are
// those of the GPU tests (test/native/gpu-decoder.test.ts, docs/model.md §12): 1e-3 of the largest
// logit in exact precision, 1e-2 in fast.
struct CheckRun {
  const char* name;
  Precision precision;
  const char* path;
  size_t reference;  // index into the reference file's precisions
  double tolerance;
};

constexpr CheckRun kCheckRuns[] = {
    {"exact, portable path", Precision::Exact, vk::kPortablePath, 0, 1e-3},
    {"fast, portable path", Precision::Fast, vk::kPortablePath, 1, 1e-2},
    {"fast, cooperative-matrix path", Precision::Fast, vk::kCooperativeMatrixPath, 0, 1e-2},
};
constexpr size_t kReferencePrecisions = 2;

// Runs the plan's check on the device; returns the failures.
int run_check(vk::Device& device, const Checkpoint& checkpoint, const Plan& plan) {
  const Check& check = *plan.check;
  const int64_t vocab = plan.decoder.vocab;
  const std::vector<Reference> references = read_references(check, vocab, kReferencePrecisions);
  int failures = 0;
  for (const CheckRun& run : kCheckRuns) {
    const std::vector<std::string>& paths = device.info().shader_paths;
    if (std::find(paths.begin(), paths.end(), run.path) == paths.end()) {
      std::printf("skip  %s %s: the device has no %s path\n", plan.name.c_str(), run.name, run.path);
      continue;
    }
    const Reference& want = references[run.reference];
    vk::GpuDecoder decoder(device, checkpoint, plan.decoder, run.path, run.precision);
    vk::GpuKvCache cache(device, plan.decoder, KvCacheDtype::F16);
    std::vector<ForwardEntry> batch(1);
    batch[0].ids = check.prompt;
    std::vector<float> logits(static_cast<size_t>(vocab));
    int32_t best = 0;
    float logprob = 0;
    decoder.forward(batch, {&cache}, logits.data(), &best, &logprob);
    double largest = 0, diff = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      largest = std::fmax(largest, std::fabs(want.logits[v]));
      diff = std::isfinite(logits[v]) ? std::fmax(diff, std::fabs(logits[v] - want.logits[v])) : INFINITY;
    }
    const double error = diff / std::fmax(largest, 1e-30);
    // Greedy ids, each fed back, compared until the reference meets a near tie (its best two
    // logits closer than the tolerance: either id may win, and the runs may part there).
    int same = 0, compared = 0;
    bool parted = false, tie = false;
    for (int s = 0; s < check.steps; ++s) {
      tie = want.gaps[s] <= run.tolerance * want.largest[s];
      if (tie) break;
      ++compared;
      if (best != want.ids[s]) {
        parted = true;
        break;
      }
      ++same;
      batch[0].ids = {best};
      batch[0].want_logits = false;
      decoder.forward(batch, {&cache}, nullptr, &best, &logprob);
    }
    const bool ok = error <= run.tolerance && !parted;
    failures += ok ? 0 : 1;
    std::printf("%s  %s %s: prefill logits within %.2e of the largest (tolerance %.0e); greedy ids %d of %d the same%s\n",
                ok ? "ok  " : "FAIL", plan.name.c_str(), run.name, error, run.tolerance, same, compared,
                tie ? " (then a near tie in the reference)" : "");
  }
  return failures;
}

// Times the plan's cases in fast precision on the device's own path; appends the table's rows.
void run_cases(vk::Device& device, const Checkpoint& checkpoint, const Plan& plan, const Ceilings& ceilings, std::vector<Row>& rows) {
  const std::string path = vk::model_matmul_path(device.info(), true);
  auto started = Clock::now();
  vk::GpuDecoder decoder(device, checkpoint, plan.decoder, path, Precision::Fast);
  std::unique_ptr<vk::GpuVisionEncoder> vision;
  const bool encodes = std::any_of(plan.cases.begin(), plan.cases.end(), [](const Case& c) { return c.kind == "encode"; });
  if (encodes) {
    if (!plan.vision) throw std::runtime_error(plan.name + ": its encode cases need the plan's vision dims");
    vision = std::make_unique<vk::GpuVisionEncoder>(device, checkpoint, *plan.vision, path, Precision::Fast);
  }
  const uint64_t weight_bytes = decoder.weight_bytes() + (vision ? vision->weight_bytes() : 0);
  rows.push_back({plan.name, format("upload %.2f GB of weights", weight_bytes / 1e9), format("%.0f ms", ms_since(started)), "", ""});

  std::mt19937 draw(plan.seed);
  std::uniform_real_distribution<float> unit(-1, 1);
  const auto tokens_of = [&](int64_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int32_t& id : ids) id = static_cast<int32_t>(draw() % static_cast<uint32_t>(plan.decoder.vocab));
    return ids;
  };
  const auto compute_row = [&](const Case& c, double ms) {
    const double gflops = c.flops / ms / 1e6;
    rows.push_back({plan.name, c.name, format("%.1f ms", ms), format("%.1f GFLOP/s", gflops),
                    format("%.0f%% of ", 100 * gflops / ceilings.matmul_gflops) + ceilings.matmul_path});
  };
  std::vector<std::pair<int64_t, double>> decode_rates;  // (batch, tokens/s)
  for (const Case& c : plan.cases) {
    if (c.kind == "encode") {
      std::vector<std::vector<float>> pixels;
      for (const auto& [side, count] : c.views) {
        pixels.emplace_back(static_cast<size_t>(count * 3 * side * side));
        for (float& p : pixels.back()) p = unit(draw);
      }
      double best = INFINITY;
      for (int run = 0; run <= plan.runs; ++run) {
        const auto start = Clock::now();
        for (size_t v = 0; v < c.views.size(); ++v) vision->encode(pixels[v].data(), c.views[v].second, c.views[v].first, false);
        if (run > 0) best = std::min(best, ms_since(start));
      }
      compute_row(c, best);
    } else if (c.kind == "prefill") {
      double best = INFINITY;
      for (int run = 0; run <= plan.runs; ++run) {
        vk::GpuKvCache cache(device, plan.decoder, KvCacheDtype::F16);
        std::vector<ForwardEntry> batch(1);
        batch[0].ids = tokens_of(c.tokens);
        batch[0].want_logits = false;
        for (int64_t row = 1; row <= c.image_tokens; ++row) batch[0].embed_rows.push_back(static_cast<int32_t>(row));
        batch[0].embeds.resize(static_cast<size_t>(c.image_tokens * plan.decoder.hidden));
        for (float& e : batch[0].embeds) e = 0.05f * unit(draw);
        int32_t best_id = 0;
        float logprob = 0;
        const auto start = Clock::now();
        decoder.forward(batch, {&cache}, nullptr, &best_id, &logprob);
        if (run > 0) best = std::min(best, ms_since(start));
      }
      compute_row(c, best);
    } else {
      std::vector<std::unique_ptr<vk::GpuKvCache>> caches;
      std::vector<vk::GpuKvCache*> raw;
      std::vector<int32_t> best(static_cast<size_t>(c.batch));
      std::vector<float> logprob(static_cast<size_t>(c.batch));
      for (int64_t b = 0; b < c.batch; ++b) {  // each sequence's prompt alone, as pages join one by one
        caches.push_back(std::make_unique<vk::GpuKvCache>(device, plan.decoder, KvCacheDtype::F16));
        raw.push_back(caches.back().get());
        std::vector<ForwardEntry> one(1);
        one[0].ids = tokens_of(c.prompt);
        one[0].want_logits = false;
        decoder.forward(one, {raw.back()}, nullptr, &best[b], &logprob[b]);
      }
      std::vector<ForwardEntry> batch(static_cast<size_t>(c.batch));
      for (ForwardEntry& entry : batch) entry.want_logits = false;
      Clock::time_point start;
      for (int64_t step = 0; step < c.warmup + c.steps; ++step) {
        if (step == c.warmup) start = Clock::now();
        for (int64_t b = 0; b < c.batch; ++b) batch[b].ids = {best[b]};
        decoder.forward(batch, raw, nullptr, best.data(), logprob.data());
      }
      const double step_ms = ms_since(start) / c.steps;
      const double gbps = c.bytes / c.steps / step_ms / 1e6;
      const double tokens_per_s = c.batch * 1000 / step_ms;
      decode_rates.emplace_back(c.batch, tokens_per_s);
      rows.push_back({plan.name, c.name, format("%.2f ms a step", step_ms), format("%.0f tokens/s", tokens_per_s) + format(", %.1f GB/s", gbps),
                      format("%.0f%% of read", 100 * gbps / ceilings.read_gbps)});
    }
  }
  if (decode_rates.size() > 1 && decode_rates.front().first == 1) {
    const auto& [batch, rate] = *std::max_element(decode_rates.begin(), decode_rates.end());
    rows.push_back({plan.name, "decode batch " + std::to_string(batch) + " against batch 1", "", format("%.1fx the tokens/s", rate / decode_rates.front().second), ""});
  }
}

struct Options {
  std::string plans = ".", work;
  std::vector<std::string> sizes = {"tiny", "full"};
  int device = -2;  // -2: the first discrete GPU, else device 0
  int threads = 0;
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Options read_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--plans") o.plans = value;
    else if (arg == "--work") o.work = value;
    else if (arg == "--sizes") o.sizes = split(value);
    else if (arg == "--device") o.device = std::stoi(value);
    else if (arg == "--threads") o.threads = std::stoi(value);
    else throw std::runtime_error("unknown option " + arg);
  }
  for (const std::string& size : o.sizes)
    if (size != "tiny" && size != "full") throw std::runtime_error("--sizes takes tiny and full, not " + size);
  if (o.work.empty()) throw std::runtime_error("--work DIR is needed: where the synthetic checkpoints are written");
  if (o.threads <= 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

void make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
}

int run(const Options& options) {
  auto instance = std::make_shared<vk::Instance>();
  const std::vector<vk::DeviceInfo> devices = vk::list_devices(*instance);
  for (const vk::DeviceInfo& d : devices) {
    std::printf("gpu:%d %s (%s, Vulkan %s): %.1f GiB device-local, budget %.1f GiB, binding limit %.0f MiB, subgroup %u, shared %u KiB, paths %s",
                d.index, d.name.c_str(), d.type.c_str(), d.api_version.c_str(), d.device_local_bytes / 1073741824.0,
                d.memory_budget_bytes / 1073741824.0, d.max_binding_bytes / 1048576.0, d.subgroup_size, d.max_shared_bytes / 1024,
                d.shader_paths.empty() ? "none" : "");
    for (size_t i = 0; i < d.shader_paths.size(); ++i) std::printf("%s%s", i ? ", " : "", d.shader_paths[i].c_str());
    std::printf("\n");
  }
  int index = options.device;
  if (index == -2) index = std::max(0, vk::pick_auto_device(devices));
  if (devices.empty()) throw std::runtime_error("the Vulkan loader found no device");
  vk::Device device(instance, index);
  std::printf("checking gpu:%d, %s\n", index, device.info().name.c_str());

  const bool full = std::find(options.sizes.begin(), options.sizes.end(), "full") != options.sizes.end();
  GpuCeilingOptions probe;
  probe.device = index;
  if (!full) {  // tiny runs (CI on a CPU's software Vulkan): the probes' small sizes
    probe.buffer_bytes = int64_t{64} << 20;
    probe.matmul_side = 256;
    probe.passes = 2;
    probe.seconds = 0.1;
  }
  const GpuCeilings measured = measure_gpu_ceilings(probe);
  Ceilings ceilings;
  ceilings.read_gbps = measured.read_gbps;
  ceilings.matmul_path = vk::model_matmul_path(device.info(), true);
  std::printf("ceilings: read %.1f GB/s (best of %d passes over %.0f MiB)", measured.read_gbps, probe.passes, measured.buffer_bytes / 1048576.0);
  for (const GpuMatmulCeiling& m : measured.matmul) {
    std::printf("; %s products %.1f GFLOP/s", m.path.c_str(), m.gflops);
    if (m.path == ceilings.matmul_path) ceilings.matmul_gflops = m.gflops;
  }
  std::printf(" (%d-sided)\n", probe.matmul_side);

  make_dir(options.work);
  int failures = 0;
  std::vector<Row> rows;
  for (const std::string& size : options.sizes) {
    for (const char* variant : {"v1", "v3"}) {
      const std::string name = size + "-" + variant;
      try {
        const Plan plan = read_plan(options.plans + "/" + name + ".json");
        const std::string dir = options.work + "/" + name;
        make_dir(dir);
        auto started = Clock::now();
        write_synthetic_checkpoint(dir, plan.tensors, plan.seed, options.threads);
        const Checkpoint checkpoint(dir);
        rows.push_back({name, format("write the synthetic checkpoint, %.2f GB", checkpoint.total_bytes() / 1e9), format("%.0f ms", ms_since(started)), "", ""});
        if (plan.check) failures += run_check(device, checkpoint, plan);
        if (!plan.cases.empty()) run_cases(device, checkpoint, plan, ceilings, rows);
        std::remove((dir + "/model.safetensors").c_str());
      } catch (const std::exception& e) {
        std::printf("FAIL  %s: %s\n", name.c_str(), e.what());
        ++failures;
      }
    }
  }
  std::printf("\n| plan | stage | time | rate | share of the ceiling |\n| --- | --- | --- | --- | --- |\n");
  for (const Row& r : rows)
    std::printf("| %s | %s | %s | %s | %s |\n", r.plan.c_str(), r.stage.c_str(), r.time.c_str(), r.rate.c_str(), r.share.c_str());
  std::printf("\n%s\n", failures == 0 ? "device check passed" : (std::to_string(failures) + " failed").c_str());
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 2 && std::strcmp(argv[1], "write-checkpoint") == 0) {
      if (argc != 4) throw std::runtime_error("usage: device-check write-checkpoint PLAN.json DIR");
      const Plan plan = read_plan(argv[2]);
      make_dir(argv[3]);
      write_synthetic_checkpoint(argv[3], plan.tensors, plan.seed, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      return 0;
    }
    return run(read_options(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "device-check: %s\n", e.what());
    return 2;
  }
}
