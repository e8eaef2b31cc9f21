#include "program_verifier.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <new>

#include "allocator.h"
#include "bytes.h"
#include "program_schema.h"
#include "status.h"
#include "target_check.h"

namespace nanort {
namespace {

using flatbuffers::uoffset_t;

const char* NameOf(const flatbuffers::String* name) { return name != nullptr ? name->c_str() : ""; }

template <typename T>
uoffset_t SizeOf(const flatbuffers::Vector<T>* vector) {
  return vector != nullptr ? vector->size() : 0;
}

bool IsValidDType(fb::DType dtype) {
  return static_cast<uint8_t>(dtype) <= static_cast<uint8_t>(fb::DType::MAX);
}

// A set of byte ranges, kept sorted, disjoint and with touching ranges merged,
// in caller-provided storage. Every range inserted starts at the offset of one
// of the buffers of its memory space, and merged ranges keep distinct starts,
// so the number of buffers in the space bounds the storage it needs.
class ByteRangeSet {
 public:
  struct Range {
    size_t begin, end;
  };

  void Init(Range* storage, size_t capacity) {
    ranges_ = storage;
    capacity_ = capacity;
    count_ = 0;
  }

  // Binary searches: a thunk's check costs O(log ranges), not O(ranges).
  bool Covers(size_t begin, size_t end) const {
    if (begin == end) return true;
    const size_t i = CountBelow(begin + 1, false);  // the last range starting at or before begin
    return i != 0 && ranges_[i - 1].end >= end;
  }

  // False only if the capacity bound above was wrong.
  bool Insert(size_t begin, size_t end) {
    if (begin == end) return true;
    size_t first = CountBelow(begin, true);
    size_t last = first;  // one past the last range that overlaps or touches
    for (; last < count_ && ranges_[last].begin <= end; ++last) {
      if (ranges_[last].begin < begin) begin = ranges_[last].begin;
      if (ranges_[last].end > end) end = ranges_[last].end;
    }
    if (first == last && count_ == capacity_) return false;
    // ranges_[first, last) become the one merged range.
    memmove(&ranges_[first + 1], &ranges_[last], (count_ - last) * sizeof(Range));
    ranges_[first] = Range{begin, end};
    count_ = count_ - (last - first) + 1;
    return true;
  }

 private:
  // How many ranges begin (or, with `ends`, end) below `key`; both are sorted
  // since the ranges are disjoint and sorted.
  size_t CountBelow(size_t key, bool ends) const {
    size_t low = 0, high = count_;
    while (low < high) {
      const size_t mid = (low + high) / 2;
      if ((ends ? ranges_[mid].end : ranges_[mid].begin) < key) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  }

  Range* ranges_ = nullptr;
  size_t capacity_ = 0;
  size_t count_ = 0;

  friend class DefinednessTracker;  // its snapshots copy ranges_[0, count_)
};

// The bytes written so far, per writable memory space: the arena (space 0),
// each output tensor (space 1 + output index) and, with GPU offload, the
// device arena (the last space).
class DefinednessTracker {
 public:
  DefinednessTracker(const fb::Program& program, const fb::Entry& entry, nanort_allocator allocator)
      : program_(program), allocator_(allocator) {
    num_spaces_ = 1 + static_cast<size_t>(SizeOf(entry.outputs())) + (kWithCuda ? 1 : 0);
  }
  ~DefinednessTracker() {
    if (block_ != nullptr) allocator_.free(allocator_.self, block_);
#if NANORT_WITH_CONTROL_FLOW
    for (uint8_t* snapshot : snapshots_) {
      if (snapshot != nullptr) allocator_.free(allocator_.self, snapshot);
    }
#endif
  }
  DefinednessTracker(const DefinednessTracker&) = delete;
  DefinednessTracker& operator=(const DefinednessTracker&) = delete;

  nanort_status_code Init(nanort_status* status) {
    const auto* buffers = program_.buffers();
    BlockLayout layout;
    const size_t sets_at = layout.Add<ByteRangeSet>(num_spaces_);
    const size_t counts_at = layout.Add<size_t>(num_spaces_);
    const size_t ranges_at = layout.Add<ByteRangeSet::Range>(SizeOf(buffers));
    NANORT_CHECK_OR_RETURN(!layout.overflow(), status, NANORT_OUT_OF_MEMORY,
                           "program too large to verify");
    block_ =
        static_cast<uint8_t*>(allocator_.alloc(allocator_.self, layout.size(), layout.alignment()));
    NANORT_CHECK_OR_RETURN(block_ != nullptr, status, NANORT_OUT_OF_MEMORY,
                           "allocator returned NULL for %zu bytes of verifier scratch",
                           layout.size());
    sets_ = reinterpret_cast<ByteRangeSet*>(block_ + sets_at);
    size_t* counts = reinterpret_cast<size_t*>(block_ + counts_at);
    auto* ranges = reinterpret_cast<ByteRangeSet::Range*>(block_ + ranges_at);
    for (size_t s = 0; s < num_spaces_; ++s) counts[s] = 0;
    for (uoffset_t b = 0; b < SizeOf(buffers); ++b) {
      size_t space;
      if (SpaceOf(*buffers->Get(b), &space)) ++counts[space];
    }
    size_t next = 0;
    for (size_t s = 0; s < num_spaces_; ++s) {
      new (&sets_[s]) ByteRangeSet();
      sets_[s].Init(ranges + next, counts[s]);
      next += counts[s];
    }
#if NANORT_WITH_CONTROL_FLOW
    num_ranges_ = next;
#endif
    return NANORT_OK;
  }

#if NANORT_WITH_CONTROL_FLOW
  // Snapshots of what is defined, one per nesting level of control flow
  // (kMaxControlDepth at most): an If checks each branch from the state
  // before it, a Loop its body from the state before it, and both restore
  // it after. A level's snapshot is allocated on its first use, freed with
  // the tracker: at most kMaxControlDepth x (the ranges of every space),
  // linear in the program's size. Save and Restore copy only the ranges in
  // use.
  nanort_status_code Save(uint32_t level, nanort_status* status) {
    uint8_t*& snapshot = snapshots_[level];
    const size_t bytes = num_spaces_ * sizeof(size_t) + num_ranges_ * sizeof(ByteRangeSet::Range);
    if (snapshot == nullptr) {
      // Init sized the same layout (and more) without overflow.
      snapshot = static_cast<uint8_t*>(allocator_.alloc(allocator_.self, bytes, alignof(size_t)));
      NANORT_CHECK_OR_RETURN(snapshot != nullptr, status, NANORT_OUT_OF_MEMORY,
                             "allocator returned NULL for %zu bytes of verifier scratch", bytes);
    }
    size_t* counts = reinterpret_cast<size_t*>(snapshot);
    auto* ranges = reinterpret_cast<ByteRangeSet::Range*>(counts + num_spaces_);
    for (size_t s = 0; s < num_spaces_; ++s) {
      const ByteRangeSet& set = sets_[s];
      counts[s] = set.count_;
      memcpy(ranges + (set.ranges_ - sets_[0].ranges_), set.ranges_,
             set.count_ * sizeof(ByteRangeSet::Range));
    }
    return NANORT_OK;
  }

  void Restore(uint32_t level) {
    const size_t* counts = reinterpret_cast<const size_t*>(snapshots_[level]);
    const auto* ranges = reinterpret_cast<const ByteRangeSet::Range*>(counts + num_spaces_);
    for (size_t s = 0; s < num_spaces_; ++s) {
      ByteRangeSet& set = sets_[s];
      set.count_ = counts[s];
      memcpy(set.ranges_, ranges + (set.ranges_ - sets_[0].ranges_),
             set.count_ * sizeof(ByteRangeSet::Range));
    }
  }
#endif

