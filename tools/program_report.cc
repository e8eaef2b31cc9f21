#include "program_report.h"

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "plan_svg.h"
#include "program_generated.h"
#include "report_text.h"

namespace nanort::tools {

namespace fb = nanort::fb;

namespace {

std::string Lower(const char* s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Enum names come from the schema (lower-cased: "f32", "arena", "cpu"). A
// value outside the schema (a newer minor version, or a bad compiler) is
// shown by number rather than as an empty string.
template <typename E>
std::string EnumName(E value, E last, const char* (*name_of)(E), const char* what) {
  if (static_cast<unsigned>(value) > static_cast<unsigned>(last)) {
    return std::string(what) + "(" + std::to_string(static_cast<unsigned>(value)) + ")";
  }
  return Lower(name_of(value));
}
std::string DTypeName(fb::DType v) {
  return EnumName(v, fb::DType::MAX, fb::EnumNameDType, "dtype");
}
std::string DeviceName(fb::DeviceKind v) {
  return EnumName(v, fb::DeviceKind::MAX, fb::EnumNameDeviceKind, "device");
}
std::string BufferKindName(fb::BufferKind v) {
  return EnumName(v, fb::BufferKind::MAX, fb::EnumNameBufferKind, "kind");
}

// Names come from the model file and may hold any bytes: quote them and
// escape anything that is not printable ASCII, so the terminal shows exactly
// what is there.
std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out + "\"";
}

// Length of the valid UTF-8 sequence at s[i], or 0 if there is none.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  uint32_t cp = 0;
  return Utf8Decode(s, i, &cp);
}

// A JSON string. Bytes that are not valid UTF-8 become the code point of the
// same value (\u00XX), so the output is always valid JSON and still shows
// which byte it was.
std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char u = static_cast<unsigned char>(s[i]);
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0 || u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
      i += 1;
    } else if (u == '"' || u == '\\') {
      out += '\\';
      out += s[i];
      i += 1;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out + "\"";
}

template <typename T>
std::string JoinNumbers(const flatbuffers::Vector<T>* v, const char* sep = ",") {
  std::string out;
  if (!v) return out;
  // The flatbuffers 2.0 verifier checks a vector's alignment only to 4 bytes,
  // so the elements of an [int64] in a corrupt file may be misaligned: copy
  // them out instead of dereferencing them.
  const uint8_t* data = v->Data();
  for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) {
    if (i > 0) out += sep;
    T value;
    std::memcpy(&value, data + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    out += std::to_string(flatbuffers::EndianScalar(value));
  }
  return out;
}

// End of a buffer's byte range, or false if offset + size overflows.
bool RangeEnd(const fb::Buffer* b, uint64_t* end) {
  if (b->size() > UINT64_MAX - b->offset()) return false;
  *end = b->offset() + b->size();
  return true;
}

std::vector<flatbuffers::uoffset_t> ArenaBuffersByOffset(const fb::Program* p) {
  std::vector<flatbuffers::uoffset_t> ids;
  for (flatbuffers::uoffset_t i = 0; i < Size(p->buffers()); ++i) {
    if (p->buffers()->Get(i)->kind() == fb::BufferKind::Arena) ids.push_back(i);
  }
  std::stable_sort(ids.begin(), ids.end(), [p](auto a, auto b) {
    return p->buffers()->Get(a)->offset() < p->buffers()->Get(b)->offset();
  });
  return ids;
}

// Problems that the runtime's own checks would refuse; shown beside the entry
// rather than failing, since inspecting a bad program is how one debugs it.
std::string ArenaProblem(const fb::Program* p, const fb::Buffer* b) {
  uint64_t end;
  if (!RangeEnd(b, &end)) return "offset + size overflows";
  if (end > p->arena_size()) return "ends past the arena";
  const uint32_t align = b->alignment();
  if (align != 0 && (align & (align - 1)) == 0 && b->offset() % align != 0) {
    return "offset not aligned to " + std::to_string(align);
  }
  return "";
}

// The reuse factor (the arena buffers' sizes summed, over the arena size):
// how many bytes the plan would need without reuse for each it takes.
std::string ReuseText(const ArenaPlan& plan) {
  if (plan.arena_size == 0) return "n/a (empty arena)";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f (sum / arena size)", ReuseFactor(plan));
  return buf;
}
std::string ReuseJson(const ArenaPlan& plan) {
  if (plan.arena_size == 0) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", ReuseFactor(plan));
  return buf;
}

