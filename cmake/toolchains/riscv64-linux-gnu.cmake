# Cross-compiles nanort (and tools/) for 64-bit RISC-V Linux with Debian's
# g++-riscv64-linux-gnu, linking executables statically so that they run on
# any riscv64 board (or under qemu-riscv64-static) without its libraries.
#
#   cmake -S . -B build-riscv64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/riscv64-linux-gnu.cmake \
#     -DNANORT_BUILD_COMPILER=OFF -DNANORT_BUILD_TESTS=OFF
#
# The runtime itself is built for plain RV64GC; the models' kernels carry
# whatever extensions nanoc's profile names (rv64gcv: V), and nanort checks
# them against the CPU's hwcaps at load.
set(NANORT_CROSS_TRIPLE riscv64-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu-common.cmake)
