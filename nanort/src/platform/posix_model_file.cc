// Loading a model from a shared object: the one file that uses libdl, part of
// the posix platform.
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "status.h"

#if defined(NANORT_WITH_DLOPEN)
#include <dlfcn.h>
#endif

namespace nanort {
namespace {

#if defined(NANORT_WITH_DLOPEN)

void CloseLibrary(void* library) { dlclose(library); }

// "dir/NAME.so" -> "NAME"; false if the result is empty or does not fit.
bool ModelNameFromPath(const char* path, char* out, size_t out_size) {
  const char* base = strrchr(path, '/');
  base = base != nullptr ? base + 1 : path;
  const char* dot = strchr(base, '.');
  const size_t length = dot != nullptr ? static_cast<size_t>(dot - base) : strlen(base);
  if (length == 0 || length >= out_size) return false;
  memcpy(out, base, length);
  out[length] = '\0';
  return true;
}

#endif

}  // namespace
}  // namespace nanort

extern "C" nanort_status_code nanort_model_load_file(const char* path, const char* name,
                                                     nanort_allocator allocator,
                                                     nanort_model** out_model,
                                                     nanort_status* status) {
  NANORT_CHECK_OR_RETURN(out_model != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "out_model is NULL");
  *out_model = nullptr;
  NANORT_CHECK_OR_RETURN(path != nullptr, status, NANORT_INVALID_ARGUMENT, "path is NULL");
#if defined(NANORT_WITH_DLOPEN)
  char model_name[200];
  if (name != nullptr) {
    NANORT_CHECK_OR_RETURN(name[0] != '\0' && strlen(name) < sizeof(model_name), status,
                           NANORT_INVALID_ARGUMENT, "model name '%.64s' is empty or too long",
                           name);
    strcpy(model_name, name);
  } else {
    NANORT_CHECK_OR_RETURN(nanort::ModelNameFromPath(path, model_name, sizeof(model_name)), status,
                           NANORT_INVALID_ARGUMENT, "cannot take a model name from '%s'; pass one",
                           path);
  }
  char symbol[sizeof(model_name) + 8];
  snprintf(symbol, sizeof(symbol), "%s_model", model_name);

  // RTLD_LOCAL: several models may be loaded, and their symbols must not
  // resolve against each other.
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    return NANORT_FAIL(status, NANORT_NOT_FOUND, "cannot load '%s': %s", path,
                       error != nullptr ? error : "unknown error");
  }
  dlerror();
  const auto* def = static_cast<const nanort_model_def*>(dlsym(library, symbol));
  if (def == nullptr) {
    const char* error = dlerror();
    nanort_status_code code =
        NANORT_FAIL(status, NANORT_NOT_FOUND, "'%s' has no symbol %s: %s", path, symbol,
                    error != nullptr ? error : "symbol is NULL");
    dlclose(library);
    return code;
  }
  nanort_model* model = nullptr;
  const nanort_status_code code = nanort_model_load(def, allocator, &model, status);
  if (code != NANORT_OK) {
    dlclose(library);
    return code;
  }
  model->library = library;
  model->close_library = &nanort::CloseLibrary;
  *out_model = model;
  return NANORT_OK;
#else
  (void)name;
  (void)allocator;
  return NANORT_FAIL(status, NANORT_UNAVAILABLE,
                     "cannot load '%s': this nanort was built without dynamic loading "
                     "(NANORT_WITH_DLOPEN)",
                     path);
#endif
}