std::string KernelName(const fb::Program* p, uint32_t index) {
  if (index >= Size(p->kernels())) return "";
  return std::string(Str(p->kernels()->Get(index)->name()));
}

// Variants in the object's kernel table: a program without a variants list
// (or with one entry) has one.
flatbuffers::uoffset_t VariantCount(const fb::Program* p) {
  return std::max<flatbuffers::uoffset_t>(1, Size(p->variants()));
}

// The name of kernel k's entry for variant v. The program names variant 0's
// kernels only; nanoc names variant v's copy of NAME_v0_kK_OP as NAME_vV_kK_OP,
// so that is the name given when variant 0's follows the pattern, and
// variant 0's name otherwise.
std::string VariantKernelName(const fb::Program* p, flatbuffers::uoffset_t v, uint32_t k) {
  std::string name = KernelName(p, k);
  const std::string v0 = std::string(Str(p->model_name())) + "_v0_";
  if (v > 0 && name.compare(0, v0.size(), v0) == 0) {
    name = v0.substr(0, v0.size() - 2) + std::to_string(v) + "_" + name.substr(v0.size());
  }
  return name;
}

void TensorsText(std::string* out, const char* role,
                 const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v) {
  for (flatbuffers::uoffset_t i = 0; i < Size(v); ++i) {
    const fb::Tensor* t = v->Get(i);
    Appendf(out, "  %s %u: %s %s[%s] buffer %u\n", role, i, Quoted(Str(t->name())).c_str(),
            DTypeName(t->dtype()).c_str(), JoinNumbers(t->shape()).c_str(), t->buffer());
  }
}

// "host to device", "device to host", "device to device", or "?" when a
// buffer index is out of range (the report shows unverified programs too).
std::string GpuCopyDirection(const fb::Program* p, const fb::GpuCopyThunk* c) {
  const auto on_device = [&](uint32_t b, bool* device) {
    if (b >= Size(p->buffers())) return false;
    const fb::BufferKind kind = p->buffers()->Get(b)->kind();
    *device = kind == fb::BufferKind::Device || kind == fb::BufferKind::DeviceConstant;
    return true;
  };
  bool src = false, dst = false;
  if (!on_device(c->src(), &src) || !on_device(c->dst(), &dst)) return "?";
  return std::string(src ? "device" : "host") + " to " + (dst ? "device" : "host");
}

const fb::GpuKernel* GpuKernelAt(const fb::Program* p, uint32_t k) {
  const fb::GpuModule* gpu = p->gpu();
  return gpu != nullptr && k < Size(gpu->kernels()) ? gpu->kernels()->Get(k) : nullptr;
}

// "cubin sm_90a" or "ptx sm_80".
std::string GpuImageLabel(const fb::GpuImage* image) {
  const bool cubin = image->format() == fb::GpuImageFormat::Cubin;
  const bool known = cubin || image->format() == fb::GpuImageFormat::Ptx;
  return std::string(known ? (cubin ? "cubin" : "ptx") : "unknown-format") + " sm_" +
         std::to_string(image->sm()) + std::string(Str(image->variant()));
}

std::string PtxIsaText(uint32_t isa) {
  return std::to_string(isa / 10) + "." + std::to_string(isa % 10);
}

