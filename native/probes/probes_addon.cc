// N-API face of the benchmark probes, an addon of its own (scriptorium_probes.node) so that the
// production engine carries no measuring code: measureCeilings() runs the machine-ceiling probes of
// ceilings.h, measureExpertProducts() the expert product speeds of expert_products.h, each on a pool
// of its own, off the event loop, and resolves a Promise; measureGpuCeilings() those of gpu_ceilings.h on a
// Vulkan device, in builds with the Vulkan backend.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_pool.h"
#include "probes/ceilings.h"
#include "probes/expert_products.h"
#ifdef SCRIPTORIUM_PROBES_VULKAN
#include "probes/gpu_ceilings.h"
#endif

namespace scriptorium {
namespace {

// Measures the machine's ceilings on a pool of its own, off the event loop.
class CeilingsWorker : public Napi::AsyncWorker {
 public:
  CeilingsWorker(Napi::Env env, int threads, CeilingOptions options)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), threads_(threads), options_(options) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      ThreadPool pool(threads_);
      ceilings_ = measure_ceilings(pool, options_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object out = Napi::Object::New(env);
    out.Set("kernels", ceilings_.kernels);
    out.Set("threads", ceilings_.threads);
    out.Set("readSimd", ceilings_.read_simd);
    out.Set("readGBps", ceilings_.read_gbps);
    out.Set("gemmF32Gflops", ceilings_.gemm_f32_gflops);
    out.Set("gemmBf16Gflops", ceilings_.gemm_bf16_gflops);
    out.Set("gemmBf16FastGflops", ceilings_.gemm_bf16_fast_gflops);
    out.Set("peakF32Gflops", ceilings_.peak_f32_gflops);
    out.Set("peakBf16Gflops", ceilings_.peak_bf16_gflops);
    out.Set("clockGhz", ceilings_.clock_ghz);
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  int threads_;
  CeilingOptions options_;
  Ceilings ceilings_;
};

// measureCeilings({threads?, bufferBytes?, passes?, seconds?}) -> Promise<ceilings> (see ceilings.h;
// threads defaults to the hardware's).
Napi::Value MeasureCeilings(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() > 0 && !info[0].IsUndefined() && !info[0].IsObject())
    throw Napi::TypeError::New(env, "measureCeilings(options?: {threads?, bufferBytes?, passes?, seconds?})");
  const Napi::Object o = info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(env);
  auto number = [&](const char* key, double fallback) {
    const Napi::Value v = o.Get(key);
    if (v.IsUndefined()) return fallback;
    if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string("measureCeilings: ") + key + " must be a number");
    return v.As<Napi::Number>().DoubleValue();
  };
  auto integer = [&](const char* key, double fallback, double min, double max) {
    const double v = number(key, fallback);
    if (v < min || v > max || v != std::floor(v))
      throw Napi::RangeError::New(env, std::string("measureCeilings: ") + key + " must be an integer between " +
                                           std::to_string(static_cast<int64_t>(min)) + " and " +
                                           std::to_string(static_cast<int64_t>(max)));
    return v;
  };
  CeilingOptions options;
  const int threads = static_cast<int>(integer("threads", std::max(1u, std::thread::hardware_concurrency()), 1, 1024));
  options.buffer_bytes = static_cast<int64_t>(integer("bufferBytes", static_cast<double>(options.buffer_bytes), 1, 1e12));
  options.passes = static_cast<int>(integer("passes", options.passes, 1, 1000));
  options.seconds = number("seconds", options.seconds);
  try {
    options.validate();
  } catch (const std::exception& e) {
    throw Napi::RangeError::New(env, e.what());
  }
  auto* worker = new CeilingsWorker(env, threads, options);
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

// Measures the expert products' streaming speed on a pool of its own, off the event loop.
class ExpertProductsWorker : public Napi::AsyncWorker {
 public:
  ExpertProductsWorker(Napi::Env env, int threads, ExpertProductOptions options)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), threads_(threads), options_(options) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      ThreadPool pool(threads_);
      speeds_ = measure_expert_products(pool, options_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Array out = Napi::Array::New(env, speeds_.size());
    for (size_t i = 0; i < speeds_.size(); ++i) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("format", speeds_[i].format);
      o.Set("kernels", speeds_[i].kernels);
      o.Set("batch", static_cast<double>(speeds_[i].batch));
      o.Set("weightGBps", speeds_[i].weight_gbps);
      o.Set("gflops", speeds_[i].gflops);
      out.Set(static_cast<uint32_t>(i), o);
    }
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  int threads_;
  ExpertProductOptions options_;
  std::vector<ExpertProductSpeed> speeds_;
};

