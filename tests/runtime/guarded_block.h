// Memory for run-path tests that makes any overrun fault: `size` bytes that
// end (rounded up to `align`) exactly at a page boundary, the next page
// mapped PROT_NONE. A kernel writing or reading past its arena or tensor
// faults in the test instead of corrupting the heap.
#ifndef NANORT_TESTS_RUNTIME_GUARDED_BLOCK_H_
#define NANORT_TESTS_RUNTIME_GUARDED_BLOCK_H_

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

namespace nanort::test {

class GuardedBlock {
 public:
  GuardedBlock(size_t size, size_t align) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t rounded = (size + align - 1) / align * align;
    mapped_ = (rounded + page - 1) / page * page + page;
    base_ = static_cast<uint8_t*>(
        mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      return;
    }
    mprotect(base_ + mapped_ - page, page, PROT_NONE);
    data_ = base_ + mapped_ - page - rounded;
    memset(data_, 0x5a, rounded);
  }
  ~GuardedBlock() {
    if (base_ != nullptr) munmap(base_, mapped_);
  }
  GuardedBlock(const GuardedBlock&) = delete;
  GuardedBlock& operator=(const GuardedBlock&) = delete;
  uint8_t* data() const { return data_; }

 private:
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t mapped_ = 0;
};

}  // namespace nanort::test

#endif  // NANORT_TESTS_RUNTIME_GUARDED_BLOCK_H_