// `thunks` one a line at `indent`, numbered in pre-order from *next (as
// nanort numbers them: observers, messages); an If's branches and a Loop's
// body below their thunk, indented. A program loaded by this tool passed
// flatbuffers' verifier, whose depth limit bounds the recursion.
void ThunksText(std::string* out, const fb::Program* p,
                const flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>* thunks,
                const std::string& indent, uint32_t* next) {
  for (flatbuffers::uoffset_t i = 0; i < Size(thunks); ++i) {
    const fb::Thunk* th = thunks->Get(i);
    Appendf(out, "%s%u: node %s op %s: ", indent.c_str(), (*next)++,
            Quoted(Str(th->node())).c_str(), Quoted(Str(th->op())).c_str());
    if (const fb::KernelThunk* k = th->kind_as_KernelThunk()) {
      const std::string name = KernelName(p, k->kernel());
      Appendf(out, "kernel %u (%s) args [%s] outputs %u tasks %llu\n", k->kernel(),
              name.empty() ? "out of range" : Quoted(name).c_str(), JoinNumbers(k->args()).c_str(),
              k->num_outputs(), static_cast<unsigned long long>(k->task_count()));
    } else if (const fb::CopyThunk* c = th->kind_as_CopyThunk()) {
      Appendf(out, "copy src %u dst %u size %llu\n", c->src(), c->dst(),
              static_cast<unsigned long long>(c->size()));
    } else if (const fb::GpuLaunchThunk* g = th->kind_as_GpuLaunchThunk()) {
      const fb::GpuKernel* k = GpuKernelAt(p, g->kernel());
      Appendf(out, "gpu launch kernel %u (%s) args [%s] outputs %u\n", g->kernel(),
              k != nullptr ? Quoted(Str(k->name())).c_str() : "out of range",
              JoinNumbers(g->args()).c_str(), g->num_outputs());
    } else if (const fb::GpuCopyThunk* c = th->kind_as_GpuCopyThunk()) {
      Appendf(out, "gpu copy src %u dst %u size %llu (%s)\n", c->src(), c->dst(),
              static_cast<unsigned long long>(c->size()), GpuCopyDirection(p, c).c_str());
    } else if (const fb::IfThunk* f = th->kind_as_IfThunk()) {
      Appendf(out, "if cond %u outputs [%s]\n", f->cond(), JoinNumbers(f->outputs()).c_str());
      Appendf(out, "%s  then: %u thunks\n", indent.c_str(), Size(f->then_thunks()));
      ThunksText(out, p, f->then_thunks(), indent + "    ", next);
      Appendf(out, "%s  else: %u thunks\n", indent.c_str(), Size(f->else_thunks()));
      ThunksText(out, p, f->else_thunks(), indent + "    ", next);
    } else if (const fb::LoopThunk* l = th->kind_as_LoopThunk()) {
      const auto buffer = [](uint32_t b) {
        return b == 0xFFFFFFFF ? std::string("none") : std::to_string(b);
      };
      Appendf(out, "loop trip_count %s cond %s counter %u max_trips %llu\n",
              buffer(l->trip_count()).c_str(), buffer(l->cond()).c_str(), l->counter(),
              static_cast<unsigned long long>(l->max_trips()));
      Appendf(out, "%s  body: %u thunks\n", indent.c_str(), Size(l->body()));
      ThunksText(out, p, l->body(), indent + "    ", next);
    } else {
      Appendf(out, "unknown thunk kind %u\n", static_cast<unsigned>(th->kind_type()));
    }
  }
}

}  // namespace

