#!/usr/bin/env python3
"""The end-to-end suite's models, built with onnx.helper.

Each case is a small ONNX model that exercises one operator (and the
attributes that change its semantics) or one whole-graph behaviour. run_e2e.py
compiles a case with nanoc, runs it with nanort-run on fresh random inputs and
compares it with ONNX Runtime.

Weights are initializers drawn from a numpy RNG seeded per case, so a case's
model is the same bytes on every run; only the inputs are fresh.

    python3 models.py --out DIR          # writes DIR/<case>.onnx for every case
    python3 models.py --out DIR --case conv_basic
    python3 models.py --list             # the case names, one a line (CTest reads this)

The negative tests' models (NEGATIVE_CASES) are written by --out too but not
listed: they are not expected to compile.
"""

import argparse
import dataclasses
import os
import sys
import zlib
from typing import Callable, Dict, Optional, Tuple

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DEFAULT_OPSET = 17
# ONNX Runtime 1.31 reads models up to IR version 10; onnx 1.23 writes 11 by default.
IR_VERSION = 10


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], onnx.ModelProto]
    # Per graph input: (low, high) of a uniform draw, with a random sign when
    # `signed` holds. Inputs not named here are standard normal.
    input_ranges: Dict[str, Tuple[float, float, bool]] = dataclasses.field(default_factory=dict)


CASES: Dict[str, Case] = {}
NEGATIVE_CASES: Dict[str, Case] = {}


def case(name: Optional[str] = None, ranges=None, negative=False):
    def register(fn):
        n = name or fn.__name__
        table = NEGATIVE_CASES if negative else CASES
        assert n not in CASES and n not in NEGATIVE_CASES, n
        table[n] = Case(n, fn, ranges or {})
        return fn

    return register


# ---- helpers ---------------------------------------------------------------


def rng_for(name: str) -> np.random.Generator:
    # crc32, not hash(): Python salts str hashes per process.
    return np.random.default_rng(zlib.crc32(name.encode()))


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, list(shape))


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def weights(rng, shape, scale=None):
    """He-like scaled normal weights, so deep cases keep their activations O(1)."""
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
    s = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
    return (rng.standard_normal(shape) * s).astype(np.float32)


def model(name, nodes, inputs, outputs, initializers=(), opset=DEFAULT_OPSET):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    m = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name="nanort-e2e",
        ir_version=IR_VERSION,
    )
    onnx.checker.check_model(m, full_check=True)
    return m


def single(name, op, in_shapes, out_shape, opset=DEFAULT_OPSET, initializers=(), **attrs):
    """One node `op` over graph inputs a, b, ... (or x alone) plus initializers."""
    names = ["x"] if len(in_shapes) == 1 else [chr(ord("a") + i) for i in range(len(in_shapes))]
    node_inputs = names + [t.name for t in initializers]
    node = helper.make_node(op, node_inputs, ["y"], name=f"{op.lower()}_0", **attrs)
    return model(
        name,
        [node],
        [vi(n, s) for n, s in zip(names, in_shapes)],
        [vi("y", out_shape)],
        initializers,
        opset,
    )


# ---- elementwise -----------------------------------------------------------


@case()
def add_same_shape():
    return single("add_same_shape", "Add", [(2, 3, 4, 5), (2, 3, 4, 5)], (2, 3, 4, 5))


@case()
def add_broadcast_rank4_rank1():
    return single("add_broadcast_rank4_rank1", "Add", [(2, 3, 4, 5), (5,)], (2, 3, 4, 5))


@case()
def mul_broadcast_rank4_rank1():
    return single("mul_broadcast_rank4_rank1", "Mul", [(2, 3, 4, 5), (5,)], (2, 3, 4, 5))


@case()
def mul_broadcast_both_sides():
    # Both operands broadcast: [3,1,5] * [4,1] -> [3,4,5].
    return single("mul_broadcast_both_sides", "Mul", [(3, 1, 5), (4, 1)], (3, 4, 5))


@case()
def sub_broadcast_channel():
    # The per-channel shape that Conv bias folding and normalisation produce.
    return single("sub_broadcast_channel", "Sub", [(2, 3, 4, 5), (3, 1, 1)], (2, 3, 4, 5))


@case(ranges={"b": (0.5, 2.0, True)})
def div_broadcast():
    # Denominators kept away from zero: near-zero ones make the reference
    # itself ill-conditioned and the comparison meaningless.
    return single("div_broadcast", "Div", [(2, 3, 4, 5), (1, 4, 1)], (2, 3, 4, 5))


@case()
def add_initializer_scalar():
    rng = rng_for("add_initializer_scalar")
    c = init("c", np.array(rng.standard_normal(), dtype=np.float32))  # rank 0
    return single("add_initializer_scalar", "Add", [(3, 7)], (3, 7), initializers=[c])


@case()
def relu():
    return single("relu", "Relu", [(2, 3, 4, 5)], (2, 3, 4, 5))


@case()
def sigmoid():
    return single("sigmoid", "Sigmoid", [(4, 33)], (4, 33))


@case(ranges={"x": (0.0, 12.0, True)})
def tanh():
    # Wide range: saturation on both sides as well as the linear middle.
    return single("tanh", "Tanh", [(4, 33)], (4, 33))


# ---- matrix products -------------------------------------------------------


@case()
def matmul_2d():
    return single("matmul_2d", "MatMul", [(7, 13), (13, 9)], (7, 9))


@case()
def matmul_batched_broadcast():
    # Batch dims broadcast from both sides: [2,1,4,5] x [3,5,6] -> [2,3,4,6].
    return single("matmul_batched_broadcast", "MatMul", [(2, 1, 4, 5), (3, 5, 6)], (2, 3, 4, 6))


@case()
def matmul_1d_left():
    # A 1-D left operand is promoted to [1, K] and the added dim removed.
    return single("matmul_1d_left", "MatMul", [(5,), (2, 5, 6)], (2, 6))


@case()
def matmul_1d_right():
    return single("matmul_1d_right", "MatMul", [(2, 3, 5), (5,)], (2, 3))


@case()
def matmul_weight_initializer():
    rng = rng_for("matmul_weight_initializer")
    w = init("w", weights(rng, (64, 48)))
    return single("matmul_weight_initializer", "MatMul", [(3, 64)], (3, 48), initializers=[w])


@case()
def gemm_basic():
    rng = rng_for("gemm_basic")
    b = init("w", weights(rng, (16, 12)))
    c = init("c", weights(rng, (12,), 1.0))
    return single("gemm_basic", "Gemm", [(5, 16)], (5, 12), initializers=[b, c])


@case()
def gemm_trans_alpha_beta():
    # transA and transB with alpha/beta != 1 and C broadcast along N ([M, 1]).
    rng = rng_for("gemm_trans_alpha_beta")
    b = init("w", weights(rng, (12, 16)))  # [N, K], transB
    c = init("c", weights(rng, (5, 1), 1.0))
    return single(
        "gemm_trans_alpha_beta",
        "Gemm",
        [(16, 5)],  # [K, M], transA
        (5, 12),
        initializers=[b, c],
        transA=1,
        transB=1,
        alpha=0.75,
        beta=-1.5,
    )


@case()
def gemm_c_row_broadcast():
    rng = rng_for("gemm_c_row_broadcast")
    c = init("c", weights(rng, (1, 6), 1.0))
    return single(
        "gemm_c_row_broadcast", "Gemm", [(4, 8), (8, 6)], (4, 6), initializers=[c], beta=0.5
    )


@case()
def gemm_c_scalar():
    c = init("c", np.array(0.25, dtype=np.float32))
    return single("gemm_c_scalar", "Gemm", [(3, 8), (6, 8)], (3, 6), initializers=[c], transB=1)


@case()
def gemm_no_c():
    return single("gemm_no_c", "Gemm", [(4, 8), (8, 6)], (4, 6), alpha=2.0)


# ---- convolution -----------------------------------------------------------


def conv_case(name, x_shape, w_shape, y_shape, bias=True, opset=DEFAULT_OPSET, **attrs):
    rng = rng_for(name)
    inits = [init("w", weights(rng, w_shape))]
    if bias:
        inits.append(init("bias", weights(rng, (w_shape[0],), 0.5)))
    return single(name, "Conv", [x_shape], y_shape, opset=opset, initializers=inits, **attrs)


@case()
def conv_basic():
    return conv_case(
        "conv_basic", (1, 3, 10, 10), (8, 3, 3, 3), (1, 8, 10, 10), pads=[1, 1, 1, 1]
    )


@case()
def conv_no_bias_no_pad():
    return conv_case(
        "conv_no_bias_no_pad", (2, 4, 9, 7), (6, 4, 3, 2), (2, 6, 7, 6), bias=False
    )


@case()
def conv_stride2():
    return conv_case(
        "conv_stride2",
        (1, 3, 11, 12),
        (5, 3, 3, 3),
        (1, 5, 6, 6),
        pads=[1, 1, 1, 1],
        strides=[2, 2],
    )


@case()
def conv_dilation2():
    return conv_case(
        "conv_dilation2",
        (1, 2, 12, 12),
        (4, 2, 3, 3),
        (1, 4, 10, 10),
        pads=[1, 1, 1, 1],
        dilations=[2, 2],
    )


@case()
def conv_asymmetric_pads():
    # pads = [top, left, bottom, right] all different.
    return conv_case(
        "conv_asymmetric_pads",
        (1, 3, 8, 8),
        (4, 3, 3, 3),
        (1, 4, 8, 9),
        pads=[0, 1, 2, 2],
    )


@case()
def conv_group2():
    return conv_case(
        "conv_group2", (1, 6, 9, 9), (8, 3, 3, 3), (1, 8, 9, 9), pads=[1, 1, 1, 1], group=2
    )


@case()
def conv_depthwise():
    # group == C == M: one filter per channel (MobileNet's depthwise conv).
    return conv_case(
        "conv_depthwise",
        (1, 8, 10, 10),
        (8, 1, 3, 3),
        (1, 8, 5, 5),
        pads=[1, 1, 1, 1],
        strides=[2, 2],
        group=8,
    )


@case()
def conv_depthwise_multiplier():
    # group == C, M = 2C: two filters per input channel.
    return conv_case(
        "conv_depthwise_multiplier",
        (1, 4, 7, 7),
        (8, 1, 3, 3),
        (1, 8, 7, 7),
        pads=[1, 1, 1, 1],
        group=4,
    )


@case()
def conv_auto_pad_same_upper():
    # Stride 2 on an odd size: SAME_UPPER pads 0 before, 1 after (the odd pad at the end).
    return conv_case(
        "conv_auto_pad_same_upper",
        (1, 3, 9, 10),
        (4, 3, 3, 3),
        (1, 4, 5, 5),
        auto_pad="SAME_UPPER",
        strides=[2, 2],
    )


@case()
def conv_auto_pad_same_lower():
    return conv_case(
        "conv_auto_pad_same_lower",
        (1, 3, 10, 10),
        (4, 3, 4, 4),
        (1, 4, 10, 10),
        auto_pad="SAME_LOWER",
    )


@case()
def conv_pointwise():
    return conv_case("conv_pointwise", (2, 16, 5, 5), (24, 16, 1, 1), (2, 24, 5, 5))


@case()
def conv_winograd_f4():
    # 3x3 stride 1 with 16 channels each way on a 14 x 14 map: nanoc.Winograd,
    # F(4x4, 3x3) (16 tiles, the last row and column of tiles half outside),
    # two images.
    return conv_case(
        "conv_winograd_f4", (2, 16, 14, 14), (24, 16, 3, 3), (2, 24, 14, 14), pads=[1, 1, 1, 1]
    )