// measureExpertProducts({threads, weightBytes?, cols?, passes?, batches?})
//   -> Promise<[{format, kernels, batch, weightGBps, gflops}]> (see expert_products.h).
Napi::Value MeasureExpertProducts(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject())
    throw Napi::TypeError::New(env, "measureExpertProducts(options: {threads, weightBytes?, cols?, passes?, batches?})");
  const Napi::Object o = info[0].As<Napi::Object>();
  auto integer = [&](const char* key, double fallback, double min, double max) {
    const Napi::Value v = o.Get(key);
    const double x = v.IsUndefined() ? fallback : v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
    if (!(x >= min && x <= max) || x != std::floor(x))
      throw Napi::RangeError::New(env, std::string("measureExpertProducts: ") + key + " must be an integer between " +
                                           std::to_string(static_cast<int64_t>(min)) + " and " +
                                           std::to_string(static_cast<int64_t>(max)));
    return x;
  };
  ExpertProductOptions options;
  const int threads = static_cast<int>(integer("threads", std::max(1u, std::thread::hardware_concurrency()), 1, 1024));
  options.weight_bytes = static_cast<int64_t>(integer("weightBytes", static_cast<double>(options.weight_bytes), 1, 1e12));
  options.cols = static_cast<int64_t>(integer("cols", static_cast<double>(options.cols), 1, 1e6));
  options.passes = static_cast<int>(integer("passes", options.passes, 1, 1000));
  const Napi::Value batches = o.Get("batches");
  if (!batches.IsUndefined()) {
    if (!batches.IsArray()) throw Napi::TypeError::New(env, "measureExpertProducts: batches must be an array of integers");
    const Napi::Array list = batches.As<Napi::Array>();
    options.batches.clear();
    for (uint32_t i = 0; i < list.Length(); ++i) {
      const Napi::Value v = list.Get(i);
      const double m = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
      // In range before the conversion, like the other options (a larger double has no int64_t).
      if (!(m >= 1 && m <= 256) || m != std::floor(m))
        throw Napi::RangeError::New(env, "measureExpertProducts: batch sizes must be integers between 1 and 256");
      options.batches.push_back(static_cast<int64_t>(m));
    }
  }
  try {
    options.validate();
  } catch (const std::exception& e) {
    throw Napi::RangeError::New(env, e.what());
  }
  auto* worker = new ExpertProductsWorker(env, threads, options);
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

#ifdef SCRIPTORIUM_PROBES_VULKAN
// Measures a Vulkan device's ceilings on a libuv worker thread.
class GpuCeilingsWorker : public Napi::AsyncWorker {
 public:
  GpuCeilingsWorker(Napi::Env env, GpuCeilingOptions options)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), options_(options) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      ceilings_ = measure_gpu_ceilings(options_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object out = Napi::Object::New(env);
    out.Set("device", ceilings_.device);
    out.Set("bufferBytes", static_cast<double>(ceilings_.buffer_bytes));
    out.Set("readGBps", ceilings_.read_gbps);
    Napi::Array matmul = Napi::Array::New(env, ceilings_.matmul.size());
    for (uint32_t i = 0; i < ceilings_.matmul.size(); ++i) {
      Napi::Object path = Napi::Object::New(env);
      path.Set("path", ceilings_.matmul[i].path);
      path.Set("gflops", ceilings_.matmul[i].gflops);
      matmul.Set(i, path);
    }
    out.Set("matmul", matmul);
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  GpuCeilingOptions options_;
  GpuCeilings ceilings_;
};
#endif

// measureGpuCeilings({device?, bufferBytes?, passes?, matmulSide?, seconds?}) -> Promise<ceilings>
// (see gpu_ceilings.h); rejects in builds without the Vulkan backend.
Napi::Value MeasureGpuCeilings(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
#ifdef SCRIPTORIUM_PROBES_VULKAN
  const Napi::Object o = info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(env);
  auto number = [&](const char* key, double fallback) {
    const Napi::Value v = o.Get(key);
    if (v.IsUndefined()) return fallback;
    if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string("measureGpuCeilings: ") + key + " must be a number");
    return v.As<Napi::Number>().DoubleValue();
  };
  GpuCeilingOptions options;
  options.device = static_cast<int>(number("device", options.device));
  options.buffer_bytes = static_cast<int64_t>(number("bufferBytes", static_cast<double>(options.buffer_bytes)));
  options.passes = static_cast<int>(number("passes", options.passes));
  options.matmul_side = static_cast<int>(number("matmulSide", options.matmul_side));
  options.seconds = number("seconds", options.seconds);
  try {
    options.validate();
  } catch (const std::exception& e) {
    throw Napi::RangeError::New(env, std::string("measureGpuCeilings: ") + e.what());
  }
  auto* worker = new GpuCeilingsWorker(env, options);
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
#else
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(Napi::Error::New(env, "the probes were built without the Vulkan backend (Debian: libvulkan-dev glslc)").Value());
  return deferred.Promise();
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("measureExpertProducts", Napi::Function::New(env, MeasureExpertProducts, "measureExpertProducts"));
  exports.Set("measureCeilings", Napi::Function::New(env, MeasureCeilings, "measureCeilings"));
  exports.Set("measureGpuCeilings", Napi::Function::New(env, MeasureGpuCeilings, "measureGpuCeilings"));
  return exports;
}

}  // namespace
}  // namespace scriptorium

using scriptorium::Init;
NODE_API_MODULE(scriptorium_probes, Init)
