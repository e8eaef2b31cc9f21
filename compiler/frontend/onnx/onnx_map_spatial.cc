// ONNX -> IR mappings of the spatial operators: convolutions and pooling
// windows over [N, C, spatial...] (any number of spatial dims, auto_pad
// resolved into explicit pads), the global pools, Resize and Upsample.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/frontend/onnx/onnx_node_importer.h"
#include "compiler/ir/error.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc::onnx_import {
namespace {

// ---- windows: Conv, ConvTranspose and pooling ----

struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // every spatial dim's begin, then every end
};

void requireSpatial(const NodeImporter& n, const Value* v, const char* role) {
  if (v->type.rank() < 3)
    n.fail(std::string(role) + " is " + v->type.str() +
           "; windows need [N, C, spatial...] with at least one spatial dim");
}

size_t spatialRank(const Value* x) { return x->type.rank() - 2; }

std::vector<int64_t> windowInts(const NodeImporter& n, const char* key, size_t size,
                                std::vector<int64_t> fallback, int64_t min) {
  std::vector<int64_t> v = n.intsAttr(key).value_or(std::move(fallback));
  if (v.size() != size)
    n.fail(std::string(key) + " " + dimsStr(v) + " must have " + std::to_string(size) +
           " values for the input's spatial dims");
  for (int64_t x : v)
    if (x < min || x > kMaxWindowAttr)
      n.fail(std::string(key) + " " + dimsStr(v) + " has an out-of-range value");
  return v;
}

std::vector<int64_t> checkedKernel(const NodeImporter& n, std::vector<int64_t> kernel,
                                   size_t spatial) {
  if (kernel.size() != spatial)
    n.fail("kernel_shape " + dimsStr(kernel) + " must have " + std::to_string(spatial) +
           " values for the input's spatial dims");
  for (int64_t k : kernel)
    if (k < 1 || k > kMaxWindowAttr) n.fail("kernel_shape " + dimsStr(kernel) + " is out of range");
  return kernel;
}

// The auto_pad attribute, checked; "NOTSET" when absent.
std::string autoPad(const NodeImporter& n) {
  std::string auto_pad = n.stringAttr("auto_pad").value_or("NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER")
    n.fail("auto_pad '" + auto_pad + "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
  return auto_pad;
}

// Reads strides, dilations, pads and auto_pad for a window over
// [N, C, spatial...] `x`, resolving auto_pad into explicit pads.
Window readWindow(const NodeImporter& n, const Value* x, std::vector<int64_t> kernel) {
  const size_t k = spatialRank(x);
  Window w;
  w.kernel = checkedKernel(n, std::move(kernel), k);
  w.strides = windowInts(n, "strides", k, std::vector<int64_t>(k, 1), 1);
  w.dilations = windowInts(n, "dilations", k, std::vector<int64_t>(k, 1), 1);
  std::optional<std::vector<int64_t>> pads;
  if (n.hasAttr("pads")) pads = windowInts(n, "pads", 2 * k, {}, 0);
  std::string auto_pad = autoPad(n);
  if (auto_pad == "NOTSET") {
    w.pads = pads.value_or(std::vector<int64_t>(2 * k, 0));
    return w;
  }
  if (pads && std::any_of(pads->begin(), pads->end(), [](int64_t p) { return p != 0; }))
    n.fail("has both auto_pad " + auto_pad + " and explicit pads " + dimsStr(*pads));
  w.pads.assign(2 * k, 0);
  if (auto_pad == "VALID") return w;
  // SAME: the output has ceil(in / stride) elements; the padding that needs
  // is split evenly, the odd one at the end (UPPER) or the beginning (LOWER).
  for (size_t i = 0; i < k; ++i) {
    int64_t in = x->type.dims[2 + i];
    int64_t out = (in + w.strides[i] - 1) / w.strides[i];
    int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
    int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + eff - in);
    int64_t begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    w.pads[i] = begin;
    w.pads[i + k] = total - begin;
  }
  return w;
}

