// nanort/src/program_schema.cc verifies programs with a table of field
// descriptors instead of flatc's generated VerifyProgramBuffer, and claims to
// accept exactly the buffers that flatbuffers accepts. These tests hold it to
// that: the descriptors must say what schema/program.fbs says (read from its
// reflection data, program.bfbs), and both verifiers must give the same answer,
// and read the same format version, on hundreds of thousands of damaged
// programs (a new random seed each run; NANORT_FUZZ_SEED=N replays one).
#include "program_schema.h"

#include <flatbuffers/reflection_generated.h>
#include <gtest/gtest.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fstream>
#include <iomanip>
#include <iterator>
#include <memory>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_program.h"

namespace nanort::test {
namespace {

using schema::FieldKind;
using schema::TableId;

// The schema's table names, in TableId order.
constexpr const char* kTableNames[] = {
    "nanort.fb.Program",        "nanort.fb.Target",       "nanort.fb.Buffer",
    "nanort.fb.KernelThunk",    "nanort.fb.CopyThunk",
#if NANORT_SCHEMA_GPU_THUNKS
    "nanort.fb.GpuLaunchThunk", "nanort.fb.GpuCopyThunk",
#endif
#if NANORT_SCHEMA_CONTROL_FLOW
    "nanort.fb.IfThunk",        "nanort.fb.LoopThunk",
#endif
    "nanort.fb.Thunk",          "nanort.fb.Tensor",       "nanort.fb.Entry",
    "nanort.fb.Kernel",
#if NANORT_SCHEMA_GPU
    "nanort.fb.GpuImage",       "nanort.fb.GpuKernel",    "nanort.fb.GpuModule",
#endif
};

// A build without GPU offload reads programs as format 1.2 did (the GPU
// tables and fields skipped, program_schema.h), one without control flow
// skips IfThunk and LoopThunk: their descriptors are not the schema's, and
// they may accept damage inside those tables that flatbuffers refuses (load
// then refuses the program by its GPU module's vtable entry, or the thunk's
// kind). The default build, with both, holds the descriptors to the schema.
#if NANORT_SCHEMA_FULL
#define SKIP_WITHOUT_GPU_SCHEMA() \
  do {                            \
  } while (0)
#else
#define SKIP_WITHOUT_GPU_SCHEMA()                                                            \
  GTEST_SKIP() << "nanort built without NANORT_WITH_CUDA or NANORT_WITH_CONTROL_FLOW reads " \
                  "only part of the schema"
#endif
static_assert(std::size(kTableNames) == schema::kTableCount, "one name per TableId");
static_assert(schema::kTableCount <= 16, "a table id must fit a descriptor's high nibble");
#if NANORT_SCHEMA_FULL
static_assert(schema::kTableCount == 16, "the whole schema: every table id of 4 bits in use");
#endif

uint8_t Descriptor(FieldKind kind, unsigned table = 0) {
  return static_cast<uint8_t>(kind | (table << 4));
}

std::string Hex(uint8_t byte) {
  static const char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 15];
}

// ---- Descriptors equal the schema ----

class ProgramSchemaDescriptors : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream file(NANORT_TEST_PROGRAM_BFBS, std::ios::binary);
    ASSERT_TRUE(file) << "cannot open " << NANORT_TEST_PROGRAM_BFBS;
    bytes_.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    flatbuffers::Verifier verifier(bytes_.data(), bytes_.size());
    ASSERT_TRUE(reflection::VerifySchemaBuffer(verifier)) << NANORT_TEST_PROGRAM_BFBS;
    schema_ = reflection::GetSchema(bytes_.data());
  }

  // The TableId of the schema's object number `index`, or -1.
  int TableOf(int32_t index) const {
    if (index < 0 || static_cast<uint32_t>(index) >= schema_->objects()->size()) return -1;
    const std::string name = schema_->objects()->Get(index)->name()->str();
    for (unsigned id = 0; id < schema::kTableCount; ++id) {
      if (name == kTableNames[id]) return static_cast<int>(id);
    }
    return -1;
  }

  // Bytes of a scalar the descriptors express (1, 4 or 8), or 0 for any
  // other type. Short/UShort (2 bytes) are not expressible.
  static int ScalarBytes(reflection::BaseType type) {
    switch (type) {
      case reflection::Bool:
      case reflection::Byte:
      case reflection::UByte:
        return 1;
      case reflection::Int:
      case reflection::UInt:
      case reflection::Float:
        return 4;
      case reflection::Long:
      case reflection::ULong:
      case reflection::Double:
        return 8;
      default:
        return 0;
    }
  }

  // The descriptor that `field` must have (`fields_by_id`: its table's fields
  // by id), or false with *why set for a field the descriptors cannot express.
  bool ExpectedDescriptor(const reflection::Field& field,
                          const std::vector<const reflection::Field*>& fields_by_id,
                          uint8_t* expected, std::string* why) const {
    if (field.deprecated()) {
      *why = "is deprecated (the generated verifier skips it; a descriptor cannot)";
      return false;
    }
    if (field.required()) {
      *why = "is required (the descriptors have no required fields)";
      return false;
    }
    if (const auto* attributes = field.attributes()) {
      for (const reflection::KeyValue* attribute : *attributes) {
        const std::string key = attribute->key()->str();
        if (key == "nested_flatbuffer" || key == "flexbuffer") {
          *why = "has attribute " + key + " (verified as a nested buffer by flatbuffers)";
          return false;
        }
      }
    }
    const reflection::Type& type = *field.type();
    const int scalar_bytes =
        type.base_type() == reflection::UType ? 1 : ScalarBytes(type.base_type());
    if (scalar_bytes != 0) {
      *expected = Descriptor(scalar_bytes == 1   ? schema::kU8
                             : scalar_bytes == 4 ? schema::kU32
                                                 : schema::kU64);
      return true;
    }
    switch (type.base_type()) {
      case reflection::String:
        *expected = Descriptor(schema::kString);
        return true;
      case reflection::Obj:
        return ExpectedTable(type.index(), schema::kTable, expected, why);
      case reflection::Vector:
        if (type.element() == reflection::String) {
          *expected = Descriptor(schema::kVecString);
          return true;
        }
        if (type.element() == reflection::Obj) {
          return ExpectedTable(type.index(), schema::kVecTable, expected, why);
        }
        if (ScalarBytes(type.element()) != 0) {
          const int bytes = ScalarBytes(type.element());
          *expected = Descriptor(bytes == 1   ? schema::kVec1
                                 : bytes == 4 ? schema::kVec4
                                              : schema::kVec8);
          return true;
        }
        *why = std::string("is a vector of ") + reflection::EnumNameBaseType(type.element()) +
               ", which the descriptors cannot express";
        return false;
      case reflection::Union:
        return ExpectedUnion(field, fields_by_id, expected, why);
      default:
        *why = std::string("has type ") + reflection::EnumNameBaseType(type.base_type()) +
               ", which the descriptors cannot express";
        return false;
    }
  }

  bool ExpectedTable(int32_t object, FieldKind kind, uint8_t* expected, std::string* why) const {
    const int table = TableOf(object);
    if (table < 0) {
      *why = "refers to object " + std::to_string(object) + ", which is not one of kTableNames";
      return false;
    }
    if (schema_->objects()->Get(object)->is_struct()) {
      *why = "refers to a struct, which the descriptors cannot express";
      return false;
    }
    *expected = Descriptor(kind, static_cast<unsigned>(table));
    return true;
  }

  // A union value is kUnion with its first member's table; its members, with
  // values 1..kUnionMembers, follow in TableId order; its type is the field
  // before it (program_schema.cc reads the type from id - 1).
  bool ExpectedUnion(const reflection::Field& field,
                     const std::vector<const reflection::Field*>& fields_by_id, uint8_t* expected,
                     std::string* why) const {
    const int32_t index = field.type()->index();
    if (index < 0 || static_cast<uint32_t>(index) >= schema_->enums()->size()) {
      *why = "is a union with no enum";
      return false;
    }
    const reflection::Field* type_field = field.id() > 0 ? fields_by_id[field.id() - 1] : nullptr;
    if (type_field == nullptr || type_field->type()->base_type() != reflection::UType ||
        type_field->type()->index() != index) {
      *why = "is a union whose type field is not the field before it";
      return false;
    }
    const reflection::Enum& members = *schema_->enums()->Get(index);
    int first_table = -1;
    int64_t count = 0;
    for (const reflection::EnumVal* member : *members.values()) {
      if (member->value() == 0) continue;  // NONE
      ++count;
      const reflection::Type* member_type = member->union_type();
      if (member->value() != count || member_type == nullptr ||
          member_type->base_type() != reflection::Obj) {
        *why = "is a union whose member " + member->name()->str() + " is not table number " +
               std::to_string(count);
        return false;
      }
      const int table = TableOf(member_type->index());
      if (count == 1) first_table = table;
      if (table < 0 || table != first_table + count - 1) {
        *why = "is a union whose member " + member->name()->str() +
               " does not follow the one before it in TableId order";
        return false;
      }
    }
    if (count != schema::kUnionMembers) {
      *why = "is a union of " + std::to_string(count) + " members; kUnionMembers is " +
             std::to_string(schema::kUnionMembers);
      return false;
    }
    *expected = Descriptor(schema::kUnion, static_cast<unsigned>(first_table));
    return true;
  }

  std::vector<uint8_t> bytes_;
  const reflection::Schema* schema_ = nullptr;
};

