#include "program_schema.h"

#include "bytes.h"

namespace nanort::schema {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "flatbuffers are little-endian and this reader reads them in place");

constexpr uint8_t Field(FieldKind kind, TableId table) {
  return static_cast<uint8_t>(kind | (table << 4));
}

// schema/program.fbs, table by table, field by field in id order. A field
// added to the schema must be added here (the reflection test fails until it
// is); an older runtime skips fields past the end of its row, as flatbuffers'
// generated code does.
// clang-format off: one row per table, and the GPU rows only with GPU offload.
constexpr uint8_t kFields[] = {
    // Program
    kU32,
    kU32,
    kU32,
    kString,
    Field(kTable, kTarget),
    Field(kVecTable, kBuffer),
    Field(kVecTable, kKernel),
    Field(kVecTable, kEntry),
    kU64,
    kU32,
    kU64,
    Field(kVecTable, kTarget),
#if NANORT_SCHEMA_GPU
    Field(kTable, kGpuModule),
#else
    kU8,  // gpu: present or not, never read (program_verifier.cc)
#endif
    Field(kTable, kTarget),
    // Target: device, triple, cpu, features, data_layout, sm, ptx_isa
    kU8,
    kString,
    kString,
    kVecString,
    kString,
    kU32,
    kU32,
    // Buffer: kind, index, offset, size, alignment, name
    kU8,
    kU32,
    kU64,
    kU64,
    kU32,
    kString,
    // KernelThunk: kernel, args, task_count, num_outputs
    kU32,
    kVec4,
    kU64,
    kU32,
    // CopyThunk: src, dst, size
    kU32,
    kU32,
    kU64,
#if NANORT_SCHEMA_GPU_THUNKS
    // GpuLaunchThunk: kernel, args, num_outputs
    kU32,
    kVec4,
    kU32,
    // GpuCopyThunk: src, dst, size
    kU32,
    kU32,
    kU64,
#endif
#if NANORT_SCHEMA_CONTROL_FLOW
    // IfThunk: cond, then_thunks, else_thunks, outputs
    kU32,
    Field(kVecTable, kThunk),
    Field(kVecTable, kThunk),
    kVec4,
    // LoopThunk: trip_count, cond, counter, max_trips, body
    kU32,
    kU32,
    kU32,
    kU64,
    Field(kVecTable, kThunk),
#endif
    // Thunk: kind_type, kind, node, op
    kU8,
    Field(kUnion, kKernelThunk),
    kString,
    kString,
    // Tensor: name, dtype, shape, buffer
    kString,
    kU8,
    kVec8,
    kU32,
    // Entry: name, inputs, outputs, thunks
    kString,
    Field(kVecTable, kTensor),
    Field(kVecTable, kTensor),
    Field(kVecTable, kThunk),
    // Kernel: name, device
    kString,
    kU8,
#if NANORT_SCHEMA_GPU
    // GpuImage: format, sm, variant, ptx_isa, data
    kU8,
    kU32,
    kString,
    kU32,
    kVec1,
    // GpuKernel: name, arg_bytes, num_outputs, grid, block, shared_bytes
    kString,
    kVec8,
    kU32,
    kVec4,
    kVec4,
    kU32,
    // GpuModule: images, kernels, device_arena_size, device_arena_alignment
    Field(kVecTable, kGpuImage),
    Field(kVecTable, kGpuKernel),
    kU64,
    kU32,
#endif
};
// Where each table's row starts in kFields; the last entry is its end.
// Rows: Program 14, Target 7, Buffer 6, KernelThunk 4, CopyThunk 3,
// GpuLaunchThunk 3, GpuCopyThunk 3, IfThunk 4, LoopThunk 5, Thunk 4,
// Tensor 4, Entry 4, Kernel 2, GpuImage 5, GpuKernel 6, GpuModule 4.
#if NANORT_SCHEMA_GPU && NANORT_SCHEMA_CONTROL_FLOW
constexpr uint8_t kFirstField[kTableCount + 1] = {0,  14, 21, 27, 31, 34, 37, 40, 44,
                                                  49, 53, 57, 61, 63, 68, 74, 78};