std::map<std::string, Attr> windowAttrs(const Window& w) {
  return {{"kernel_shape", w.kernel},
          {"pads", w.pads},
          {"strides", w.strides},
          {"dilations", w.dilations}};
}

void mapConv(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* w = n.requiredInput(1, "W");
  requireSpatial(n, x, "X");
  if (w->type.rank() != x->type.rank())
    n.fail("W " + w->type.str() + " must have the rank of X " + x->type.str());
  std::vector<int64_t> w_kernel(w->type.dims.begin() + 2, w->type.dims.end());
  std::vector<int64_t> kernel = n.intsAttr("kernel_shape").value_or(w_kernel);
  if (kernel != w_kernel)
    n.fail("kernel_shape " + dimsStr(kernel) + " does not match W " + w->type.str());
  int64_t group = n.intAttr("group", 1);
  if (group < 1) n.fail("group " + std::to_string(group) + " must be >= 1");
  std::map<std::string, Attr> attrs = windowAttrs(readWindow(n, x, kernel));
  attrs["group"] = group;
  n.emitResult("Conv", {x, w, n.input(2)}, std::move(attrs));
}

// ConvTranspose's canonical form has explicit pads and output_padding: the
// output is strides * (in - 1) + dilated kernel - pad_begin - pad_end +
// output_padding long. output_shape and auto_pad are resolved into those, as
// ONNX's reference implementation does.
void mapConvTranspose(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* w = n.requiredInput(1, "W");
  requireSpatial(n, x, "X");
  if (w->type.rank() != x->type.rank())
    n.fail("W " + w->type.str() + " must have the rank of X " + x->type.str());
  const size_t k = spatialRank(x);
  std::vector<int64_t> w_kernel(w->type.dims.begin() + 2, w->type.dims.end());
  std::vector<int64_t> kernel = n.intsAttr("kernel_shape").value_or(w_kernel);
  if (kernel != w_kernel)
    n.fail("kernel_shape " + dimsStr(kernel) + " does not match W " + w->type.str());
  int64_t group = n.intAttr("group", 1);
  if (group < 1) n.fail("group " + std::to_string(group) + " must be >= 1");
  Window win;
  win.kernel = checkedKernel(n, kernel, k);
  win.strides = windowInts(n, "strides", k, std::vector<int64_t>(k, 1), 1);
  win.dilations = windowInts(n, "dilations", k, std::vector<int64_t>(k, 1), 1);
  std::vector<int64_t> output_padding =
      windowInts(n, "output_padding", k, std::vector<int64_t>(k, 0), 0);
  std::optional<std::vector<int64_t>> output_shape;
  if (n.hasAttr("output_shape")) {
    std::vector<int64_t> s = *n.intsAttr("output_shape");
    // Some exporters write the whole [N, M, spatial...] shape.
    if (s.size() == k + 2) s.erase(s.begin(), s.begin() + 2);
    if (s.size() != k)
      n.fail("output_shape " + dimsStr(s) + " must have " + std::to_string(k) + " values");
    for (int64_t d : s)
      if (d < 1 || d > (int64_t{1} << 40))
        n.fail("output_shape " + dimsStr(s) + " is out of range");
    output_shape = s;
  }
  std::optional<std::vector<int64_t>> pads;
  if (n.hasAttr("pads")) pads = windowInts(n, "pads", 2 * k, {}, 0);
  std::string auto_pad = autoPad(n);
  // natural(i): the output length with the given pads and output_padding.
  auto natural = [&](size_t i, int64_t pad_sum) {
    return win.strides[i] * (x->type.dims[2 + i] - 1) + output_padding[i] +
           (win.kernel[i] - 1) * win.dilations[i] + 1 - pad_sum;
  };
  win.pads.assign(2 * k, 0);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (same && pads && std::any_of(pads->begin(), pads->end(), [](int64_t p) { return p != 0; }))
    n.fail("has both auto_pad " + auto_pad + " and explicit pads " + dimsStr(*pads));
  if (same || output_shape) {
    // The padding that gives the wanted output (in * stride for SAME), split
    // as the spec says: the odd one at the end for SAME_UPPER, else at the
    // beginning (explicit pads are ignored). A wanted output longer than the
    // natural one (negative padding) extends the end, as ONNX Runtime does.
    for (size_t i = 0; i < k; ++i) {
      int64_t out = output_shape ? (*output_shape)[i] : x->type.dims[2 + i] * win.strides[i];
      int64_t total = natural(i, 0) - out;
      if (total <= 0) {
        output_padding[i] -= total;
        continue;
      }
      int64_t begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      win.pads[i] = begin;
      win.pads[i + k] = total - begin;
    }
  } else if (pads) {
    win.pads = *pads;
  }
  for (size_t i = 0; i < k; ++i)
    if (natural(i, win.pads[i] + win.pads[i + k]) < 1 ||
        natural(i, win.pads[i] + win.pads[i + k]) > (int64_t{1} << 40))
      n.fail("the output of spatial dim " + std::to_string(i) + " would be empty or too large");
  std::map<std::string, Attr> attrs = windowAttrs(win);
  attrs["group"] = group;
  attrs["output_padding"] = output_padding;
  n.emitResult("ConvTranspose", {x, w, n.input(2)}, std::move(attrs));
}