TEST_F(ProgramSchemaDescriptors, RootIsProgramWithIdentifierNRTP) {
  ASSERT_NE(schema_->root_table(), nullptr);
  EXPECT_EQ(schema_->root_table()->name()->str(), kTableNames[schema::kProgram]);
  ASSERT_NE(schema_->file_ident(), nullptr);
  EXPECT_EQ(schema_->file_ident()->str(), fb::ProgramIdentifier());
  EXPECT_STREQ(fb::ProgramIdentifier(), "NRTP");
}

TEST_F(ProgramSchemaDescriptors, EveryTableOfTheSchemaIsATableId) {
  SKIP_WITHOUT_GPU_SCHEMA();
  EXPECT_EQ(schema_->objects()->size(), schema::kTableCount);
  std::vector<int> seen(schema::kTableCount, 0);
  for (uint32_t i = 0; i < schema_->objects()->size(); ++i) {
    const reflection::Object& object = *schema_->objects()->Get(i);
    const int table = TableOf(static_cast<int32_t>(i));
    EXPECT_GE(table, 0) << object.name()->str() << " is not in kTableNames";
    EXPECT_FALSE(object.is_struct()) << object.name()->str() << " is a struct";
    if (table >= 0) ++seen[table];
  }
  for (unsigned id = 0; id < schema::kTableCount; ++id) {
    EXPECT_EQ(seen[id], 1) << kTableNames[id] << " (TableId " << id << ") in the schema";
  }
}

