// Helpers shared by the runtime tests.
#ifndef NANORT_TESTS_RUNTIME_TEST_UTIL_H_
#define NANORT_TESTS_RUNTIME_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>

#include "nanort/nanort.h"
#include "test_program.h"

namespace nanort::test {

struct LoadResult {
  nanort_status_code code;
  std::string message;
};

// Loads and releases `def`, returning what load said.
inline LoadResult LoadDef(const nanort_model_def& def) {
  nanort_status status;
  nanort_model* model = nullptr;
  const nanort_status_code code =
      nanort_model_load(&def, nanort_allocator_system(), &model, &status);
  EXPECT_EQ(code, status.code);
  EXPECT_EQ(code == NANORT_OK, model != nullptr);
  nanort_model_release(model);
  return {code, status.message};
}

inline LoadResult LoadSpec(const ProgramSpec& spec) {
  ChainModel chain(spec);
  return LoadDef(chain.def);
}

}  // namespace nanort::test

#endif  // NANORT_TESTS_RUNTIME_TEST_UTIL_H_