#elif NANORT_SCHEMA_CONTROL_FLOW
constexpr uint8_t kFirstField[kTableCount + 1] = {0,  14, 21, 27, 31, 34, 37,
                                                  40, 44, 49, 53, 57, 61, 63};
#elif NANORT_SCHEMA_GPU
constexpr uint8_t kFirstField[kTableCount + 1] = {0,  14, 21, 27, 31, 34, 37, 40,
                                                  44, 48, 52, 54, 59, 65, 69};
#else
constexpr uint8_t kFirstField[kTableCount + 1] = {0, 14, 21, 27, 31, 34, 38, 42, 46, 48};
#endif
// clang-format on
static_assert(kFirstField[kTableCount] == sizeof(kFields), "rows and fields differ");

// flatbuffers::Verifier's limits: buffers under 2 GiB, at most a million
// tables verified (a vector may name one table many times), nested at most
// kMaxTableDepth deep. Without control flow the depth limit cannot be
// reached (the schema nests four tables deep) and is not tracked; with it,
// nested thunk sequences can, and the walk's recursion is bounded by it.
constexpr size_t kMaxBufferSize = 0x7fffffff;
constexpr uint32_t kMaxTables = 1000000;

class Walker {
 public:
  Walker(const uint8_t* bytes, size_t size, size_t budget)
      : buf_(bytes), size_(size), budget_(budget) {}

  // Verifier::VerifyBuffer: minimum size, identifier, root offset, root table.
  bool Buffer() {
    if (size_ >= kMaxBufferSize || size_ < 12 || !BytesEqual(buf_ + 4, "NRTP", 4)) return false;
    const size_t root = Offset(0);
    return root != 0 && Table(kProgram, root);
  }

  // The format version read on the way (whatever Buffer() answered).
  const FormatVersion& version() const { return version_; }

 private:
  // Verifier::Verify(elem, len).
  bool In(size_t pos, size_t length) const { return length < size_ && pos <= size_ - length; }
  // Verifier::Verify<T>(elem): aligned to its size within the buffer, inside.
  bool Scalar(size_t pos, size_t length) const {
    return (pos & (length - 1)) == 0 && In(pos, length);
  }
  uint32_t U32(size_t pos) const { return LoadUnaligned<uint32_t>(buf_ + pos); }
  uint16_t U16(size_t pos) const { return LoadUnaligned<uint16_t>(buf_ + pos); }

  // Verifier::VerifyOffset: where the offset at `pos` points, or 0.
  size_t Offset(size_t pos) const {
    if (!Scalar(pos, 4)) return 0;
    const uint32_t offset = U32(pos);
    if (offset == 0 || offset > kMaxBufferSize || !In(pos + offset, 1)) return 0;
    return pos + offset;
  }

  // Adds `bytes` to what the walk has reached; false past the budget. Each
  // charge is under 2^31 and the total stops past the budget (< 2^31 when it
  // is the buffer's size), so size_t holds it on 32-bit targets too.
  bool Charge(size_t bytes) {
    charged_ += bytes;
    if (charged_ <= budget_) return true;
    version_.shared = true;
    return false;
  }

  // Verifier::VerifyVectorOrString; *end is the byte after the elements.
  // Strings (element_size 1) are not charged: checking one costs O(1).
  bool Vector(size_t pos, size_t element_size, uint32_t* count, size_t* end) {
    if (!Scalar(pos, 4)) return false;
    *count = U32(pos);
    if (*count >= kMaxBufferSize / element_size) return false;
    const size_t bytes = 4 + element_size * *count;
    *end = pos + bytes;
    return In(pos, bytes) && (element_size == 1 || Charge(bytes));
  }

  // Verifier::VerifyString: a vector of bytes followed by a 0.
  bool String(size_t pos) {
    uint32_t count;
    size_t end;
    return Vector(pos, 1, &count, &end) && In(end, 1) && buf_[end] == 0;
  }