TEST_F(ProgramSchemaDescriptors, EveryFieldHasTheDescriptorItsSchemaTypeImplies) {
  SKIP_WITHOUT_GPU_SCHEMA();
  for (uint32_t i = 0; i < schema_->objects()->size(); ++i) {
    const reflection::Object& object = *schema_->objects()->Get(i);
    const std::string table_name = object.name()->str();
    const int table = TableOf(static_cast<int32_t>(i));
    if (table < 0) {
      ADD_FAILURE() << table_name << " is not in kTableNames";
      continue;
    }
    // Field ids must be 0..n-1, each once: descriptors are indexed by id.
    std::vector<const reflection::Field*> by_id;
    for (const reflection::Field* field : *object.fields()) {
      if (field->id() >= by_id.size()) by_id.resize(field->id() + 1u, nullptr);
      EXPECT_EQ(by_id[field->id()], nullptr)
          << table_name << ": two fields with id " << field->id();
      by_id[field->id()] = field;
    }
    size_t count = 0;
    const uint8_t* descriptors = schema::TableFields(static_cast<TableId>(table), &count);
    EXPECT_EQ(count, by_id.size()) << table_name << ": descriptors vs fields in the schema";
    for (size_t id = 0; id < by_id.size(); ++id) {
      const reflection::Field* field = by_id[id];
      if (field == nullptr) {
        ADD_FAILURE() << table_name << ": no field with id " << id;
        continue;
      }
      const std::string where =
          table_name + "." + field->name()->str() + " (id " + std::to_string(id) + ")";
      uint8_t expected = 0;
      std::string why;
      if (!ExpectedDescriptor(*field, by_id, &expected, &why)) {
        ADD_FAILURE() << where << " " << why;
        continue;
      }
      if (id >= count) {
        ADD_FAILURE() << where << " has no descriptor; the schema implies " << Hex(expected);
        continue;
      }
      EXPECT_EQ(Hex(descriptors[id]), Hex(expected))
          << where << ": descriptor vs what the schema implies";
    }
  }
}

// ---- Same answers as flatbuffers ----

// `size` bytes on the heap, 8-aligned and exactly sized, so that a sanitizer
// sees any read past the end.
struct ExactBuffer {
  ExactBuffer(const uint8_t* data, size_t size)
      : bytes(static_cast<uint8_t*>(::operator new (size, std::align_val_t{8}))), size(size) {
    if (size != 0) memcpy(bytes.get(), data, size);
  }
  struct Free {
    void operator()(uint8_t* p) const { ::operator delete (p, std::align_val_t{8}); }
  };
  std::unique_ptr<uint8_t, Free> bytes;
  size_t size;
};

// By flatbuffers' rules alone (unbounded): what the differential tests compare.
bool OursAccepts(const uint8_t* bytes, size_t size) {
  return schema::VerifyProgramFlatbuffer(bytes, size, nullptr, SIZE_MAX);
}

bool FlatbuffersAccepts(const uint8_t* bytes, size_t size) {
  flatbuffers::Verifier verifier(bytes, size);
  return fb::VerifyProgramBuffer(verifier);
}

// The format version as flatbuffers sees it: read when VerifyBuffer's framing
// (size, identifier, root offset), the root's table start and its first two
// fields verify, whatever the rest of the buffer holds.
schema::FormatVersion FlatbuffersVersion(const uint8_t* bytes, size_t size) {
  schema::FormatVersion version;
  flatbuffers::Verifier verifier(bytes, size);
  constexpr size_t kMinBufferSize = 12;  // FLATBUFFERS_MIN_BUFFER_SIZE
  if (size < kMinBufferSize || !flatbuffers::BufferHasIdentifier(bytes, fb::ProgramIdentifier())) {
    return version;
  }
  const flatbuffers::uoffset_t root = verifier.VerifyOffset(0);
  if (root == 0) return version;
  // fb::Program hides its flatbuffers::Table base; the bytes are the same.
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(bytes + root);
  if (!table->VerifyTableStart(verifier) ||
      !table->VerifyField<uint32_t>(verifier, fb::Program::VT_FORMAT_MAJOR, 4) ||
      !table->VerifyField<uint32_t>(verifier, fb::Program::VT_FORMAT_MINOR, 4)) {
    return version;
  }
  version.read = true;
  version.major = table->GetField<uint32_t>(fb::Program::VT_FORMAT_MAJOR, 0);
  version.minor = table->GetField<uint32_t>(fb::Program::VT_FORMAT_MINOR, 0);
  return version;
}