std::vector<int64_t> poolKernel(const NodeImporter& n) {
  std::optional<std::vector<int64_t>> kernel = n.intsAttr("kernel_shape");
  if (!kernel) n.fail("attribute kernel_shape is missing");
  return *kernel;
}

void mapMaxPool(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  requireSpatial(n, x, "X");
  std::map<std::string, Attr> attrs = windowAttrs(readWindow(n, x, poolKernel(n)));
  attrs["ceil_mode"] = int64_t{n.opset() >= 10 ? n.intAttr("ceil_mode", 0) != 0 : 0};
  if (!n.outputUsed(1)) {
    // storage_order only changes the Indices output.
    n.emitResult("MaxPool", {x}, std::move(attrs));
    return;
  }
  // Both outputs: MaxPoolWithIndices, named after the model's outputs.
  int64_t storage_order = n.intAttr("storage_order", 0);
  if (storage_order != 0 && storage_order != 1)
    n.fail("storage_order " + std::to_string(storage_order) + " must be 0 or 1");
  attrs["storage_order"] = storage_order;
  std::vector<std::string> names;
  for (int i = 0; i < 2; ++i) names.push_back(n.proto().output(i));
  if (names[0].empty()) names[0] = n.name() + "_values";
  Node* node = n.graph().addNode("MaxPoolWithIndices", n.name(), {x}, 2, names);
  node->attrs = std::move(attrs);
  inferNode(*node);
  if (!n.proto().output(0).empty()) n.setOutput(0, node->outputs[0]);
  n.setOutput(1, node->outputs[1]);
}

void mapAveragePool(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  requireSpatial(n, x, "X");
  std::map<std::string, Attr> attrs = windowAttrs(readWindow(n, x, poolKernel(n)));
  attrs["ceil_mode"] = int64_t{n.opset() >= 10 ? n.intAttr("ceil_mode", 0) != 0 : 0};
  attrs["count_include_pad"] = int64_t{n.opset() >= 7 ? n.intAttr("count_include_pad", 0) != 0 : 0};
  n.emitResult("AveragePool", {x}, std::move(attrs));
}

// LpPool's and GlobalLpPool's p: a float before opset 2, an int since.
int64_t lpPower(const NodeImporter& n) {
  int64_t p = 2;
  if (n.opset() < 2) {
    double pf = n.floatAttr("p", 2.0);
    if (pf != std::floor(pf) || pf < 1 || pf > 64)
      n.fail("p " + std::to_string(pf) + " must be an integer in [1, 64]");
    p = static_cast<int64_t>(pf);
  } else {
    p = n.intAttr("p", 2);
  }
  if (p < 1 || p > 64) n.fail("p " + std::to_string(p) + " must be in [1, 64]");
  return p;
}