@case()
def conv_winograd_f2():
    # A 7 x 7 map: F(2x2, 3x3), 40 output channels (two groups of 24 rows).
    return conv_case(
        "conv_winograd_f2", (1, 32, 7, 7), (40, 32, 3, 3), (1, 40, 7, 7), pads=[1, 1, 1, 1]
    )


@case()
def conv_opset11():
    return conv_case(
        "conv_opset11",
        (1, 3, 8, 8),
        (4, 3, 3, 3),
        (1, 4, 8, 8),
        opset=11,
        pads=[1, 1, 1, 1],
    )


# ---- pooling ---------------------------------------------------------------


@case()
def maxpool_2x2():
    return single("maxpool_2x2", "MaxPool", [(1, 3, 8, 8)], (1, 3, 4, 4),
                  kernel_shape=[2, 2], strides=[2, 2])


@case()
def maxpool_pads_ceil_mode():
    # 3x3 stride 2 pad 1 with ceil_mode on 10x11: out = ceil((10+2-3)/2)+1 = 6,
    # ceil((11+2-3)/2)+1 = 6; padding must never win the max (all-negative inputs).
    return single("maxpool_pads_ceil_mode", "MaxPool", [(1, 2, 10, 11)], (1, 2, 6, 6),
                  kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)


@case(ranges={"x": (1.0, 5.0, False)})
def maxpool_negative_inputs_padded():
    # Every value is negative (0 - x, x > 0): a padded window in which the zero
    # padding won the max would show up as 0. Sub stands in for Neg, which is
    # not in the op set.
    zero = init("zero", np.array(0.0, dtype=np.float32))
    sub = helper.make_node("Sub", ["zero", "x"], ["xn"], name="negate_0")
    pool = helper.make_node("MaxPool", ["xn"], ["y"], name="maxpool_0", kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1])
    return model("maxpool_negative_inputs_padded", [sub, pool], [vi("x", (1, 2, 6, 6))],
                 [vi("y", (1, 2, 6, 6))], [zero])


@case()
def maxpool_dilation2():
    return single("maxpool_dilation2", "MaxPool", [(1, 2, 9, 9)], (1, 2, 7, 7),
                  kernel_shape=[2, 2], dilations=[2, 2], strides=[1, 1])


@case()
def maxpool_auto_pad_same_upper():
    return single("maxpool_auto_pad_same_upper", "MaxPool", [(1, 2, 7, 7)], (1, 2, 4, 4),
                  kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")


@case()
def averagepool_2x2():
    return single("averagepool_2x2", "AveragePool", [(2, 3, 8, 6)], (2, 3, 4, 3),
                  kernel_shape=[2, 2], strides=[2, 2])


@case()
def averagepool_pads_count_include_pad():
    return single("averagepool_pads_count_include_pad", "AveragePool", [(1, 2, 7, 7)],
                  (1, 2, 7, 7), kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)


@case()
def averagepool_pads_exclude_pad():
    return single("averagepool_pads_exclude_pad", "AveragePool", [(1, 2, 7, 7)],
                  (1, 2, 4, 4), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                  count_include_pad=0)


@case()
def averagepool_ceil_mode():
    # out = ceil((8 - 3) / 2) + 1 = 4: the last window runs past the input.
    return single("averagepool_ceil_mode", "AveragePool", [(1, 3, 8, 8)], (1, 3, 4, 4),
                  kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)


@case()
def averagepool_ceil_mode_pads_include_pad():
    # ceil_mode windows that run past the end padding: divided by the elements
    # inside the padded input only.
    return single("averagepool_ceil_mode_pads_include_pad", "AveragePool", [(1, 2, 8, 8)],
                  (1, 2, 5, 5), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                  ceil_mode=1, count_include_pad=1)


@case()
def global_average_pool():
    return single("global_average_pool", "GlobalAveragePool", [(2, 5, 7, 6)], (2, 5, 1, 1))


@case()
def global_max_pool_3d():
    return single("global_max_pool_3d", "GlobalMaxPool", [(1, 4, 3, 5, 6)], (1, 4, 1, 1, 1))


@case()
def global_lp_pool_p3():
    return single("global_lp_pool_p3", "GlobalLpPool", [(2, 3, 5, 4)], (2, 3, 1, 1), p=3)


# ---- 1-D and 3-D windows, ConvTranspose --------------------------------------


@case()
def conv_1d_stride_dilation():
    return conv_case("conv_1d_stride_dilation", (2, 3, 20), (4, 3, 3), (2, 4, 10),
                     pads=[1, 2], strides=[2], dilations=[2])


@case()
def conv_3d_group2_same_lower():
    return conv_case("conv_3d_group2_same_lower", (1, 4, 5, 6, 7), (6, 2, 3, 2, 3),
                     (1, 6, 5, 6, 7), group=2, auto_pad="SAME_LOWER")


@case()
def maxpool_3d_ceil_dilation():
    return single("maxpool_3d_ceil_dilation", "MaxPool", [(1, 2, 9, 10, 11)], (1, 2, 4, 5, 6),
                  kernel_shape=[3, 2, 3], strides=[3, 2, 2], dilations=[1, 2, 1],
                  pads=[1, 0, 1, 0, 1, 0], ceil_mode=1)


@case()
def averagepool_1d_include_pad():
    return single("averagepool_1d_include_pad", "AveragePool", [(2, 3, 17)], (2, 3, 9),
                  kernel_shape=[4], strides=[2], pads=[2, 1], count_include_pad=1)


@case()
def lppool_2d_p3():
    return single("lppool_2d_p3", "LpPool", [(1, 3, 9, 8)], (1, 3, 5, 4), opset=18,
                  kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 0], p=3)


def conv_transpose_case(name, x_shape, w_shape, y_shape, **attrs):
    rng = rng_for(name)
    m = w_shape[1] * attrs.get("group", 1)
    inits = [init("w", weights(rng, w_shape)), init("bias", weights(rng, (m,), 0.5))]
    return single(name, "ConvTranspose", [x_shape], y_shape, initializers=inits, **attrs)


@case()
def convtranspose_2d_stride_pads_output_padding():
    return conv_transpose_case("convtranspose_2d_stride_pads_output_padding", (1, 4, 5, 6),
                               (4, 3, 3, 3), (1, 3, 10, 13), strides=[2, 2], pads=[1, 0, 1, 1],
                               output_padding=[1, 1])


@case()
def convtranspose_1d_group_dilation():
    return conv_transpose_case("convtranspose_1d_group_dilation", (2, 4, 7), (4, 2, 3),
                               (2, 4, 17), group=2, strides=[2], dilations=[2])


@case()
def convtranspose_3d_output_shape():
    return conv_transpose_case("convtranspose_3d_output_shape", (1, 2, 3, 4, 3), (2, 3, 2, 3, 3),
                               (1, 3, 7, 8, 6), strides=[2, 2, 2], output_shape=[7, 8, 6])


# ---- Resize ----------------------------------------------------------------


def resize_case(name, x_shape, y_shape, scales=None, sizes=None, roi=None, opset=19, **attrs):
    # Opset 11 requires roi and scales as inputs, empty when unused.
    inits = [init("roi", np.array(roi if roi else [], dtype=np.float32)),
             init("scales", np.array(scales if scales else [], dtype=np.float32))]
    inputs = ["x", "roi", "scales"]
    if sizes is not None:
        inits.append(init("sizes", np.array(sizes, dtype=np.int64)))
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["y"], name=name + "_0", **attrs)
    return model(name, [node], [vi("x", x_shape)], [vi("y", y_shape)], inits, opset=opset)


@case()
def resize_nearest_scales():
    return resize_case("resize_nearest_scales", (1, 2, 5, 6), (1, 2, 10, 3),
                       scales=[1, 1, 2, 0.5], mode="nearest")


@case()
def resize_linear_half_pixel_sizes():
    return resize_case("resize_linear_half_pixel_sizes", (2, 3, 7, 9), (2, 3, 12, 5),
                       sizes=[2, 3, 12, 5], mode="linear")


@case()
def resize_linear_align_corners():
    return resize_case("resize_linear_align_corners", (1, 3, 6, 6), (1, 3, 11, 9),
                       sizes=[1, 3, 11, 9], mode="linear",
                       coordinate_transformation_mode="align_corners")


@case()
def resize_cubic_asymmetric():
    return resize_case("resize_cubic_asymmetric", (1, 2, 6, 7), (1, 2, 9, 14),
                       scales=[1, 1, 1.5, 2], mode="cubic",
                       coordinate_transformation_mode="asymmetric")


@case()
def resize_linear_antialias_axes():
    return resize_case("resize_linear_antialias_axes", (1, 2, 16, 12), (1, 2, 7, 5),
                       sizes=[7, 5], mode="linear", antialias=1, axes=[2, 3])


@case()
def resize_nearest_opset11_pytorch_half_pixel():
    return resize_case("resize_nearest_opset11_pytorch_half_pixel", (1, 3, 4, 5), (1, 3, 9, 11),
                       sizes=[1, 3, 9, 11], opset=11, mode="nearest",
                       coordinate_transformation_mode="pytorch_half_pixel",
                       nearest_mode="round_prefer_ceil")


# ---- normalisation ---------------------------------------------------------


@case()
def batch_normalization():
    rng = rng_for("batch_normalization")
    c = 6
    inits = [
        init("scale", weights(rng, (c,), 1.0)),
        init("bias", weights(rng, (c,), 1.0)),
        init("mean", weights(rng, (c,), 1.0)),
        init("var", rng.uniform(0.2, 3.0, (c,)).astype(np.float32)),
    ]
    return single("batch_normalization", "BatchNormalization", [(2, c, 5, 4)], (2, c, 5, 4),
                  initializers=inits, epsilon=1e-3)


@case()
def batch_normalization_opset9_rank2():
    rng = rng_for("batch_normalization_opset9_rank2")
    c = 10
    inits = [
        init("scale", weights(rng, (c,), 1.0)),
        init("bias", weights(rng, (c,), 1.0)),
        init("mean", weights(rng, (c,), 1.0)),
        init("var", rng.uniform(0.2, 3.0, (c,)).astype(np.float32)),
    ]
    return single("batch_normalization_opset9_rank2", "BatchNormalization", [(4, c)], (4, c),
                  opset=9, initializers=inits)


@case()
def softmax_opset13_last_axis():
    return single("softmax_opset13_last_axis", "Softmax", [(3, 4, 10)], (3, 4, 10), opset=13)


@case(ranges={"x": (0.0, 20.0, True)})
def softmax_opset13_axis1_large():
    # Large logits: an implementation without the max subtraction overflows.
    return single("softmax_opset13_axis1_large", "Softmax", [(2, 6, 5)], (2, 6, 5), opset=13,
                  axis=1)


@case()
def softmax_opset11_axis1():
    # Before opset 13, Softmax coerces the input to 2-D at `axis`: here it
    # normalises over the 4*5 trailing elements together, not over axis 1 alone.
    return single("softmax_opset11_axis1", "Softmax", [(3, 4, 5)], (3, 4, 5), opset=11)


@case()
def softmax_opset11_last_axis():
    return single("softmax_opset11_last_axis", "Softmax", [(3, 4, 5)], (3, 4, 5), opset=11,
                  axis=-1)


# ---- normalizations --------------------------------------------------------


@case()
def layer_norm_with_statistics():
    # All three outputs; X offset from 0 so the row mean is large against its spread.
    rng = rng_for("layer_norm_with_statistics")
    inits = [init("scale", weights(rng, (64,), 1.0)), init("bias", weights(rng, (64,), 1.0))]
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y", "mean", "inv_std"],
                            name="ln_0", epsilon=1e-3)
    return model("layer_norm_with_statistics", [node], [vi("x", (2, 5, 64))],
                 [vi("y", (2, 5, 64)), vi("mean", (2, 5, 1)), vi("inv_std", (2, 5, 1))], inits)