// What a verifier says of a buffer: whether it verifies, and the version.
struct Answer {
  bool accepted;
  schema::FormatVersion version;

  bool operator==(const Answer& other) const {
    return accepted == other.accepted && version.read == other.version.read &&
           (!version.read ||
            (version.major == other.version.major && version.minor == other.version.minor));
  }
  std::string Describe() const {
    return std::string(accepted ? "accepted" : "rejected") + ", version " +
           (version.read ? std::to_string(version.major) + "." + std::to_string(version.minor)
                         : std::string("not read"));
  }
};

Answer OurAnswer(const uint8_t* bytes, size_t size) {
  Answer answer;
  answer.accepted = schema::VerifyProgramFlatbuffer(bytes, size, &answer.version, SIZE_MAX);
  return answer;
}

Answer FlatbuffersAnswer(const uint8_t* bytes, size_t size) {
  return {FlatbuffersAccepts(bytes, size), FlatbuffersVersion(bytes, size)};
}

std::string HexDump(const uint8_t* bytes, size_t size) {
  std::ostringstream out;
  for (size_t i = 0; i < size; ++i) {
    if (i % 32 == 0) out << "\n  " << std::setw(5) << i << ":";
    out << (i % 4 == 0 ? " " : "") << Hex(bytes[i]).substr(2);
  }
  return out.str();
}

struct NamedProgram {
  std::string name;
  std::vector<uint8_t> bytes;
  uint32_t format_major;
  uint32_t format_minor;
};

