#include "compiler/emit/compile.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/codegen/cpu/lowering.h"
#include "compiler/emit/c_header.h"
#include "compiler/emit/model_object.h"
#include "compiler/emit/program_builder.h"
#include "compiler/ir/error.h"

namespace nanoc {

CompiledModel compileGraph(const Graph& graph, const CompileOptions& options) {
  CompiledModel out;
  out.plan = planBuffers(graph);
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>(options.name, *out.context);
  out.machine = cpu::createTargetMachine(options.target);
  out.module->setTargetTriple(out.machine->getTargetTriple());
  out.module->setDataLayout(out.machine->createDataLayout());

  ProgramSpec spec;
  spec.model_name = options.name;
  spec.target = options.target;
  std::vector<llvm::Function*> kernels;
  for (const auto& node : graph.nodes) {
    if (out.plan.isAlias(node.get())) continue;
    ThunkSpec thunk;
    thunk.node = node.get();
    if (node->op == "Reshape" || node->op == "Identity") {
      thunk.kind = ThunkSpec::Kind::Copy;
    } else {
      const cpu::Lowering* lowering = cpu::findLowering(node->op);
      if (!lowering)
        throw CompileError("node '" + node->name + "' (" + node->op + "): no CPU lowering");
      thunk.kernel = static_cast<uint32_t>(kernels.size());
      thunk.task_count = lowering->task_count(*node);
      std::string symbol = options.name + "_k" + std::to_string(kernels.size()) + "_" + node->op;
      kernels.push_back(cpu::emitKernel(*node, *out.module, symbol));
      spec.kernel_symbols.push_back(symbol);
    }
    spec.thunks.push_back(thunk);
  }
  if (options.target.vector_bits != 0)
    for (llvm::Function* fn : kernels)
      fn->addFnAttr("prefer-vector-width", std::to_string(options.target.vector_bits));
  out.program = buildProgram(graph, out.plan, spec);
  addModelDefinition(*out.module, options.name, out.program, out.plan.constants, kernels);

  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(*out.module, &es))
    throw CompileError("internal error: generated LLVM IR is invalid:\n" + errors);
  cpu::optimizeModule(*out.module, *out.machine);
  out.header = emitCHeader(options.name, graph, out.plan, options.target);
  return out;
}

void linkSharedObject(const std::string& object_path, const std::string& so_path,
                      const std::string& name) {
  std::string soname = name + ".so";
  llvm::SmallVector<llvm::StringRef, 16> args = {
      NANOC_LLD_PATH, "-shared", "--build-id=none", "-z",   "noexecstack", "-z",    "relro",
      "-z",           "now",     "-soname",         soname, "-o",          so_path, object_path};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(NANOC_LLD_PATH, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    throw CompileError("linking " + so_path + " with " + NANOC_LLD_PATH + " failed" +
                       (message.empty() ? "" : ": " + message));
}

}  // namespace nanoc
