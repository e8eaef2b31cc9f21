// GPU placement (nanoc --target sm_XY): decides which nodes run on the GPU
// and inserts the copies across the host/GPU boundary.
//
// A node runs on the GPU when `on_gpu` says it can (its op has a GPU lowering
// that supports it) and, by default (GpuOffload::Auto), it is worth it: a
// root (MatMul, Gemm, a normalization, anything not elementwise) always, an
// elementwise node or a view (Reshape, Identity, BitCast) only when one of
// its non-constant operands is already on the GPU, so that a host-side chain
// does not go to the GPU and back for one cheap op. GpuOffload::All moves
// every node that can go (nanoc --gpu-offload=all; the tests use it to run
// every kernel). GPU nodes carry the attribute `device = "gpu"`.
//
// Then every value read on the other side from where it is made gets one
// copy node, placed right before its first reader there: nanoc.ToDevice
// (itself marked `device = "gpu"`: its result lives on the GPU) or
// nanoc.ToHost. A graph output made on the GPU is renamed `NAME_gpu` and a
// ToHost writes the model's output. Constants need no copy: the runtime
// uploads the ones GPU nodes read once per session.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "compiler/ir/graph.h"

namespace nanoc {

// The attribute's key and value.
inline constexpr const char* kDeviceAttribute = "device";
inline constexpr const char* kGpuDevice = "gpu";
// nanoc --gpu-precision: on the f32 products (MatMul, Gemm, Conv) placed on
// the GPU, `gpu_precision = "tf32" | "bf16" | "f16"` selects the tensor-core
// GEMM (codegen/gpu/gpu_gemm.cc); absent or "exact": the f32 SIMT GEMM.
// `gpu_mma_shape = "m16n8k8"` with f16: the shape sm_75 has.
inline constexpr const char* kGpuPrecisionAttribute = "gpu_precision";
inline constexpr const char* kGpuMmaShapeAttribute = "gpu_mma_shape";

// Whether node only moves bytes: Reshape, Identity and BitCast (a copy or a
// view, on either side), nanoc.ToDevice and nanoc.ToHost (a copy across).
bool isViewOp(const Node& node);
bool isDeviceCopy(const Node& node);
bool isByteCopy(const Node& node);  // either of the two

// Whether node runs on the GPU (after placeOnGpu).
bool isGpuNode(const Node& node);
// Whether value lives in GPU memory: made by a GPU node.
bool isDeviceValue(const Value* value);

enum class GpuOffload { Auto, All };

// nanoc --gpu-precision for the f32 products (MatMul, Gemm, Conv) placed on
// the GPU: "exact" (the f32 SIMT GEMM, no attribute), "tf32", "bf16" or
// "f16" (tensor cores, f32 accumulate). One kernel IR serves every SM the
// model is compiled for, so the lowest SM decides: below sm_80 (sm_75) tf32
// and bf16 stay exact and f16 takes the m16n8k8 shape.
struct GpuPrecision {
  std::string mode = "exact";
  uint32_t min_sm = 80;
};
// Whether `mode` is one of exact, tf32, bf16, f16.
bool isGpuPrecision(const std::string& mode);

// Returns the number of nodes placed on the GPU (copies not counted).
size_t placeOnGpu(Graph& graph, const std::function<bool(const Node&)>& on_gpu,
                  GpuOffload offload = GpuOffload::Auto, const GpuPrecision& precision = {});

}  // namespace nanoc