// Every field of every table present (scalars at their defaults too, with
// ForceDefaults), so that every descriptor meets data; thunks of each kind,
// NONE, and an unknown kind.
NamedProgram EveryFieldProgram() {
  flatbuffers::FlatBufferBuilder b;
  b.ForceDefaults(true);
  auto target = [&](fb::DeviceKind device, const char* cpu) {
    return fb::CreateTarget(b, device, b.CreateString("nvptx64-nvidia-cuda"), b.CreateString(cpu),
                            b.CreateVectorOfStrings(std::vector<std::string>{"ptx75", "sm_80"}),
                            b.CreateString("e-i64:64-v16:16"), 80, 75);
  };
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers = {
      fb::CreateBuffer(b, fb::BufferKind::Input, 0, 0, 16, 16, b.CreateString("x")),
      fb::CreateBuffer(b, fb::BufferKind::Arena, 3, 128, 4096, 64, b.CreateString("t")),
  };
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels = {
      fb::CreateKernel(b, b.CreateString("k0"), fb::DeviceKind::Cpu),
      fb::CreateKernel(b, b.CreateString("k1"), fb::DeviceKind::CudaGpu),
  };
  auto tensor = [&](const char* name, fb::DType dtype, uint32_t buffer) {
    return fb::CreateTensor(b, b.CreateString(name), dtype,
                            b.CreateVector(std::vector<int64_t>{1, 4, -1}), buffer);
  };
  auto thunk = [&](fb::ThunkKind kind, flatbuffers::Offset<void> value) {
    return fb::CreateThunk(b, kind, value, b.CreateString("node"), b.CreateString("Op"));
  };
  std::vector<flatbuffers::Offset<fb::Thunk>> thunks = {
      thunk(fb::ThunkKind::KernelThunk,
            fb::CreateKernelThunk(b, 1, b.CreateVector(std::vector<uint32_t>{0, 1}), 4, 1).Union()),
      thunk(fb::ThunkKind::CopyThunk, fb::CreateCopyThunk(b, 0, 1, 16).Union()),
      thunk(fb::ThunkKind::GpuLaunchThunk,
            fb::CreateGpuLaunchThunk(b, 0, b.CreateVector(std::vector<uint32_t>{2, 3}), 1).Union()),
      thunk(fb::ThunkKind::GpuCopyThunk, fb::CreateGpuCopyThunk(b, 0, 2, 16).Union()),
      thunk(fb::ThunkKind::NONE, 0),
      thunk(static_cast<fb::ThunkKind>(9), fb::CreateCopyThunk(b, 1, 0, 8).Union()),
  };
  // Format 1.4: an If whose branches hold a Loop and a copy, nested in a Loop.
  const auto copy_in = [&] {
    return b.CreateVector(
        std::vector{thunk(fb::ThunkKind::CopyThunk, fb::CreateCopyThunk(b, 0, 1, 4).Union())});
  };
  const auto inner_loop =
      thunk(fb::ThunkKind::LoopThunk, fb::CreateLoopThunk(b, 2, 3, 4, 10, copy_in()).Union());
  const auto branch =
      thunk(fb::ThunkKind::IfThunk,
            fb::CreateIfThunk(b, 5, b.CreateVector(std::vector{inner_loop}), copy_in(),
                              b.CreateVector(std::vector<uint32_t>{1, 2}))
                .Union());
  thunks.push_back(thunk(
      fb::ThunkKind::LoopThunk,
      fb::CreateLoopThunk(b, 0xFFFFFFFF, 0xFFFFFFFF, 6, 1, b.CreateVector(std::vector{branch}))
          .Union()));
  const std::vector<uint8_t> cubin = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::vector<flatbuffers::Offset<fb::GpuImage>> images = {
      fb::CreateGpuImage(b, fb::GpuImageFormat::Cubin, 80, b.CreateString(""), 78,
                         b.CreateVector(cubin)),
      fb::CreateGpuImage(b, fb::GpuImageFormat::Ptx, 90, b.CreateString("a"), 80,
                         b.CreateVector(std::vector<uint8_t>{'.', 'v', 'e', 'r'})),
  };
  std::vector<flatbuffers::Offset<fb::GpuKernel>> gpu_kernels = {fb::CreateGpuKernel(
      b, b.CreateString("add_kernel"), b.CreateVector(std::vector<uint64_t>{16, 16}), 1,
      b.CreateVector(std::vector<uint32_t>{4, 1, 1}),
      b.CreateVector(std::vector<uint32_t>{128, 1, 1}), 1024)};
  const auto gpu =
      fb::CreateGpuModule(b, b.CreateVector(images), b.CreateVector(gpu_kernels), 4096, 256);
  std::vector<flatbuffers::Offset<fb::Entry>> entries = {fb::CreateEntry(
      b, b.CreateString("main"), b.CreateVector(std::vector{tensor("x", fb::DType::F32, 0)}),
      b.CreateVector(std::vector{tensor("y", fb::DType::I64, 1)}), b.CreateVector(thunks))};
  std::vector<flatbuffers::Offset<fb::Target>> variants = {target(fb::DeviceKind::CudaGpu, "sm_80"),
                                                           target(fb::DeviceKind::Cpu, "generic")};
  b.Finish(fb::CreateProgram(
               b, 1, 1, 2, b.CreateString("every_field"), target(fb::DeviceKind::CudaGpu, "sm_80"),
               b.CreateVector(buffers), b.CreateVector(kernels), b.CreateVector(entries), 4096, 128,
               64, b.CreateVector(variants), gpu, target(fb::DeviceKind::CudaGpu, "sm_80")),
           fb::ProgramIdentifier());
  return {"every field", {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()}, 1, 1};
}

NamedProgram Named(std::string name, const ProgramSpec& spec) {
  return {std::move(name), BuildProgram(spec), spec.format_major, spec.format_minor};
}

std::vector<NamedProgram> ValidPrograms() {
  std::vector<NamedProgram> programs;
  programs.push_back(Named("chain", ChainSpec()));

  ProgramSpec variants = ChainSpec();
  variants.format_minor = 1;
  variants.variants = {{"generic", {}}, {"haswell", {"avx", "avx2", "fma"}}};
  programs.push_back(Named("variants", variants));

  ProgramSpec features = ChainSpec();
  features.format_major = 7, features.format_minor = 3;  // any values: not checked here
  features.features = {"avx", "avx2", "sse4.2"};
  programs.push_back(Named("target features", features));

  // ChainSpec has a CopyThunk already; add a thunk of a kind this schema does
  // not know (a KernelThunk table under type 7) and a NONE one.
  ProgramSpec kinds = ChainSpec();
  kinds.format_major = 0;  // absent from the buffer: reads as 0
  ThunkSpec unknown;
  unknown.kind = static_cast<fb::ThunkKind>(7), unknown.args = {0, 1};
  ThunkSpec none;
  none.kind = fb::ThunkKind::NONE;
  kinds.thunks.push_back(unknown);
  kinds.thunks.push_back(none);
  programs.push_back(Named("unknown thunk kind", kinds));

  // Format 1.4: the chain's thunks nested in an If inside a Loop.
  ProgramSpec control = ChainSpec();
  control.thunks = {LoopSpec(
      0, 1, 4, 3, {IfSpec(0, {control.thunks[0]}, {control.thunks[1], control.thunks[2]}, {5})})};
  programs.push_back(Named("control flow", control));

  programs.push_back(EveryFieldProgram());
  return programs;
}

