# Cross-compiles nanort (and tools/) for 64-bit Arm Linux with Debian's
# g++-aarch64-linux-gnu, linking executables statically so that they run on
# any aarch64 board (or under qemu-aarch64-static) without its libraries.
#
#   cmake -S . -B build-aarch64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#     -DNANORT_BUILD_COMPILER=OFF -DNANORT_BUILD_TESTS=OFF
#
# NANORT_CROSS_PREFIX overrides the compilers' prefix (another vendor's
# toolchain, e.g. aarch64-none-linux-gnu-).
set(NANORT_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu-common.cmake)
