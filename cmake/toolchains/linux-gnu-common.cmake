# Shared by the <arch>-linux-gnu toolchain files, which set
# NANORT_CROSS_TRIPLE and CMAKE_SYSTEM_PROCESSOR before including this.
set(CMAKE_SYSTEM_NAME Linux)

# try_compile projects re-read the toolchain file; pass the triple on to them.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES NANORT_CROSS_TRIPLE NANORT_CROSS_PREFIX)

if(NOT NANORT_CROSS_PREFIX)
  set(NANORT_CROSS_PREFIX ${NANORT_CROSS_TRIPLE}-)
endif()
set(CMAKE_C_COMPILER ${NANORT_CROSS_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${NANORT_CROSS_PREFIX}g++)
set(CMAKE_AR ${NANORT_CROSS_PREFIX}ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${NANORT_CROSS_PREFIX}ranlib CACHE FILEPATH "")
set(CMAKE_STRIP ${NANORT_CROSS_PREFIX}strip CACHE FILEPATH "")

# Debian's multiarch cross sysroot. Libraries and headers come from there
# only; programs (flatc, which generates the program format's header) are the
# host's.
set(CMAKE_FIND_ROOT_PATH /usr/${NANORT_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Deployed binaries carry their C and C++ libraries: a board's glibc and
# libstdc++ need not match the build machine's.
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)

# Cross-built test programs can run here under qemu-user.
find_program(NANORT_CROSS_EMULATOR qemu-${CMAKE_SYSTEM_PROCESSOR}-static)
if(NANORT_CROSS_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${NANORT_CROSS_EMULATOR})
endif()