TEST(ProgramSchemaVerify, BuffersShorterThanTwelveBytesAreRejected) {
  const std::vector<uint8_t> chain = BuildProgram(ChainSpec());
  for (size_t size = 0; size < 12; ++size) {
    const ExactBuffer buffer(chain.data(), size);
    EXPECT_FALSE(OursAccepts(buffer.bytes.get(), size)) << size << " bytes";
    EXPECT_FALSE(FlatbuffersAccepts(buffer.bytes.get(), size)) << size << " bytes";
  }
}

TEST(ProgramSchemaVerify, NewerMajorIsReadThoughTheRestIsDamaged) {
  ProgramSpec spec = ChainSpec();
  spec.format_major = 2, spec.format_minor = 5;
  std::vector<uint8_t> program = BuildProgram(spec);
  program.resize(program.size() - 16);  // the last strings, far from the root table
  const ExactBuffer buffer(program.data(), program.size());
  const Answer ours = OurAnswer(buffer.bytes.get(), buffer.size);
  EXPECT_FALSE(ours.accepted);
  EXPECT_TRUE(ours.version.read);
  EXPECT_EQ(ours.version.major, 2u);
  EXPECT_EQ(ours.version.minor, 5u);
  EXPECT_EQ(ours.Describe(), FlatbuffersAnswer(buffer.bytes.get(), buffer.size).Describe());
}

TEST(ProgramSchemaVerify, WrongIdentifierIsRejectedByBoth) {
  ProgramSpec spec = ChainSpec();
  spec.identifier = "NRTQ";
  const std::vector<uint8_t> program = BuildProgram(spec);
  const ExactBuffer buffer(program.data(), program.size());
  EXPECT_FALSE(OursAccepts(buffer.bytes.get(), buffer.size));
  EXPECT_FALSE(FlatbuffersAccepts(buffer.bytes.get(), buffer.size));
}

TEST(ProgramSchemaVerify, ValidProgramsAreAcceptedByBothAndTheirVersionRead) {
  for (const NamedProgram& program : ValidPrograms()) {
    SCOPED_TRACE(program.name);
    const ExactBuffer buffer(program.bytes.data(), program.bytes.size());
    EXPECT_TRUE(OursAccepts(buffer.bytes.get(), buffer.size));
    EXPECT_TRUE(FlatbuffersAccepts(buffer.bytes.get(), buffer.size));
    schema::FormatVersion version;
    version.major = version.minor = 99;
    EXPECT_TRUE(
        schema::VerifyProgramFlatbuffer(buffer.bytes.get(), buffer.size, &version, buffer.size));
    EXPECT_TRUE(version.read);
    EXPECT_EQ(version.major, program.format_major);
    EXPECT_EQ(version.minor, program.format_minor);
  }
}

