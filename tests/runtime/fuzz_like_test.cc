// Damaged programs: every truncation and every single-byte change of a valid
// program must fail cleanly or, if it still verifies, run without touching
// memory outside its buffers (run these under -fsanitize=address to see it).
#include <gtest/gtest.h>
#include <string.h>

#include <memory>

#include "guarded_block.h"
#include "test_util.h"

namespace nanort::test {
namespace {

// Exactly `size` heap bytes, so that a sanitizer sees any read past the end.
std::unique_ptr<uint8_t[]> CopyExact(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size != 0) memcpy(copy.get(), data, size);
  return copy;
}

// UNAVAILABLE too: a damaged byte can make a program seem to offload to a
// GPU (a format 1.3 GPU module), which this binary does not link (or, in a
// build without NANORT_WITH_CUDA, cannot run).
bool IsCleanRefusal(nanort_status_code code) {
  return code == NANORT_INVALID_PROGRAM || code == NANORT_UNSUPPORTED_VERSION ||
         code == NANORT_UNSUPPORTED_TARGET || code == NANORT_UNAVAILABLE;
}

// Runs a model that loaded, its arena and tensors each ending at a guard page
// (guarded_block.h), so that a kernel overrun faults here.
void RunLoaded(nanort_model* model) {
  // A damaged arena size may ask for more than a test should allocate.
  if (nanort_model_arena_size(model) > (1u << 24)) return;
  const size_t arena_size = nanort_model_arena_size(model);
  GuardedBlock arena(arena_size, nanort_model_arena_alignment(model));
  nanort_session* session = nullptr;
  ASSERT_EQ(nanort_session_create(model, arena.data(), arena_size, nanort_allocator_system(),
                                  &session, nullptr),
            NANORT_OK);
  std::vector<std::unique_ptr<GuardedBlock>> storage;
  std::vector<nanort_tensor> tensors[2];
  for (int side = 0; side < 2; ++side) {
    const size_t count =
        side == 0 ? nanort_model_input_count(model) : nanort_model_output_count(model);
    for (size_t i = 0; i < count; ++i) {
      nanort_tensor_info info;
      ASSERT_EQ(side == 0 ? nanort_model_input_info(model, i, &info)
                          : nanort_model_output_info(model, i, &info),
                NANORT_OK);
      if (info.size_bytes > (1u << 20)) {
        nanort_session_release(session);
        return;  // a damaged shape may ask for more than a test should give
      }
      storage.emplace_back(new GuardedBlock(info.size_bytes, nanort_dtype_size(info.dtype)));
      tensors[side].push_back(
          nanort_tensor{storage.back()->data(), info.dtype, info.rank, info.dims});
    }
  }
  nanort_status status;
  const nanort_status_code code = nanort_run(session, tensors[0].data(), tensors[0].size(),
                                             tensors[1].data(), tensors[1].size(), &status);
  EXPECT_EQ(code, NANORT_OK) << status.message;
  nanort_session_release(session);
}

TEST(DamagedProgram, EveryTruncationFailsCleanly) {
  ChainModel chain;
  const std::vector<uint8_t> full = chain.program;
  for (size_t length = 0; length < full.size(); ++length) {
    auto prefix = CopyExact(full.data(), length);
    chain.def.program = prefix.get();
    chain.def.program_size = length;
    const LoadResult result = LoadDef(chain.def);
    // The builder pads the buffer's far end for alignment; a cut that drops
    // only padding leaves a whole program, and loading it is right.
    bool cut_only_padding = true;
    for (size_t i = length; i < full.size(); ++i) cut_only_padding &= full[i] == 0;
    if (result.code == NANORT_OK && cut_only_padding) continue;
    ASSERT_EQ(result.code, NANORT_INVALID_PROGRAM) << "prefix of " << length << " bytes";
    ASSERT_FALSE(result.message.empty());
  }
}

// Every single-byte change of `chain`'s program (its def kept) fails cleanly
// or loads and runs without touching memory outside its buffers.
void EveryByteChangeFailsCleanlyOrRunsSafely(ChainModel& chain) {
  const std::vector<uint8_t> full = chain.program;
  int loaded = 0, refused = 0;
  for (size_t at = 0; at < full.size(); ++at) {
    for (uint8_t mask : {0xff, 0x01, 0x80}) {
      auto damaged = CopyExact(full.data(), full.size());
      damaged[at] ^= mask;
      chain.def.program = damaged.get();
      chain.def.program_size = full.size();
      nanort_model* model = nullptr;
      nanort_status status;
      const nanort_status_code code =
          nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status);
      if (code == NANORT_OK) {
        ++loaded;
        RunLoaded(model);
        nanort_model_release(model);
      } else {
        ++refused;
        ASSERT_TRUE(IsCleanRefusal(code))
            << "byte " << at << " ^ " << int{mask} << ": " << nanort_status_code_name(code);
        ASSERT_EQ(model, nullptr);
      }
    }
  }
  // Both outcomes occur: names and padding can change freely, offsets cannot.
  EXPECT_GT(loaded, 0);
  EXPECT_GT(refused, 0);
}

TEST(DamagedProgram, EveryByteChangeFailsCleanlyOrRunsSafely) {
  ChainModel chain;
  EveryByteChangeFailsCleanlyOrRunsSafely(chain);
}

// The same for a two-variant artifact: every variant's kernels carry the
// signature a damaged thunk is held to.
TEST(DamagedProgram, EveryByteChangeOfATwoVariantProgramFailsCleanlyOrRunsSafely) {
  ProgramSpec spec = ChainSpec();
  spec.variants = {{"base", {}}, {"copy", {}}};
  ChainModel chain(spec);
  const nanort_kernel table[4] = {AddF32Entry(), ScaleF32Entry(), AddF32Entry(), ScaleF32Entry()};
  chain.def.kernels = table;
  chain.def.num_kernels = 4;
  EveryByteChangeFailsCleanlyOrRunsSafely(chain);
}

}  // namespace
}  // namespace nanort::test