  // False for Input, Constant and DeviceConstant buffers, which live outside
  // the tracked spaces and are always defined.
  bool SpaceOf(const fb::Buffer& buffer, size_t* space) const {
    if (buffer.kind() == fb::BufferKind::Arena) {
      *space = 0;
      return true;
    }
    if (buffer.kind() == fb::BufferKind::Output) {
      *space = 1 + buffer.index();
      return true;
    }
#if NANORT_WITH_CUDA
    if (buffer.kind() == fb::BufferKind::Device) {
      *space = num_spaces_ - 1;
      return true;
    }
#endif
    return false;
  }

  // `length` bytes from the buffer's start. CheckBuffers has bounded the
  // buffer's end by SIZE_MAX and `length` by its size, so size_t holds both.
  bool IsDefined(const fb::Buffer& buffer, uint64_t length) const {
    size_t space;
    if (!SpaceOf(buffer, &space)) return true;
    const size_t begin = static_cast<size_t>(buffer.offset());
    return sets_[space].Covers(begin, begin + static_cast<size_t>(length));
  }

  bool MarkWritten(const fb::Buffer& buffer, uint64_t length) {
    size_t space;
    if (!SpaceOf(buffer, &space)) return false;
    const size_t begin = static_cast<size_t>(buffer.offset());
    return sets_[space].Insert(begin, begin + static_cast<size_t>(length));
  }