@case()
def layer_norm_axis1_no_bias():
    rng = rng_for("layer_norm_axis1_no_bias")
    inits = [init("scale", weights(rng, (6, 7), 1.0))]
    return single("layer_norm_axis1_no_bias", "LayerNormalization", [(3, 6, 7)], (3, 6, 7),
                  initializers=inits, axis=1)


@case()
def rms_norm_opset23():
    rng = rng_for("rms_norm_opset23")
    inits = [init("scale", weights(rng, (48,), 1.0))]
    return single("rms_norm_opset23", "RMSNormalization", [(4, 3, 48)], (4, 3, 48), opset=23,
                  initializers=inits, epsilon=1e-6)


@case()
def instance_norm():
    rng = rng_for("instance_norm")
    inits = [init("s", weights(rng, (4,), 1.0)), init("b", weights(rng, (4,), 1.0))]
    return single("instance_norm", "InstanceNormalization", [(2, 4, 9, 9)], (2, 4, 9, 9),
                  initializers=inits, epsilon=1e-4)


@case()
def group_norm_opset21():
    rng = rng_for("group_norm_opset21")
    inits = [init("s", weights(rng, (8,), 1.0)), init("b", weights(rng, (8,), 1.0))]
    return single("group_norm_opset21", "GroupNormalization", [(2, 8, 5, 5)], (2, 8, 5, 5),
                  opset=21, initializers=inits, num_groups=4)


@case()
def mean_variance_norm_axes_0_2_3():
    # ONNX's default axes, spelled out: the checker cannot expand the default.
    return single("mean_variance_norm_axes_0_2_3", "MeanVarianceNormalization", [(2, 3, 4, 5)],
                  (2, 3, 4, 5), opset=13, axes=[0, 2, 3])


@case()
def lp_norm_axis1():
    return single("lp_norm_axis1", "LpNormalization", [(3, 8, 5)], (3, 8, 5), axis=1, p=2)


@case()
def lrn():
    # ONNX Runtime takes odd sizes only.
    return single("lrn", "LRN", [(2, 7, 6, 6)], (2, 7, 6, 6), size=5, alpha=1e-2, beta=0.75,
                  bias=2.0)


@case(ranges={"x": (0.0, 20.0, True)})
def log_softmax_axis1_large():
    return single("log_softmax_axis1_large", "LogSoftmax", [(2, 6, 5)], (2, 6, 5), opset=13,
                  axis=1)


@case()
def hardmax_opset11():
    # Before opset 13: over the 4*5 trailing elements together.
    return single("hardmax_opset11", "Hardmax", [(3, 4, 5)], (3, 4, 5), opset=11)


@case()
def attention_gqa_causal_mask():
    # Grouped heads (6 query heads on 2 key heads), causal, a float mask.
    rng = rng_for("attention_gqa_causal_mask")
    mask = init("mask", (rng.standard_normal((5, 7)) * 0.5).astype(np.float32))
    node = helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"], name="attention_0",
                            is_causal=1)
    return model("attention_gqa_causal_mask", [node],
                 [vi("q", (2, 6, 5, 16)), vi("k", (2, 2, 7, 16)), vi("v", (2, 2, 7, 12))],
                 [vi("y", (2, 6, 5, 12))], [mask], opset=23)


@case()
def attention_3d_kv_cache():
    # 3-D inputs split into heads, a KV cache concatenated in front, softcap.
    node = helper.make_node("Attention", ["q", "k", "v", "", "past_k", "past_v"],
                            ["y", "present_k", "present_v"], name="attention_0", q_num_heads=4,
                            kv_num_heads=4, softcap=5.0, is_causal=1)
    return model("attention_3d_kv_cache", [node],
                 [vi("q", (1, 3, 32)), vi("k", (1, 3, 32)), vi("v", (1, 3, 32)),
                  vi("past_k", (1, 4, 6, 8)), vi("past_v", (1, 4, 6, 8))],
                 [vi("y", (1, 3, 32)), vi("present_k", (1, 4, 9, 8)),
                  vi("present_v", (1, 4, 9, 8))], opset=23)


@case()
def rotary_embedding_interleaved():
    rng = rng_for("rotary_embedding_interleaved")
    angles = rng.uniform(0, 6.3, (2, 5, 4))
    inits = [init("cos", np.cos(angles).astype(np.float32)),
             init("sin", np.sin(angles).astype(np.float32))]
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], name="rope_0",
                            interleaved=1)
    return model("rotary_embedding_interleaved", [node], [vi("x", (2, 3, 5, 8))],
                 [vi("y", (2, 3, 5, 8))], inits, opset=23)


# ---- recurrent cells (unrolled at import) -----------------------------------


def recurrent_weights(rng, dirs, gates, hidden, inputs, bias=True, peepholes=False):
    scale = 1.0 / np.sqrt(hidden)
    inits = [init("W", weights(rng, (dirs, gates * hidden, inputs), scale)),
             init("R", weights(rng, (dirs, gates * hidden, hidden), scale))]
    if bias:
        inits.append(init("B", weights(rng, (dirs, 2 * gates * hidden), 0.5)))
    if peepholes:
        inits.append(init("P", weights(rng, (dirs, 3 * hidden), 0.5)))
    return inits


@case()
def lstm_bidirectional():
    # Both directions, bias, peepholes, initial states, every output, and a
    # constant sequence_lens: one entry shorter than the sequence, one empty
    # (its Y_h and Y_c are 0, as ONNX Runtime has them).
    rng = rng_for("lstm_bidirectional")
    inits = recurrent_weights(rng, 2, 4, 6, 4, peepholes=True)
    inits.append(init("lens", np.array([5, 3, 0], dtype=np.int32)))
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "lens", "h0", "c0", "P"],
                            ["y", "y_h", "y_c"], name="lstm_0", hidden_size=6,
                            direction="bidirectional")
    return model("lstm_bidirectional", [node],
                 [vi("x", (5, 3, 4)), vi("h0", (2, 3, 6)), vi("c0", (2, 3, 6))],
                 [vi("y", (5, 2, 3, 6)), vi("y_h", (2, 3, 6)), vi("y_c", (2, 3, 6))],
                 inits, opset=14)


@case()
def lstm_input_forget_clip_activations():
    # Reverse, input_forget, clip, and f, g, h other than the defaults with
    # their alpha and beta; no bias, Y_h only.
    rng = rng_for("lstm_input_forget_clip_activations")
    inits = recurrent_weights(rng, 1, 4, 5, 3, bias=False)
    node = helper.make_node("LSTM", ["x", "W", "R"], ["", "y_h"], name="lstm_0", hidden_size=5,
                            direction="reverse", input_forget=1, clip=1.5,
                            activations=["HardSigmoid", "LeakyRelu", "Softsign"],
                            activation_alpha=[0.3, 0.2], activation_beta=[0.4])
    return model("lstm_input_forget_clip_activations", [node], [vi("x", (4, 2, 3))],
                 [vi("y_h", (1, 2, 5))], inits, opset=7)


@case()
def gru_linear_before_reset():
    # linear_before_reset keeps Rbh inside r * (H R_h^T + Rbh); an initial
    # state, Y and Y_h. (ONNX Runtime refuses layout 1, so the batch-major
    # layout is left to the ONNX node tests.)
    rng = rng_for("gru_linear_before_reset")
    inits = recurrent_weights(rng, 1, 3, 5, 4)
    node = helper.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["y", "y_h"], name="gru_0",
                            hidden_size=5, linear_before_reset=1)
    return model("gru_linear_before_reset", [node], [vi("x", (6, 2, 4)), vi("h0", (1, 2, 5))],
                 [vi("y", (6, 1, 2, 5)), vi("y_h", (1, 2, 5))], inits, opset=14)


@case()
def gru_bidirectional_seq_lens():
    # Both directions without linear_before_reset, lengths 0 and 3 of 4.
    rng = rng_for("gru_bidirectional_seq_lens")
    inits = recurrent_weights(rng, 2, 3, 4, 3)
    inits.append(init("lens", np.array([0, 3], dtype=np.int32)))
    node = helper.make_node("GRU", ["x", "W", "R", "B", "lens"], ["y", "y_h"], name="gru_0",
                            hidden_size=4, direction="bidirectional")
    return model("gru_bidirectional_seq_lens", [node], [vi("x", (4, 2, 3))],
                 [vi("y", (4, 2, 2, 4)), vi("y_h", (2, 2, 4))], inits, opset=7)


@case()
def rnn_relu_reverse():
    rng = rng_for("rnn_relu_reverse")
    inits = recurrent_weights(rng, 1, 1, 6, 4)
    node = helper.make_node("RNN", ["x", "W", "R", "B"], ["y", "y_h"], name="rnn_0",
                            hidden_size=6, direction="reverse", activations=["Relu"])
    return model("rnn_relu_reverse", [node], [vi("x", (3, 2, 4))],
                 [vi("y", (3, 1, 2, 6)), vi("y_h", (1, 2, 6))], inits, opset=14)


# ---- data movement ---------------------------------------------------------


@case()
def flatten_axis1():
    return single("flatten_axis1", "Flatten", [(2, 3, 4, 5)], (2, 60))


@case()
def flatten_axis2():
    return single("flatten_axis2", "Flatten", [(2, 3, 4, 5)], (6, 20), axis=2)


@case()
def flatten_axis0_opset9():
    return single("flatten_axis0_opset9", "Flatten", [(2, 3, 4)], (1, 24), opset=9, axis=0)


@case()
def flatten_negative_axis_opset13():
    return single("flatten_negative_axis_opset13", "Flatten", [(2, 3, 4, 5)], (24, 5),
                  opset=13, axis=-1)


def reshape_case(name, x_shape, shape, y_shape, opset):
    s = init("shape", np.array(shape, dtype=np.int64))
    return single(name, "Reshape", [x_shape], y_shape, opset=opset, initializers=[s])


@case()
def reshape_zero_and_minus1():
    # 0 copies the input's dim, -1 is inferred: [2,3,4,5] -> [2, 3, 20].
    return reshape_case("reshape_zero_and_minus1", (2, 3, 4, 5), [0, 0, -1], (2, 3, 20), 17)


@case()
def reshape_opset5():
    return reshape_case("reshape_opset5", (4, 6), [-1, 2, 3], (4, 2, 3), 5)


@case()
def reshape_opset13_expand_rank():
    return reshape_case("reshape_opset13_expand_rank", (24,), [2, 3, -1, 2], (2, 3, 2, 2), 13)


@case()
def transpose_rank4():
    return single("transpose_rank4", "Transpose", [(2, 3, 4, 5)], (2, 4, 5, 3),
                  perm=[0, 2, 3, 1])


@case()
def transpose_rank4_shuffle():
    return single("transpose_rank4_shuffle", "Transpose", [(2, 3, 4, 5)], (4, 2, 5, 3),
                  perm=[2, 0, 3, 1])


@case()
def transpose_default_perm():
    # No perm: the dims reversed.
    return single("transpose_default_perm", "Transpose", [(2, 3, 4)], (4, 3, 2))


@case()
def concat_3_inputs():
    return single("concat_3_inputs", "Concat", [(2, 3, 4), (2, 1, 4), (2, 5, 4)], (2, 9, 4),
                  axis=1)


@case()
def concat_negative_axis():
    return single("concat_negative_axis", "Concat", [(2, 3, 4), (2, 3, 2)], (2, 3, 6), axis=-1)


@case()
def identity():
    return single("identity", "Identity", [(3, 5)], (3, 5))


# ---- reductions ------------------------------------------------------------


@case()
def reduce_mean_outer_and_inner_axes():
    # Axes 0 and 2 of 3: a strided outer run and a contiguous inner one.
    return single("reduce_mean_outer_and_inner_axes", "ReduceMean", [(4, 6, 33)], (1, 6, 1),
                  axes=[0, -1])


