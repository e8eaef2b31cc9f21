// ONNX RNN, GRU and LSTM (every opset: 1, 3 (GRU), 7, 14, 22) -> existing IR
// ops. Shapes are static, so the recurrence is unrolled at import: one cell
// per time step and direction.
//
// Per direction d, the weights are sliced and transposed once (W[d]^T
// [input, gates * hidden], R[d]^T [hidden, gates * hidden]); constant weights
// fold into constants. The input projection of every step is one Gemm over
// the whole sequence, X [seq * batch, input] · W^T + (Wb + Rb), and each
// step adds Ht-1 · R^T with one Gemm, whose gate blocks are then sliced.
// GRU's hidden gate keeps its own Gemm (Rh applies after the reset gate) and,
// with linear_before_reset, its bias Rbh inside r (.) (Ht-1 · Rh^T + Rbh).
//
// Semantics follow the ONNX spec and, where it is silent, ONNX Runtime's CPU
// kernels: `clip` bounds every gate's input to f and g (not LSTM's h(Ct));
// activation_alpha / activation_beta are consumed in the order of the
// activations that take them (defaults: those of the ONNX operators of the
// same name; Affine 1, 0 and ScaledTanh 1, 1); a constant sequence_lens masks
// the steps past each batch entry's length with Where (the state is kept, Y
// is 0 there; an entry of length 0 has Y_h and Y_c 0), and the reverse
// direction starts at each entry's own last step. A run-time sequence_lens is
// refused.
#include <cctype>
#include <cmath>
#include <cstring>
#include <optional>

#include "compiler/frontend/onnx/onnx_mapping_util.h"

