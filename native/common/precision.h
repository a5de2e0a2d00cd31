// How a model's products treat their F32 activations, on the CPU and the GPU alike.
#pragma once

namespace scriptorium {

// How a model's BF16-weight products treat their F32 activations: Exact keeps near-F32 accuracy
// (KernelSet::gemm_bf16), Fast may round them once to BF16 (KernelSet::gemm_bf16_fast).
enum class Precision { Exact, Fast };

}  // namespace scriptorium