std::string ProgramReportText(const std::string& path, const ProgramImage& image,
                              const fb::Program* p) {
  std::string text;
  std::string* out = &text;
  Appendf(out, "file: %s (%s)\n", path.c_str(), image.origin.c_str());
  Appendf(out, "format version: %u.%u\n", p->format_major(), p->format_minor());
  Appendf(out, "kernel abi: %u\n", p->kernel_abi());
  Appendf(out, "model: %s\n", Quoted(Str(p->model_name())).c_str());

  const fb::Target* t = p->target();
  Appendf(out, "target:\n");
  if (t) {
    Appendf(out, "  device: %s\n", DeviceName(t->device()).c_str());
    Appendf(out, "  triple: %s\n", Quoted(Str(t->triple())).c_str());
    Appendf(out, "  cpu: %s\n", Quoted(Str(t->cpu())).c_str());
    std::string features;
    for (flatbuffers::uoffset_t i = 0; i < Size(t->features()); ++i) {
      if (i > 0) features += ',';
      features += Str(t->features()->Get(i));
    }
    Appendf(out, "  features: %s\n", Quoted(features).c_str());
    Appendf(out, "  data layout: %s\n", Quoted(Str(t->data_layout())).c_str());
    if (t->device() == fb::DeviceKind::CudaGpu) {
      Appendf(out, "  sm: %u\n  ptx isa: %u\n", t->sm(), t->ptx_isa());
    }
  } else {
    Appendf(out, "  (none)\n");
  }
  if (Size(p->variants()) > 1) {
    Appendf(out,
            "variants: %u (the kernels are compiled for each; nanort runs the one with the "
            "most features that this CPU supports)\n",
            static_cast<unsigned>(Size(p->variants())));
    for (flatbuffers::uoffset_t v = 0; v < Size(p->variants()); ++v) {
      const fb::Target* variant = p->variants()->Get(v);
      Appendf(out, "  %u: %s cpu %s, %u features, kernels [%u, %u)\n", static_cast<unsigned>(v),
              Quoted(Str(variant->triple())).c_str(), Quoted(Str(variant->cpu())).c_str(),
              static_cast<unsigned>(Size(variant->features())),
              static_cast<unsigned>(v * Size(p->kernels())),
              static_cast<unsigned>((v + 1) * Size(p->kernels())));
    }
  }
  Appendf(out, "constants: %llu bytes\n", static_cast<unsigned long long>(p->constants_size()));

  for (flatbuffers::uoffset_t e = 0; e < Size(p->entries()); ++e) {
    const fb::Entry* entry = p->entries()->Get(e);
    Appendf(out, "entry %u: %s\n", e, Quoted(Str(entry->name())).c_str());
    TensorsText(out, "input", entry->inputs());
    TensorsText(out, "output", entry->outputs());
    Appendf(out, "  thunks: %u\n", Size(entry->thunks()));
    uint32_t next = 0;  // pre-order number, as nanort numbers thunks
    ThunksText(out, p, entry->thunks(), "    ", &next);
  }

  Appendf(out, "buffers: %u\n", Size(p->buffers()));
  for (flatbuffers::uoffset_t i = 0; i < Size(p->buffers()); ++i) {
    const fb::Buffer* b = p->buffers()->Get(i);
    Appendf(
        out, "  %u: %s index %u offset %llu size %llu alignment %u name %s\n", i,
        BufferKindName(b->kind()).c_str(), b->index(), static_cast<unsigned long long>(b->offset()),
        static_cast<unsigned long long>(b->size()), b->alignment(), Quoted(Str(b->name())).c_str());
  }

  const ArenaPlan plan = BuildArenaPlan(p);
  Appendf(out, "arena: %llu bytes, alignment %u; %zu buffers, %llu bytes in all; reuse factor %s\n",
          static_cast<unsigned long long>(p->arena_size()), p->arena_alignment(),
          plan.buffers.size(), static_cast<unsigned long long>(plan.buffers_size_sum),
          ReuseText(plan).c_str());
  for (flatbuffers::uoffset_t i : ArenaBuffersByOffset(p)) {
    const fb::Buffer* b = p->buffers()->Get(i);
    const std::string problem = ArenaProblem(p, b);
    Appendf(out, "  [%llu, %llu) buffer %u %s%s%s\n", static_cast<unsigned long long>(b->offset()),
            static_cast<unsigned long long>(b->offset() + b->size()), i,
            Quoted(Str(b->name())).c_str(), problem.empty() ? "" : "  !! ", problem.c_str());
  }

  // Every variant's kernels, numbered as the object's kernel table is
  // (variant-major); thunks name kernels by their index in variant 0.
  const flatbuffers::uoffset_t num_kernels = Size(p->kernels());
  const flatbuffers::uoffset_t num_variants = VariantCount(p);
  if (num_variants == 1) {
    Appendf(out, "kernels: %u\n", num_kernels);
  } else {
    Appendf(out, "kernels: %u, in each of %u variants (%u table entries)\n", num_kernels,
            num_variants, num_kernels * num_variants);
  }
  for (flatbuffers::uoffset_t v = 0; v < num_variants; ++v) {
    const char* indent = "  ";
    if (num_variants > 1) {
      Appendf(out, "  variant %u: cpu %s\n", v, Quoted(Str(p->variants()->Get(v)->cpu())).c_str());
      indent = "    ";
    }
    for (flatbuffers::uoffset_t i = 0; i < num_kernels; ++i) {
      const fb::Kernel* k = p->kernels()->Get(i);
      Appendf(out, "%s%u: %s %s\n", indent, v * num_kernels + i,
              Quoted(VariantKernelName(p, v, i)).c_str(), DeviceName(k->device()).c_str());
    }
  }

  // Format 1.3: the GPU module nanort picks an image of at load.
  if (const fb::GpuModule* gpu = p->gpu()) {
    if (const fb::Target* t = p->gpu_target()) {
      Appendf(out, "gpu target: %s sm_%u, ptx isa %s\n", DeviceName(t->device()).c_str(), t->sm(),
              PtxIsaText(t->ptx_isa()).c_str());
    }
    Appendf(out, "gpu device arena: %llu bytes, alignment %u\n",
            static_cast<unsigned long long>(gpu->device_arena_size()),
            gpu->device_arena_alignment());
    Appendf(out, "gpu images: %u\n", Size(gpu->images()));
    for (flatbuffers::uoffset_t i = 0; i < Size(gpu->images()); ++i) {
      const fb::GpuImage* image = gpu->images()->Get(i);
      Appendf(out, "  %u: %s, ptx isa %s, %u bytes\n", i, GpuImageLabel(image).c_str(),
              PtxIsaText(image->ptx_isa()).c_str(), Size(image->data()));
    }
    Appendf(out, "gpu kernels: %u\n", Size(gpu->kernels()));
    for (flatbuffers::uoffset_t i = 0; i < Size(gpu->kernels()); ++i) {
      const fb::GpuKernel* k = gpu->kernels()->Get(i);
      Appendf(out, "  %u: %s arg bytes [%s] outputs %u grid [%s] block [%s] shared %u\n", i,
              Quoted(Str(k->name())).c_str(), JoinNumbers(k->arg_bytes()).c_str(), k->num_outputs(),
              JoinNumbers(k->grid()).c_str(), JoinNumbers(k->block()).c_str(), k->shared_bytes());
    }
  }
  return text;
}