  // Verifier::VerifyTableStart; *vtable and *vtable_size locate the vtable.
  bool TableStart(size_t pos, size_t* vtable, size_t* vtable_size) {
    if (!Scalar(pos, 4)) return false;
    const int32_t to_vtable = LoadUnaligned<int32_t>(buf_ + pos);
    *vtable = pos - static_cast<size_t>(to_vtable);
#if NANORT_SCHEMA_CONTROL_FLOW
    // Verifier::VerifyComplexity: EndTable (the end of Table) undoes the
    // depth; a failure ends the walk.
    if (++depth_ > kMaxTableDepth) return false;
#endif
    if (++tables_ > kMaxTables || !Charge(4) || !Scalar(*vtable, 2)) return false;
    *vtable_size = U16(*vtable);
    return (*vtable_size & 1) == 0 && In(*vtable, *vtable_size);
  }

  // Table::GetOptionalFieldOffset for field `id`: 0 when absent.
  size_t FieldOffset(size_t vtable, size_t vtable_size, size_t id) const {
    const size_t slot = 4 + 2 * id;
    return slot < vtable_size ? U16(vtable + slot) : 0;
  }

  // The generated T::Verify, for the table of kind `table` at `pos`.
  bool Table(unsigned table, size_t pos) {
    size_t vtable, vtable_size;
    if (!TableStart(pos, &vtable, &vtable_size)) return false;
    const unsigned first = kFirstField[table];
    for (unsigned id = 0; id < kFirstField[table + 1] - first; ++id) {
      if (table == kProgram && id == 2) version_.read = true;
      const size_t offset = FieldOffset(vtable, vtable_size, id);
      if (offset == 0) continue;
      const size_t at = pos + offset;
      const unsigned kind = kFields[first + id] & 15, sub = kFields[first + id] >> 4;
      if (kind <= kU64) {
        if (!Scalar(at, kind == kU8 ? 1 : kind == kU32 ? 4 : 8)) return false;
        if (table == kProgram && id < 2) (id == 0 ? version_.major : version_.minor) = U32(at);
        continue;
      }
      const size_t target = Offset(at);
      if (target == 0) return false;
      uint32_t count;
      size_t end;
      bool ok = true;
      switch (kind) {
        case kString:
          ok = String(target);
          break;
        case kVec4:
        case kVec8:
          ok = Vector(target, kind == kVec4 ? 4 : 8, &count, &end);
          break;
#if NANORT_SCHEMA_GPU
        case kVec1:
          // Charged like every other vector (Vector charges only wider ones).
          ok = Vector(target, 1, &count, &end) && Charge(end - target);
          break;
#endif
        case kTable:
          ok = Table(sub, target);
          break;
        case kVecString:
        case kVecTable:
          ok = Vector(target, 4, &count, &end);
          for (uint32_t i = 0; ok && i < count; ++i) {
            const size_t element = target + 4 + size_t{4} * i;
            const size_t item = element + U32(element);
            ok = kind == kVecString ? String(item) : Table(sub, item);
          }
          break;
        default: {  // kUnion: its type is the field before, already verified
          const size_t type_offset = FieldOffset(vtable, vtable_size, id - 1);
          const unsigned type = type_offset != 0 ? buf_[pos + type_offset] : 0;
          // NONE, and members this runtime does not know, verify as true
          // (flatbuffers' forward compatibility); CheckThunks refuses them.
          if (type != 0 && type <= kUnionMembers) ok = Table(sub + type - 1, target);
          break;
        }
      }
      if (!ok) return false;
    }
#if NANORT_SCHEMA_CONTROL_FLOW
    --depth_;
#endif
    return true;
  }

  const uint8_t* buf_;
  size_t size_;
  size_t budget_;
  size_t charged_ = 0;
  uint32_t tables_ = 0;
#if NANORT_SCHEMA_CONTROL_FLOW
  uint32_t depth_ = 0;
#endif
  FormatVersion version_;
};

}  // namespace

const uint8_t* TableFields(TableId table, size_t* count) {
  *count = kFirstField[table + 1] - kFirstField[table];
  return kFields + kFirstField[table];
}

bool VerifyProgramFlatbuffer(const uint8_t* bytes, size_t size, FormatVersion* version,
                             size_t budget) {
  Walker walker(bytes, size, budget);
  const bool ok = walker.Buffer();
  if (version != nullptr) *version = walker.version();
  return ok;
}

}  // namespace nanort::schema