@case()
def reduce_sum_axes_input_no_keepdims():
    axes = init("axes", np.array([1], dtype=np.int64))
    return single("reduce_sum_axes_input_no_keepdims", "ReduceSum", [(3, 300, 5)], (3, 5),
                  initializers=[axes], keepdims=0)


@case()
def reduce_logsumexp_and_l2_opset18():
    axes = init("axes", np.array([-1], dtype=np.int64))
    nodes = [
        helper.make_node("ReduceLogSumExp", ["x", "axes"], ["lse"], name="lse_0"),
        helper.make_node("ReduceL2", ["x", "axes"], ["l2"], name="l2_0", keepdims=0),
        helper.make_node("ReduceMax", ["x", "axes"], ["max"], name="max_0"),
    ]
    return model("reduce_logsumexp_and_l2_opset18", nodes, [vi("x", (8, 40))],
                 [vi("lse", (8, 1)), vi("l2", (8,)), vi("max", (8, 1))], [axes], opset=18)


@case()
def argmax_argmin_both_axes():
    nodes = [
        helper.make_node("ArgMax", ["x"], ["amax"], name="argmax_0", axis=-1, keepdims=0),
        helper.make_node("ArgMin", ["x"], ["amin"], name="argmin_0", axis=0,
                         select_last_index=1),
    ]
    return model("argmax_argmin_both_axes", nodes, [vi("x", (5, 70))],
                 [vi("amax", (5,), TensorProto.INT64), vi("amin", (1, 70), TensorProto.INT64)])


@case()
def topk_values_and_indices():
    k = init("k", np.array([6], dtype=np.int64))
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk_0")
    return model("topk_values_and_indices", [node], [vi("x", (4, 200))],
                 [vi("values", (4, 6)), vi("indices", (4, 6), TensorProto.INT64)], [k])


@case()
def cumsum_reverse_exclusive():
    axis = init("axis", np.array(1, dtype=np.int32))
    return single("cumsum_reverse_exclusive", "CumSum", [(3, 9, 4)], (3, 9, 4),
                  initializers=[axis], exclusive=1, reverse=1)


@case()
def softmax_cross_entropy_mean_weighted():
    rng = rng_for("softmax_cross_entropy_mean_weighted")
    labels = init("labels", rng.integers(0, 5, (6, 3)).astype(np.int64))
    w = init("w", rng.uniform(0.5, 1.5, (5,)).astype(np.float32))
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "labels", "w"], ["loss", "log_prob"],
                            name="sce_0", reduction="mean", ignore_index=2)
    return model("softmax_cross_entropy_mean_weighted", [node], [vi("x", (6, 5, 3))],
                 [vi("loss", ()), vi("log_prob", (6, 5, 3))], [labels, w])
# ---- data movement: slicing, gathering, scattering, padding ----------------


def ints(name, values):
    return init(name, np.array(values, dtype=np.int64))


@case()
def slice_negative_steps():
    # Out-of-range starts and ends clamp; a negative step walks backwards.
    inits = [ints("s", [100, 1, -2]), ints("e", [-100, 5, 0]), ints("ax", [0, 1, -1]),
             ints("st", [-2, 2, -1])]
    return single("slice_negative_steps", "Slice", [(5, 6, 7)], (3, 2, 5), initializers=inits)


@case()
def gather_runtime_indices():
    # Standard-normal draws cast to int64 fall in about [-3, 3]: negative
    # indices count from the end.
    node = helper.make_node("Gather", ["x", "i"], ["y"], name="gather_0", axis=1)
    return model("gather_runtime_indices", [node],
                 [vi("x", (3, 8, 5)), vi("i", (2, 4), TensorProto.INT64)], [vi("y", (3, 2, 4, 5))])


@case()
def split_uneven_num_outputs():
    node = helper.make_node("Split", ["x"], ["y0", "y1", "y2"], name="split_0", axis=1,
                            num_outputs=3)
    return model("split_uneven_num_outputs", [node], [vi("x", (2, 7, 3))],
                 [vi("y0", (2, 3, 3)), vi("y1", (2, 3, 3)), vi("y2", (2, 1, 3))], opset=18)


@case()
def pad_reflect_and_crop():
    node = helper.make_node("Pad", ["x", "p"], ["y"], name="pad_0", mode="reflect")
    return model("pad_reflect_and_crop", [node], [vi("x", (2, 3, 6, 7))], [vi("y", (2, 3, 8, 9))],
                 [ints("p", [0, 0, 2, -1, 0, 0, 0, 3])], opset=18)


@case()
def pad_constant_value():
    node = helper.make_node("Pad", ["x", "p", "v"], ["y"], name="pad_0")
    return model("pad_constant_value", [node], [vi("x", (3, 4))], [vi("y", (5, 7))],
                 [ints("p", [1, 2, 1, 1]), init("v", np.array(1.5, dtype=np.float32))])


@case()
def expand_bidirectional():
    return single("expand_bidirectional", "Expand", [(3, 1)], (2, 3, 6),
                  initializers=[ints("shape", [2, 1, 6])])


@case()
def tile_repeats():
    return single("tile_repeats", "Tile", [(2, 3, 4)], (4, 3, 12),
                  initializers=[ints("r", [2, 1, 3])])


@case()
def depth_to_space_crd():
    return single("depth_to_space_crd", "DepthToSpace", [(1, 8, 3, 4)], (1, 2, 6, 8), blocksize=2,
                  mode="CRD")


@case()
def trilu_lower_k():
    return single("trilu_lower_k", "Trilu", [(2, 5, 6)], (2, 5, 6), upper=0,
                  initializers=[init("k", np.array(1, dtype=np.int64))])


@case()
def scatter_nd_add_repeated():
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="scatter_0",
                            reduction="add")
    return model("scatter_nd_add_repeated", [node], [vi("x", (4, 5)), vi("u", (3, 5))],
                 [vi("y", (4, 5))], [ints("i", [[1], [3], [1]])], opset=16)


@case()
def gather_elements_axis1():
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], name="gather_elements_0", axis=1)
    return model("gather_elements_axis1", [node], [vi("x", (3, 6))], [vi("y", (3, 4))],
                 [ints("i", [[0, 5, -1, 2], [1, 1, 0, -6], [3, 4, 5, 0]])])


@case()
def shape_arithmetic_folds():
    # The constant shape arithmetic torch exports around a Reshape: Gather,
    # Unsqueeze and Concat on constants fold at import.
    nodes = [
        helper.make_node("Gather", ["dims", "zero"], ["d0"], name="gather_0", axis=0),
        helper.make_node("Unsqueeze", ["d0", "axes"], ["d0v"], name="unsqueeze_0"),
        helper.make_node("Concat", ["d0v", "minus_one"], ["shape"], name="concat_0", axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_0"),
    ]
    inits = [ints("dims", [4, 6]), init("zero", np.array(0, dtype=np.int64)), ints("axes", [0]),
             ints("minus_one", [-1])]
    return model("shape_arithmetic_folds", nodes, [vi("x", (2, 12))], [vi("y", (4, 6))], inits)
# ---- quantization ----------------------------------------------------------

U8 = (0.0, 255.0, False)  # input ranges covering the 8-bit types
I8 = (0.0, 127.0, True)


def qnode(op, inputs, **attrs):
    return helper.make_node(op, inputs, ["y"], name=f"{op.lower()}_0", **attrs)


@case(ranges={"x": (0.0, 300.0, True)})
def quantize_linear_per_axis():
    # Wide inputs: rounding ties, saturation at both ends.
    scale = init("s", np.array([0.5, 1.0, 2.0], np.float32))
    zp = init("z", np.array([0, 128, 255], np.uint8))
    return model("quantize_linear_per_axis", [qnode("QuantizeLinear", ["x", "s", "z"], axis=1)],
                 [vi("x", (2, 3, 4, 5))], [vi("y", (2, 3, 4, 5), TensorProto.UINT8)], [scale, zp],
                 opset=13)


@case(ranges={"x": (0.0, 100.0, True)})
def quantize_linear_blocked():
    # Blocks of 32 along the last axis, the last block short (70 = 32 + 32 + 6).
    rng = rng_for("quantize_linear_blocked")
    scale = init("s", rng.uniform(0.25, 2.0, (4, 3)).astype(np.float32))
    zp = init("z", rng.integers(-20, 20, (4, 3)).astype(np.int8))
    node = qnode("QuantizeLinear", ["x", "s", "z"], axis=1, block_size=32)
    return model("quantize_linear_blocked", [node], [vi("x", (4, 70))],
                 [vi("y", (4, 70), TensorProto.INT8)], [scale, zp], opset=21)


@case(ranges={"x": U8})
def dequantize_linear_per_axis():
    scale = init("s", np.array([0.5, 0.01, 3.0], np.float32))
    zp = init("z", np.array([0, 128, 255], np.uint8))
    return model("dequantize_linear_per_axis",
                 [qnode("DequantizeLinear", ["x", "s", "z"], axis=1)],
                 [vi("x", (2, 3, 4, 5), TensorProto.UINT8)], [vi("y", (2, 3, 4, 5))], [scale, zp],
                 opset=13)


@case(ranges={"x": I8})
def dequantize_linear_blocked():
    rng = rng_for("dequantize_linear_blocked")
    scale = init("s", rng.uniform(0.01, 1.0, (3, 6)).astype(np.float32))
    zp = init("z", rng.integers(-20, 20, (3, 6)).astype(np.int8))
    node = qnode("DequantizeLinear", ["x", "s", "z"], axis=0, block_size=4)
    return model("dequantize_linear_blocked", [node], [vi("x", (10, 6), TensorProto.INT8)],
                 [vi("y", (10, 6))], [scale, zp], opset=21)


@case(ranges={"x": (0.0, 5.0, True)})
def dynamic_quantize_linear():
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"],
                            name="dynamicquantizelinear_0")
    return model("dynamic_quantize_linear", [node], [vi("x", (3, 40))],
                 [vi("y", (3, 40), TensorProto.UINT8), vi("y_scale", ()),
                  vi("y_zero_point", (), TensorProto.UINT8)], opset=11)


@case(ranges={"a": U8})
def matmul_integer():
    rng = rng_for("matmul_integer")
    b = init("b", rng.integers(0, 256, (17, 9)).astype(np.uint8))
    za = init("za", np.array(100, np.uint8))
    zb = init("zb", np.array(130, np.uint8))
    return model("matmul_integer", [qnode("MatMulInteger", ["a", "b", "za", "zb"])],
                 [vi("a", (2, 5, 17), TensorProto.UINT8)], [vi("y", (2, 5, 9), TensorProto.INT32)],
                 [b, za, zb], opset=10)


# The QLinear cases use power-of-two scales: ONNX Runtime requantizes in f32,
# nanoc in f64 as ONNX's reference does, and the two can differ by one where
# the product lands near a rounding tie; with exact multipliers they agree.


@case(ranges={"a": U8})
def qlinear_matmul_u8():
    rng = rng_for("qlinear_matmul_u8")
    f = lambda n, v: init(n, np.array(v, np.float32))  # noqa: E731
    u = lambda n, v: init(n, np.array(v, np.uint8))  # noqa: E731
    b = init("b", rng.integers(0, 256, (33, 12)).astype(np.uint8))
    inits = [f("sa", 0.0625), u("za", 120), b, f("sb", 0.0625), u("zb", 128), f("sy", 1.0),
             u("zy", 100)]
    node = qnode("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"])
    return model("qlinear_matmul_u8", [node], [vi("a", (3, 7, 33), TensorProto.UINT8)],
                 [vi("y", (3, 7, 12), TensorProto.UINT8)], inits, opset=10)