namespace nanoc::onnx_import {
namespace {

enum class Cell { Rnn, Gru, Lstm };

struct Activation {
  std::string op;  // "Sigmoid", "Tanh", ..., "ScaledTanh", "Affine"
  double alpha = 0, beta = 0;
};

// One recurrent node's shapes, attributes and shared values.
struct Recurrence {
  Cell cell;
  int64_t gates = 1;  // gate blocks in W and R: 1 (RNN), 3 (GRU), 4 (LSTM)
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool layout = false, input_forget = false, linear_before_reset = false;
  std::optional<double> clip;
  std::vector<Activation> acts;  // per direction: f (RNN); f, g (GRU); f, g, h (LSTM)
  int64_t acts_per_dir = 1;
  std::vector<int64_t> lengths;  // per batch entry; empty when all are seq
  Value* x2 = nullptr;           // X as [seq * batch, input]
  Value *w = nullptr, *r = nullptr, *b = nullptr, *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  Value *clip_lo = nullptr, *clip_hi = nullptr, *one = nullptr, *zero = nullptr;
};

Value* f32Constant(NodeImporter& n, const std::vector<int64_t>& dims,
                   const std::vector<float>& values, const std::string& hint) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return n.graph().addConstant(n.graph().uniqueName(n.name() + "/" + hint), {DType::F32, dims},
                               std::move(bytes));
}

Value* scalar(NodeImporter& n, double v, const std::string& hint) {
  return f32Constant(n, {}, {static_cast<float>(v)}, hint);
}

// x[..., begin:end, ...] along `axis`.
Value* sliceAxis(NodeImporter& n, Value* x, size_t axis, int64_t begin, int64_t end,
                 const std::string& suffix) {
  std::vector<int64_t> starts(x->type.rank(), 0), ends = x->type.dims, steps(x->type.rank(), 1);
  starts[axis] = begin;
  ends[axis] = end;
  return n.emit("Slice", {x}, {{"starts", starts}, {"ends", ends}, {"steps", steps}}, suffix);
}

Value* reshape(NodeImporter& n, Value* x, std::vector<int64_t> shape, const std::string& suffix,
               const std::string& output_name = "") {
  return n.emit("Reshape", {x}, {{"shape", std::move(shape)}}, suffix, output_name);
}

Value* binary(NodeImporter& n, const char* op, Value* a, Value* b, const std::string& suffix) {
  return n.emit(op, {a, b}, {}, suffix);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The activations named by the node (or the cell's defaults), one set per
// direction, with their alpha and beta.
std::vector<Activation> readActivations(const NodeImporter& n, const Recurrence& rc) {
  std::vector<std::string> names;
  if (const onnx::AttributeProto* a = n.findAttr("activations")) {
    if (a->type() != onnx::AttributeProto::STRINGS)
      n.fail("attribute 'activations' is not a list of strings");
    names.assign(a->strings().begin(), a->strings().end());
  }
  std::vector<std::string> defaults;
  switch (rc.cell) {
    case Cell::Rnn:
      defaults = {"Tanh"};
      break;
    case Cell::Gru:
      defaults = {"Sigmoid", "Tanh"};
      break;
    case Cell::Lstm:
      defaults = {"Sigmoid", "Tanh", "Tanh"};
      break;
  }
  auto want = static_cast<size_t>(rc.acts_per_dir * rc.dirs);
  if (names.empty()) {
    for (int64_t d = 0; d < rc.dirs; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() != want) {
    n.fail("attribute 'activations' lists " + std::to_string(names.size()) +
           " functions; this cell and direction need " + std::to_string(want) + " (" +
           std::to_string(rc.acts_per_dir) + " per direction)");
  }
  auto floats = [&](const char* key) {
    std::vector<double> out;
    if (const onnx::AttributeProto* a = n.findAttr(key)) {
      if (a->type() != onnx::AttributeProto::FLOATS)
        n.fail(std::string("attribute '") + key + "' is not a list of floats");
      for (float f : a->floats()) out.push_back(floatToAttr(f));
    }
    return out;
  };
  std::vector<double> alphas = floats("activation_alpha"), betas = floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  struct Known {
    const char* op;
    bool has_alpha, has_beta;
    double alpha, beta;
  };
  static const Known kKnown[] = {
      {"Sigmoid", false, false, 0, 0},        {"Tanh", false, false, 0, 0},
      {"Relu", false, false, 0, 0},           {"Softsign", false, false, 0, 0},
      {"Softplus", false, false, 0, 0},       {"LeakyRelu", true, false, 0.01, 0},
      {"ThresholdedRelu", true, false, 1, 0}, {"Elu", true, false, 1, 0},
      {"HardSigmoid", true, true, 0.2, 0.5},  {"ScaledTanh", true, true, 1, 1},
      {"Affine", true, true, 1, 0},
  };
  std::vector<Activation> out;
  for (const std::string& name : names) {
    const Known* k = nullptr;
    for (const Known& cand : kKnown)
      if (lower(cand.op) == lower(name)) k = &cand;
    if (!k)
      n.fail("activation '" + name +
             "' is unsupported (supported: Sigmoid, Tanh, Relu, LeakyRelu, ThresholdedRelu, "
             "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus, Affine)");
    Activation act{k->op, k->alpha, k->beta};
    if (k->has_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (k->has_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    out.push_back(act);
  }
  return out;
}

Value* activate(NodeImporter& n, const Activation& a, Value* x, const std::string& suffix) {
  if (a.op == "LeakyRelu" || a.op == "ThresholdedRelu" || a.op == "Elu")
    return n.emit(a.op, {x}, {{"alpha", a.alpha}}, suffix);
  if (a.op == "HardSigmoid")
    return n.emit(a.op, {x}, {{"alpha", a.alpha}, {"beta", a.beta}}, suffix);
  if (a.op == "ScaledTanh") {  // alpha * tanh(beta * x)
    Value* in = binary(n, "Mul", x, scalar(n, a.beta, "scaled_tanh_beta"), suffix + "_in");
    Value* t = n.emit("Tanh", {in}, {}, suffix + "_tanh");
    return binary(n, "Mul", t, scalar(n, a.alpha, "scaled_tanh_alpha"), suffix);
  }
  if (a.op == "Affine") {  // alpha * x + beta
    Value* m = binary(n, "Mul", x, scalar(n, a.alpha, "affine_alpha"), suffix + "_scale");
    return binary(n, "Add", m, scalar(n, a.beta, "affine_beta"), suffix);
  }
  return n.emit(a.op, {x}, {}, suffix);
}

// f(clip(x)): the cell's clip bounds the input of every gate activation.
Value* gate(NodeImporter& n, const Recurrence& rc, const Activation& a, Value* x,
            const std::string& suffix) {
  if (rc.clip) x = n.emit("Clip", {x, rc.clip_lo, rc.clip_hi}, {}, suffix + "_clip");
  return activate(n, a, x, suffix);
}

Value* zeros(NodeImporter& n, Recurrence& rc) {
  if (!rc.zero) {
    const TensorType type{DType::F32, {rc.batch, rc.hidden}};
    n.reserveMadeConstant(type.bytes(), "the zero state " + type.str());
    rc.zero =
        f32Constant(n, {rc.batch, rc.hidden},
                    std::vector<float>(static_cast<size_t>(rc.batch * rc.hidden), 0.0f), "zeros");
  }
  return rc.zero;
}

// A bool [batch, 1] constant: which entries have a step at time t.
Value* stepMask(NodeImporter& n, const Recurrence& rc, const std::vector<bool>& valid,
                const std::string& hint) {
  std::vector<uint8_t> bytes(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) bytes[i] = valid[i] ? 1 : 0;
  return n.graph().addConstant(n.graph().uniqueName(n.name() + "/" + hint),
                               {DType::Bool, {rc.batch, 1}}, std::move(bytes));
}

struct DirectionResult {
  std::vector<Value*> y;  // per time index, [batch, hidden]
  Value* h = nullptr;     // the final state (null: still the zero initial state)
  Value* c = nullptr;
};

// Slice [d] of a [dirs, ...] tensor, reshaped to `shape`.
Value* directionPart(NodeImporter& n, Value* v, int64_t d, std::vector<int64_t> shape,
                     const std::string& tag) {
  Value* s = sliceAxis(n, v, 0, d, d + 1, tag + "_slice");
  return reshape(n, s, std::move(shape), tag);
}

DirectionResult runDirection(NodeImporter& n, Recurrence& rc, int64_t d, bool reverse,
                             bool want_y) {
  const std::string dir = reverse ? "reverse" : "forward";
  const int64_t H = rc.hidden, GH = rc.gates * H;
  const Activation* act = &rc.acts[static_cast<size_t>(d * rc.acts_per_dir)];

  Value* wt = n.emit("Transpose", {directionPart(n, rc.w, d, {GH, rc.input}, dir + "/W")},
                     {{"perm", std::vector<int64_t>{1, 0}}}, dir + "/W_t");
  Value* rt = n.emit("Transpose", {directionPart(n, rc.r, d, {GH, H}, dir + "/R")},
                     {{"perm", std::vector<int64_t>{1, 0}}}, dir + "/R_t");
  Value* bias_x = nullptr;   // [GH], added to the input projection
  Value* bias_rh = nullptr;  // GRU with linear_before_reset: Rbh, inside r (.) (...)
  if (rc.b) {
    Value* bd = directionPart(n, rc.b, d, {2 * GH}, dir + "/B");
    Value* wb = sliceAxis(n, bd, 0, 0, GH, dir + "/Wb");
    Value* rb = sliceAxis(n, bd, 0, GH, 2 * GH, dir + "/Rb");
    if (rc.cell == Cell::Gru && rc.linear_before_reset) {
      Value* zr = binary(n, "Add", sliceAxis(n, wb, 0, 0, 2 * H, dir + "/Wb_zr"),
                         sliceAxis(n, rb, 0, 0, 2 * H, dir + "/Rb_zr"), dir + "/B_zr");
      bias_x = n.emit("Concat", {zr, sliceAxis(n, wb, 0, 2 * H, GH, dir + "/Wb_h")},
                      {{"axis", int64_t{0}}}, dir + "/B_x");
      bias_rh = sliceAxis(n, rb, 0, 2 * H, GH, dir + "/Rb_h");
    } else {
      bias_x = binary(n, "Add", wb, rb, dir + "/B_x");
    }
  }
  std::vector<Value*> proj_in = {rc.x2, wt};
  if (bias_x) proj_in.push_back(bias_x);
  std::map<std::string, Attr> gemm = {
      {"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{0}}};
  Value* xp = n.emit("Gemm", proj_in, gemm, dir + "/X_proj");  // [seq * batch, GH]

  Value *rt_zr = nullptr, *rt_h = nullptr;
  if (rc.cell == Cell::Gru) {
    rt_zr = sliceAxis(n, rt, 1, 0, 2 * H, dir + "/R_t_zr");
    rt_h = sliceAxis(n, rt, 1, 2 * H, GH, dir + "/R_t_h");
  }
  Value *p_i = nullptr, *p_o = nullptr, *p_f = nullptr;
  if (rc.p) {
    Value* pd = directionPart(n, rc.p, d, {3 * H}, dir + "/P");
    p_i = sliceAxis(n, pd, 0, 0, H, dir + "/P_i");
    p_o = sliceAxis(n, pd, 0, H, 2 * H, dir + "/P_o");
    p_f = sliceAxis(n, pd, 0, 2 * H, 3 * H, dir + "/P_f");
  }

  DirectionResult res;
  res.y.assign(static_cast<size_t>(rc.seq), nullptr);
  Value* h = rc.h0 ? directionPart(n, rc.h0, d, {rc.batch, H}, dir + "/initial_h") : nullptr;
  Value* c = rc.c0 ? directionPart(n, rc.c0, d, {rc.batch, H}, dir + "/initial_c") : nullptr;
  auto gemm3 = [&](Value* a, Value* bm, Value* cm, const std::string& suffix) {
    std::vector<Value*> in = {a, bm};
    if (cm) in.push_back(cm);
    return n.emit("Gemm", in, gemm, suffix);
  };
  for (int64_t k = 0; k < rc.seq; ++k) {
    const int64_t t = reverse ? rc.seq - 1 - k : k;
    const std::string s = dir + "/t" + std::to_string(t) + "/";
    // Without sequence_lens every entry has every step (and no mask is made:
    // the batch may be far larger than the model file).
    std::vector<bool> valid;
    bool all = true, none = rc.batch == 0;
    if (!rc.lengths.empty()) {
      valid.assign(static_cast<size_t>(rc.batch), true);
      for (size_t e = 0; e < rc.lengths.size(); ++e) {
        valid[e] = t < rc.lengths[e];
        all = all && valid[e];
      }
      none = true;
      for (bool v : valid) none = none && !v;
    }
    if (none) {  // every entry is past its length: the state stays, Y is 0
      if (want_y) res.y[static_cast<size_t>(t)] = zeros(n, rc);
      continue;
    }
    Value* xt = sliceAxis(n, xp, 0, t * rc.batch, (t + 1) * rc.batch, s + "x_proj");
    Value* h_new = nullptr;
    Value* c_new = nullptr;
    switch (rc.cell) {
      case Cell::Rnn: {
        Value* pre = h ? gemm3(h, rt, xt, s + "pre") : xt;
        h_new = gate(n, rc, act[0], pre, s + "H");
        break;
      }
      case Cell::Gru: {
        Value* x_zr = sliceAxis(n, xt, 1, 0, 2 * H, s + "x_zr");
        Value* x_h = sliceAxis(n, xt, 1, 2 * H, GH, s + "x_h");
        Value* zr = h ? gemm3(h, rt_zr, x_zr, s + "zr_pre") : x_zr;
        Value* z = gate(n, rc, act[0], sliceAxis(n, zr, 1, 0, H, s + "z_pre"), s + "z");
        Value* r = gate(n, rc, act[0], sliceAxis(n, zr, 1, H, 2 * H, s + "r_pre"), s + "r");
        Value* pre = x_h;
        if (rc.linear_before_reset) {
          // x·Wh^T + Wbh + r (.) (H·Rh^T + Rbh)
          Value* hr = h ? gemm3(h, rt_h, bias_rh, s + "h_rec") : bias_rh;
          if (hr) pre = binary(n, "Add", x_h, binary(n, "Mul", r, hr, s + "h_reset"), s + "h_pre");
        } else if (h) {
          // x·Wh^T + Wbh + Rbh + (r (.) H)·Rh^T
          pre = gemm3(binary(n, "Mul", r, h, s + "h_reset"), rt_h, x_h, s + "h_pre");
        }
        Value* hh = gate(n, rc, act[1], pre, s + "h");
        // (1 - z) (.) h + z (.) H
        Value* keep = binary(n, "Sub", rc.one, z, s + "z_complement");
        h_new = binary(n, "Mul", keep, hh, s + "H_new");
        if (h) h_new = binary(n, "Add", h_new, binary(n, "Mul", z, h, s + "H_kept"), s + "H");
        break;
      }
      case Cell::Lstm: {
        Value* g = h ? gemm3(h, rt, xt, s + "gates") : xt;  // i, o, f, c blocks
        Value* i_pre = sliceAxis(n, g, 1, 0, H, s + "i_pre");
        if (p_i && c)
          i_pre = binary(n, "Add", i_pre, binary(n, "Mul", p_i, c, s + "i_peep"), s + "i_in");
        Value* i = gate(n, rc, act[0], i_pre, s + "i");
        Value* f = nullptr;
        if (rc.input_forget) {
          f = binary(n, "Sub", rc.one, i, s + "f");
        } else {
          Value* f_pre = sliceAxis(n, g, 1, 2 * H, 3 * H, s + "f_pre");
          if (p_f && c)
            f_pre = binary(n, "Add", f_pre, binary(n, "Mul", p_f, c, s + "f_peep"), s + "f_in");
          f = gate(n, rc, act[0], f_pre, s + "f");
        }
        Value* cc = gate(n, rc, act[1], sliceAxis(n, g, 1, 3 * H, GH, s + "c_pre"), s + "c");
        c_new = binary(n, "Mul", i, cc, s + "C_in");
        if (c) c_new = binary(n, "Add", binary(n, "Mul", f, c, s + "C_kept"), c_new, s + "C");
        Value* o_pre = sliceAxis(n, g, 1, H, 2 * H, s + "o_pre");
        if (p_o)
          o_pre = binary(n, "Add", o_pre, binary(n, "Mul", p_o, c_new, s + "o_peep"), s + "o_in");
        Value* o = gate(n, rc, act[0], o_pre, s + "o");
        h_new = binary(n, "Mul", o, activate(n, act[2], c_new, s + "C_act"), s + "H");
        break;
      }
    }
    if (all) {
      if (want_y) res.y[static_cast<size_t>(t)] = h_new;
      h = h_new;
      c = c_new;
      continue;
    }
    Value* mask = stepMask(n, rc, valid, dir + "/t" + std::to_string(t) + "/mask");
    if (want_y)
      res.y[static_cast<size_t>(t)] = n.emit("Where", {mask, h_new, zeros(n, rc)}, {}, s + "Y");
    h = n.emit("Where", {mask, h_new, h ? h : zeros(n, rc)}, {}, s + "H_masked");
    if (c_new) c = n.emit("Where", {mask, c_new, c ? c : zeros(n, rc)}, {}, s + "C_masked");
  }
  // ONNX Runtime's rule: an entry of length 0 ends with a zero state.
  std::vector<bool> nonempty(rc.lengths.empty() ? 0 : static_cast<size_t>(rc.batch), true);
  bool any_empty = false;
  for (size_t e = 0; e < rc.lengths.size(); ++e) {
    nonempty[e] = rc.lengths[e] > 0;
    any_empty = any_empty || !nonempty[e];
  }
  if (any_empty) {
    Value* mask = stepMask(n, rc, nonempty, dir + "/nonempty");
    if (h) h = n.emit("Where", {mask, h, zeros(n, rc)}, {}, dir + "/H_final");
    if (c) c = n.emit("Where", {mask, c, zeros(n, rc)}, {}, dir + "/C_final");
  }
  res.h = h;
  res.c = c;
  return res;
}

std::string outputName(const NodeImporter& n, int i) {
  return i < n.proto().output_size() ? n.proto().output(i) : "";
}

// Stacks `pieces` ([batch, hidden] each, in row-major order of `dims`) into
// output `i` of shape `dims`, then permuted by `perm` with layout 1.
void setStackedOutput(NodeImporter& n, const Recurrence& rc, size_t i,
                      const std::vector<Value*>& pieces, std::vector<int64_t> dims,
                      std::vector<int64_t> perm, const std::string& tag) {
  const std::string name = outputName(n, static_cast<int>(i));
  Value* v = pieces[0];
  if (pieces.size() > 1) v = n.emit("Concat", pieces, {{"axis", int64_t{0}}}, tag + "_rows");
  v = reshape(n, v, std::move(dims), tag, rc.layout ? "" : name);
  if (rc.layout)
    v = n.emit("Transpose", {v}, {{"perm", std::move(perm)}}, tag + "_batch_major", name);
  n.setOutput(i, v);
}

// The per-direction final states into output `i`: [dirs, batch, hidden], or
// [batch, dirs, hidden] with layout 1.
void setStateOutput(NodeImporter& n, Recurrence& rc, size_t i, const std::vector<Value*>& finals,
                    const std::string& tag) {
  std::vector<Value*> pieces;
  for (Value* f : finals) pieces.push_back(f ? f : zeros(n, rc));
  setStackedOutput(n, rc, i, pieces, {rc.dirs, rc.batch, rc.hidden}, {1, 0, 2}, tag);
}

void checkDims(const NodeImporter& n, const char* role, const Value* v,
               const std::vector<int64_t>& want, const char* meaning) {
  if (v->type.dims != want)
    n.fail(std::string(role) + " is " + v->type.str() + "; expected " + dimsStr(want) + " (" +
           meaning + ")");
}

void mapRecurrent(NodeImporter& n, Cell cell) {
  Recurrence rc;
  rc.cell = cell;
  rc.gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  rc.acts_per_dir = cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1;
  Value* x = n.requiredInput(0, "X");
  rc.w = n.requiredInput(1, "W");
  rc.r = n.requiredInput(2, "R");
  rc.b = n.input(3);
  Value* lens = n.input(4);
  rc.h0 = n.input(5);
  if (cell == Cell::Lstm) {
    rc.c0 = n.input(6);
    rc.p = n.input(7);
  }
  const char* roles[] = {"X", "W", "R", "B", "initial_h", "initial_c", "P"};
  Value* floats[] = {x, rc.w, rc.r, rc.b, rc.h0, rc.c0, rc.p};
  for (size_t i = 0; i < 7; ++i)
    if (floats[i] && floats[i]->type.dtype != DType::F32)
      n.fail(std::string(roles[i]) + " is " + floats[i]->type.str() +
             ": recurrent cells are supported in f32 only");

  const int64_t layout = n.opset() >= 14 ? n.intAttr("layout", 0) : 0;
  if (layout != 0 && layout != 1) n.fail("layout must be 0 or 1, not " + std::to_string(layout));
  rc.layout = layout == 1;
  std::string direction = n.stringAttr("direction").value_or("forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    n.fail("direction '" + direction + "' is not forward, reverse or bidirectional");
  rc.dirs = direction == "bidirectional" ? 2 : 1;
  if (x->type.rank() != 3 || rc.w->type.rank() != 3 || rc.r->type.rank() != 3)
    n.fail("X, W and R must be 3-D, got " + x->type.str() + ", " + rc.w->type.str() + ", " +
           rc.r->type.str());
  if (rc.layout)
    x = n.emit("Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}}, "X_seq_major");
  rc.seq = x->type.dims[0];
  rc.batch = x->type.dims[1];
  rc.input = x->type.dims[2];
  rc.hidden = rc.r->type.dims[2];
  // Each step of each direction is unrolled into nodes of its own; a
  // sequence that could not fit the graph's node limit is refused before
  // anything is sized by it.
  if (rc.seq > static_cast<int64_t>(n.graph().max_nodes) / rc.dirs)
    n.fail("a sequence of " + std::to_string(rc.seq) + " steps (X is " + x->type.str() +
           ") unrolls past the " + std::to_string(n.graph().max_nodes) +
           " nodes nanoc compiles in one graph");
  if (std::optional<int64_t> hs = n.intAttr("hidden_size"); hs && *hs != rc.hidden)
    n.fail("hidden_size " + std::to_string(*hs) + " differs from R's last dim (R is " +
           rc.r->type.str() + ")");
  if (rc.seq < 1) n.fail("X " + x->type.str() + " has no time step");
  const int64_t GH = rc.gates * rc.hidden;
  checkDims(n, "W", rc.w, {rc.dirs, GH, rc.input},
            "[num_directions, gates * hidden_size, input_size]");
  checkDims(n, "R", rc.r, {rc.dirs, GH, rc.hidden},
            "[num_directions, gates * hidden_size, hidden_size]");
  if (rc.b) checkDims(n, "B", rc.b, {rc.dirs, 2 * GH}, "[num_directions, 2 * gates * hidden_size]");
  if (rc.p) checkDims(n, "P", rc.p, {rc.dirs, 3 * rc.hidden}, "[num_directions, 3 * hidden_size]");
  for (Value** state : {&rc.h0, &rc.c0}) {
    if (!*state) continue;
    const char* role = state == &rc.h0 ? "initial_h" : "initial_c";
    if (rc.layout) {
      checkDims(n, role, *state, {rc.batch, rc.dirs, rc.hidden},
                "[batch_size, num_directions, hidden_size] with layout 1");
      *state = n.emit("Transpose", {*state}, {{"perm", std::vector<int64_t>{1, 0, 2}}},
                      std::string(role) + "_dir_major");
    } else {
      checkDims(n, role, *state, {rc.dirs, rc.batch, rc.hidden},
                "[num_directions, batch_size, hidden_size]");
    }
  }

  if (std::optional<double> clip = n.floatAttr("clip")) {
    if (!(*clip > 0)) n.fail("clip must be positive, not " + std::to_string(*clip));
    rc.clip = clip;
    rc.clip_lo = scalar(n, -*clip, "clip_min");
    rc.clip_hi = scalar(n, *clip, "clip_max");
  }
  if (cell == Cell::Lstm) rc.input_forget = n.intAttr("input_forget", 0) != 0;
  if (cell == Cell::Gru) rc.linear_before_reset = n.intAttr("linear_before_reset", 0) != 0;
  if (cell != Cell::Rnn) rc.one = scalar(n, 1.0, "one");
  rc.acts = readActivations(n, rc);

  if (lens) {
    if (!lens->isConstant())
      n.fail("sequence_lens input '" + lens->name +
             "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
             "node) to unroll the recurrence");
    if ((lens->type.dtype != DType::I32 && lens->type.dtype != DType::I64) ||
        lens->type.dims != std::vector<int64_t>{rc.batch})
      n.fail("sequence_lens must be an int32 tensor [" + std::to_string(rc.batch) + "], not " +
             lens->type.str());
    bool all_full = true;
    std::vector<int64_t> values(static_cast<size_t>(rc.batch));
    for (size_t e = 0; e < values.size(); ++e) {
      if (lens->type.dtype == DType::I32)
        values[e] = lens->as<int32_t>()[e];
      else
        values[e] = lens->as<int64_t>()[e];
      if (values[e] < 0 || values[e] > rc.seq)
        n.fail("sequence_lens[" + std::to_string(e) + "] = " + std::to_string(values[e]) +
               " is outside [0, " + std::to_string(rc.seq) + "]");
      all_full = all_full && values[e] == rc.seq;
    }
    if (!all_full) rc.lengths = values;
  }

  rc.x2 = reshape(n, x, {rc.seq * rc.batch, rc.input}, "X_rows");
  const bool want_y = n.outputUsed(0);
  std::vector<DirectionResult> results;
  for (int64_t d = 0; d < rc.dirs; ++d)
    results.push_back(runDirection(n, rc, d, d == 1 || direction == "reverse", want_y));

  if (want_y) {
    // seq * dirs pieces [batch, hidden] -> [seq, dirs, batch, hidden].
    std::vector<Value*> pieces;
    for (int64_t t = 0; t < rc.seq; ++t)
      for (int64_t d = 0; d < rc.dirs; ++d)
        pieces.push_back(results[static_cast<size_t>(d)].y[static_cast<size_t>(t)]);
    setStackedOutput(n, rc, 0, pieces, {rc.seq, rc.dirs, rc.batch, rc.hidden}, {2, 0, 1, 3}, "Y");
  }
  if (n.outputUsed(1)) {
    std::vector<Value*> finals;
    for (const DirectionResult& r : results) finals.push_back(r.h);
    setStateOutput(n, rc, 1, finals, "Y_h");
  }
  if (cell == Cell::Lstm && n.outputUsed(2)) {
    std::vector<Value*> finals;
    for (const DirectionResult& r : results) finals.push_back(r.c);
    setStateOutput(n, rc, 2, finals, "Y_c");
  }
}

void mapRNN(NodeImporter& n) { mapRecurrent(n, Cell::Rnn); }
void mapGRU(NodeImporter& n) { mapRecurrent(n, Cell::Gru); }
void mapLSTM(NodeImporter& n) { mapRecurrent(n, Cell::Lstm); }

}  // namespace

MappingList recurrentMappings() { return {{"GRU", mapGRU}, {"LSTM", mapLSTM}, {"RNN", mapRNN}}; }

}  // namespace nanoc::onnx_import