// `entries` copies of one Entry whose `thunks` names one KernelThunk-carrying
// Thunk 500 times: 1 + entries * (1 + 2 * 500) table visits for a few KB, and
// one more with a Target.
std::vector<uint8_t> ManyTableVisits(int entries, bool with_target) {
  flatbuffers::FlatBufferBuilder b;
  const auto thunk =
      fb::CreateThunk(b, fb::ThunkKind::KernelThunk, fb::CreateKernelThunk(b).Union());
  const auto entry = fb::CreateEntry(
      b, 0, 0, 0, b.CreateVector(std::vector<flatbuffers::Offset<fb::Thunk>>(500, thunk)));
  const auto entry_list =
      b.CreateVector(std::vector<flatbuffers::Offset<fb::Entry>>(entries, entry));
  flatbuffers::Offset<fb::Target> target;
  if (with_target) target = fb::CreateTarget(b);
  b.Finish(fb::CreateProgram(b, 1, 0, 1, 0, target, 0, 0, entry_list), fb::ProgramIdentifier());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

TEST(ProgramSchemaVerify, AMillionTableVisitsPassAndOneMoreFailsInBoth) {
  const std::vector<uint8_t> at_limit = ManyTableVisits(999, false);  // 1 + 999 * 1001 = 10^6
  EXPECT_TRUE(OursAccepts(at_limit.data(), at_limit.size()));
  EXPECT_TRUE(FlatbuffersAccepts(at_limit.data(), at_limit.size()));
  // Bounded, as nanort verifies: a thousand entries naming one Entry, whose
  // thunks name one Thunk, reach far more than the buffer holds.
  schema::FormatVersion version;
  EXPECT_FALSE(
      schema::VerifyProgramFlatbuffer(at_limit.data(), at_limit.size(), &version, at_limit.size()));
  EXPECT_TRUE(version.shared);
  const std::vector<uint8_t> over = ManyTableVisits(999, true);
  EXPECT_FALSE(OursAccepts(over.data(), over.size()));
  EXPECT_FALSE(FlatbuffersAccepts(over.data(), over.size()));
}

// Program, Entry, Thunk, then (LoopThunk, Thunk) `loops` times, and a
// KernelThunk: 4 + 2 * loops tables deep.
std::vector<uint8_t> NestedLoops(int loops) {
  flatbuffers::FlatBufferBuilder b;
  auto thunk = fb::CreateThunk(b, fb::ThunkKind::KernelThunk, fb::CreateKernelThunk(b).Union());
  for (int i = 0; i < loops; ++i) {
    const auto body = b.CreateVector(std::vector{thunk});
    thunk = fb::CreateThunk(b, fb::ThunkKind::LoopThunk,
                            fb::CreateLoopThunk(b, 0, 0, 0, 1, body).Union());
  }
  const auto entry = fb::CreateEntry(b, 0, 0, 0, b.CreateVector(std::vector{thunk}));
  b.Finish(fb::CreateProgram(b, 1, 4, 1, 0, 0, 0, 0, b.CreateVector(std::vector{entry})),
           fb::ProgramIdentifier());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

TEST(ProgramSchemaVerify, TablesSixtyFourDeepPassAndDeeperFailInBoth) {
  SKIP_WITHOUT_GPU_SCHEMA();
  const std::vector<uint8_t> at_limit = NestedLoops(30);  // 64 tables deep
  EXPECT_TRUE(OursAccepts(at_limit.data(), at_limit.size()));
  EXPECT_TRUE(FlatbuffersAccepts(at_limit.data(), at_limit.size()));
  const std::vector<uint8_t> over = NestedLoops(31);  // 66
  EXPECT_FALSE(OursAccepts(over.data(), over.size()));
  EXPECT_FALSE(FlatbuffersAccepts(over.data(), over.size()));
  schema::FormatVersion version;
  EXPECT_FALSE(schema::VerifyProgramFlatbuffer(over.data(), over.size(), &version, over.size()));
  EXPECT_TRUE(version.read);
  EXPECT_FALSE(version.shared);
  // Depth is per path: many siblings at the limit are fine.
  EXPECT_EQ(OursAccepts(NestedLoops(5).data(), NestedLoops(5).size()), true);
}

// One change to a program. Word and half-word changes aim at offsets and
// vtables; truncation at the bounds checks.
struct Mutation {
  enum Kind { kSetByte, kFlipBit, kSpecialByte, kSmallWord, kNearWord, kSmallHalf, kTruncate };
  Kind kind;
  size_t at;
  size_t from = 0;    // kNearWord: the word whose value, + value, is written
  int64_t value = 0;  // the byte, bit, small value or delta; kTruncate: unused

  std::string Describe() const {
    const std::string where = "[" + std::to_string(at) + "]";
    switch (kind) {
      case kSetByte:
      case kSpecialByte:
        return "byte" + where + " = " + Hex(static_cast<uint8_t>(value));
      case kFlipBit:
        return "byte" + where + " ^= " + Hex(static_cast<uint8_t>(1 << value));
      case kSmallWord:
        return "u32" + where + " = " + std::to_string(value);
      case kNearWord:
        return "u32" + where + " = u32[" + std::to_string(from) + "]" +
               (value < 0 ? " - " : " + ") + std::to_string(value < 0 ? -value : value);
      case kSmallHalf:
        return "u16" + where + " = " + std::to_string(value);
      case kTruncate:
        return "truncate to " + std::to_string(at) + " bytes";
    }
    return "?";
  }
};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : random_(seed) {}

  // Applies 1 to 4 random mutations to `bytes`, recording them in `*applied`.
  void Mutate(std::vector<uint8_t>* bytes, std::vector<Mutation>* applied) {
    applied->clear();
    const int count = static_cast<int>(Uniform(1, 4));
    for (int i = 0; i < count && !bytes->empty(); ++i) {
      applied->push_back(MutateOnce(bytes));
    }
  }

 private:
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random_);
  }
  size_t Index(size_t count, size_t step) {
    return step * static_cast<size_t>(Uniform(0, static_cast<int64_t>(count / step) - 1));
  }

  Mutation MutateOnce(std::vector<uint8_t>* bytes) {
    std::vector<uint8_t>& b = *bytes;
    Mutation m{static_cast<Mutation::Kind>(kind_(random_)), 0};
    if (b.size() < 4 && (m.kind == Mutation::kSmallWord || m.kind == Mutation::kNearWord)) {
      m.kind = Mutation::kSetByte;
    }
    if (b.size() < 2 && m.kind == Mutation::kSmallHalf) m.kind = Mutation::kSetByte;
    switch (m.kind) {
      case Mutation::kSetByte:
        m.at = Index(b.size(), 1), m.value = Uniform(0, 255);
        b[m.at] = static_cast<uint8_t>(m.value);
        break;
      case Mutation::kFlipBit:
        m.at = Index(b.size(), 1), m.value = Uniform(0, 7);
        b[m.at] ^= static_cast<uint8_t>(1 << m.value);
        break;
      case Mutation::kSpecialByte: {
        static constexpr uint8_t kSpecial[] = {0x00, 0xff, 0x7f, 0x80};
        m.at = Index(b.size(), 1), m.value = kSpecial[Uniform(0, 3)];
        b[m.at] = static_cast<uint8_t>(m.value);
        break;
      }
      case Mutation::kSmallWord:
        m.at = Index(b.size(), 4), m.value = Uniform(-64, 64);
        StoreU32(&b[m.at], static_cast<uint32_t>(m.value));
        break;
      case Mutation::kNearWord: {
        m.at = Index(b.size(), 4);
        // A quarter of the time, nudge the word itself (an offset off by a
        // few bytes); otherwise take another word's value, often an offset
        // that lands somewhere plausible once rebased.
        m.from = Uniform(0, 3) == 0 ? m.at : Index(b.size(), 4);
        m.value = Uniform(-8, 8);
        uint32_t word;
        memcpy(&word, &b[m.from], 4);
        StoreU32(&b[m.at], word + static_cast<uint32_t>(m.value));
        break;
      }
      case Mutation::kSmallHalf: {
        m.at = Index(b.size(), 2), m.value = Uniform(0, 72);
        const uint16_t half = static_cast<uint16_t>(m.value);
        memcpy(&b[m.at], &half, 2);
        break;
      }
      case Mutation::kTruncate:
        m.at = Index(b.size(), 1);
        b.resize(m.at);
        break;
    }
    return m;
  }

  static void StoreU32(uint8_t* at, uint32_t value) { memcpy(at, &value, 4); }

  std::mt19937_64 random_;
  // Weights in Mutation::Kind order: offsets weigh more; truncation, which
  // leaves few mutants valid, less.
  std::discrete_distribution<int> kind_{2, 2, 2, 2, 3, 2, 1};
};