@case(ranges={"a": I8})
def qlinear_matmul_i8_opset21():
    rng = rng_for("qlinear_matmul_i8_opset21")
    f = lambda n, v: init(n, np.array([v], np.float32))  # noqa: E731
    i = lambda n, v: init(n, np.array([v], np.int8))  # noqa: E731
    b = init("b", rng.integers(-128, 128, (20, 300)).astype(np.int8))
    inits = [f("sa", 0.0625), i("za", -5), b, f("sb", 0.03125), i("zb", 0), f("sy", 8.0),
             i("zy", 3)]
    node = qnode("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"])
    return model("qlinear_matmul_i8_opset21", [node], [vi("a", (4, 20), TensorProto.INT8)],
                 [vi("y", (4, 300), TensorProto.INT8)], inits, opset=21)


@case(ranges={"x": U8})
def conv_integer():
    rng = rng_for("conv_integer")
    w = init("w", rng.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8))
    zx = init("zx", np.array(128, np.uint8))
    zw = init("zw", np.array(120, np.uint8))
    node = qnode("ConvInteger", ["x", "w", "zx", "zw"], pads=[1, 0, 2, 1], strides=[2, 1])
    return model("conv_integer", [node], [vi("x", (1, 3, 9, 10), TensorProto.UINT8)],
                 [vi("y", (1, 4, 5, 9), TensorProto.INT32)], [w, zx, zw], opset=10)


@case(ranges={"x": U8})
def qlinear_conv_per_channel():
    # Grouped, with bias, per-output-channel weight scales (symmetric i8 weights).
    rng = rng_for("qlinear_conv_per_channel")
    inits = [
        init("sx", np.array(2.0**-6, np.float32)),
        init("zx", np.array(110, np.uint8)),
        init("w", rng.integers(-128, 128, (6, 2, 3, 3)).astype(np.int8)),
        init("sw", 2.0 ** -rng.integers(6, 9, (6,)).astype(np.float32)),
        init("zw", np.zeros((6,), np.int8)),
        init("sy", np.array(0.25, np.float32)),
        init("zy", np.array(128, np.uint8)),
        init("bias", rng.integers(-3000, 3000, (6,)).astype(np.int32)),
    ]
    node = qnode("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "bias"], group=2,
                 pads=[1, 1, 1, 1])
    return model("qlinear_conv_per_channel", [node], [vi("x", (2, 4, 7, 8), TensorProto.UINT8)],
                 [vi("y", (2, 6, 7, 8), TensorProto.UINT8)], inits, opset=10)


@case(ranges={"x": (0.0, 3.0, True)})
def qdq_conv():
    # The QDQ form exporters write: x is quantized and dequantized, the
    # weights are dequantized from i8 (folded at compile time), Conv runs in f32.
    rng = rng_for("qdq_conv")
    inits = [
        init("sx", np.array(0.025, np.float32)),
        init("zx", np.array(128, np.uint8)),
        init("wq", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)),
        init("sw", rng.uniform(0.002, 0.01, (4,)).astype(np.float32)),
        init("zw", np.zeros((4,), np.int8)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], name="dq_w", axis=0),
        helper.make_node("Conv", ["xd", "wd"], ["y"], name="conv_0", pads=[1, 1, 1, 1]),
    ]
    return model("qdq_conv", nodes, [vi("x", (1, 3, 8, 8))], [vi("y", (1, 4, 8, 8))], inits,
                 opset=13)


# ---- sampling: GridSample, AffineGrid, Col2Im --------------------------------


@case(ranges={"grid": (0.0, 1.3, True)})
def gridsample_bicubic_reflection():
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="gridsample_0",
                            mode="cubic", padding_mode="reflection")
    return model("gridsample_bicubic_reflection", [node],
                 [vi("x", (2, 3, 7, 9)), vi("grid", (2, 5, 6, 2))], [vi("y", (2, 3, 5, 6))],
                 opset=20)


@case(ranges={"grid": (0.0, 1.2, True)})
def gridsample_bilinear_border_opset16():
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="gridsample_0",
                            mode="bilinear", padding_mode="border", align_corners=1)
    return model("gridsample_bilinear_border_opset16", [node],
                 [vi("x", (1, 4, 6, 5)), vi("grid", (1, 8, 3, 2))], [vi("y", (1, 4, 8, 3))],
                 opset=16)


@case(ranges={"theta": (0.0, 1.0, True)})
def affine_grid_then_gridsample():
    # The detection-head pattern: theta -> AffineGrid -> GridSample.
    ag = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine_grid_0")
    gs = helper.make_node("GridSample", ["x", "grid"], ["y"], name="gridsample_0")
    return model("affine_grid_then_gridsample", [ag, gs],
                 [vi("theta", (2, 2, 3)), vi("x", (2, 3, 8, 8))], [vi("y", (2, 3, 4, 5))],
                 [init("size", np.array([2, 3, 4, 5], dtype=np.int64))], opset=20)


@case()
def col2im_strides_pads():
    node = helper.make_node("Col2Im", ["x", "image_shape", "block_shape"], ["y"],
                            name="col2im_0", strides=[2, 1], pads=[1, 0, 1, 1], dilations=[1, 2])
    # blocks: (6 + 2 - 3) // 2 + 1 = 3 and (7 + 1 - 3) // 1 + 1 = 6
    return model("col2im_strides_pads", [node], [vi("x", (2, 3 * 6, 18))],
                 [vi("y", (2, 3, 6, 7))],
                 [init("image_shape", np.array([6, 7], dtype=np.int64)),
                  init("block_shape", np.array([3, 2], dtype=np.int64))], opset=18)


# ---- whole graphs ----------------------------------------------------------


@case()
def constant_folding():
    # y = x + Constant * k: the constant sub-graph folds at compile time.
    rng = rng_for("constant_folding")
    c = helper.make_node("Constant", [], ["c"], name="const_0",
                         value=init("c_value", weights(rng, (4, 5), 1.0)))
    k = init("k", np.array(3.0, dtype=np.float32))
    mul = helper.make_node("Mul", ["c", "k"], ["ck"], name="mul_0")
    add = helper.make_node("Add", ["x", "ck"], ["y"], name="add_0")
    return model("constant_folding", [c, mul, add], [vi("x", (2, 4, 5))],
                 [vi("y", (2, 4, 5))], [k])


@case()
def constant_value_float():
    # Constant's scalar form (value_float, opset >= 12).
    c = helper.make_node("Constant", [], ["c"], name="const_0", value_float=-0.5)
    mul = helper.make_node("Mul", ["x", "c"], ["y"], name="mul_0")
    return model("constant_value_float", [c, mul], [vi("x", (3, 4))], [vi("y", (3, 4))])


@case()
def output_also_intermediate():
    # h is a graph output and also feeds the next node: the planner must not
    # reuse its buffer, and the caller's copy must be the final value.
    nodes = [
        helper.make_node("Relu", ["x"], ["h"], name="relu_0"),
        helper.make_node("Mul", ["h", "x"], ["m"], name="mul_0"),
        helper.make_node("Add", ["m", "h"], ["y"], name="add_0"),
    ]
    return model("output_also_intermediate", nodes, [vi("x", (4, 6))],
                 [vi("y", (4, 6)), vi("h", (4, 6))])


@case()
def output_is_input_identity_odd_names():
    # Names with characters that cannot be file names; nanort-run writes
    # "y_out_0.npy" for output "y/out:0".
    nodes = [
        helper.make_node("Identity", ["in:0"], ["y/out:0"], name="identity/0"),
        helper.make_node("Tanh", ["in:0"], ["t.out"], name="tanh/0"),
    ]
    return model("output_is_input_identity_odd_names", nodes, [vi("in:0", (2, 3))],
                 [vi("y/out:0", (2, 3)), vi("t.out", (2, 3))])


@case()
def multiple_inputs_outputs():
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"], name="add_0"),
        helper.make_node("Sigmoid", ["s"], ["y0"], name="sigmoid_0"),
        helper.make_node("Concat", ["s", "c"], ["y1"], name="concat_0", axis=0),
    ]
    return model("multiple_inputs_outputs", nodes,
                 [vi("a", (2, 3)), vi("b", (1, 3)), vi("c", (4, 3))],
                 [vi("y0", (2, 3)), vi("y1", (6, 3))])


@case()
def mlp():
    # 64 -> 128 -> 64 -> 32 -> 10, Gemm + Relu three times, then Softmax.
    rng = rng_for("mlp")
    sizes = [64, 128, 64, 32, 10]
    nodes, inits = [], []
    prev = "x"
    for i in range(len(sizes) - 1):
        w = init(f"fc{i}.weight", weights(rng, (sizes[i + 1], sizes[i])))
        b = init(f"fc{i}.bias", weights(rng, (sizes[i + 1],), 0.1))
        inits += [w, b]
        out = f"fc{i}"
        nodes.append(helper.make_node("Gemm", [prev, w.name, b.name], [out], name=f"gemm_{i}",
                                      transB=1))
        prev = out
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [out], [f"relu{i}"], name=f"relu_{i}"))
            prev = f"relu{i}"
    nodes.append(helper.make_node("Softmax", [prev], ["probs"], name="softmax_0", axis=1))
    return model("mlp", nodes, [vi("x", (4, 64))], [vi("probs", (4, 10))], inits)


@case()
def small_cnn():
    # Conv+BN+Relu+MaxPool+Conv+Relu+GlobalAveragePool+Flatten+Gemm.
    rng = rng_for("small_cnn")
    inits = [
        init("conv1.w", weights(rng, (8, 3, 3, 3))),
        init("conv1.b", weights(rng, (8,), 0.1)),
        init("bn1.scale", rng.uniform(0.5, 1.5, (8,)).astype(np.float32)),
        init("bn1.bias", weights(rng, (8,), 0.1)),
        init("bn1.mean", weights(rng, (8,), 0.1)),
        init("bn1.var", rng.uniform(0.5, 2.0, (8,)).astype(np.float32)),
        init("conv2.w", weights(rng, (16, 8, 3, 3))),
        init("conv2.b", weights(rng, (16,), 0.1)),
        init("fc.w", weights(rng, (10, 16))),
        init("fc.b", weights(rng, (10,), 0.1)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv1.w", "conv1.b"], ["c1"], name="conv_1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["c1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"], ["n1"],
                         name="bn_1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu_1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool_1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv_2",
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu_2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap_0"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten_0"),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc_0", transB=1),
    ]
    return model("small_cnn", nodes, [vi("x", (2, 3, 16, 16))], [vi("logits", (2, 10))], inits)


# ---- fused epilogues (passes/fuse_epilogue.h) ------------------------------
# Activations and residual Adds after Conv, Gemm and MatMul, which nanoc folds
# into the producing node; and intermediates that must stay unfused.


def conv_node(inits, rng, name, x, y, w_shape, bias=True, **attrs):
    inits.append(init(f"{name}.w", weights(rng, w_shape)))
    ins = [x, f"{name}.w"]
    if bias:
        inits.append(init(f"{name}.b", weights(rng, (w_shape[0],), 0.5)))
        ins.append(f"{name}.b")
    return helper.make_node("Conv", ins, [y], name=name, **attrs)


