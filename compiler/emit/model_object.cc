#include "compiler/emit/model_object.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/Support/SHA256.h>

#include <algorithm>
#include <array>

#include "compiler/ir/error.h"
#include "nanort/nanort.h"
#include "nanort/src/cuda/gpu_seal.h"
#include "program_generated.h"

namespace nanoc {
namespace {

llvm::Constant* byteArray(llvm::Module& module, const std::string& symbol,
                          const std::vector<uint8_t>& bytes, uint64_t alignment,
                          const char* section) {
  llvm::LLVMContext& ctx = module.getContext();
  if (bytes.empty()) return llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(ctx));
  auto* init = llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<uint8_t>(bytes));
  auto* global = new llvm::GlobalVariable(module, init->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::InternalLinkage, init, symbol);
  global->setAlignment(llvm::Align(alignment));
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  if (section) global->setSection(section);
  return global;
}

// LLVM's SHA-256 as gpu_seal.h's digests take a hasher.
struct LlvmSha256 {
  llvm::SHA256 sha;
  void Update(const void* data, size_t size) {
    sha.update(llvm::ArrayRef<uint8_t>(static_cast<const uint8_t*>(data), size));
  }
  void Final(uint8_t digest[32]) {
    const std::array<uint8_t, 32> result = sha.final();
    std::copy(result.begin(), result.end(), digest);
  }
};

// NAME_gpu_seal (nanort_gpu_seal) for a program with a GPU part, read back
// from its bytes with the encoders nanort checks it with; NULL otherwise.
llvm::Constant* gpuSeal(llvm::Module& module, const std::string& name,
                        const std::vector<uint8_t>& program) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  const nanort::fb::Program* parsed =
      program.empty() ? nullptr : nanort::fb::GetProgram(program.data());
  if (parsed == nullptr || parsed->gpu() == nullptr)
    return llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(ctx));
  const nanort::fb::GpuModule& gpu = *parsed->gpu();
  std::vector<uint8_t> kernels(32), images(32 * flatbuffers::VectorLength(gpu.images()));
  nanort::gpu_seal::DigestKernels<LlvmSha256>(gpu, kernels.data());
  for (flatbuffers::uoffset_t i = 0; i < flatbuffers::VectorLength(gpu.images()); ++i)
    nanort::gpu_seal::DigestImage<LlvmSha256>(*gpu.images()->Get(i), images.data() + 32 * i);
  llvm::Constant* images_ptr = byteArray(module, name + "_gpu_image_digests", images, 8, nullptr);
  // struct nanort_gpu_seal (nanort.h): kernels_sha256, num_images, images_sha256.
  auto* i8 = llvm::Type::getInt8Ty(ctx);
  auto* seal_type = llvm::StructType::create(
      ctx, {llvm::ArrayType::get(i8, 32), llvm::Type::getInt32Ty(ctx), ptr}, "nanort_gpu_seal");
  auto* seal = llvm::ConstantStruct::get(
      seal_type,
      {llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<uint8_t>(kernels)),
       llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), images.size() / 32), images_ptr});
  auto* global = new llvm::GlobalVariable(
      module, seal_type, true, llvm::GlobalValue::InternalLinkage, seal, name + "_gpu_seal");
  global->setAlignment(llvm::Align(8));
  return global;
}

}  // namespace

void addModelDefinition(llvm::Module& module, const std::string& name,
                        const std::vector<uint8_t>& program, const std::vector<uint8_t>& constants,
                        const std::vector<llvm::Function*>& kernels,
                        const std::vector<KernelSignature>& signatures) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);

  llvm::Constant* constants_ptr = byteArray(module, name + "_constants", constants, 64, nullptr);
  // The flatbuffer's scalars and vectors are aligned relative to its start;
  // 16 bytes covers every type in the schema.
  llvm::Constant* program_ptr = byteArray(module, name + "_program", program, 16, kProgramSection);

  // Every signature's argument sizes in one array; entry k points at its own.
  std::vector<uint64_t> all_bytes;
  std::vector<size_t> first_arg;
  for (const KernelSignature& s : signatures) {
    first_arg.push_back(all_bytes.size());
    all_bytes.insert(all_bytes.end(), s.arg_bytes.begin(), s.arg_bytes.end());
  }
  llvm::GlobalVariable* arg_bytes = nullptr;
  if (!all_bytes.empty()) {
    auto* init = llvm::ConstantDataArray::get(ctx, llvm::ArrayRef<uint64_t>(all_bytes));
    arg_bytes =
        new llvm::GlobalVariable(module, init->getType(), true, llvm::GlobalValue::InternalLinkage,
                                 init, name + "_arg_bytes");
    arg_bytes->setAlignment(llvm::Align(8));
  }

  // struct nanort_kernel (nanort.h): fn, arg_bytes, task_count, num_args,
  // num_outputs, scratch_bytes.
  auto* kernel_type =
      llvm::StructType::create(ctx, {ptr, ptr, i64, i32, i32, i64}, "nanort_kernel");
  llvm::Constant* kernels_ptr = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(ctx));
  if (!kernels.empty()) {
    if (signatures.empty() || kernels.size() % signatures.size() != 0)
      throw CompileError("internal error: " + std::to_string(kernels.size()) + " kernels but " +
                         std::to_string(signatures.size()) + " signatures");
    std::vector<llvm::Constant*> entries;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const size_t k = i % signatures.size();
      const KernelSignature& s = signatures[k];
      llvm::Constant* bytes_ptr = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(ctx));
      if (!s.arg_bytes.empty())
        bytes_ptr = llvm::ConstantExpr::getInBoundsGetElementPtr(
            arg_bytes->getValueType(), arg_bytes,
            llvm::ArrayRef<llvm::Constant*>{llvm::ConstantInt::get(i64, 0),
                                            llvm::ConstantInt::get(i64, first_arg[k])});
      entries.push_back(llvm::ConstantStruct::get(
          kernel_type, {kernels[i], bytes_ptr, llvm::ConstantInt::get(i64, s.task_count),
                        llvm::ConstantInt::get(i32, s.arg_bytes.size()),
                        llvm::ConstantInt::get(i32, s.num_outputs),
                        llvm::ConstantInt::get(i64, s.scratch_bytes)}));
    }
    auto* type = llvm::ArrayType::get(kernel_type, entries.size());
    auto* table =
        new llvm::GlobalVariable(module, type, true, llvm::GlobalValue::InternalLinkage,
                                 llvm::ConstantArray::get(type, entries), name + "_kernels");
    table->setAlignment(llvm::Align(8));
    kernels_ptr = table;
  }

  // struct nanort_model_def (nanort.h), laid out by the target's data layout
  // exactly as its C compiler lays out the struct.
  auto* def_type =
      llvm::StructType::create(ctx, {i32, i32, ptr, i64, ptr, i64, ptr, ptr}, "nanort_model_def");
  auto* def = llvm::ConstantStruct::get(
      def_type,
      {llvm::ConstantInt::get(i32, NANORT_KERNEL_ABI_VERSION),
       llvm::ConstantInt::get(i32, kernels.size()), program_ptr,
       llvm::ConstantInt::get(i64, program.size()), constants_ptr,
       llvm::ConstantInt::get(i64, constants.size()), kernels_ptr, gpuSeal(module, name, program)});
  auto* model = new llvm::GlobalVariable(module, def_type, true, llvm::GlobalValue::ExternalLinkage,
                                         def, name + "_model");
  model->setAlignment(llvm::Align(8));
}

}  // namespace nanoc