uint64_t FuzzSeed() {
  if (const char* env = getenv("NANORT_FUZZ_SEED")) return strtoull(env, nullptr, 0);
  std::random_device device;
  return (uint64_t{device()} << 32) | device();
}

TEST(ProgramSchemaVerify, DamagedProgramsGetTheSameAnswerAsFlatbuffers) {
  SKIP_WITHOUT_GPU_SCHEMA();
  constexpr int kMutantsPerProgram = 100000;
  constexpr int kMaxReported = 3;
  const uint64_t seed = FuzzSeed();
  SCOPED_TRACE("NANORT_FUZZ_SEED=" + std::to_string(seed));
  RecordProperty("NANORT_FUZZ_SEED", std::to_string(seed));
  Mutator mutator(seed);
  int differences = 0;
  std::vector<uint8_t> mutant;
  std::vector<Mutation> mutations;
  for (const NamedProgram& program : ValidPrograms()) {
    // Accepted; rejected with the version read; rejected without.
    int accepted = 0, version_only = 0, neither = 0;
    for (int i = 0; i < kMutantsPerProgram; ++i) {
      mutant = program.bytes;
      mutator.Mutate(&mutant, &mutations);
      const ExactBuffer buffer(mutant.data(), mutant.size());
      const Answer ours = OurAnswer(buffer.bytes.get(), buffer.size);
      const Answer theirs = FlatbuffersAnswer(buffer.bytes.get(), buffer.size);
      // Bounded, nanort's rule: the same answer, or a refusal that says the
      // mutant reaches shared tables or vectors.
      schema::FormatVersion bounded_version;
      const bool bounded = schema::VerifyProgramFlatbuffer(buffer.bytes.get(), buffer.size,
                                                           &bounded_version, buffer.size);
      if (bounded != ours.accepted && !(ours.accepted && bounded_version.shared)) {
        ADD_FAILURE() << "NANORT_FUZZ_SEED=" << seed << ", program \"" << program.name
                      << "\", mutant " << i << ": bounded " << bounded << ", unbounded "
                      << ours.accepted;
        if (++differences == kMaxReported) return;
      }
      ++(theirs.accepted ? accepted : theirs.version.read ? version_only : neither);
      if (ours == theirs) continue;
      std::string what;
      for (const Mutation& m : mutations) what += (what.empty() ? "" : "; ") + m.Describe();
      ADD_FAILURE() << "NANORT_FUZZ_SEED=" << seed << ", program \"" << program.name
                    << "\", mutant " << i << ": " << what
                    << "\n  VerifyProgramFlatbuffer: " << ours.Describe()
                    << "\n  flatbuffers:             " << theirs.Describe() << "\n  mutant ("
                    << buffer.size << " bytes):" << HexDump(buffer.bytes.get(), buffer.size);
      if (++differences == kMaxReported) return;
    }
    // Every answer is common, so agreement is not agreement on "no".
    EXPECT_GE(accepted, kMutantsPerProgram / 100) << program.name;
    EXPECT_GE(version_only, kMutantsPerProgram / 100) << program.name;
    EXPECT_GE(neither, kMutantsPerProgram / 100) << program.name;
    printf(
        "[          ] %s: %d mutants: %d accepted, %d rejected with the version read, %d "
        "without (seed %llu)\n",
        program.name.c_str(), kMutantsPerProgram, accepted, version_only, neither,
        static_cast<unsigned long long>(seed));
  }
}

}  // namespace
}  // namespace nanort::test