void mapLpPool(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  requireSpatial(n, x, "X");
  std::map<std::string, Attr> attrs = windowAttrs(readWindow(n, x, poolKernel(n)));
  attrs["ceil_mode"] = int64_t{n.opset() >= 18 ? n.intAttr("ceil_mode", 0) != 0 : 0};
  int64_t p = lpPower(n);
  attrs["p"] = p;
  n.emitResult("LpPool", {x}, std::move(attrs));
}

// GlobalLpPool is LpPool with the whole plane as its one window.
void mapGlobalLpPool(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  requireSpatial(n, x, "X");
  const size_t k = spatialRank(x);
  for (size_t i = 0; i < k; ++i)
    if (x->type.dims[2 + i] < 1) n.fail("X " + x->type.str() + " has an empty spatial dim");
  int64_t p = lpPower(n);
  n.emitResult(
      "LpPool", {x},
      {{"kernel_shape", std::vector<int64_t>(x->type.dims.begin() + 2, x->type.dims.end())},
       {"pads", std::vector<int64_t>(2 * k, 0)},
       {"strides", std::vector<int64_t>(k, 1)},
       {"dilations", std::vector<int64_t>(k, 1)},
       {"ceil_mode", int64_t{0}},
       {"p", p}});
}

void mapGlobalPool(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  requireSpatial(n, x, "X");
  n.emitResult(n.proto().op_type(), {x});
}

// ---- Resize and Upsample ----

