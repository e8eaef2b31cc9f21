// Loop nests shared by the matrix-product and windowed lowerings:
// lower_gemm.cc defines the product rows (Gemm, MatMul), lower_conv.cc the
// window sweep (Conv, MaxPool, AveragePool).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace nanoc::cpu {

// Rows of an M x K x N product per task: enough multiply-adds (~64K) that a
// task outweighs its dispatch, and at most 64 blocks per matrix.
int64_t productRowsPerTask(int64_t M, int64_t K, int64_t N);

// Emits rows [row_begin, row_end) of a K-deep product into a row-major Y with
// N columns:
//   Y(i, j) = alpha * sum_k A(i, k) * B(k, j) + init(i, j)   (init empty: 0)
// where A(i, k) = a[a_base + i * a_row_stride + k * a_k_stride] and
//       B(k, j) = bm[b_base + k * b_k_stride + j * b_col_stride].
// The innermost loop follows B's unit stride, so it vectorizes. With
// col_begin and col_end (i64), only columns [col_begin, col_end) of those rows.
void emitProductRows(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* a_base,
                     int64_t a_row_stride, int64_t a_k_stride, llvm::Value* bm, llvm::Value* b_base,
                     int64_t b_k_stride, int64_t b_col_stride, llvm::Value* y, llvm::Value* y_base,
                     int64_t K, int64_t N, llvm::Value* row_begin, llvm::Value* row_end,
                     double alpha,
                     const std::function<llvm::Value*(llvm::Value* i, llvm::Value* j)>& init,
                     llvm::Value* col_begin = nullptr, llvm::Value* col_end = nullptr);

// Emits, for one H x W input plane and its OH x OW output plane, every pair
// (window tap (kh, kw), output (oh, ow)) whose input element lies inside the
// input; taps in the padding are skipped. `tap(kh, kw)` runs once per tap and
// output row; `body(tap_value, x_index, y_index)` runs per output element,
// taps in (kh, kw) order. The innermost loop over ow has no branches.
void emitWindowTaps(
    llvm::IRBuilder<>& b, int64_t H, int64_t W, int64_t OH, int64_t OW,
    const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
    const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads, llvm::Value* x_plane,
    llvm::Value* y_plane, const std::function<llvm::Value*(llvm::Value* kh, llvm::Value* kw)>& tap,
    const std::function<void(llvm::Value* tap_value, llvm::Value* x_at, llvm::Value* y_at)>& body);

// The f32 weight of `tap` (one index per spatial dim) in a row-major filter
// of `kernel` taps starting at element `w_base` of `w`.
llvm::Value* loadFilterTap(llvm::IRBuilder<>& b, llvm::Value* w, llvm::Value* w_base,
                           const std::vector<llvm::Value*>& tap,
                           const std::vector<int64_t>& kernel);

// y[y_at] += weight * x[x_at] in f32, as one fused multiply-add.
void emitMultiplyAccumulate(llvm::IRBuilder<>& b, llvm::Value* weight, llvm::Value* x,
                            llvm::Value* x_at, llvm::Value* y, llvm::Value* y_at);

// The same over any number of spatial dims (in, out, kernel, strides,
// dilations one per dim; pads every begin, then every end): the dims before
// the last two are looped as (tap, output) pairs whose input lies inside the
// input, the last two are emitWindowTaps; one spatial dim is a 1 x W plane.
// `tap(taps)` gets the tap index of every dim.
void emitWindowTapsND(
    llvm::IRBuilder<>& b, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
    const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
    const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads, llvm::Value* x_plane,
    llvm::Value* y_plane, const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& tap,
    const std::function<void(llvm::Value* tap_value, llvm::Value* x_at, llvm::Value* y_at)>& body);

}  // namespace nanoc::cpu