@case()
def fused_conv_clip_opset6():
    # Clip-6: the bounds are attributes.
    rng = rng_for("fused_conv_clip_opset6")
    inits = []
    nodes = [conv_node(inits, rng, "conv_0", "x", "c", (8, 4, 3, 3), pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c"], ["y"], name="clip_0", min=0.0, max=0.5)]
    return model("fused_conv_clip_opset6", nodes, [vi("x", (1, 4, 9, 9))], [vi("y", (1, 8, 9, 9))],
                 inits, opset=6)


@case()
def fused_conv_clip_inputs():
    # Clip-13: bounds as inputs, one absent (max), one a scalar initializer.
    rng = rng_for("fused_conv_clip_inputs")
    inits = [init("lo", np.array(-0.25, np.float32))]
    nodes = [conv_node(inits, rng, "conv_0", "x", "c", (6, 4, 1, 1)),
             helper.make_node("Clip", ["c", "lo", ""], ["y"], name="clip_0")]
    return model("fused_conv_clip_inputs", nodes, [vi("x", (2, 4, 7, 5))], [vi("y", (2, 6, 7, 5))],
                 inits)


@case()
def fused_residual_blocks():
    # A basic block (Add(x, conv) then Relu), two branches summed into a
    # Sigmoid, and a Conv whose result is both an output and a Relu's input.
    rng = rng_for("fused_residual_blocks")
    inits = []
    nodes = [
        conv_node(inits, rng, "conv_1", "x", "c1", (8, 8, 3, 3), pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu_1"),
        conv_node(inits, rng, "conv_2", "r1", "c2", (8, 8, 3, 3), pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["x", "c2"], ["s2"], name="add_2"),
        helper.make_node("Relu", ["s2"], ["block"], name="relu_2"),
        conv_node(inits, rng, "conv_a", "block", "ca", (8, 8, 1, 1)),
        conv_node(inits, rng, "conv_b", "block", "cb", (8, 8, 3, 3), pads=[1, 1, 1, 1],
                  bias=False),
        helper.make_node("Add", ["ca", "cb"], ["sab"], name="add_ab"),
        helper.make_node("Sigmoid", ["sab"], ["gate"], name="sigmoid_ab"),
        conv_node(inits, rng, "conv_3", "gate", "c3", (4, 8, 1, 1)),
        helper.make_node("Relu", ["c3"], ["r3"], name="relu_3"),
    ]
    return model("fused_residual_blocks", nodes, [vi("x", (2, 8, 6, 7))],
                 [vi("gate", (2, 8, 6, 7)), vi("c3", (2, 4, 6, 7)), vi("r3", (2, 4, 6, 7))], inits)


@case()
def fused_silu_hardswish():
    # SiLU as x * Sigmoid(x) after a depthwise and a pointwise Conv (both
    # operand orders), then HardSwish and Tanh.
    rng = rng_for("fused_silu_hardswish")
    inits = []
    nodes = [
        conv_node(inits, rng, "dw", "x", "d", (8, 1, 3, 3), pads=[1, 1, 1, 1], group=8),
        helper.make_node("Sigmoid", ["d"], ["ds"], name="sigmoid_d"),
        helper.make_node("Mul", ["d", "ds"], ["dm"], name="mul_d"),
        conv_node(inits, rng, "pw", "dm", "p", (16, 8, 1, 1)),
        helper.make_node("Sigmoid", ["p"], ["ps"], name="sigmoid_p"),
        helper.make_node("Mul", ["ps", "p"], ["pm"], name="mul_p"),
        conv_node(inits, rng, "conv_h", "pm", "h", (8, 16, 3, 3), pads=[1, 1, 1, 1]),
        helper.make_node("HardSwish", ["h"], ["hs"], name="hardswish_0"),
        conv_node(inits, rng, "conv_t", "hs", "t", (4, 8, 1, 1)),
        helper.make_node("Tanh", ["t"], ["y"], name="tanh_0"),
    ]
    return model("fused_silu_hardswish", nodes, [vi("x", (1, 8, 10, 11))],
                 [vi("y", (1, 4, 10, 11))], inits)


@case()
def layer_norm_decomposed():
    # LayerNorm as torch exports it below opset 17, rewritten into one
    # LayerNormalization (fuse_layer_norm.h): with gamma and beta, and
    # without them (a scale of ones).
    rng = rng_for("layer_norm_decomposed")
    inits = [init("two", np.array(2.0, np.float32)), init("eps", np.array(1e-5, np.float32)),
             init("g", weights(rng, (24,), 1.0)), init("b", weights(rng, (24,), 0.5))]
    n = helper.make_node

    def ln(prefix, x, out, affine):
        nodes = [
            n("ReduceMean", [x], [prefix + "m"], name=prefix + "mean", axes=[-1]),
            n("Sub", [x, prefix + "m"], [prefix + "d"], name=prefix + "sub"),
            n("Pow", [prefix + "d", "two"], [prefix + "p"], name=prefix + "pow"),
            n("ReduceMean", [prefix + "p"], [prefix + "v"], name=prefix + "var", axes=[-1]),
            n("Add", [prefix + "v", "eps"], [prefix + "ve"], name=prefix + "add_eps"),
            n("Sqrt", [prefix + "ve"], [prefix + "s"], name=prefix + "sqrt"),
            n("Div", [prefix + "d", prefix + "s"], [prefix + "n" if affine else out],
              name=prefix + "div"),
        ]
        if affine:
            nodes += [n("Mul", [prefix + "n", "g"], [prefix + "gn"], name=prefix + "scale"),
                      n("Add", [prefix + "gn", "b"], [out], name=prefix + "shift")]
        return nodes

    nodes = ln("a_", "x", "h", True) + [n("Relu", ["h"], ["r"], name="relu")] + ln("b_", "r", "y", False)
    return model("layer_norm_decomposed", nodes, [vi("x", (2, 5, 24))], [vi("y", (2, 5, 24))],
                 inits)


@case()
def concat_in_place():
    # A Fire-style Concat whose inputs their producers write straight into
    # its result (arena_plan.cc): a pointwise ConvGemm, a Winograd 3x3, a
    # depthwise Conv and a fused elementwise chain side by side; then a
    # Concat that must copy, as one of its inputs is read again later.
    rng = rng_for("concat_in_place")
    inits = []
    n = helper.make_node
    nodes = [
        conv_node(inits, rng, "squeeze", "x", "s", (16, 8, 1, 1)),
        n("Relu", ["s"], ["sr"], name="squeeze_relu"),
        conv_node(inits, rng, "e1", "sr", "a", (16, 16, 1, 1)),
        conv_node(inits, rng, "e3", "sr", "b", (32, 16, 3, 3), pads=[1, 1, 1, 1]),
        conv_node(inits, rng, "dw", "sr", "c", (16, 1, 3, 3), pads=[1, 1, 1, 1], group=16),
        n("Exp", ["sr"], ["se"], name="exp"),
        n("Neg", ["se"], ["d"], name="neg"),
        n("Concat", ["a", "b", "c", "d"], ["cat"], name="concat", axis=1),
        conv_node(inits, rng, "after", "cat", "y0", (8, 80, 1, 1)),
        n("Concat", ["y0", "x"], ["cat2"], name="concat_copies", axis=1),
        conv_node(inits, rng, "last", "cat2", "y1", (8, 16, 1, 1)),
        n("Add", ["y1", "y0"], ["y"], name="reads_y0_again"),
    ]
    return model("concat_in_place", nodes, [vi("x", (1, 8, 20, 20))], [vi("y", (1, 8, 20, 20))],
                 inits)


@case()
def fused_elementwise_chains():
    # GELU as BERT exports it (Div, Erf, Add, Mul, Mul) and as GPT-2 writes
    # it (Pow(x, 3), Mul, Add, Mul, Tanh, Add, Mul, Mul), each fused into one
    # nanoc.Elementwise (fuse_elementwise.h), with a broadcast row in the
    # first chain; a Sub whose result is also a model output stays apart.
    rng = rng_for("fused_elementwise_chains")
    inits = [init("w", weights(rng, (24, 40))), init("bias", weights(rng, (40,), 0.5)),
             init("row", weights(rng, (40,), 0.5)), init("sqrt2", np.array(1.4142135, np.float32)),
             init("one", np.array(1.0, np.float32)), init("half", np.array(0.5, np.float32)),
             init("three", np.array(3.0, np.float32)),
             init("c", np.array(0.044715, np.float32)),
             init("s2pi", np.array(0.7978846, np.float32))]
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w"], ["m"], name="matmul"),
        n("Add", ["m", "bias"], ["h"], name="bias"),
        n("Sub", ["h", "row"], ["hs"], name="sub_row"),
        n("Div", ["hs", "sqrt2"], ["d"], name="div"),
        n("Erf", ["d"], ["e"], name="erf"),
        n("Add", ["e", "one"], ["e1"], name="add_one"),
        n("Mul", ["hs", "e1"], ["g0"], name="mul_x"),
        n("Mul", ["g0", "half"], ["g"], name="mul_half"),
        n("Pow", ["g", "three"], ["p"], name="pow3"),
        n("Mul", ["p", "c"], ["pc"], name="mul_c"),
        n("Add", ["g", "pc"], ["inner"], name="add_inner"),
        n("Mul", ["inner", "s2pi"], ["z"], name="mul_s2pi"),
        n("Tanh", ["z"], ["t"], name="tanh"),
        n("Add", ["t", "one"], ["t1"], name="add_one_t"),
        n("Mul", ["g", "t1"], ["y0"], name="mul_g"),
        n("Mul", ["y0", "half"], ["y"], name="mul_half_t"),
    ]
    return model("fused_elementwise_chains", nodes, [vi("x", (6, 24))],
                 [vi("y", (6, 40)), vi("hs", (6, 40))], inits)


@case()
def squeeze_excitation():
    # EfficientNet's squeeze-and-excitation block: the Mul's per-channel scale
    # folds into the pointwise Conv after it (fuse_channel_scale.h), at batch
    # 2 (a scale per image) and with a residual Add; a second block whose map
    # is too small for the fold (4 pixels, 24 output channels) keeps its Mul.
    rng = rng_for("squeeze_excitation")
    inits = []

    def se(prefix, x, c, squeeze):
        return [
            helper.make_node("GlobalAveragePool", [x], [prefix + "_gap"], name=prefix + "_gap"),
            conv_node(inits, rng, prefix + "_fc1", prefix + "_gap", prefix + "_f1", (squeeze, c, 1, 1)),
            helper.make_node("Sigmoid", [prefix + "_f1"], [prefix + "_f1s"], name=prefix + "_sig1"),
            helper.make_node("Mul", [prefix + "_f1", prefix + "_f1s"], [prefix + "_f1m"],
                             name=prefix + "_silu"),
            conv_node(inits, rng, prefix + "_fc2", prefix + "_f1m", prefix + "_f2", (c, squeeze, 1, 1)),
            helper.make_node("Sigmoid", [prefix + "_f2"], [prefix + "_s"], name=prefix + "_sig2"),
            helper.make_node("Mul", [x, prefix + "_s"], [prefix + "_y"], name=prefix + "_scale"),
        ]

    # The skip Conv first, so that the residual Add fuses into the project
    # Conv, which then carries a residual and a channel scale.
    nodes = [
        conv_node(inits, rng, "skip", "x", "k", (8, 16, 1, 1)),
        conv_node(inits, rng, "dw", "x", "d", (16, 1, 3, 3), pads=[1, 1, 1, 1], group=16),
    ]
    nodes += se("se1", "d", 16, 4)
    nodes += [
        conv_node(inits, rng, "project", "se1_y", "p", (8, 16, 1, 1)),
        helper.make_node("Add", ["p", "k"], ["r"], name="residual"),
        conv_node(inits, rng, "down", "r", "q", (32, 8, 3, 3), pads=[1, 1, 1, 1], strides=[5, 5]),
    ]
    nodes += se("se2", "q", 32, 8)
    nodes += [conv_node(inits, rng, "head", "se2_y", "y", (24, 32, 1, 1))]
    return model("squeeze_excitation", nodes, [vi("x", (2, 16, 9, 10))], [vi("y", (2, 24, 2, 2))],
                 inits)


@case()
def nchwc_mobile_blocks():
    # A MobileNet/EfficientNet-like network that nchwc_layout.h runs
    # channel-blocked from its stem to its pool (one Unpack of the pooled
    # features): a 3-channel stem read in NCHW, depthwise 3x3 and 5x5 Convs
    # (strides 1 and 2), pointwise ones with Relu6 (Clip), SiLU and a
    # residual, a squeeze-and-excitation whose scale folds into the project
    # Conv (30 pixels, 14 output channels), a per-channel constant Add;
    # channel counts that fill no block of 16 (24, 40) and none of 4 (10,
    # 14), odd maps, two images.
    rng = rng_for("nchwc_mobile_blocks")
    inits = [init("lo", np.array(0.0, np.float32)), init("hi", np.array(6.0, np.float32)),
             init("shift", weights(rng, (1, 14, 1, 1), 0.5)),
             init("fc.w", weights(rng, (7, 14))), init("fc.b", weights(rng, (7,), 0.5))]

    def silu(x, y):
        return [helper.make_node("Sigmoid", [x], [y + "_s"], name=y + "_sig"),
                helper.make_node("Mul", [x, y + "_s"], [y], name=y + "_silu")]

    nodes = [
        conv_node(inits, rng, "stem", "x", "s0", (16, 3, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Clip", ["s0", "lo", "hi"], ["s"], name="stem_relu6"),
        conv_node(inits, rng, "dw1", "s", "d1", (16, 1, 3, 3), pads=[1, 1, 1, 1], group=16),
        helper.make_node("Clip", ["d1", "lo", "hi"], ["d"], name="dw1_relu6"),
        conv_node(inits, rng, "pw1", "d", "p", (24, 16, 1, 1)),
        conv_node(inits, rng, "pw2", "p", "q", (24, 24, 1, 1), bias=False),
        helper.make_node("Add", ["q", "p"], ["r"], name="residual"),
        conv_node(inits, rng, "expand", "r", "e0", (40, 24, 1, 1)),
    ]
    nodes += silu("e0", "e")
    nodes += [conv_node(inits, rng, "dw2", "e", "f0", (40, 1, 5, 5), pads=[2, 2, 2, 2],
                        strides=[2, 2], group=40)]
    nodes += silu("f0", "f")
    nodes += [
        helper.make_node("GlobalAveragePool", ["f"], ["g"], name="se_gap"),
        conv_node(inits, rng, "se1", "g", "g1", (10, 40, 1, 1)),
    ]
    nodes += silu("g1", "g2")
    nodes += [
        conv_node(inits, rng, "se2", "g2", "g3", (40, 10, 1, 1)),
        helper.make_node("Sigmoid", ["g3"], ["gs"], name="se_gate"),
        helper.make_node("Mul", ["f", "gs"], ["fs"], name="se_scale"),
        conv_node(inits, rng, "project", "fs", "h", (14, 40, 1, 1)),
        helper.make_node("Add", ["h", "shift"], ["hs"], name="shift"),
        helper.make_node("GlobalAveragePool", ["hs"], ["pool"], name="pool"),
        helper.make_node("Flatten", ["pool"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["y"], name="fc", transB=1),
    ]
    return model("nchwc_mobile_blocks", nodes, [vi("x", (2, 3, 21, 18))], [vi("y", (2, 7))],
                 inits)


@case()
def nchwc_pool_concat():
    # The channel-blocked layout through a MaxPool (3x3 stride 2 with
    # ceil_mode: its last window partial) and a Concat along the channels
    # whose first input is whole blocks (16 channels) and last is not (8 of
    # 16 lanes), then a depthwise and a pointwise Conv and the pool.
    rng = rng_for("nchwc_pool_concat")
    inits = []
    nodes = [
        conv_node(inits, rng, "stem", "x", "s0", (16, 3, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["s0"], ["s"], name="stem_relu"),
        helper.make_node("MaxPool", ["s"], ["m"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                         ceil_mode=1),
        conv_node(inits, rng, "branch_a", "m", "a", (16, 16, 1, 1)),
        conv_node(inits, rng, "branch_b", "m", "b", (8, 16, 1, 1)),
        helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=1),
        conv_node(inits, rng, "dw", "c", "d", (24, 1, 3, 3), pads=[1, 1, 1, 1], group=24),
        conv_node(inits, rng, "project", "d", "p", (10, 24, 1, 1)),
        helper.make_node("GlobalAveragePool", ["p"], ["y"], name="gap"),
    ]
    return model("nchwc_pool_concat", nodes, [vi("x", (2, 3, 33, 30))], [vi("y", (2, 10, 1, 1))],
                 inits)


@case()
def nchwc_dense_blocks():
    # Dense Convs inside the channel-blocked layout (the direct form reading
    # X blocked): a 3x3 stride-2 and a 1x1 stride-2 Conv, which Winograd
    # would not take, between a stem, a depthwise and pointwise Convs; 20
    # channels (a partial block of 16 and of 8), a residual, two images.
    rng = rng_for("nchwc_dense_blocks")
    inits = []
    nodes = [
        conv_node(inits, rng, "stem", "x", "s0", (20, 3, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["s0"], ["s"], name="stem_relu"),
        conv_node(inits, rng, "dw", "s", "d", (20, 1, 3, 3), pads=[1, 1, 1, 1], group=20),
        conv_node(inits, rng, "pw", "d", "p", (20, 20, 1, 1)),
        conv_node(inits, rng, "down3", "p", "q0", (24, 20, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["q0"], ["q"], name="down3_relu"),
        conv_node(inits, rng, "skip", "p", "k", (24, 20, 1, 1), strides=[2, 2]),
        helper.make_node("Add", ["q", "k"], ["r"], name="residual"),
        conv_node(inits, rng, "head", "r", "h", (12, 24, 1, 1)),
        helper.make_node("GlobalAveragePool", ["h"], ["y"], name="gap"),
    ]
    return model("nchwc_dense_blocks", nodes, [vi("x", (2, 3, 26, 23))], [vi("y", (2, 12, 1, 1))],
                 inits)


@case()
def small_map_strided_convs():
    # The transposed product (nanoc.ConvGemm's pixel_rows) on a 7 x 7 map: a
    # 3x3 stride-2 Conv through an Im2Col and a 1x1 stride-2 Conv reading X
    # in place, 40 output channels (a partial panel on every ISA), their
    # residual Add and Relu fused, then a 3x3 Conv on Winograd (so the graph
    # stays NCHW); two images.
    rng = rng_for("small_map_strided_convs")
    inits = []
    nodes = [
        conv_node(inits, rng, "down3", "x", "q0", (40, 24, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["q0"], ["q"], name="down3_relu"),
        conv_node(inits, rng, "skip", "x", "k", (40, 24, 1, 1), strides=[2, 2]),
        helper.make_node("Add", ["q", "k"], ["r0"], name="residual"),
        helper.make_node("Relu", ["r0"], ["r"], name="residual_relu"),
        conv_node(inits, rng, "mix", "r", "y", (40, 40, 3, 3), pads=[1, 1, 1, 1]),
    ]
    return model("small_map_strided_convs", nodes, [vi("x", (2, 24, 14, 14))],
                 [vi("y", (2, 40, 7, 7))], inits)


@case()
def fused_gemm_matmul():
    # Gemm + LeakyRelu, MatMul + residual + HardSigmoid, batched MatMul + Tanh.
    rng = rng_for("fused_gemm_matmul")
    inits = [init("w1", weights(rng, (24, 16))), init("b1", weights(rng, (24,), 0.5)),
             init("w2", weights(rng, (24, 12))), init("w3", weights(rng, (12, 5)))]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["g"], name="gemm_0", transB=1),
        helper.make_node("LeakyRelu", ["g"], ["gl"], name="leaky_0", alpha=0.2),
        helper.make_node("MatMul", ["gl", "w2"], ["m"], name="matmul_0"),
        helper.make_node("Add", ["m", "r"], ["mr"], name="add_0"),
        helper.make_node("HardSigmoid", ["mr"], ["mh"], name="hardsigmoid_0", alpha=0.3,
                         beta=0.4),
        helper.make_node("Reshape", ["mh", "shape"], ["mb"], name="reshape_0"),
        helper.make_node("MatMul", ["mb", "w3"], ["t"], name="matmul_1"),
        helper.make_node("Tanh", ["t"], ["y"], name="tanh_0"),
    ]
    inits.append(init("shape", np.array([2, 5, 12], np.int64)))
    return model("fused_gemm_matmul", nodes, [vi("x", (10, 16)), vi("r", (10, 12))],
                 [vi("y", (2, 5, 5))], inits)


# ---- control flow, unrolled at compile time --------------------------------


@case()
def scan_rnn_cell():
    """Scan over x [2, 6, 8] along axis 1 with a tanh RNN cell (a MatMul of the
    state and one of the step), the hidden states stacked along axis 1 and
    the last one as the final state: every step a run-time value."""
    rng = rng_for("scan_rnn_cell")
    w = init("w", weights(rng, (8, 16)))
    r = init("r", weights(rng, (16, 16)))
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "w"], ["xw"]),
         helper.make_node("MatMul", ["h_in", "r"], ["hr"]),
         helper.make_node("Add", ["xw", "hr"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["y_t"])],
        "cell", [vi("h_in", [2, 16]), vi("x_t", [2, 8])], [vi("h_out", [2, 16]), vi("y_t", [2, 16])])
    scan = helper.make_node("Scan", ["h0", "x"], ["h", "y"], name="scan", body=body,
                            num_scan_inputs=1, scan_input_axes=[1], scan_output_axes=[1])
    return model("scan_rnn_cell", [scan], [vi("h0", [2, 16]), vi("x", [2, 6, 8])],
                 [vi("h", [2, 16]), vi("y", [2, 6, 16])], [w, r])


@case()
def loop_fixed_trips_reverse_scan():
    """Loop with a constant trip count of 4 over a run-time state (v <- v * s +
    iteration), its scan output the states; then a backwards Scan summing
    the rows of x."""
    rng = rng_for("loop_fixed_trips_reverse_scan")
    s = init("s", (rng.standard_normal(5) * 0.5).astype(np.float32))
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["v_in", "s"], ["vs"]),
         helper.make_node("Add", ["vs", "i_f"], ["v_out"]),
         helper.make_node("Identity", ["v_out"], ["v_scan"])],
        "step", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL),
                 vi("v_in", [5])],
        [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [5]), vi("v_scan", [5])])
    trips = init("trips", np.array(4, np.int64))
    loop = helper.make_node("Loop", ["trips", "", "v"], ["v_final", "v_all"], name="loop",
                            body=body)
    sum_body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["acc_t"])],
        "sum", [vi("acc_in", [5]), vi("row", [5])], [vi("acc_out", [5]), vi("acc_t", [5])])
    scan = helper.make_node("Scan", ["v_final", "x"], ["total", "partials"], name="scan",
                            body=sum_body, num_scan_inputs=1, scan_input_directions=[1],
                            scan_output_directions=[1])
    return model("loop_fixed_trips_reverse_scan", [loop, scan], [vi("v", [5]), vi("x", [3, 5])],
                 [vi("v_all", [4, 5]), vi("total", [5]), vi("partials", [3, 5])], [s, trips])