// The values of a constant 1-D float input (f32, f64 or f16 roi), exact:
// scales and roi enter the coordinate arithmetic as the model stores them.
std::vector<double> constantFloats(const NodeImporter& n, const Value* v, const char* role) {
  if (!v->isConstant())
    n.fail(std::string(role) + " input '" + v->name +
           "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
           "node) to know the static shape");
  if (v->type.rank() != 1 || (v->type.dtype != DType::F32 && v->type.dtype != DType::F64))
    n.fail(std::string(role) + " input '" + v->name + "' must be a 1-D f32 or f64 tensor, not " +
           v->type.str());
  std::vector<double> out(static_cast<size_t>(v->type.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (v->type.dtype == DType::F32) {
      float f;
      std::memcpy(&f, v->data->data() + i * sizeof f, sizeof f);
      out[i] = f;
    } else {
      std::memcpy(&out[i], v->data->data() + i * sizeof(double), sizeof(double));
    }
  }
  return out;
}

// An optional input that opsets 11+ allow to be present but empty.
const Value* presentInput(const NodeImporter& n, size_t i) {
  const Value* v = n.input(i);
  return v && v->type.numel() > 0 ? v : nullptr;
}

// Output dims from per-axis scales, as ONNX's reference computes them:
// floor(scale * in), the scale exactly as stored.
std::vector<int64_t> scaledSizes(const NodeImporter& n, const Value* x,
                                 const std::vector<double>& scales) {
  std::vector<int64_t> sizes;
  for (size_t a = 0; a < scales.size(); ++a) {
    if (!(scales[a] > 0) || !std::isfinite(scales[a])) n.fail("scales must be positive and finite");
    double out = std::floor(scales[a] * static_cast<double>(x->type.dims[a]));
    if (out > static_cast<double>(int64_t{1} << 40)) n.fail("scales make the output too large");
    sizes.push_back(static_cast<int64_t>(out));
  }
  return sizes;
}

void emitResize(NodeImporter& n, Value* x, const std::string& mode, const std::string& ctm,
                const std::string& nearest_mode, double cubic_coeff_a, int64_t exclude_outside,
                double extrapolation_value, int64_t antialias, std::vector<int64_t> sizes,
                std::vector<double> scales, std::vector<double> roi) {
  n.emitResult("Resize", {x},
               {{"mode", mode},
                {"coordinate_transformation_mode", ctm},
                {"nearest_mode", nearest_mode},
                {"cubic_coeff_a", cubic_coeff_a},
                {"exclude_outside", exclude_outside},
                {"extrapolation_value", extrapolation_value},
                {"antialias", antialias},
                {"sizes", std::move(sizes)},
                {"scales", std::move(scales)},
                {"roi", std::move(roi)}});
}

std::vector<double> defaultRoi(size_t rank) {
  std::vector<double> roi(2 * rank, 0.0);
  std::fill(roi.begin() + static_cast<std::ptrdiff_t>(rank), roi.end(), 1.0);
  return roi;
}

// Before opset 11 (Upsample, Resize-10) coordinates are asymmetric and
// nearest rounds down when upsampling, up when downsampling (ONNX Runtime's
// behaviour); an axis with scale 1 maps exactly either way.
std::string legacyNearestMode(const NodeImporter& n, const std::vector<double>& scales) {
  bool up = std::any_of(scales.begin(), scales.end(), [](double s) { return s > 1; });
  bool down = std::any_of(scales.begin(), scales.end(), [](double s) { return s < 1; });
  if (up && down)
    n.fail(
        "nearest resizing that enlarges some axes and shrinks others is unsupported "
        "before opset 11");
  return down ? "ceil" : "floor";
}

void mapLegacyResize(NodeImporter& n, Value* x, std::vector<double> scales) {
  const size_t rank = x->type.rank();
  if (scales.size() != rank)
    n.fail("scales has " + std::to_string(scales.size()) + " values for X " + x->type.str());
  std::string mode = n.stringAttr("mode").value_or("nearest");
  if (mode == "bilinear") mode = "linear";  // Upsample-7's other spelling
  if (mode != "nearest" && mode != "linear") n.fail("mode '" + mode + "' is not nearest or linear");
  std::vector<int64_t> sizes = scaledSizes(n, x, scales);
  std::string nearest_mode = mode == "nearest" ? legacyNearestMode(n, scales) : "floor";
  emitResize(n, x, mode, "asymmetric", nearest_mode, -0.75, 0, 0.0, 0, std::move(sizes),
             std::move(scales), defaultRoi(rank));
}

void mapUpsample(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  std::vector<double> scales;
  if (n.opset() < 9) {
    const onnx::AttributeProto* a = n.findAttr("scales");
    if (!a) n.fail("attribute scales is missing");
    for (float f : a->floats()) scales.push_back(f);
  } else {
    scales = constantFloats(n, n.requiredInput(1, "scales"), "scales");
  }
  mapLegacyResize(n, x, std::move(scales));
}

void mapResize(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  const size_t rank = x->type.rank();
  if (rank < 1) n.fail("X must have rank >= 1, got " + x->type.str());
  if (n.opset() < 11) {
    mapLegacyResize(n, x, constantFloats(n, n.requiredInput(1, "scales"), "scales"));
    return;
  }
  // axes (opset 18): the axes that roi, scales and sizes speak of.
  std::vector<int64_t> axes;
  if (n.opset() >= 18 && n.hasAttr("axes")) {
    std::vector<bool> seen(rank, false);
    const std::vector<int64_t> given = *n.intsAttr("axes");
    for (int64_t a : given) {
      auto axis = static_cast<size_t>(normalizeAxis(n, a, static_cast<int64_t>(rank)));
      if (seen[axis]) n.fail("axes " + dimsStr(given) + " repeat an axis");
      seen[axis] = true;
      axes.push_back(static_cast<int64_t>(axis));
    }
  } else {
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  const size_t na = axes.size();
  const Value* roi_in = presentInput(n, 1);
  const Value* scales_in = presentInput(n, 2);
  const Value* sizes_in = presentInput(n, 3);
  if ((scales_in != nullptr) == (sizes_in != nullptr))
    n.fail("exactly one of scales and sizes must be given");
  std::string mode = n.stringAttr("mode").value_or("nearest");
  std::string ctm = n.stringAttr("coordinate_transformation_mode").value_or("half_pixel");
  std::vector<double> roi = defaultRoi(rank);
  if (roi_in && ctm == "tf_crop_and_resize") {
    std::vector<double> r = constantFloats(n, roi_in, "roi");
    if (r.size() != 2 * na)
      n.fail("roi has " + std::to_string(r.size()) + " values, not " + std::to_string(2 * na));
    for (size_t i = 0; i < na; ++i) {
      roi[static_cast<size_t>(axes[i])] = r[i];
      roi[static_cast<size_t>(axes[i]) + rank] = r[na + i];
    }
  }
  std::vector<double> scales(rank, 1.0);
  std::vector<int64_t> sizes = x->type.dims;
  if (scales_in) {
    std::vector<double> s = constantFloats(n, scales_in, "scales");
    if (s.size() != na)
      n.fail("scales has " + std::to_string(s.size()) + " values for " + std::to_string(na) +
             " axes");
    for (size_t i = 0; i < na; ++i) scales[static_cast<size_t>(axes[i])] = s[i];
    sizes = scaledSizes(n, x, scales);
  } else {
    std::vector<int64_t> s = constantInts(n, sizes_in, "sizes");
    if (s.size() != na)
      n.fail("sizes has " + std::to_string(s.size()) + " values for " + std::to_string(na) +
             " axes");
    for (size_t i = 0; i < na; ++i) {
      if (s[i] < 0 || s[i] > (int64_t{1} << 40)) n.fail("sizes " + dimsStr(s) + " is out of range");
      sizes[static_cast<size_t>(axes[i])] = s[i];
    }
    for (size_t a = 0; a < rank; ++a) {
      if (x->type.dims[a] == 0 && sizes[a] != 0)
        n.fail("cannot resize the empty axis " + std::to_string(a) + " of " + x->type.str());
      scales[a] = x->type.dims[a] ? static_cast<double>(sizes[a]) / x->type.dims[a] : 1.0;
    }
    std::string policy =
        n.opset() >= 18 ? n.stringAttr("keep_aspect_ratio_policy").value_or("stretch") : "stretch";
    if (policy != "stretch") {
      if (policy != "not_larger" && policy != "not_smaller")
        n.fail("keep_aspect_ratio_policy '" + policy + "' is unknown");
      double scale = scales[static_cast<size_t>(axes[0])];
      for (int64_t a : axes)
        scale = policy == "not_larger" ? std::min(scale, scales[static_cast<size_t>(a)])
                                       : std::max(scale, scales[static_cast<size_t>(a)]);
      for (int64_t a : axes) {
        auto ax = static_cast<size_t>(a);
        scales[ax] = scale;
        sizes[ax] = static_cast<int64_t>(scale * static_cast<double>(x->type.dims[ax]) + 0.5);
      }
    }
  }
  int64_t antialias = n.opset() >= 18 ? n.intAttr("antialias", 0) != 0 : 0;
  if (mode == "nearest") antialias = 0;  // it applies to linear and cubic only
  // The exact float value of cubic_coeff_a and extrapolation_value, as the
  // model's arithmetic uses them.
  auto exactFloat = [&](const char* key, double fallback) {
    const onnx::AttributeProto* a = n.findAttr(key);
    if (!a) return fallback;
    n.floatAttr(key);  // checks the type
    return static_cast<double>(a->f());
  };
  emitResize(n, x, mode, ctm, n.stringAttr("nearest_mode").value_or("round_prefer_floor"),
             exactFloat("cubic_coeff_a", -0.75), n.intAttr("exclude_outside", 0) != 0,
             exactFloat("extrapolation_value", 0.0), antialias, std::move(sizes), std::move(scales),
             std::move(roi));
}

}  // namespace

MappingList spatialMappings() {
  return {
      {"AveragePool", mapAveragePool},
      {"Conv", mapConv},
      {"ConvTranspose", mapConvTranspose},
      {"GlobalAveragePool", mapGlobalPool},
      {"GlobalLpPool", mapGlobalLpPool},
      {"GlobalMaxPool", mapGlobalPool},
      {"LpPool", mapLpPool},
      {"MaxPool", mapMaxPool},
      {"Resize", mapResize},
      {"Upsample", mapUpsample},
  };
}

}  // namespace nanoc::onnx_import
