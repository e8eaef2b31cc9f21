# nanort_add_model(NAME MODEL FILE [TARGET PROFILE] [NANOC_ARGS ARG...])
#
# Compiles MODEL (.onnx or .nir) with nanoc at build time into a static
# library target NAME that holds the model's object (NAME.o, exporting
# NAME_model) and puts NAME.h on its users' include path; it links
# nanort::nanort. TARGET is nanoc's --target (a profile such as x86-64-v3 or
# cortex-a76, several comma-separated, or host; default host). NANOC_ARGS go
# to nanoc as they are (--input-shape, --dim, ...).
#
# nanoc runs again only when the model, nanoc or these arguments change: the
# arguments are kept in a file rewritten only when they differ, which the
# build depends on.
#
#   find_package(nanort CONFIG REQUIRED)
#   nanort_add_model(mnist MODEL mnist.onnx TARGET cortex-a76)
#   add_executable(app app.c)
#   target_link_libraries(app PRIVATE mnist)   # #include "mnist.h"
function(nanort_add_model name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MODEL;TARGET" "NANOC_ARGS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "nanort_add_model(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_MODEL)
    message(FATAL_ERROR "nanort_add_model(${name}): MODEL is required")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "nanort_add_model(${name}): the name is the model's C symbol prefix, "
                        "so it must be a C identifier")
  endif()
  if(NOT TARGET nanort::nanoc)
    message(FATAL_ERROR "nanort_add_model(${name}): no nanoc: this nanort prefix has none (a "
                        "runtime-only install); set NANORT_NANOC to the host's nanoc")
  endif()
  get_filename_component(model "${ARG_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/nanort_models/${name}")
  set(args "${model}" --name ${name} -o "${dir}")
  if(ARG_TARGET)
    list(APPEND args --target ${ARG_TARGET})
  endif()
  list(APPEND args ${ARG_NANOC_ARGS})
  set(flags "${dir}.nanoc-args")
  string(REPLACE ";" "\n" flags_text "${args}")
  file(CONFIGURE OUTPUT "${flags}" CONTENT "${flags_text}\n" @ONLY)
  add_custom_command(
    OUTPUT "${dir}/${name}.o" "${dir}/${name}.h"
    COMMAND nanort::nanoc ${args}
    DEPENDS "${model}" "${flags}" $<TARGET_FILE:nanort::nanoc>
    COMMENT "nanoc ${ARG_MODEL} -> ${name}.o, ${name}.h"
    VERBATIM)
  set_source_files_properties("${dir}/${name}.o" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  add_library(${name} STATIC "${dir}/${name}.o" "${dir}/${name}.h")
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE C)
  target_include_directories(${name} INTERFACE "${dir}")
  target_link_libraries(${name} INTERFACE nanort::nanort)
endfunction()
