// Col2Im: the adjoint of im2col. input [N, C * K, L] holds, for every block
// position l (L of them, row-major over the blocks of each spatial axis) and
// every kernel offset k (K = product of block_shape), a value that is added
// into Y[n, c] at the image position l * stride - pad_begin + k * dilation
// when that lies inside image_shape.
#include "compiler/ops/col2im.h"

#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

Col2ImParams col2ImParams(const Node& node) {
  const TensorType& x = inputType(node, 0);
  Col2ImParams p;
  p.image = node.ints("image_shape");
  const size_t r = p.image.size();
  if (r < 1) failNode(node, "image_shape must have at least one dim");
  for (int64_t d : p.image)
    if (d < 1 || d > (int64_t{1} << 32))
      failNode(node, "image_shape " + dimsStr(p.image) + " has an out-of-range dim");
  p.block = intsAttr(node, "block_shape", r, 1);
  p.dilations = intsAttr(node, "dilations", r, 1);
  p.strides = intsAttr(node, "strides", r, 1);
  p.pads = intsAttr(node, "pads", 2 * r, 0);
  if (x.rank() != 3) failNode(node, "input must be [N, C * K, L], got " + x.str());
  if (x.dtype != DType::F32 && x.dtype != DType::F64 && x.dtype != DType::F16 &&
      x.dtype != DType::BF16)
    failNode(node, "input must be f16, bf16, f32 or f64, got " + x.str());
  p.K = 1;
  p.L = 1;
  for (size_t a = 0; a < r; ++a) {
    for (int64_t v : {p.block[a], p.dilations[a], p.strides[a], p.pads[a], p.pads[a + r]})
      if (v > (int64_t{1} << 30))
        failNode(node, "block_shape, dilations, strides or pads too large");
    p.K *= p.block[a];
    int64_t span = p.image[a] + p.pads[a] + p.pads[a + r] - (p.dilations[a] * (p.block[a] - 1) + 1);
    if (span < 0)
      failNode(node, "the block " + dimsStr(p.block) + " does not fit image_shape " +
                         dimsStr(p.image) + " with its pads and dilations");
    p.blocks.push_back(span / p.strides[a] + 1);
    p.L *= p.blocks.back();
    if (p.K > (int64_t{1} << 32) || p.L > (int64_t{1} << 40))
      failNode(node, "block_shape or the number of blocks is too large");
  }
  if (x.dims[1] % p.K != 0)
    failNode(node, "input dim 1 (" + std::to_string(x.dims[1]) +
                       ") is not a multiple of the block size " + std::to_string(p.K));
  if (x.dims[2] != p.L)
    failNode(node, "input dim 2 is " + std::to_string(x.dims[2]) + ", but the blocks " +
                       dimsStr(p.blocks) + " number " + std::to_string(p.L));
  p.C = x.dims[1] / p.K;
  return p;
}

namespace {

std::vector<TensorType> inferCol2Im(const Node& node) {
  Col2ImParams p = col2ImParams(node);
  std::vector<int64_t> dims = {node.inputs[0]->type.dims[0], p.C};
  dims.insert(dims.end(), p.image.begin(), p.image.end());
  return {{node.inputs[0]->type.dtype, dims}};
}

// Scatter-add in ONNX's order: kernel offset, then block position.
void referenceCol2Im(const Node& node, const std::vector<const void*>& in,
                     const std::vector<void*>& out) {
  Col2ImParams p = col2ImParams(node);
  const TensorType& xt = node.inputs[0]->type;
  const size_t r = p.image.size();
  const int64_t N = xt.dims[0];
  const int64_t S = product(p.image, 0, r);
  std::vector<double> y(static_cast<size_t>(N * p.C * S), 0.0);
  const bool wide = xt.dtype == DType::F64;
  std::vector<int64_t> k(r), l(r);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < p.C; ++c)
      for (int64_t kf = 0; kf < p.K; ++kf) {
        int64_t rem = kf;
        for (size_t a = r; a-- > 0;) {
          k[a] = rem % p.block[a];
          rem /= p.block[a];
        }
        for (int64_t lf = 0; lf < p.L; ++lf) {
          rem = lf;
          for (size_t a = r; a-- > 0;) {
            l[a] = rem % p.blocks[a];
            rem /= p.blocks[a];
          }
          int64_t pos = 0;
          bool inside = true;
          for (size_t a = 0; a < r; ++a) {
            int64_t i = l[a] * p.strides[a] - p.pads[a] + k[a] * p.dilations[a];
            inside = inside && i >= 0 && i < p.image[a];
            pos = pos * p.image[a] + i;
          }
          if (!inside) continue;
          double v = loadScalar(xt.dtype, in[0], ((n * p.C + c) * p.K + kf) * p.L + lf).f;
          double& acc = y[static_cast<size_t>((n * p.C + c) * S + pos)];
          // Accumulate in the compute type, as the kernel does.
          acc =
              wide ? acc + v : static_cast<double>(static_cast<float>(acc) + static_cast<float>(v));
        }
      }
  for (size_t i = 0; i < y.size(); ++i)
    storeScalar(xt.dtype, Scalar::ofFloat(y[i]), out[0], static_cast<int64_t>(i));
}

}  // namespace

OpSchema makeCol2ImSchema() {
  OpSchema schema;
  schema.name = "Col2Im";
  schema.infer = inferCol2Im;
  schema.reference = referenceCol2Im;
  return schema;
}

}  // namespace nanoc
