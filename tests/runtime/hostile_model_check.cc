// Single-field mutations of a real model's program, run against the model's
// real kernels:
//
//   nanort-hostile-check MODEL.so NAME
//
// loads NAME_model from the shared object nanoc wrote, reads its program into
// a ProgramSpec, and for every thunk and buffer changes one field at a time
// (a thunk's kernel index, each argument, num_outputs, task_count, a copy's
// operands and size; a buffer's kind, index, offset and size; the arena's
// size and alignment), rebuilds the program and loads it with the object's
// kernels. Each mutant must be refused cleanly or, when it loads, run with its
// arena, inputs and outputs each placed at the end of a page followed by a
// PROT_NONE guard page, so that a kernel writing or reading past a buffer
// faults here instead of corrupting the heap. A mutant of a kernel thunk's
// kernel, argument count, outputs or task count, or one naming a buffer of
// another size, must be refused: the object's kernel table carries each
// kernel's signature. Exit status 0 when all hold; the counts are printed.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include "guarded_block.h"
#include "nanort/nanort.h"
#include "test_program.h"

namespace nanort::test {
namespace {

std::string Str(const flatbuffers::String* s) { return s != nullptr ? s->str() : ""; }

// The program as plain data that BuildProgram writes back.
ProgramSpec ReadSpec(const fb::Program& p) {
  ProgramSpec spec;
  spec.format_major = p.format_major();
  spec.format_minor = p.format_minor();
  spec.kernel_abi = p.kernel_abi();
  spec.model_name = Str(p.model_name());
  spec.triple = Str(p.target()->triple());
  spec.cpu = Str(p.target()->cpu());
  if (p.target()->features())
    for (const auto* f : *p.target()->features()) spec.features.push_back(f->str());
  if (p.variants() && p.variants()->size() > 1)
    for (const fb::Target* t : *p.variants()) {
      VariantSpec v{Str(t->cpu()), {}};
      if (t->features())
        for (const auto* f : *t->features()) v.features.push_back(f->str());
      spec.variants.push_back(v);
    }
  for (const fb::Buffer* b : *p.buffers())
    spec.buffers.push_back(
        {b->kind(), b->index(), b->offset(), b->size(), Str(b->name()), b->alignment()});
  for (const fb::Kernel* k : *p.kernels()) spec.kernels.push_back(Str(k->name()));
  const fb::Entry& entry = *p.entries()->Get(0);
  auto tensors = [](const auto* list, std::vector<TensorSpec>* out) {
    for (const fb::Tensor* t : *list)
      out->push_back({Str(t->name()), t->dtype(),
                      std::vector<int64_t>(t->shape()->begin(), t->shape()->end()), t->buffer()});
  };
  tensors(entry.inputs(), &spec.inputs);
  tensors(entry.outputs(), &spec.outputs);
  for (const fb::Thunk* t : *entry.thunks()) {
    ThunkSpec s;
    s.kind = t->kind_type();
    s.node = Str(t->node());
    s.op = Str(t->op());
    if (const auto* k = t->kind_as_KernelThunk()) {
      s.kernel = k->kernel();
      if (k->args()) s.args.assign(k->args()->begin(), k->args()->end());
      s.task_count = k->task_count();
      s.num_outputs = k->num_outputs();
    } else if (const auto* c = t->kind_as_CopyThunk()) {
      s.src = c->src(), s.dst = c->dst(), s.size = c->size();
    }
    spec.thunks.push_back(s);
  }
  spec.arena_size = p.arena_size();
  spec.arena_alignment = p.arena_alignment();
  spec.constants_size = p.constants_size();
  return spec;
}

struct Counts {
  int mutants = 0, refused = 0, ran = 0, failures = 0;
};

// Loads `bytes` with the object's kernels; runs it guarded if it loads.
// Returns the load status.
nanort_status_code LoadAndRunGuarded(const nanort_model_def& object, std::vector<uint8_t> bytes,
                                     std::string* message) {
  // An aligned copy, as nanoc's object holds it.
  std::vector<uint64_t> aligned((bytes.size() + 7) / 8);
  memcpy(aligned.data(), bytes.data(), bytes.size());
  nanort_model_def def = object;
  def.program = reinterpret_cast<const uint8_t*>(aligned.data());
  def.program_size = bytes.size();
  nanort_model* model = nullptr;
  nanort_status status;
  nanort_status_code code = nanort_model_load(&def, nanort_allocator_system(), &model, &status);
  *message = status.message;
  if (code != NANORT_OK) return code;
  const size_t arena_size = nanort_model_arena_size(model);
  GuardedBlock arena(arena_size, nanort_model_arena_alignment(model));
  nanort_session* session = nullptr;
  code = nanort_session_create(model, arena.data(), arena_size, nanort_allocator_system(), &session,
                               &status);
  if (code == NANORT_OK) {
    std::vector<std::unique_ptr<GuardedBlock>> blocks;
    std::vector<nanort_tensor> tensors[2];
    for (int side = 0; side < 2; ++side) {
      const size_t count =
          side == 0 ? nanort_model_input_count(model) : nanort_model_output_count(model);
      for (size_t i = 0; i < count; ++i) {
        nanort_tensor_info info;
        if (side == 0) nanort_model_input_info(model, i, &info);
        if (side == 1) nanort_model_output_info(model, i, &info);
        blocks.emplace_back(new GuardedBlock(info.size_bytes, nanort_dtype_size(info.dtype)));
        tensors[side].push_back({blocks.back()->data(), info.dtype, info.rank, info.dims});
      }
    }
    code = nanort_run(session, tensors[0].data(), tensors[0].size(), tensors[1].data(),
                      tensors[1].size(), &status);
    if (code != NANORT_OK) *message = std::string("run: ") + status.message;
    nanort_session_release(session);
  } else {
    *message = std::string("session: ") + status.message;
  }
  nanort_model_release(model);
  return code;
}

void Check(const nanort_model_def& object, const ProgramSpec& mutant, bool must_refuse,
           const std::string& what, Counts* counts) {
  ++counts->mutants;
  std::string message;
  const nanort_status_code code = LoadAndRunGuarded(object, BuildProgram(mutant), &message);
  const bool clean = code == NANORT_OK || code == NANORT_INVALID_PROGRAM;
  const bool ok = must_refuse ? code == NANORT_INVALID_PROGRAM : clean;
  if (code == NANORT_OK) ++counts->ran;
  if (code == NANORT_INVALID_PROGRAM) ++counts->refused;
  if (!ok) {
    ++counts->failures;
    fprintf(stderr, "FAIL: %s: %s%s\n", what.c_str(), nanort_status_code_name(code),
            must_refuse ? " (must be refused)" : "");
  }
}

int Main(const char* path, const char* name) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    return 2;
  }
  const auto* object =
      static_cast<const nanort_model_def*>(dlsym(library, (std::string(name) + "_model").c_str()));
  if (object == nullptr) {
    fprintf(stderr, "no %s_model in %s\n", name, path);
    return 2;
  }
  std::vector<uint8_t> bytes(object->program, object->program + object->program_size);
  const ProgramSpec base = ReadSpec(*fb::GetProgram(bytes.data()));
  Counts counts;
  std::string message;
  // The program as nanoc wrote it, and as rebuilt, load and run.
  if (LoadAndRunGuarded(*object, bytes, &message) != NANORT_OK ||
      LoadAndRunGuarded(*object, BuildProgram(base), &message) != NANORT_OK) {
    fprintf(stderr, "FAIL: the unchanged program: %s\n", message.c_str());
    return 1;
  }
  const uint32_t num_buffers = static_cast<uint32_t>(base.buffers.size());
  for (size_t t = 0; t < base.thunks.size(); ++t) {
    const ThunkSpec& thunk = base.thunks[t];
    const std::string at = "thunk " + std::to_string(t) + " (" + thunk.op + ")";
    ProgramSpec m = base;
    ThunkSpec& mt = m.thunks[t];
    if (thunk.kind == fb::ThunkKind::KernelThunk) {
      for (uint32_t k = 0; k < base.kernels.size() + 1; ++k) {
        if (k == thunk.kernel) continue;
        // Another kernel may share this one's signature (two Relu of one
        // shape): then the call is legal, and must run safely.
        mt.kernel = k;
        const nanort_kernel* table = object->kernels;
        const bool same =
            k < base.kernels.size() && table[k].num_args == table[thunk.kernel].num_args &&
            table[k].task_count == table[thunk.kernel].task_count &&
            table[k].num_outputs == table[thunk.kernel].num_outputs &&
            memcmp(table[k].arg_bytes, table[thunk.kernel].arg_bytes, 8 * table[k].num_args) == 0;
        Check(*object, m, !same, at + " kernel " + std::to_string(k), &counts);
      }
      mt = thunk;
      for (size_t a = 0; a < thunk.args.size(); ++a) {
        for (uint32_t b = 0; b <= num_buffers; ++b) {
          if (b == thunk.args[a]) continue;
          mt.args[a] = b;
          const bool other_size =
              b >= num_buffers || base.buffers[b].size != base.buffers[thunk.args[a]].size;
          Check(*object, m, other_size,
                at + " arg " + std::to_string(a) + " = buffer " + std::to_string(b), &counts);
        }
        mt = thunk;
      }
      for (uint32_t outputs : {0u, thunk.num_outputs - 1, thunk.num_outputs + 1, 1000u}) {
        if (outputs == thunk.num_outputs) continue;
        mt.num_outputs = outputs;
        Check(*object, m, true, at + " num_outputs " + std::to_string(outputs), &counts);
      }
      mt = thunk;
      for (uint64_t tasks : {uint64_t{0}, thunk.task_count - 1, thunk.task_count + 1,
                             thunk.task_count * 2, uint64_t{1} << 40}) {
        if (tasks == thunk.task_count) continue;
        mt.task_count = tasks;
        Check(*object, m, true, at + " task_count " + std::to_string(tasks), &counts);
      }
      mt = thunk;
      mt.args.push_back(thunk.args.back());
      Check(*object, m, true, at + " one more arg", &counts);
      mt.args.resize(thunk.args.size() - 1);
      Check(*object, m, true, at + " one arg less", &counts);
    } else {
      for (uint32_t b = 0; b < num_buffers; ++b) {
        mt.src = b;
        Check(*object, m, false, at + " src " + std::to_string(b), &counts);
        mt = thunk;
        mt.dst = b;
        Check(*object, m, false, at + " dst " + std::to_string(b), &counts);
        mt = thunk;
      }
      for (uint64_t size : {uint64_t{0}, thunk.size + 1, thunk.size + 64, thunk.size * 2}) {
        mt.size = size;
        Check(*object, m, false, at + " size " + std::to_string(size), &counts);
      }
    }
  }
  for (uint32_t b = 0; b < num_buffers; ++b) {
    const BufferSpec& buffer = base.buffers[b];
    const std::string at = "buffer " + std::to_string(b) + " ('" + buffer.name + "')";
    ProgramSpec m = base;
    BufferSpec& mb = m.buffers[b];
    for (int kind = 0; kind < 5; ++kind) {
      if (kind == static_cast<int>(buffer.kind)) continue;
      mb.kind = static_cast<fb::BufferKind>(kind);
      Check(*object, m, false, at + " kind " + std::to_string(kind), &counts);
    }
    mb = buffer;
    for (uint32_t index : {buffer.index + 1, 0u}) {
      if (index == buffer.index) continue;
      mb.index = index;
      Check(*object, m, false, at + " index " + std::to_string(index), &counts);
    }
    mb = buffer;
    for (uint64_t size :
         {uint64_t{0}, buffer.size - 4, buffer.size + 4, buffer.size * 2, buffer.size + 4096}) {
      if (size == buffer.size) continue;
      mb.size = size;
      Check(*object, m, false, at + " size " + std::to_string(size), &counts);
    }
    mb = buffer;
    for (uint64_t offset : {buffer.offset + 64, buffer.offset - 64, buffer.offset + 4096}) {
      mb.offset = offset;
      Check(*object, m, false, at + " offset " + std::to_string(offset), &counts);
    }
  }
  {
    ProgramSpec m = base;
    for (uint64_t size : {base.arena_size + 64, base.arena_size - 64, uint64_t{1} << 40}) {
      m.arena_size = size;
      Check(*object, m, true, "arena_size " + std::to_string(size), &counts);
    }
    m = base;
    for (uint32_t align : {1u << 31, 1u << 13}) {
      m.arena_alignment = align;
      Check(*object, m, true, "arena_alignment " + std::to_string(align), &counts);
    }
  }
  printf("%s: %d mutants: %d refused, %d ran safely, %d failures\n", name, counts.mutants,
         counts.refused, counts.ran, counts.failures);
  return counts.failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace nanort::test

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.so NAME\n", argv[0]);
    return 2;
  }
  return nanort::test::Main(argv[1], argv[2]);
}
