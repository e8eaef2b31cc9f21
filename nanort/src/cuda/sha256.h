// SHA-256 (FIPS 180-4), for the GPU module's seal (gpu_seal.h): nanort links
// no library, and the GPU part of a program is code the driver will run, so
// what the trusted object says it is gets checked with a hash an adversary
// cannot steer.
#ifndef NANORT_SRC_CUDA_SHA256_H_
#define NANORT_SRC_CUDA_SHA256_H_

#include <stddef.h>
#include <stdint.h>

namespace nanort::cuda {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  // The digest of everything given; the object is spent afterwards.
  void Final(uint8_t digest[32]);

 private:
  void Block(const uint8_t* block);

  uint32_t state_[8];
  uint64_t length_;  // bytes so far
  uint8_t buffer_[64];
  size_t buffered_;
};

}  // namespace nanort::cuda

#endif  // NANORT_SRC_CUDA_SHA256_H_
