#include "compiler/emit/model_object.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

#include "compiler/ir/error.h"
#include "nanort/nanort.h"

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
      llvm::StructType::create(ctx, {i32, i32, ptr, i64, ptr, i64, ptr}, "nanort_model_def");
  auto* def = llvm::ConstantStruct::get(
      def_type, {llvm::ConstantInt::get(i32, NANORT_KERNEL_ABI_VERSION),
                 llvm::ConstantInt::get(i32, kernels.size()), program_ptr,
                 llvm::ConstantInt::get(i64, program.size()), constants_ptr,
                 llvm::ConstantInt::get(i64, constants.size()), kernels_ptr});
  auto* model = new llvm::GlobalVariable(module, def_type, true, llvm::GlobalValue::ExternalLinkage,
                                         def, name + "_model");
  model->setAlignment(llvm::Align(8));
}

}  // namespace nanoc
