#include "compiler/emit/model_object.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

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
                        const std::vector<llvm::Function*>& kernels) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);

  llvm::Constant* constants_ptr = byteArray(module, name + "_constants", constants, 64, nullptr);
  // The flatbuffer's scalars and vectors are aligned relative to its start;
  // 16 bytes covers every type in the schema.
  llvm::Constant* program_ptr = byteArray(module, name + "_program", program, 16, kProgramSection);

  llvm::Constant* kernels_ptr = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(ctx));
  if (!kernels.empty()) {
    std::vector<llvm::Constant*> fns(kernels.begin(), kernels.end());
    auto* type = llvm::ArrayType::get(ptr, fns.size());
    auto* table = new llvm::GlobalVariable(module, type, true, llvm::GlobalValue::InternalLinkage,
                                           llvm::ConstantArray::get(type, fns), name + "_kernels");
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