def _if_branches(rng, tag):
    """Two branches over x [4,8] and the outer values w and b: then
    Relu(x @ w + b), else Tanh(2 x) @ w; the second output the outer b as is
    in then, b * 3 in else."""
    two = init(f"{tag}_two", np.array(2.0, np.float32))
    three = init(f"{tag}_three", np.array(3.0, np.float32))
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], [f"{tag}_t0"]),
         helper.make_node("Add", [f"{tag}_t0", "b"], [f"{tag}_t1"]),
         helper.make_node("Relu", [f"{tag}_t1"], [f"{tag}_then_y"]),
         helper.make_node("Identity", ["b"], [f"{tag}_then_z"])],
        f"{tag}_then", [], [vi(f"{tag}_then_y", [4, 6]), vi(f"{tag}_then_z", [6])])
    else_g = helper.make_graph(
        [helper.make_node("Mul", ["x", f"{tag}_two"], [f"{tag}_e0"]),
         helper.make_node("Tanh", [f"{tag}_e0"], [f"{tag}_e1"]),
         helper.make_node("MatMul", [f"{tag}_e1", "w"], [f"{tag}_else_y"]),
         helper.make_node("Mul", ["b", f"{tag}_three"], [f"{tag}_else_z"])],
        f"{tag}_else", [], [vi(f"{tag}_else_y", [4, 6]), vi(f"{tag}_else_z", [6])],
        initializer=[two, three])
    return then_g, else_g