namespace {

std::string U(uint64_t v) { return std::to_string(v); }

std::string JsonTensors(const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v) {
  std::string out = "[";
  for (flatbuffers::uoffset_t i = 0; i < Size(v); ++i) {
    const fb::Tensor* t = v->Get(i);
    out += std::string(i > 0 ? ", " : "") + "{\"name\": " + JsonString(Str(t->name())) +
           ", \"dtype\": " + JsonString(DTypeName(t->dtype())) + ", \"shape\": [" +
           JoinNumbers(t->shape(), ", ") + "], \"buffer\": " + U(t->buffer()) + "}";
  }
  return out + "]";
}

std::string JsonThunks(const fb::Program* p,
                       const flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>* thunks);

std::string JsonThunk(const fb::Program* p, const fb::Thunk* th) {
  std::string out =
      "{\"node\": " + JsonString(Str(th->node())) + ", \"op\": " + JsonString(Str(th->op()));
  if (const fb::KernelThunk* k = th->kind_as_KernelThunk()) {
    const std::string name = KernelName(p, k->kernel());
    out += ", \"kind\": \"kernel\", \"kernel\": " + U(k->kernel()) +
           ", \"kernel_name\": " + (k->kernel() < Size(p->kernels()) ? JsonString(name) : "null") +
           ", \"args\": [" + JoinNumbers(k->args(), ", ") +
           "], \"num_outputs\": " + U(k->num_outputs()) + ", \"task_count\": " + U(k->task_count());
  } else if (const fb::CopyThunk* c = th->kind_as_CopyThunk()) {
    out += ", \"kind\": \"copy\", \"src\": " + U(c->src()) + ", \"dst\": " + U(c->dst()) +
           ", \"size\": " + U(c->size());
  } else if (const fb::GpuLaunchThunk* g = th->kind_as_GpuLaunchThunk()) {
    const fb::GpuKernel* k = GpuKernelAt(p, g->kernel());
    out += ", \"kind\": \"gpu_launch\", \"kernel\": " + U(g->kernel()) +
           ", \"kernel_name\": " + (k != nullptr ? JsonString(Str(k->name())) : "null") +
           ", \"args\": [" + JoinNumbers(g->args(), ", ") +
           "], \"num_outputs\": " + U(g->num_outputs());
  } else if (const fb::GpuCopyThunk* c = th->kind_as_GpuCopyThunk()) {
    out += ", \"kind\": \"gpu_copy\", \"src\": " + U(c->src()) + ", \"dst\": " + U(c->dst()) +
           ", \"size\": " + U(c->size()) + ", \"direction\": " + JsonString(GpuCopyDirection(p, c));
  } else if (const fb::IfThunk* f = th->kind_as_IfThunk()) {
    out += ", \"kind\": \"if\", \"cond\": " + U(f->cond()) + ", \"outputs\": [" +
           JoinNumbers(f->outputs(), ", ") + "], \"then\": " + JsonThunks(p, f->then_thunks()) +
           ", \"else\": " + JsonThunks(p, f->else_thunks());
  } else if (const fb::LoopThunk* l = th->kind_as_LoopThunk()) {
    const auto buffer = [](uint32_t b) { return b == 0xFFFFFFFF ? std::string("null") : U(b); };
    out += ", \"kind\": \"loop\", \"trip_count\": " + buffer(l->trip_count()) +
           ", \"cond\": " + buffer(l->cond()) + ", \"counter\": " + U(l->counter()) +
           ", \"max_trips\": " + U(l->max_trips()) + ", \"body\": " + JsonThunks(p, l->body());
  } else {
    out += ", \"kind\": \"unknown\", \"kind_type\": " + U(static_cast<unsigned>(th->kind_type()));
  }
  return out + "}";
}

// A nested sequence (an If's branch, a Loop's body) on one line.
std::string JsonThunks(const fb::Program* p,
                       const flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>* thunks) {
  std::string out = "[";
  for (flatbuffers::uoffset_t i = 0; i < Size(thunks); ++i) {
    out += std::string(i > 0 ? ", " : "") + JsonThunk(p, thunks->Get(i));
  }
  return out + "]";
}

}  // namespace