 private:
  const fb::Program& program_;
  nanort_allocator allocator_;
  size_t num_spaces_ = 0;
  uint8_t* block_ = nullptr;
  ByteRangeSet* sets_ = nullptr;
#if NANORT_WITH_CONTROL_FLOW
  size_t num_ranges_ = 0;  // the ranges of every space together
  uint8_t* snapshots_[kMaxControlDepth] = {};
#endif
};

// nanort_kernel's signature fields (arg_bytes to the end), which the verifier
// compares across variants as one block of bytes.
constexpr size_t kSignatureBytes = sizeof(nanort_kernel) - offsetof(nanort_kernel, arg_bytes);
static_assert(kSignatureBytes == sizeof(void*) + 24, "nanort_kernel has no padding");

// Whether `entry` (a kernel of some variant) is bound and holds `first`'s
// signature (the same kernel of variant 0), which is well formed: scratch
// within kMaxScratchBytes among the rest.
bool IsSignatureOf(const nanort_kernel& entry, const nanort_kernel& first) {
  return entry.fn != nullptr && first.num_outputs <= first.num_args &&
         (first.num_args == 0 || first.arg_bytes != nullptr) &&
         first.scratch_bytes <= kMaxScratchBytes &&
         BytesEqual(&entry.arg_bytes, &first.arg_bytes, kSignatureBytes);
}

bool IsWritable(fb::BufferKind kind) {
  return kind == fb::BufferKind::Arena || kind == fb::BufferKind::Output ||
         (kWithCuda && kind == fb::BufferKind::Device);
}

#if NANORT_WITH_CUDA
// Memory on the GPU (format 1.3), which only GPU thunks touch.
bool IsOnDevice(fb::BufferKind kind) {
  return kind == fb::BufferKind::Device || kind == fb::BufferKind::DeviceConstant;
}
#endif

// Input and Output buffers point into the caller's tensors, so every run
// patches their slots.
bool IsInTensor(fb::BufferKind kind) {
  return kind == fb::BufferKind::Input || kind == fb::BufferKind::Output;
}

// "thunk 3 (node 'conv1', op 'Conv'): " + the formatted rest, the label cut
// to 95 characters. One cold function rather than a label built at each of
// CheckThunks' checks keeps the verifier's code small.
__attribute__((cold, noinline, unused, format(printf, 5, 6))) nanort_status_code ThunkError(
    nanort_status* status, nanort_status_code code, uoffset_t index, const fb::Thunk& thunk,
    const char* format, ...) {
  if (status == nullptr) return code;
  char label[96];
  Format(label, sizeof(label), "thunk %" PRIu32 " (node '%s', op '%s')", index,
         NameOf(thunk.node()), NameOf(thunk.op()));
  status->code = code;
  const int used = Format(status->message, sizeof(status->message), "%s: ", label);
  va_list args;
  va_start(args, format);
  FormatV(status->message + used, sizeof(status->message) - static_cast<size_t>(used), format,
          args);
  va_end(args);
  return code;
}

// Checks inside CheckThunks' loop, about thunk `t`.
#if defined(NANORT_SHORT_MESSAGES) && NANORT_SHORT_MESSAGES
#define THUNK_FAIL(code, ...) NANORT_FAIL(status, code, __VA_ARGS__)
#else
#define THUNK_FAIL(code, ...) ThunkError(status, code, t, thunk, __VA_ARGS__)
#endif
#define CHECK_THUNK(cond, code, ...)                   \
  do {                                                 \
    if (!(cond)) return THUNK_FAIL(code, __VA_ARGS__); \
  } while (0)

nanort_status_code CheckTensors(const fb::Program& program,
                                const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* tensors,
                                fb::BufferKind kind, const char* what, ProgramTotals* totals,
                                nanort_status* status) {
  const auto* buffers = program.buffers();
  for (uoffset_t i = 0; i < SizeOf(tensors); ++i) {
    const fb::Tensor& tensor = *tensors->Get(i);
    totals->dims += SizeOf(tensor.shape());
    const char* name = NameOf(tensor.name());
    NANORT_CHECK_OR_RETURN(IsValidDType(tensor.dtype()), status, NANORT_INVALID_PROGRAM,
                           "%s %" PRIu32 " ('%s'): unknown dtype %" PRIu32, what, i, name,
                           static_cast<uint32_t>(tensor.dtype()));
    uint64_t bytes;
    NANORT_CHECK_OR_RETURN(
        TensorByteSize(tensor.dtype(), tensor.shape(), &bytes), status, NANORT_INVALID_PROGRAM,
        "%s %" PRIu32 " ('%s'): shape has a negative dim or more bytes than this machine addresses",
        what, i, name);
    NANORT_CHECK_OR_RETURN(tensor.buffer() < SizeOf(buffers), status, NANORT_INVALID_PROGRAM,
                           "%s %" PRIu32 " ('%s'): buffer %" PRIu32
                           " out of range (program has %" PRIu32 " buffers)",
                           what, i, name, tensor.buffer(), SizeOf(buffers));
    const fb::Buffer& buffer = *buffers->Get(tensor.buffer());
    NANORT_CHECK_OR_RETURN(
        buffer.kind() == kind && buffer.index() == i && buffer.offset() == 0 &&
            buffer.size() == bytes,
        status, NANORT_INVALID_PROGRAM,
        "%s %" PRIu32 " ('%s'): buffer %" PRIu32 " is not the whole %s %" PRIu32 " (%llu bytes)",
        what, i, name, tensor.buffer(), what, i, static_cast<unsigned long long>(bytes));
  }
  return NANORT_OK;
}

nanort_status_code CheckBuffers(const fb::Program& program, const fb::Entry& entry,
                                const nanort_model_def& def, nanort_status* status) {
  const auto* buffers = program.buffers();
  // Whether an arena buffer ends at the arena's end (none need to when it is
  // empty); the checks below keep every one from ending past it.
  bool arena_used = program.arena_size() == 0;
#if NANORT_WITH_CUDA
  bool device_arena_used = program.gpu() == nullptr || program.gpu()->device_arena_size() == 0;
#endif
  for (uoffset_t b = 0; b < SizeOf(buffers); ++b) {
    const fb::Buffer& buffer = *buffers->Get(b);
    const char* name = NameOf(buffer.name());
    uint64_t end;
    NANORT_CHECK_OR_RETURN(!AddOverflows(buffer.offset(), buffer.size(), &end), status,
                           NANORT_INVALID_PROGRAM,
                           "buffer %" PRIu32 " ('%s'): offset + size overflows", b, name);
    NANORT_CHECK_OR_RETURN(IsPowerOfTwo(buffer.alignment()), status, NANORT_INVALID_PROGRAM,
                           "buffer %" PRIu32 " ('%s'): alignment %" PRIu32 " is not a power of two",
                           b, name, buffer.alignment());
    NANORT_CHECK_OR_RETURN(
        (buffer.offset() & (buffer.alignment() - 1)) == 0, status, NANORT_INVALID_PROGRAM,
        "buffer %" PRIu32 " ('%s'): offset %llu is not aligned to %" PRIu32, b, name,
        static_cast<unsigned long long>(buffer.offset()), buffer.alignment());
    uint64_t limit = 0;
    const char* space = "";
    switch (buffer.kind()) {
      case fb::BufferKind::Constant:
        limit = program.constants_size();
        space = "constants";
        NANORT_CHECK_OR_RETURN(
            end > limit || IsAligned(def.constants + buffer.offset(), buffer.alignment()), status,
            NANORT_INVALID_PROGRAM,
            "buffer %" PRIu32 " ('%s'): constants at offset %llu are not aligned to %" PRIu32
            " in memory",
            b, name, static_cast<unsigned long long>(buffer.offset()), buffer.alignment());
        break;
      case fb::BufferKind::Arena:
        limit = program.arena_size();
        space = "arena";
        arena_used |= end == limit;
        NANORT_CHECK_OR_RETURN(
            buffer.alignment() <= program.arena_alignment(), status, NANORT_INVALID_PROGRAM,
            "buffer %" PRIu32 " ('%s'): alignment %" PRIu32 " exceeds the arena's %" PRIu32, b,
            name, buffer.alignment(), program.arena_alignment());
        break;
      case fb::BufferKind::Input:
      case fb::BufferKind::Output: {
        const bool input = buffer.kind() == fb::BufferKind::Input;
        const auto* tensors = input ? entry.inputs() : entry.outputs();
        space = input ? "input" : "output";
        NANORT_CHECK_OR_RETURN(buffer.index() < SizeOf(tensors), status, NANORT_INVALID_PROGRAM,
                               "buffer %" PRIu32 " ('%s'): %s %" PRIu32
                               " out of range (entry has %" PRIu32 ")",
                               b, name, space, buffer.index(), SizeOf(tensors));
        const fb::Tensor& tensor = *tensors->Get(buffer.index());
        // CheckTensors ran first, so the size is known to be valid.
        TensorByteSize(tensor.dtype(), tensor.shape(), &limit);
        break;
      }
#if NANORT_WITH_CUDA
      case fb::BufferKind::Device:
      case fb::BufferKind::DeviceConstant: {
        const fb::GpuModule* gpu = program.gpu();
        const bool device = buffer.kind() == fb::BufferKind::Device;
        NANORT_CHECK_OR_RETURN(gpu != nullptr, status, NANORT_INVALID_PROGRAM,
                               "buffer %" PRIu32
                               " ('%s') is in device memory, but the program "
                               "has no GPU module",
                               b, name);
        limit = device ? gpu->device_arena_size() : program.constants_size();
        space = device ? "device arena" : "constants";
        device_arena_used |= device && end == limit;
        NANORT_CHECK_OR_RETURN(
            buffer.alignment() <= (device ? gpu->device_arena_alignment() : kMaxDeviceAlignment),
            status, NANORT_INVALID_PROGRAM,
            "buffer %" PRIu32 " ('%s'): alignment %" PRIu32 " exceeds the %s's", b, name,
            buffer.alignment(), space);
        break;
      }
#endif
      default:
        // Without NANORT_WITH_CUDA, Device and DeviceConstant buffers too: a
        // program with a GPU module was refused as UNAVAILABLE already, and
        // device memory without one is no valid program.
        return NANORT_FAIL(status, NANORT_INVALID_PROGRAM,
                           "buffer %" PRIu32 " ('%s'): unknown kind %" PRIu32, b, name,
                           static_cast<uint32_t>(buffer.kind()));
    }
    // Past SIZE_MAX no memory can hold it (32-bit targets); later checks
    // rely on every buffer's bytes fitting in size_t.
    NANORT_CHECK_OR_RETURN(
        end <= limit && end <= SIZE_MAX, status, NANORT_INVALID_PROGRAM,
        "buffer %" PRIu32 " ('%s'): bytes [%llu, %llu) outside the %s (%llu bytes)", b, name,
        static_cast<unsigned long long>(buffer.offset()), static_cast<unsigned long long>(end),
        space, static_cast<unsigned long long>(limit));
  }
  // nanoc writes the exact arena: a larger one would only make sessions
  // allocate what no thunk uses.
  NANORT_CHECK_OR_RETURN(arena_used, status, NANORT_INVALID_PROGRAM,
                         "arena of %llu bytes, more than its buffers need",
                         static_cast<unsigned long long>(program.arena_size()));
#if NANORT_WITH_CUDA
  NANORT_CHECK_OR_RETURN(device_arena_used, status, NANORT_INVALID_PROGRAM,
                         "device arena of %llu bytes, more than its buffers need",
                         static_cast<unsigned long long>(program.gpu()->device_arena_size()));
#endif
  return NANORT_OK;
}

#if NANORT_WITH_CUDA
// A C identifier of 1 to kMaxGpuKernelNameLength characters: what
// cuModuleGetFunction is asked for.
bool IsKernelName(const flatbuffers::String* name) {
  if (name == nullptr || name->size() == 0 || name->size() > kMaxGpuKernelNameLength) return false;
  for (uoffset_t i = 0; i < name->size(); ++i) {
    const char c = name->Get(i);
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i != 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Three dims, each >= 1 and below its limit.
bool IsLaunchShape(const flatbuffers::Vector<uint32_t>* dims, uint64_t x_limit, uint64_t yz_limit) {
  if (SizeOf(dims) != 3) return false;
  const uint32_t x = dims->Get(0), y = dims->Get(1), z = dims->Get(2);
  return x >= 1 && y >= 1 && z >= 1 && x < x_limit && y < yz_limit && z < yz_limit;
}

// The GPU module (format 1.3): its images, kernels and device arena.
nanort_status_code CheckGpuModule(const fb::GpuModule& gpu, nanort_status* status) {
  const auto* images = gpu.images();
  NANORT_CHECK_OR_RETURN(SizeOf(images) >= 1 && SizeOf(images) <= kMaxGpuImages, status,
                         NANORT_INVALID_PROGRAM,
                         "GPU module has %" PRIu32 " images (1 to %" PRIu32 " expected)",
                         SizeOf(images), kMaxGpuImages);
  for (uoffset_t i = 0; i < SizeOf(images); ++i) {
    const fb::GpuImage& image = *images->Get(i);
    const auto* data = image.data();
    const char* variant = NameOf(image.variant());
    const bool cubin = image.format() == fb::GpuImageFormat::Cubin;
    NANORT_CHECK_OR_RETURN(cubin || image.format() == fb::GpuImageFormat::Ptx, status,
                           NANORT_INVALID_PROGRAM, "GPU image %" PRIu32 ": unknown format %" PRIu32,
                           i, static_cast<uint32_t>(image.format()));
    // sm_XY as XY and PTX ISA X.Y as XY: sm_20 .. sm_999, PTX 1.0 .. 99.9.
    NANORT_CHECK_OR_RETURN(
        image.sm() >= 20 && image.sm() <= 999 && image.ptx_isa() >= 10 && image.ptx_isa() <= 999,
        status, NANORT_INVALID_PROGRAM,
        "GPU image %" PRIu32 ": sm %" PRIu32 " or PTX ISA %" PRIu32 " out of range", i, image.sm(),
        image.ptx_isa());
    NANORT_CHECK_OR_RETURN(
        variant[0] == '\0' || ((variant[0] == 'a' || variant[0] == 'f') && variant[1] == '\0'),
        status, NANORT_INVALID_PROGRAM,
        "GPU image %" PRIu32 ": variant '%.8s' is not \"\", \"a\" or \"f\"", i, variant);
    NANORT_CHECK_OR_RETURN(
        SizeOf(data) >= 4 && SizeOf(data) <= kMaxGpuImageBytes, status, NANORT_INVALID_PROGRAM,
        "GPU image %" PRIu32 ": %" PRIu32 " bytes (4 to 2^30 expected)", i, SizeOf(data));
    // A cubin is an ELF file; PTX is text that the driver reads up to a NUL,
    // so one inside would hide the rest.
    if (cubin) {
      NANORT_CHECK_OR_RETURN(BytesEqual(data->Data(),
                                        "\x7f"
                                        "ELF",
                                        4),
                             status, NANORT_INVALID_PROGRAM,
                             "GPU image %" PRIu32 ": cubin is not ELF", i);
    } else {
      uoffset_t at = 0;
      while (at < data->size() && data->Get(at) != 0) ++at;
      NANORT_CHECK_OR_RETURN(at == data->size(), status, NANORT_INVALID_PROGRAM,
                             "GPU image %" PRIu32 ": PTX holds a NUL at byte %" PRIu32, i, at);
    }
  }
  const auto* kernels = gpu.kernels();
  for (uoffset_t k = 0; k < SizeOf(kernels); ++k) {
    const fb::GpuKernel& kernel = *kernels->Get(k);
    NANORT_CHECK_OR_RETURN(IsKernelName(kernel.name()), status, NANORT_INVALID_PROGRAM,
                           "GPU kernel %" PRIu32
                           ": name '%.64s' is not a C identifier of 1 to "
                           "%" PRIu32 " characters",
                           k, NameOf(kernel.name()), kMaxGpuKernelNameLength);
    const char* name = NameOf(kernel.name());
    const uoffset_t num_args = SizeOf(kernel.arg_bytes());
    NANORT_CHECK_OR_RETURN(num_args <= kMaxGpuKernelArgs && kernel.num_outputs() <= num_args,
                           status, NANORT_INVALID_PROGRAM,
                           "GPU kernel %" PRIu32 " ('%s'): %" PRIu32 " args (at most %" PRIu32
                           "), %" PRIu32 " of them outputs",
                           k, name, num_args, kMaxGpuKernelArgs, kernel.num_outputs());
    const auto* block = kernel.block();
    NANORT_CHECK_OR_RETURN(IsLaunchShape(block, 1025, 1025) &&
                               uint64_t{block->Get(0)} * block->Get(1) * block->Get(2) <= 1024,
                           status, NANORT_INVALID_PROGRAM,
                           "GPU kernel %" PRIu32
                           " ('%s'): block is not 3 dims >= 1 of at most "
                           "1024 threads",
                           k, name);
    NANORT_CHECK_OR_RETURN(IsLaunchShape(kernel.grid(), uint64_t{1} << 31, 65536), status,
                           NANORT_INVALID_PROGRAM,
                           "GPU kernel %" PRIu32
                           " ('%s'): grid is not 3 dims >= 1 with x < 2^31 "
                           "and y, z < 65536",
                           k, name);
    NANORT_CHECK_OR_RETURN(
        kernel.shared_bytes() <= kMaxGpuSharedBytes, status, NANORT_INVALID_PROGRAM,
        "GPU kernel %" PRIu32 " ('%s'): %" PRIu32 " bytes of shared memory (at most %" PRIu32 ")",
        k, name, kernel.shared_bytes(), kMaxGpuSharedBytes);
  }
  NANORT_CHECK_OR_RETURN(IsPowerOfTwo(gpu.device_arena_alignment()) &&
                             gpu.device_arena_alignment() <= kMaxDeviceAlignment,
                         status, NANORT_INVALID_PROGRAM,
                         "device arena alignment %" PRIu32 " is not a power of two up to %" PRIu32,
                         gpu.device_arena_alignment(), kMaxDeviceAlignment);
  NANORT_CHECK_OR_RETURN(gpu.device_arena_size() <= kMaxArenaBytes, status, NANORT_INVALID_PROGRAM,
                         "device arena of %llu bytes is too large",
                         static_cast<unsigned long long>(gpu.device_arena_size()));
  return NANORT_OK;
}
#endif

nanort_status_code CheckKernels(const fb::Program& program, const nanort_model_def& def,
                                size_t* scratch, nanort_status* status) {
  const auto* kernels = program.kernels();
  // Format 1.1: the object binds every kernel once per CPU variant.
  const uoffset_t variants = SizeOf(program.variants()) > 1 ? SizeOf(program.variants()) : 1;
  NANORT_CHECK_OR_RETURN(static_cast<uint64_t>(SizeOf(kernels)) * variants == def.num_kernels,
                         status, NANORT_INVALID_PROGRAM,
                         "program has %" PRIu32 " kernels (x%" PRIu32
                         " variants), its object file binds %" PRIu32,
                         SizeOf(kernels), variants, def.num_kernels);
  for (uoffset_t k = 0; k < SizeOf(kernels); ++k) {
    const fb::Kernel& kernel = *kernels->Get(k);
    // The object's kernel table holds CPU kernels only; a GPU program's
    // kernels are in its GPU module (format 1.3).
    NANORT_CHECK_OR_RETURN(kernel.device() == fb::DeviceKind::Cpu, status,
                           NANORT_UNSUPPORTED_TARGET, "kernel %" PRIu32 " ('%s') is a GPU kernel",
                           k, NameOf(kernel.name()));
    // Every variant compiles the same node, so one signature serves all
    // (nanort.h: the entries share one arg_bytes array): CheckThunks matches
    // thunks against variant 0's.
    for (uoffset_t v = 0; v < variants; ++v) {
      const bool same = def.kernels != nullptr &&
                        IsSignatureOf(def.kernels[v * SizeOf(kernels) + k], def.kernels[k]);
      NANORT_CHECK_OR_RETURN(same, status, NANORT_INVALID_PROGRAM,
                             "kernel %" PRIu32 " of variant %" PRIu32
                             " is NULL, differs from variant 0's or declares over 1 GiB of "
                             "scratch in the object file's kernel table",
                             k, v);
    }
    // Every variant declares the same scratch (it is part of the signature),
    // at most kMaxScratchBytes: it fits size_t.
    const size_t bytes = static_cast<size_t>(def.kernels[k].scratch_bytes);
    if (bytes > *scratch) *scratch = bytes;
  }
  return NANORT_OK;
}

using BufferList = flatbuffers::Vector<flatbuffers::Offset<fb::Buffer>>;
using ThunkList = flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>;

#if !NANORT_WITH_CONTROL_FLOW
// The code for a thunk of a kind this build does not run: UNAVAILABLE for
// format 1.4's IfThunk and LoopThunk, INVALID_PROGRAM for the rest. Apart,
// so that the check costs the bare-metal core fewer bytes.
__attribute__((cold, noinline)) nanort_status_code UnknownKindCode(const fb::Thunk& thunk) {
  // IfThunk (5) and LoopThunk (6).
  return static_cast<uint32_t>(thunk.kind_type()) - 5u < 2u ? NANORT_UNAVAILABLE
                                                            : NANORT_INVALID_PROGRAM;
}
#endif

#if NANORT_WITH_CONTROL_FLOW
class ControlFlowCheck;
nanort_status_code CheckSequence(const fb::Program& program, const nanort_model_def& def,
                                 const BufferList* buffers, uoffset_t num_buffers,
                                 DefinednessTracker& defined, ProgramTotals* totals,
                                 nanort_status* status, const ThunkList* thunks,
                                 ControlFlowCheck& walk, uint32_t level);

// A buffer index of IfThunk and LoopThunk that means "none".
constexpr uint32_t kNoBuffer = 0xFFFFFFFF;

// Constant, Input, Output or Arena: memory the host reads.
bool IsHostBuffer(fb::BufferKind kind) { return kind <= fb::BufferKind::Arena; }

// CheckThunks' walk over nested thunk sequences (format 1.4's IfThunk and
// LoopThunk), recursive and bounded by kMaxControlDepth. `next_` numbers the
// thunks in pre-order, as sessions flatten them.
class ControlFlowCheck {
 public:
  ControlFlowCheck(const fb::Program& program, const nanort_model_def& def,
                   DefinednessTracker& defined, ProgramTotals* totals, nanort_status* status)
      : program_(program),
        def_(def),
        buffers_(program.buffers()),
        num_buffers_(SizeOf(buffers_)),
        defined_(defined),
        totals_(totals),
        status_(status) {}

  // The next thunk's pre-order number; counts it.
  uoffset_t Next(ProgramTotals* totals) {
    ++totals->thunks;
    return next_++;
  }

  nanort_status_code If(uoffset_t t, const fb::Thunk& thunk, const fb::IfThunk& branch,
                        uint32_t level);
  nanort_status_code Loop(uoffset_t t, const fb::Thunk& thunk, const fb::LoopThunk& loop,
                          uint32_t level);

 private:
  // What every control thunk must be: outside a GPU program, whose offload
  // runs top-level thunks by index, and not nested too deep.
  nanort_status_code Control(uoffset_t t, const fb::Thunk& thunk, uint32_t level) {
    nanort_status* status = status_;
    ++totals_->controls;
#if NANORT_WITH_CUDA
    CHECK_THUNK(program_.gpu() == nullptr, NANORT_INVALID_PROGRAM,
                "control flow in a GPU program (nanort runs GPU programs' thunks in one "
                "sequence)");
#endif
    CHECK_THUNK(level < kMaxControlDepth, NANORT_INVALID_PROGRAM,
                "control flow nested deeper than %" PRIu32 " levels", kMaxControlDepth);
    return NANORT_OK;
  }

  // Buffer `b` (a condition, trip count or counter) as a `bytes`-byte host
  // buffer (an Arena one when `arena`) that is defined unless `written`;
  // counted as a slot (and a patch when it is in a tensor).
  nanort_status_code Scalar(uoffset_t t, const fb::Thunk& thunk, const char* what, uint32_t b,
                            uint64_t bytes, bool arena) {
    nanort_status* status = status_;
    CHECK_THUNK(b < num_buffers_ && buffers_->Get(b)->size() == bytes &&
                    (arena ? buffers_->Get(b)->kind() == fb::BufferKind::Arena
                           : IsHostBuffer(buffers_->Get(b)->kind())),
                NANORT_INVALID_PROGRAM,
                "%s names buffer %" PRIu32 ", not one of the program's %" PRIu32
                " %s buffers of %llu bytes",
                what, b, num_buffers_, arena ? "arena" : "host",
                static_cast<unsigned long long>(bytes));
    const fb::Buffer& buffer = *buffers_->Get(b);
    ++totals_->slots;
    totals_->patches += IsInTensor(buffer.kind());
    if (arena) {
      CHECK_THUNK(defined_.MarkWritten(buffer, bytes), NANORT_INVALID_PROGRAM,
                  "too many distinct writes");
    } else {
      CHECK_THUNK(defined_.IsDefined(buffer, bytes), NANORT_INVALID_PROGRAM,
                  "reads %s buffer %" PRIu32 " ('%s') before anything writes it", what, b,
                  NameOf(buffer.name()));
    }
    return NANORT_OK;
  }

  // Every output of `branch` is wholly written at the end of one branch.
  nanort_status_code OutputsWritten(uoffset_t t, const fb::Thunk& thunk, const fb::IfThunk& branch,
                                    const char* which) {
    nanort_status* status = status_;
    const auto* outputs = branch.outputs();
    for (uoffset_t o = 0; o < SizeOf(outputs); ++o) {
      const fb::Buffer& buffer = *buffers_->Get(outputs->Get(o));
      CHECK_THUNK(defined_.IsDefined(buffer, buffer.size()), NANORT_INVALID_PROGRAM,
                  "%s branch does not write all of output %" PRIu32 ", buffer %" PRIu32 " ('%s')",
                  which, o, outputs->Get(o), NameOf(buffer.name()));
    }
    return NANORT_OK;
  }

  // A nested sequence.
  nanort_status_code Sequence(const ThunkList* thunks, uint32_t level) {
    return CheckSequence(program_, def_, buffers_, num_buffers_, defined_, totals_, status_, thunks,
                         *this, level);
  }

  const fb::Program& program_;
  const nanort_model_def& def_;
  const BufferList* buffers_;
  uoffset_t num_buffers_;
  DefinednessTracker& defined_;
  ProgramTotals* totals_;
  nanort_status* status_;
  uoffset_t next_ = 0;
};
#endif

// Checks the thunks of one sequence and records their reads and writes:
// the entry's, or with control flow (format 1.4) an If's branch or a Loop's
// body at nesting level `level`, whose If and Loop thunks `walk` checks.
// Messages number thunks in pre-order (the top-level thunks and, before each
// one's successor, the thunks nested in it), as sessions flatten them.
// With control flow it recurses, and one copy serves every level.
#if NANORT_WITH_CONTROL_FLOW
__attribute__((noinline))
#endif
nanort_status_code
CheckSequence(const fb::Program& program, const nanort_model_def& def, const BufferList* buffers,
              uoffset_t num_buffers, DefinednessTracker& defined, ProgramTotals* totals,
              nanort_status* status, const ThunkList* thunks
#if NANORT_WITH_CONTROL_FLOW
              ,
              ControlFlowCheck& walk, uint32_t level
#endif
) {
  for (uoffset_t i = 0; i < SizeOf(thunks); ++i) {
    const fb::Thunk& thunk = *thunks->Get(i);
#if NANORT_WITH_CONTROL_FLOW
    const uoffset_t t = walk.Next(totals);
#else
    const uoffset_t t = i;
    (void)t;  // in messages only
#endif
    if (const fb::KernelThunk* kernel = thunk.kind_as_KernelThunk()) {
      const auto* args = kernel->args();
      const uoffset_t num_args = SizeOf(args);
      CHECK_THUNK(kernel->kernel() < SizeOf(program.kernels()), NANORT_INVALID_PROGRAM,
                  "kernel %" PRIu32 " out of range (%" PRIu32 " kernels)", kernel->kernel(),
                  SizeOf(program.kernels()));
      // The kernel's code was compiled for its signature and checks nothing
      // at run: the thunk must call it exactly so (CheckKernels made every
      // variant's signature equal variant 0's, and num_outputs <= num_args).
      const nanort_kernel& signature = def.kernels[kernel->kernel()];
      CHECK_THUNK(num_args == signature.num_args &&
                      kernel->num_outputs() == signature.num_outputs &&
                      kernel->task_count() == signature.task_count,
                  NANORT_INVALID_PROGRAM,
                  "does not match kernel %" PRIu32 ", compiled for %" PRIu32 " args (%" PRIu32
                  " outputs) and %llu tasks",
                  kernel->kernel(), signature.num_args, signature.num_outputs,
                  static_cast<unsigned long long>(signature.task_count));
      const uoffset_t first_output = num_args - kernel->num_outputs();
      totals->slots += num_args;
      for (uoffset_t a = 0; a < num_args; ++a) {
        const uint32_t b = args->Get(a);
        CHECK_THUNK(b < num_buffers && buffers->Get(b)->size() == signature.arg_bytes[a],
                    NANORT_INVALID_PROGRAM,
                    "arg %" PRIu32 " names buffer %" PRIu32 ", not one of the program's %" PRIu32
                    " buffers of the %llu "
                    "bytes the kernel takes",
                    a, b, num_buffers, static_cast<unsigned long long>(signature.arg_bytes[a]));
        const fb::Buffer& buffer = *buffers->Get(b);
#if NANORT_WITH_CUDA
        CHECK_THUNK(!IsOnDevice(buffer.kind()), NANORT_INVALID_PROGRAM,
                    "arg %" PRIu32 " names buffer %" PRIu32 " ('%s'), which is in GPU memory", a, b,
                    NameOf(buffer.name()));
#endif
        totals->patches += IsInTensor(buffer.kind());
      }
      // Reads happen before writes, so an in-place kernel still needs its
      // operand defined.
      for (uoffset_t a = 0; a < first_output; ++a) {
        const fb::Buffer& buffer = *buffers->Get(args->Get(a));
        CHECK_THUNK(defined.IsDefined(buffer, buffer.size()), NANORT_INVALID_PROGRAM,
                    "reads buffer %" PRIu32 " ('%s') before anything writes it", args->Get(a),
                    NameOf(buffer.name()));
      }
      for (uoffset_t a = first_output; a < num_args; ++a) {
        const fb::Buffer& buffer = *buffers->Get(args->Get(a));
        CHECK_THUNK(IsWritable(buffer.kind()), NANORT_INVALID_PROGRAM,
                    "writes buffer %" PRIu32 " ('%s'), which is an input or constant", args->Get(a),
                    NameOf(buffer.name()));
        CHECK_THUNK(defined.MarkWritten(buffer, buffer.size()), NANORT_INVALID_PROGRAM,
                    "too many distinct writes");
      }
    } else if (const fb::CopyThunk* copy = thunk.kind_as_CopyThunk()) {
      CHECK_THUNK(copy->src() < num_buffers && copy->dst() < num_buffers, NANORT_INVALID_PROGRAM,
                  "copies buffer %" PRIu32 " to buffer %" PRIu32 " (program has %" PRIu32 ")",
                  copy->src(), copy->dst(), num_buffers);
      const fb::Buffer& src = *buffers->Get(copy->src());
      const fb::Buffer& dst = *buffers->Get(copy->dst());
      totals->slots += 2;
      totals->patches += IsInTensor(src.kind()) + IsInTensor(dst.kind());
#if NANORT_WITH_CUDA
      CHECK_THUNK(!IsOnDevice(src.kind()) && !IsOnDevice(dst.kind()), NANORT_INVALID_PROGRAM,
                  "copies buffer %" PRIu32 " to buffer %" PRIu32
                  " on the host, but one is in GPU memory",
                  copy->src(), copy->dst());
#endif
      CHECK_THUNK(copy->size() <= src.size() && copy->size() <= dst.size(), NANORT_INVALID_PROGRAM,
                  "copies %llu bytes between buffers of %llu and %llu bytes",
                  static_cast<unsigned long long>(copy->size()),
                  static_cast<unsigned long long>(src.size()),
                  static_cast<unsigned long long>(dst.size()));
      CHECK_THUNK(defined.IsDefined(src, copy->size()), NANORT_INVALID_PROGRAM,
                  "reads buffer %" PRIu32 " ('%s') before anything writes it", copy->src(),
                  NameOf(src.name()));
      CHECK_THUNK(IsWritable(dst.kind()), NANORT_INVALID_PROGRAM,
                  "writes buffer %" PRIu32 " ('%s'), which is an input or constant", copy->dst(),
                  NameOf(dst.name()));
      CHECK_THUNK(defined.MarkWritten(dst, copy->size()), NANORT_INVALID_PROGRAM,
                  "too many distinct writes");
#if NANORT_WITH_CUDA
    } else if (const fb::GpuLaunchThunk* launch = thunk.kind_as_GpuLaunchThunk()) {
      const fb::GpuModule* gpu = program.gpu();
      CHECK_THUNK(gpu != nullptr && launch->kernel() < SizeOf(gpu->kernels()),
                  NANORT_INVALID_PROGRAM,
                  "GPU kernel %" PRIu32 " out of range (%" PRIu32 " kernels)", launch->kernel(),
                  gpu != nullptr ? SizeOf(gpu->kernels()) : 0);
      // The kernel's code takes exactly its arg_bytes: CheckGpuModule bounded
      // the count and the outputs.
      const fb::GpuKernel& kernel = *gpu->kernels()->Get(launch->kernel());
      const auto* args = launch->args();
      const uoffset_t num_args = SizeOf(args);
      CHECK_THUNK(
          num_args == SizeOf(kernel.arg_bytes()) && launch->num_outputs() == kernel.num_outputs(),
          NANORT_INVALID_PROGRAM,
          "does not match GPU kernel %" PRIu32 " ('%s'), compiled for %" PRIu32 " args (%" PRIu32
          " outputs)",
          launch->kernel(), NameOf(kernel.name()), SizeOf(kernel.arg_bytes()),
          kernel.num_outputs());
      const uoffset_t first_output = num_args - launch->num_outputs();
      for (uoffset_t a = 0; a < num_args; ++a) {
        const uint32_t b = args->Get(a);
        const uint64_t bytes = LoadUnaligned<uint64_t>(kernel.arg_bytes()->Data() + 8 * a);
        CHECK_THUNK(b < num_buffers && IsOnDevice(buffers->Get(b)->kind()) &&
                        buffers->Get(b)->size() == bytes,
                    NANORT_INVALID_PROGRAM,
                    "arg %" PRIu32 " names buffer %" PRIu32 ", not one of the program's %" PRIu32
                    " buffers in GPU memory of the %llu bytes the kernel takes",
                    a, b, num_buffers, static_cast<unsigned long long>(bytes));
        const fb::Buffer& buffer = *buffers->Get(b);
        if (a < first_output) {
          CHECK_THUNK(defined.IsDefined(buffer, buffer.size()), NANORT_INVALID_PROGRAM,
                      "reads buffer %" PRIu32 " ('%s') before anything writes it", b,
                      NameOf(buffer.name()));
        }
      }
      for (uoffset_t a = first_output; a < num_args; ++a) {
        const fb::Buffer& buffer = *buffers->Get(args->Get(a));
        CHECK_THUNK(buffer.kind() == fb::BufferKind::Device, NANORT_INVALID_PROGRAM,
                    "writes buffer %" PRIu32 " ('%s'), which is not in the device arena",
                    args->Get(a), NameOf(buffer.name()));
        CHECK_THUNK(defined.MarkWritten(buffer, buffer.size()), NANORT_INVALID_PROGRAM,
                    "too many distinct writes");
      }
    } else if (const fb::GpuCopyThunk* copy = thunk.kind_as_GpuCopyThunk()) {
      CHECK_THUNK(
          program.gpu() != nullptr && copy->src() < num_buffers && copy->dst() < num_buffers,
          NANORT_INVALID_PROGRAM,
          "copies buffer %" PRIu32 " to buffer %" PRIu32 " (program has %" PRIu32 " buffers%s)",
          copy->src(), copy->dst(), num_buffers,
          program.gpu() == nullptr ? " and no GPU module" : "");
      const fb::Buffer& src = *buffers->Get(copy->src());
      const fb::Buffer& dst = *buffers->Get(copy->dst());
      totals->slots += 2;
      totals->patches += IsInTensor(src.kind()) + IsInTensor(dst.kind());
      CHECK_THUNK(copy->size() == src.size() && copy->size() == dst.size(), NANORT_INVALID_PROGRAM,
                  "copies %llu bytes between buffers of %llu and %llu bytes (GPU copies move "
                  "whole buffers)",
                  static_cast<unsigned long long>(copy->size()),
                  static_cast<unsigned long long>(src.size()),
                  static_cast<unsigned long long>(dst.size()));
      CHECK_THUNK(IsOnDevice(src.kind()) || IsOnDevice(dst.kind()), NANORT_INVALID_PROGRAM,
                  "copies host buffer %" PRIu32 " to host buffer %" PRIu32
                  ": that is a CopyThunk's work",
                  copy->src(), copy->dst());
      CHECK_THUNK(defined.IsDefined(src, copy->size()), NANORT_INVALID_PROGRAM,
                  "reads buffer %" PRIu32 " ('%s') before anything writes it", copy->src(),
                  NameOf(src.name()));
      CHECK_THUNK(IsWritable(dst.kind()), NANORT_INVALID_PROGRAM,
                  "writes buffer %" PRIu32 " ('%s'), which is an input or constant", copy->dst(),
                  NameOf(dst.name()));
      CHECK_THUNK(defined.MarkWritten(dst, copy->size()), NANORT_INVALID_PROGRAM,
                  "too many distinct writes");
#endif
#if NANORT_WITH_CONTROL_FLOW
    } else if (const fb::IfThunk* branch = thunk.kind_as_IfThunk()) {
      NANORT_RETURN_IF_ERROR(walk.If(t, thunk, *branch, level));
    } else if (const fb::LoopThunk* loop = thunk.kind_as_LoopThunk()) {
      NANORT_RETURN_IF_ERROR(walk.Loop(t, thunk, *loop, level));
    } else {
      // The flatbuffers Verifier accepts union members it does not know (for
      // forward compatibility); this runtime cannot execute them. Without
      // NANORT_WITH_CUDA, GPU thunks too (their module was refused already).
      return THUNK_FAIL(NANORT_INVALID_PROGRAM, "unknown or missing thunk kind %" PRIu32,
                        static_cast<uint32_t>(thunk.kind_type()));
    }
#else
    } else {
      // As above; and format 1.4's IfThunk and LoopThunk, which this build
      // cannot run: UNAVAILABLE, as GPU programs are without CUDA.
      const nanort_status_code code = UnknownKindCode(thunk);
      return THUNK_FAIL(code,
                        code == NANORT_UNAVAILABLE
                            ? "thunk kind %" PRIu32
                              " is control flow (If or Loop), but this nanort was built without it "
                              "(NANORT_WITH_CONTROL_FLOW=OFF)"
                            : "unknown or missing thunk kind %" PRIu32,
                        static_cast<uint32_t>(thunk.kind_type()));
    }
#endif
  }
#if NANORT_WITH_CONTROL_FLOW
  if (level != 0) return NANORT_OK;
#endif
  // The entry's thunks (level 0) leave every output written.
  for (uoffset_t b = 0; b < num_buffers; ++b) {
    const fb::Buffer& buffer = *buffers->Get(b);
    if (buffer.kind() != fb::BufferKind::Output) continue;
    NANORT_CHECK_OR_RETURN(defined.IsDefined(buffer, buffer.size()), status, NANORT_INVALID_PROGRAM,
                           "output buffer %" PRIu32 " ('%s') is never (fully) written by any thunk",
                           b, NameOf(buffer.name()));
  }
  return NANORT_OK;
}

#if NANORT_WITH_CONTROL_FLOW
// Each branch is checked from the state before the If; after it, the
// outputs are defined and nothing else either branch wrote.
nanort_status_code ControlFlowCheck::If(uoffset_t t, const fb::Thunk& thunk,
                                        const fb::IfThunk& branch, uint32_t level) {
  nanort_status* status = status_;
  NANORT_RETURN_IF_ERROR(Control(t, thunk, level));
  NANORT_RETURN_IF_ERROR(Scalar(t, thunk, "condition", branch.cond(), 1, false));
  const auto* outputs = branch.outputs();
  for (uoffset_t o = 0; o < SizeOf(outputs); ++o) {
    const uint32_t b = outputs->Get(o);
    CHECK_THUNK(b < num_buffers_ && (buffers_->Get(b)->kind() == fb::BufferKind::Arena ||
                                     buffers_->Get(b)->kind() == fb::BufferKind::Output),
                NANORT_INVALID_PROGRAM,
                "output %" PRIu32 " names buffer %" PRIu32 ", not one of the program's %" PRIu32
                " arena or output buffers",
                o, b, num_buffers_);
  }
  NANORT_RETURN_IF_ERROR(defined_.Save(level, status));
  NANORT_RETURN_IF_ERROR(Sequence(branch.then_thunks(), level + 1));
  NANORT_RETURN_IF_ERROR(OutputsWritten(t, thunk, branch, "then"));
  defined_.Restore(level);
  NANORT_RETURN_IF_ERROR(Sequence(branch.else_thunks(), level + 1));
  NANORT_RETURN_IF_ERROR(OutputsWritten(t, thunk, branch, "else"));
  defined_.Restore(level);
  for (uoffset_t o = 0; o < SizeOf(outputs); ++o) {
    const fb::Buffer& buffer = *buffers_->Get(outputs->Get(o));
    CHECK_THUNK(defined_.MarkWritten(buffer, buffer.size()), NANORT_INVALID_PROGRAM,
                "too many distinct writes");
  }
  return NANORT_OK;
}

// The body is checked from the state before the loop with the counter
// written; after the loop, that state holds again: the body may overwrite
// buffers defined before it (the loop's state), and what else it wrote is
// not defined after it.
nanort_status_code ControlFlowCheck::Loop(uoffset_t t, const fb::Thunk& thunk,
                                          const fb::LoopThunk& loop, uint32_t level) {
  nanort_status* status = status_;
  NANORT_RETURN_IF_ERROR(Control(t, thunk, level));
  CHECK_THUNK(loop.max_trips() >= 1, NANORT_INVALID_PROGRAM, "max_trips is 0");
  if (loop.trip_count() != kNoBuffer) {
    NANORT_RETURN_IF_ERROR(Scalar(t, thunk, "trip count", loop.trip_count(), 8, false));
  }
  if (loop.cond() != kNoBuffer) {
    NANORT_RETURN_IF_ERROR(Scalar(t, thunk, "condition", loop.cond(), 1, false));
  }
  NANORT_RETURN_IF_ERROR(Scalar(t, thunk, "counter", loop.counter(), 8, true));
  NANORT_RETURN_IF_ERROR(defined_.Save(level, status));
  NANORT_RETURN_IF_ERROR(Sequence(loop.body(), level + 1));
  defined_.Restore(level);
  return NANORT_OK;
}

#endif

nanort_status_code CheckThunks(const fb::Program& program, const fb::Entry& entry,
                               const nanort_model_def& def, nanort_allocator allocator,
                               ProgramTotals* totals, nanort_status* status) {
  const auto* buffers = program.buffers();
  const uoffset_t num_buffers = SizeOf(buffers);
  DefinednessTracker defined(program, entry, allocator);
  NANORT_RETURN_IF_ERROR(defined.Init(status));
#if NANORT_WITH_CONTROL_FLOW
  ControlFlowCheck walk(program, def, defined, totals, status);
  return CheckSequence(program, def, buffers, num_buffers, defined, totals, status, entry.thunks(),
                       walk, 0);
#else
  return CheckSequence(program, def, buffers, num_buffers, defined, totals, status, entry.thunks());
#endif
}

}  // namespace

bool TensorByteSize(fb::DType dtype, const flatbuffers::Vector<int64_t>* shape,
                    uint64_t* out_size) {
  // size_t, not uint64_t: a tensor this machine cannot address is refused
  // here, and on 32-bit targets the checks cost half the code.
  size_t size = nanort_dtype_size(static_cast<nanort_dtype>(dtype));
  if (size == 0) return false;
  for (uoffset_t d = 0; d < SizeOf(shape); ++d) {
    // The vector's elements need only be 4-byte aligned in a hostile buffer.
    const int64_t dim = LoadUnaligned<int64_t>(shape->Data() + d * sizeof(int64_t));
    if (dim < 0 || static_cast<uint64_t>(dim) > SIZE_MAX ||
        __builtin_mul_overflow(size, static_cast<size_t>(dim), &size)) {
      return false;
    }
  }
  *out_size = size;
  return true;
}

nanort_status_code VerifyProgramBuffer(const uint8_t* bytes, uint64_t size,
                                       const fb::Program** out_program, nanort_status* status) {
  NANORT_CHECK_OR_RETURN(size < FLATBUFFERS_MAX_BUFFER_SIZE, status, NANORT_INVALID_PROGRAM,
                         "program of %llu bytes exceeds the flatbuffers limit",
                         static_cast<unsigned long long>(size));
  // Messages only: the schema check below refuses these too, and short
  // builds leave them to it.
  if (kFullMessages) {
    NANORT_CHECK_OR_RETURN(size >= 8, status, NANORT_INVALID_PROGRAM,
                           "program of %llu bytes is too short to be a nanort program",
                           static_cast<unsigned long long>(size));
    if (!BytesEqual(bytes + 4, fb::ProgramIdentifier(), 4)) {
      char id[5] = "";
      for (int i = 0; i < 4; ++i) {
        const uint8_t c = bytes[4 + i];
        id[i] = (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
      }
      return NANORT_FAIL(status, NANORT_INVALID_PROGRAM,
                         "not a nanort program: file identifier '%s', expected '%s'", id,
                         fb::ProgramIdentifier());
    }
  }

  // The version is read on the way, with only the root table's framing
  // verified: a newer major may not verify against this schema, and deserves
  // to be called newer rather than corrupt.
  schema::FormatVersion version;
  const bool verified = schema::VerifyProgramFlatbuffer(bytes, static_cast<size_t>(size), &version,
                                                        static_cast<size_t>(size));
  if (version.read) {
    NANORT_CHECK_OR_RETURN(
        version.major <= NANORT_FORMAT_MAJOR, status, NANORT_UNSUPPORTED_VERSION,
        "program format %" PRIu32 ".%" PRIu32 ", this runtime reads %" PRIu32 ".x", version.major,
        version.minor, static_cast<uint32_t>(NANORT_FORMAT_MAJOR));
    NANORT_CHECK_OR_RETURN(version.major == NANORT_FORMAT_MAJOR, status, NANORT_INVALID_PROGRAM,
                           "program format %" PRIu32 ".%" PRIu32
                           " is not one nanoc writes (this runtime reads "
                           "%" PRIu32 ".x)",
                           version.major, version.minor,
                           static_cast<uint32_t>(NANORT_FORMAT_MAJOR));
  }
  NANORT_CHECK_OR_RETURN(
      verified, status, NANORT_INVALID_PROGRAM,
      "program of %llu bytes fails flatbuffers verification (%s)",
      static_cast<unsigned long long>(size),
      version.shared ? "names some table or vector from many places" : "corrupt or truncated");
  *out_program = fb::GetProgram(bytes);
  return NANORT_OK;
}

nanort_status_code VerifyProgramInvariants(const fb::Program& program, const nanort_model_def& def,
                                           nanort_allocator allocator, ProgramTotals* totals,
                                           nanort_status* status) {
  *totals = ProgramTotals();
  NANORT_CHECK_OR_RETURN(program.kernel_abi() <= NANORT_KERNEL_ABI_VERSION, status,
                         NANORT_UNSUPPORTED_VERSION,
                         "program uses kernel ABI %" PRIu32 ", this runtime calls ABI %" PRIu32,
                         program.kernel_abi(), static_cast<uint32_t>(NANORT_KERNEL_ABI_VERSION));
  NANORT_CHECK_OR_RETURN(program.kernel_abi() == def.kernel_abi, status, NANORT_INVALID_PROGRAM,
                         "program says kernel ABI %" PRIu32 ", its object file says %" PRIu32,
                         program.kernel_abi(), def.kernel_abi);
  NANORT_CHECK_OR_RETURN(program.target() != nullptr, status, NANORT_INVALID_PROGRAM,
                         "program has no target record");
  NANORT_CHECK_OR_RETURN(program.constants_size() == def.constants_size, status,
                         NANORT_INVALID_PROGRAM,
                         "program expects %llu bytes of constants, its object file has %llu",
                         static_cast<unsigned long long>(program.constants_size()),
                         static_cast<unsigned long long>(def.constants_size));
  NANORT_CHECK_OR_RETURN(def.constants_size == 0 || def.constants != nullptr, status,
                         NANORT_INVALID_PROGRAM, "model def has %llu bytes of constants at NULL",
                         static_cast<unsigned long long>(def.constants_size));
  // nanoc aligns the arena to 64 bytes; more than a page is never needed and
  // would let a program make session creation ask for absurd alignments.
  NANORT_CHECK_OR_RETURN(program.arena_alignment() - 1u < kMaxArenaAlignment &&
                             IsPowerOfTwo(program.arena_alignment()),
                         status, NANORT_INVALID_PROGRAM,
                         "arena alignment %" PRIu32 " is not a power of two up to %" PRIu32,
                         program.arena_alignment(), kMaxArenaAlignment);
  uint64_t rounded_arena;
  NANORT_CHECK_OR_RETURN(AlignUp(program.arena_size(), program.arena_alignment(), &rounded_arena) &&
                             rounded_arena <= kMaxArenaBytes,
                         status, NANORT_INVALID_PROGRAM,
                         "arena of %llu bytes is too large for this machine",
                         static_cast<unsigned long long>(program.arena_size()));
  totals->arena_rounded_size = static_cast<size_t>(rounded_arena);

  const auto* entries = program.entries();
  NANORT_CHECK_OR_RETURN(SizeOf(entries) == 1, status, NANORT_INVALID_PROGRAM,
                         "program has %" PRIu32 " entries: nanort runs programs of one",
                         SizeOf(entries));
  const fb::Entry& entry = *entries->Get(0);

  size_t scratch = 0;
  NANORT_RETURN_IF_ERROR(CheckKernels(program, def, &scratch, status));
  if (scratch != 0) {
    // Worker 0's scratch follows the buffers, 64-byte aligned: at most
    // SIZE_MAX / 2 + 2 * 4096 + 1 GiB bytes in all, which size_t holds.
    const size_t align = program.arena_alignment();
    totals->scratch_offset = (totals->arena_rounded_size + 63) & ~size_t{63};
    totals->scratch_size = (scratch + 63) & ~size_t{63};
    totals->arena_rounded_size =
        (totals->scratch_offset + totals->scratch_size + align - 1) & ~(align - 1);
  }
  NANORT_RETURN_IF_ERROR(
      CheckTensors(program, entry.inputs(), fb::BufferKind::Input, "input", totals, status));
  NANORT_RETURN_IF_ERROR(
      CheckTensors(program, entry.outputs(), fb::BufferKind::Output, "output", totals, status));
#if NANORT_WITH_CUDA
  if (const fb::GpuModule* gpu = program.gpu()) {
    NANORT_RETURN_IF_ERROR(CheckGpuModule(*gpu, status));
  }
#else
  // This build's reader skipped the GPU module (program_schema.h) but
  // verified gpu_target, which every program with a GPU part carries and
  // whose CudaGpu device CheckTargetRunsHere refuses as UNAVAILABLE (its
  // message is the bare-metal core's one text about GPUs). A GPU module
  // without it is never read, and its thunks are unknown kinds.
  if (const fb::Target* gpu = program.gpu_target()) {
    NANORT_RETURN_IF_ERROR(CheckTargetRunsHere(gpu, status));
  }
#endif
  NANORT_RETURN_IF_ERROR(CheckBuffers(program, entry, def, status));
  return CheckThunks(program, entry, def, allocator, totals, status);
}

}  // namespace nanort