@case()
def if_runtime_cond():
    """If on a condition computed at run time (sum(x) > 0), twice: once on
    the condition and once on its negation, so every run takes both
    branches; the branches read the outer graph's x, w and b."""
    rng = rng_for("if_runtime_cond")
    w = init("w", weights(rng, [8, 6]))
    b = init("b", (rng.standard_normal(6) * 0.5).astype(np.float32))
    zero = init("zero", np.array(0.0, np.float32))
    then_a, else_a = _if_branches(rng, "a")
    then_b, else_b = _if_branches(rng, "b")
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"]),
        helper.make_node("Not", ["c"], ["not_c"]),
        helper.make_node("If", ["c"], ["y1", "z1"], name="if_c", then_branch=then_a,
                         else_branch=else_a),
        helper.make_node("If", ["not_c"], ["y2", "z2"], name="if_not_c", then_branch=then_b,
                         else_branch=else_b),
        helper.make_node("Add", ["y1", "y2"], ["y"]),
    ]
    return model("if_runtime_cond", nodes, [vi("x", [4, 8])],
                 [vi("y", [4, 6]), vi("z1", [6]), vi("z2", [6])], [w, b, zero])


@case(ranges={"n": (0.0, 7.0, False)})
def loop_runtime_trips():
    """Loop whose trip count is a graph input (0 to 6 on each run): v <-
    Softmax(v + t * i) * 3, t = tanh(x) computed before the loop (so every
    iteration reads a value the arena must keep to the loop's end), and a
    second carried value summing the iteration numbers."""
    c3 = init("c3", np.array(3.0, np.float32))
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["t", "i_f"], ["ti"]),
         helper.make_node("Add", ["v_in", "ti"], ["u"]),
         helper.make_node("Softmax", ["u"], ["p"], axis=0),
         helper.make_node("Mul", ["p", "c3"], ["v_out"]),
         helper.make_node("Add", ["acc_in", "i"], ["acc_out"])],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL),
                 vi("v_in", [5]), vi("acc_in", [], TensorProto.INT64)],
        [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [5]),
         vi("acc_out", [], TensorProto.INT64)], initializer=[c3])
    acc0 = init("acc0", np.array(0, np.int64))
    nodes = [helper.make_node("Tanh", ["x"], ["t"]),
             helper.make_node("Loop", ["n", "", "x", "acc0"], ["v", "acc"], name="loop",
                              body=body)]
    return model("loop_runtime_trips", nodes, [vi("n", [], TensorProto.INT64), vi("x", [5])],
                 [vi("v", [5]), vi("acc", [], TensorProto.INT64)], [acc0])


@case(ranges={"n": (0.0, 5.0, False)})
def loop_nested_runtime():
    """Loops in loops: an outer Loop over a run-time trip count n (0 to 4),
    whose body runs an inner Loop of i + 1 trips (a count computed inside the
    outer body) that adds x * j to the state, then an If (on the state's sum
    being positive) that keeps the inner result or goes back to the outer
    graph's x; the outer body's condition output is bool[1]."""
    one = init("one_i", np.array(1, np.int64))
    zero = init("zero_f", np.array(0.0, np.float32))
    inner = helper.make_graph(
        [helper.make_node("Identity", ["ic_in"], ["ic_out"]),
         helper.make_node("Cast", ["j"], ["j_f"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "j_f"], ["xj"]),
         helper.make_node("Add", ["w_in", "xj"], ["w_out"])],
        "inner", [vi("j", [], TensorProto.INT64), vi("ic_in", [], TensorProto.BOOL),
                  vi("w_in", [4])],
        [vi("ic_out", [], TensorProto.BOOL), vi("w_out", [4])])
    keep = helper.make_graph([helper.make_node("Identity", ["w"], ["kept"])], "keep", [],
                             [vi("kept", [4])])
    reset = helper.make_graph([helper.make_node("Identity", ["x"], ["x_again"])], "reset", [],
                              [vi("x_again", [4])])
    outer = helper.make_graph(
        [helper.make_node("Add", ["i", "one_i"], ["m"]),
         helper.make_node("Loop", ["m", "", "v_in"], ["w"], name="inner_loop", body=inner),
         helper.make_node("ReduceSum", ["w"], ["sw"], keepdims=0),
         helper.make_node("Greater", ["sw", "zero_f"], ["pos"]),
         helper.make_node("If", ["pos"], ["v_out"], name="keep_or_reset", then_branch=keep,
                          else_branch=reset),
         helper.make_node("Unsqueeze", ["c_in", "axes0"], ["c_out"])],
        "outer", [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL),
                  vi("v_in", [4])],
        [vi("c_out", [1], TensorProto.BOOL), vi("v_out", [4])],
        initializer=[one, init("axes0", np.array([0], np.int64))])
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["v"], name="outer_loop", body=outer)]
    return model("loop_nested_runtime", nodes, [vi("n", [], TensorProto.INT64), vi("x", [4])],
                 [vi("v", [4])], [zero])


@case()
def loop_runtime_cond():
    """A while loop: (a, b) <- (a + b, a) while sum(a + b) < 40, at most 30
    trips; the new b is a Reshape of the old a (a view of the loop's state,
    which the new a overwrites first: the next state is a parallel
    assignment), and an If inside the body picks how the new a adds up on
    the iteration's parity."""
    limit = init("limit", np.array(40.0, np.float32))
    two = init("two_i", np.array(2, np.int64))
    zero_i = init("zero_i", np.array(0, np.int64))
    half = init("half", np.array(0.5, np.float32))
    even = helper.make_graph([helper.make_node("Add", ["a_in", "b_in"], ["sum_even"])], "even",
                             [], [vi("sum_even", [3])])
    odd = helper.make_graph(
        [helper.make_node("Mul", ["a_in", "half"], ["ah"]),
         helper.make_node("Add", ["ah", "b_in"], ["sum_odd"])], "odd", [], [vi("sum_odd", [3])])
    body = helper.make_graph(
        [helper.make_node("Mod", ["i", "two_i"], ["parity"]),
         helper.make_node("Equal", ["parity", "zero_i"], ["is_even"]),
         helper.make_node("If", ["is_even"], ["next"], name="parity_if", then_branch=even,
                          else_branch=odd),
         helper.make_node("Identity", ["next"], ["a_out"]),
         helper.make_node("Reshape", ["a_in", "shape3"], ["b_out"]),
         helper.make_node("ReduceSum", ["next"], ["s"], keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["cond_out"])],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL),
                 vi("a_in", [3]), vi("b_in", [3])],
        [vi("cond_out", [], TensorProto.BOOL), vi("a_out", [3]), vi("b_out", [3])],
        initializer=[two, zero_i, half, init("shape3", np.array([3], np.int64))])
    trips = init("trips", np.array(30, np.int64))
    nodes = [
        helper.make_node("Abs", ["x"], ["a0"]),
        helper.make_node("Abs", ["y"], ["b0"]),
        helper.make_node("ReduceSum", ["b0"], ["s0"], keepdims=0),
        helper.make_node("Less", ["s0", "limit"], ["c0"]),
        helper.make_node("Loop", ["trips", "c0", "a0", "b0"], ["a", "b"], name="loop", body=body),
    ]
    return model("loop_runtime_cond", nodes, [vi("x", [3]), vi("y", [3])],
                 [vi("a", [3]), vi("b", [3])], [limit, trips])


@case()
def scan_long_runtime():
    """A Scan of 200 steps (too long to unroll: it runs as a loop at run
    time): x [200, 4] forwards along axis 0 and y [3, 200] backwards along
    axis 1; h <- tanh(0.5 h + x_t + sum(y_t)); scan outputs the states along
    axis 0 and 2 x_t stacked backwards along axis 1."""
    half = init("half", np.array(0.5, np.float32))
    two = init("two", np.array(2.0, np.float32))
    body = helper.make_graph(
        [helper.make_node("Mul", ["h_in", "half"], ["hh"]),
         helper.make_node("Add", ["hh", "x_t"], ["hx"]),
         helper.make_node("ReduceSum", ["y_t"], ["ys"], keepdims=0),
         helper.make_node("Add", ["hx", "ys"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["h_scan"]),
         helper.make_node("Mul", ["x_t", "two"], ["x2"])],
        "step", [vi("h_in", [4]), vi("x_t", [4]), vi("y_t", [3])],
        [vi("h_out", [4]), vi("h_scan", [4]), vi("x2", [4])], initializer=[half, two])
    scan = helper.make_node("Scan", ["h0", "x", "y"], ["h", "hs", "xs2"], name="scan", body=body,
                            num_scan_inputs=2, scan_input_axes=[0, 1],
                            scan_input_directions=[0, 1], scan_output_axes=[0, 1],
                            scan_output_directions=[0, 1])
    return model("scan_long_runtime", [scan], [vi("h0", [4]), vi("x", [200, 4]), vi("y", [3, 200])],
                 [vi("h", [4]), vi("hs", [200, 4]), vi("xs2", [4, 200])])


# ---- negative cases (run by negative.py) -----------------------------------


@case(negative=True)
def unsupported_ops():
    # Two unsupported ops between supported ones: nanoc must name both nodes.
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu_0"),
        helper.make_node("Bernoulli", ["r"], ["e"], name="bernoulli_node_0"),
        helper.make_node("RandomUniformLike", ["e"], ["c"], name="random_node_1"),
        helper.make_node("Add", ["c", "x"], ["y"], name="add_0"),
    ]
    return model("unsupported_ops", nodes, [vi("x", (2, 3))], [vi("y", (2, 3))])


@case(negative=True)
def wrong_input_shape():
    # A distinctive input name, so the test can check that the error names it.
    nodes = [helper.make_node("Relu", ["image_pixels"], ["y"], name="relu_0")]
    return model("wrong_input_shape", nodes, [vi("image_pixels", (1, 3, 4, 4))],
                 [vi("y", (1, 3, 4, 4))])


# ---- command line ----------------------------------------------------------


def build(name: str) -> onnx.ModelProto:
    table = CASES if name in CASES else NEGATIVE_CASES
    if name not in table:
        raise KeyError(f"unknown case '{name}' (see models.py --list)")
    return table[name].build()


def get_case(name: str) -> Case:
    if name in CASES:
        return CASES[name]
    if name in NEGATIVE_CASES:
        return NEGATIVE_CASES[name]
    raise KeyError(f"unknown case '{name}' (see models.py --list)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="folder to write <case>.onnx into")
    p.add_argument("--case", action="append", help="only this case (repeatable)")
    p.add_argument("--list", action="store_true", help="print the positive case names")
    args = p.parse_args(argv)
    if args.list:
        for n in CASES:
            print(n)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        names = args.case or list(CASES) + list(NEGATIVE_CASES)
        for n in names:
            try:
                m = build(n)
            except KeyError as e:
                print(f"models.py: error: {e.args[0]}", file=sys.stderr)
                return 1
            onnx.save(m, os.path.join(args.out, n + ".onnx"))
    if not args.list and not args.out:
        p.error("nothing to do: give --out DIR and/or --list")
    return 0


if __name__ == "__main__":
    sys.exit(main())
