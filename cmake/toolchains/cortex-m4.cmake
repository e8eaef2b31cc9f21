# Cortex-M4F bare metal with Debian's gcc-arm-none-eabi and newlib:
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/cortex-m4.cmake ...
# Hard-float with the single-precision FPU, the ABI nanoc's cortex-m4 profile
# (thumbv7em-none-eabihf) compiles for.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_AR arm-none-eabi-ar CACHE FILEPATH "")
set(CMAKE_RANLIB arm-none-eabi-ranlib CACHE FILEPATH "")
set(CMAKE_SIZE arm-none-eabi-size CACHE FILEPATH "")

set(NANORT_CORTEX_M4_FLAGS "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
set(CMAKE_C_FLAGS_INIT "${NANORT_CORTEX_M4_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${NANORT_CORTEX_M4_FLAGS}")
set(CMAKE_ASM_FLAGS_INIT "${NANORT_CORTEX_M4_FLAGS}")

# No OS to run a test executable on: CMake's compiler checks build a library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

# Programs (flatc, python) come from the build machine; headers and libraries
# from the toolchain's sysroot, except header-only packages found by path.
set(CMAKE_FIND_ROOT_PATH /usr/lib/arm-none-eabi)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE NEVER)