std::string ProgramReportJson(const std::string& path, const ProgramImage& image,
                              const fb::Program* p) {
  std::string out = "{\n";
  out += "  \"file\": " + JsonString(path) + ",\n";
  out += "  \"origin\": " + JsonString(image.origin) + ",\n";
  out += "  \"format_version\": {\"major\": " + U(p->format_major()) +
         ", \"minor\": " + U(p->format_minor()) + "},\n";
  out += "  \"kernel_abi\": " + U(p->kernel_abi()) + ",\n";
  out += "  \"model_name\": " + JsonString(Str(p->model_name())) + ",\n";
  auto targetJson = [](const fb::Target* t) {
    std::string features;
    for (flatbuffers::uoffset_t i = 0; i < Size(t->features()); ++i) {
      features += (i > 0 ? ", " : "") + JsonString(Str(t->features()->Get(i)));
    }
    return "{\"device\": " + JsonString(DeviceName(t->device())) +
           ", \"triple\": " + JsonString(Str(t->triple())) +
           ", \"cpu\": " + JsonString(Str(t->cpu())) + ", \"features\": [" + features +
           "], \"data_layout\": " + JsonString(Str(t->data_layout())) + ", \"sm\": " + U(t->sm()) +
           ", \"ptx_isa\": " + U(t->ptx_isa()) + "}";
  };
  if (const fb::Target* t = p->target()) {
    out += "  \"target\": " + targetJson(t) + ",\n";
  } else {
    out += "  \"target\": null,\n";
  }
  out += "  \"variants\": [";
  for (flatbuffers::uoffset_t v = 0; v < Size(p->variants()); ++v)
    out += std::string(v > 0 ? ", " : "") + targetJson(p->variants()->Get(v));
  out += "],\n";
  out += "  \"constants_size\": " + U(p->constants_size()) + ",\n";

  out += "  \"entries\": [";
  for (flatbuffers::uoffset_t e = 0; e < Size(p->entries()); ++e) {
    const fb::Entry* entry = p->entries()->Get(e);
    out += std::string(e > 0 ? "," : "") + "\n    {\"name\": " + JsonString(Str(entry->name())) +
           ",\n     \"inputs\": " + JsonTensors(entry->inputs()) +
           ",\n     \"outputs\": " + JsonTensors(entry->outputs()) + ",\n     \"thunks\": [";
    for (flatbuffers::uoffset_t i = 0; i < Size(entry->thunks()); ++i) {
      out += std::string(i > 0 ? "," : "") + "\n       " + JsonThunk(p, entry->thunks()->Get(i));
    }
    out += "]}";
  }
  out += "],\n";

  out += "  \"buffers\": [";
  for (flatbuffers::uoffset_t i = 0; i < Size(p->buffers()); ++i) {
    const fb::Buffer* b = p->buffers()->Get(i);
    out += std::string(i > 0 ? "," : "") + "\n    {\"id\": " + U(i) +
           ", \"kind\": " + JsonString(BufferKindName(b->kind())) +
           ", \"index\": " + U(b->index()) + ", \"offset\": " + U(b->offset()) +
           ", \"size\": " + U(b->size()) + ", \"alignment\": " + U(b->alignment()) +
           ", \"name\": " + JsonString(Str(b->name())) + "}";
  }
  out += "],\n";

  const ArenaPlan plan = BuildArenaPlan(p);
  out += "  \"arena\": {\"size\": " + U(p->arena_size()) +
         ", \"alignment\": " + U(p->arena_alignment()) +
         ", \"buffers_size_sum\": " + U(plan.buffers_size_sum) +
         ", \"reuse_factor\": " + ReuseJson(plan) + ", \"buffers\": [";
  bool first = true;
  for (flatbuffers::uoffset_t i : ArenaBuffersByOffset(p)) {
    const fb::Buffer* b = p->buffers()->Get(i);
    const std::string problem = ArenaProblem(p, b);
    out += std::string(first ? "" : ",") + "\n    {\"buffer\": " + U(i) +
           ", \"begin\": " + U(b->offset()) + ", \"end\": " + U(b->offset() + b->size()) +
           ", \"name\": " + JsonString(Str(b->name())) +
           (problem.empty() ? "" : ", \"problem\": " + JsonString(problem)) + "}";
    first = false;
  }
  out += "]},\n";

  out += "  \"kernels\": [";
  for (flatbuffers::uoffset_t i = 0; i < Size(p->kernels()); ++i) {
    const fb::Kernel* k = p->kernels()->Get(i);
    out += std::string(i > 0 ? "," : "") + "\n    {\"name\": " + JsonString(Str(k->name())) +
           ", \"device\": " + JsonString(DeviceName(k->device())) + "}";
  }
  out += "],\n";
  // The object's whole kernel table: every variant's kernels, variant-major.
  out += "  \"kernel_table\": [";
  const flatbuffers::uoffset_t num_kernels = Size(p->kernels());
  for (flatbuffers::uoffset_t v = 0; v < VariantCount(p); ++v) {
    for (flatbuffers::uoffset_t i = 0; i < num_kernels; ++i) {
      const fb::Kernel* k = p->kernels()->Get(i);
      out += std::string(v + i > 0 ? "," : "") + "\n    {\"index\": " + U(v * num_kernels + i) +
             ", \"variant\": " + U(v) + ", \"kernel\": " + U(i) +
             ", \"name\": " + JsonString(VariantKernelName(p, v, i)) +
             ", \"device\": " + JsonString(DeviceName(k->device())) + "}";
    }
  }
  out += "],\n";
  // Format 1.3's GPU module (null for a CPU-only program).
  if (const fb::GpuModule* gpu = p->gpu()) {
    out += "  \"gpu_target\": " + (p->gpu_target() ? targetJson(p->gpu_target()) : "null") +
           ",\n  \"gpu\": {\"device_arena_size\": " + U(gpu->device_arena_size()) +
           ", \"device_arena_alignment\": " + U(gpu->device_arena_alignment()) +
           ",\n    \"images\": [";
    for (flatbuffers::uoffset_t i = 0; i < Size(gpu->images()); ++i) {
      const fb::GpuImage* image = gpu->images()->Get(i);
      const bool cubin = image->format() == fb::GpuImageFormat::Cubin;
      out += std::string(i > 0 ? "," : "") + "\n      {\"format\": " +
             JsonString(cubin                                        ? "cubin"
                        : image->format() == fb::GpuImageFormat::Ptx ? "ptx"
                                                                     : "?") +
             ", \"sm\": " + U(image->sm()) + ", \"variant\": " + JsonString(Str(image->variant())) +
             ", \"ptx_isa\": " + U(image->ptx_isa()) + ", \"bytes\": " + U(Size(image->data())) +
             "}";
    }
    out += "],\n    \"kernels\": [";
    for (flatbuffers::uoffset_t i = 0; i < Size(gpu->kernels()); ++i) {
      const fb::GpuKernel* k = gpu->kernels()->Get(i);
      out += std::string(i > 0 ? "," : "") + "\n      {\"name\": " + JsonString(Str(k->name())) +
             ", \"arg_bytes\": [" + JoinNumbers(k->arg_bytes(), ", ") +
             "], \"num_outputs\": " + U(k->num_outputs()) + ", \"grid\": [" +
             JoinNumbers(k->grid(), ", ") + "], \"block\": [" + JoinNumbers(k->block(), ", ") +
             "], \"shared_bytes\": " + U(k->shared_bytes()) + "}";
    }
    out += "]}\n}\n";
  } else {
    out += "  \"gpu\": null\n}\n";
  }
  return out;
}

}  // namespace nanort::tools
