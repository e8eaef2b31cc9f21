// The GPU module's seal (nanort_gpu_seal in nanort.h): what the trusted
// object says the program's GPU part is. The program bytes are not trusted,
// the compiled object is; the GPU module lives in the program, and its images
// are code the driver runs and its kernel table (names, grids, blocks, shared
// memory, argument sizes) is what the verifier holds every launch to. So the
// object carries SHA-256 digests of both, made by nanoc from the module it
// wrote, and a load checks the kernel table's (and the device arena's) and
// the chosen image's before the driver sees anything of them.
//
// The canonical bytes hashed: each field in the order below, integers as
// little-endian uint64, strings and byte vectors as their length and then
// their bytes. Header-only, so that nanoc encodes with the same code
// (hashing with LLVM's SHA256) as nanort (with cuda/sha256.h).
#ifndef NANORT_SRC_CUDA_GPU_SEAL_H_
#define NANORT_SRC_CUDA_GPU_SEAL_H_

#include <stddef.h>
#include <stdint.h>

#include "program_generated.h"

namespace nanort::gpu_seal {

template <typename Sink>
void PutU64(Sink& sink, uint64_t value) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));
  sink(bytes, 8);
}

template <typename Sink>
void PutBytes(Sink& sink, const uint8_t* data, size_t size) {
  PutU64(sink, size);
  if (size != 0) sink(data, size);
}

template <typename Sink>
void PutString(Sink& sink, const flatbuffers::String* text) {
  PutBytes(sink, text != nullptr ? reinterpret_cast<const uint8_t*>(text->data()) : nullptr,
           text != nullptr ? text->size() : 0);
}

template <typename Sink, typename T>
void PutVector(Sink& sink, const flatbuffers::Vector<T>* values) {
  const size_t size = flatbuffers::VectorLength(values);
  PutU64(sink, size);
  for (size_t i = 0; i < size; ++i)
    PutU64(sink, values->Get(static_cast<flatbuffers::uoffset_t>(i)));
}

// The device arena, the number of images and every kernel.
template <typename Sink>
void EncodeKernels(const fb::GpuModule& gpu, Sink& sink) {
  PutU64(sink, gpu.device_arena_size());
  PutU64(sink, gpu.device_arena_alignment());
  PutU64(sink, flatbuffers::VectorLength(gpu.images()));
  const size_t num_kernels = flatbuffers::VectorLength(gpu.kernels());
  PutU64(sink, num_kernels);
  for (size_t k = 0; k < num_kernels; ++k) {
    const fb::GpuKernel& kernel = *gpu.kernels()->Get(static_cast<flatbuffers::uoffset_t>(k));
    PutString(sink, kernel.name());
    PutVector(sink, kernel.arg_bytes());
    PutU64(sink, kernel.num_outputs());
    PutVector(sink, kernel.grid());
    PutVector(sink, kernel.block());
    PutU64(sink, kernel.shared_bytes());
  }
}

// One image: what selects it and its bytes.
template <typename Sink>
void EncodeImage(const fb::GpuImage& image, Sink& sink) {
  PutU64(sink, static_cast<uint64_t>(image.format()));
  PutU64(sink, image.sm());
  PutString(sink, image.variant());
  PutU64(sink, image.ptx_isa());
  const auto* data = image.data();
  PutBytes(sink, data != nullptr ? data->Data() : nullptr, flatbuffers::VectorLength(data));
}

// The seal's digests, with any SHA-256 of Update(data, size) and
// Final(uint8_t[32]): nanort's cuda::Sha256, or nanoc's adapter of LLVM's.
template <typename Hasher>
void DigestKernels(const fb::GpuModule& gpu, uint8_t digest[32]) {
  Hasher hasher;
  auto sink = [&](const void* data, size_t size) { hasher.Update(data, size); };
  EncodeKernels(gpu, sink);
  hasher.Final(digest);
}

template <typename Hasher>
void DigestImage(const fb::GpuImage& image, uint8_t digest[32]) {
  Hasher hasher;
  auto sink = [&](const void* data, size_t size) { hasher.Update(data, size); };
  EncodeImage(image, sink);
  hasher.Final(digest);
}

}  // namespace nanort::gpu_seal

#endif  // NANORT_SRC_CUDA_GPU_SEAL_H_
