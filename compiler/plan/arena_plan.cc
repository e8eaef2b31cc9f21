#include "compiler/plan/arena_plan.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "compiler/ir/error.h"
#include "compiler/passes/control_flow.h"
#include "compiler/passes/gpu_placement.h"

namespace nanoc {
namespace {

uint64_t alignUp(uint64_t x, uint64_t alignment) {
  return (x + alignment - 1) / alignment * alignment;
}

bool overlapsInTime(const LiveRange& a, const LiveRange& b) {
  return a.first <= b.last && b.first <= a.last;
}

const char* kindName(BufferKind kind) {
  switch (kind) {
    case BufferKind::Constant:
      return "constant";
    case BufferKind::Input:
      return "input";
    case BufferKind::Output:
      return "output";
    case BufferKind::Arena:
      return "arena";
    case BufferKind::Device:
      return "device";
    case BufferKind::DeviceConstant:
      return "device-constant";
  }
  return "?";
}

}  // namespace

std::vector<uint64_t> GreedyBySizePlanner::place(const std::vector<LiveRange>& ranges,
                                                 uint32_t alignment) const {
  std::vector<size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ranges[a].size > ranges[b].size; });
  std::vector<uint64_t> offsets(ranges.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    if (ranges[i].size == 0) continue;
    // The placed buffers alive at the same time, by offset: take the first gap
    // that fits.
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end)
    for (size_t j : placed)
      if (overlapsInTime(ranges[i], ranges[j]))
        busy.emplace_back(offsets[j], offsets[j] + ranges[j].size);
    std::sort(busy.begin(), busy.end());
    uint64_t candidate = 0;
    for (const auto& [begin, end] : busy) {
      if (candidate + ranges[i].size <= begin) break;
      candidate = std::max(candidate, alignUp(end, alignment));
    }
    offsets[i] = candidate;
    placed.push_back(i);
  }
  return offsets;
}

const BufferSlice& ArenaPlan::at(const Value* value) const {
  auto it = slices.find(value);
  if (it == slices.end())
    throw CompileError("arena plan: value '" + value->name + "' has no buffer");
  return it->second;
}

bool ArenaPlan::isAlias(const Node* node) const {
  return std::find(aliased.begin(), aliased.end(), node) != aliased.end();
}

ArenaPlan planBuffers(const Graph& graph, const ArenaPlanner& planner,
                      const InPlaceInput& in_place) {
  ArenaPlan plan;
  constexpr uint32_t kAlign = ArenaPlan::kAlignment;

  for (size_t i = 0; i < graph.inputs.size(); ++i)
    plan.slices[graph.inputs[i]] = {BufferKind::Input, static_cast<uint32_t>(i), 0,
                                    graph.inputs[i]->type.bytes(), kAlign};
  std::set<const Value*> graph_outputs;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const Value* out = graph.outputs[i];
    if (!out->producer || !graph_outputs.insert(out).second)
      throw CompileError("arena plan: graph output '" + out->name +
                         "' needs a producing node of its own (run legalizeOutputs)");
    plan.slices[out] = {BufferKind::Output, static_cast<uint32_t>(i), 0, out->type.bytes(), kAlign};
  }

  // Constants, in the graph's value order so the blob is deterministic.
  std::set<const Value*> used;
  for (const auto& node : graph.nodes) used.insert(node->inputs.begin(), node->inputs.end());
  for (const auto& v : graph.values) {
    if (!v->isConstant() || !used.count(v.get())) continue;
    uint64_t offset = alignUp(plan.constants.size(), kAlign);
    plan.constants.resize(offset, 0);
    plan.constants.insert(plan.constants.end(), v->data->begin(), v->data->end());
    plan.slices[v.get()] = {BufferKind::Constant, 0, offset, v->type.bytes(), kAlign};
  }
  plan.constants_size = plan.constants.size();

  // A Reshape whose result is not a graph output is a view of its operand:
  // the same bytes, so the same slice. `root` maps such views to the value
  // that owns the memory.
  std::map<const Value*, const Value*> root;
  auto rootOf = [&](const Value* v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  for (const auto& node : graph.nodes)
    if (node->op == "Reshape" && !graph_outputs.count(node->outputs[0])) {
      root[node->outputs[0]] = rootOf(node->inputs[0]);
      plan.aliased.push_back(node.get());
    }

  // A Concat whose leading dims before its axis are all 1 is its inputs side
  // by side: each input's producer writes straight into the Concat's result
  // (`part` maps the input to the result and its byte offset there), and the
  // Concat needs no thunk. Only where every input is an arena value of this
  // Concat alone (written by a node, read by nothing else, not a view, not a
  // graph input or output) and starts on a 64-byte boundary, and the result
  // is not a graph output (the caller's buffer).
  std::map<const Value*, int> uses = countUses(graph);
  // Control flow spliced in (passes/control_flow.h): the region each node
  // runs in (0: the entry's own sequence; each If branch and Loop body one of
  // its own), and each loop's first and last node.
  std::map<const Node*, int> region;
  std::vector<std::pair<int, int>> loops;  // [nanoc.Loop, nanoc.EndLoop]
  {
    std::vector<int> open = {0};
    std::vector<int> loop_begin;
    int regions = 0;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& node = *graph.nodes[n];
      if (node.op == "nanoc.EndIf" || node.op == "nanoc.EndLoop" || node.op == "nanoc.Else") {
        if (open.size() < 2) throw CompileError("arena plan: unbalanced control flow markers");
        open.pop_back();
      }
      if (node.op == "nanoc.EndLoop") {
        loops.emplace_back(loop_begin.back(), static_cast<int>(n));
        loop_begin.pop_back();
      }
      region[&node] = open.back();
      if (node.op == "nanoc.If" || node.op == "nanoc.Else" || node.op == "nanoc.Loop")
        open.push_back(++regions);
      if (node.op == "nanoc.Loop") loop_begin.push_back(static_cast<int>(n));
    }
    if (open.size() != 1 || !loop_begin.empty())
      throw CompileError("arena plan: unbalanced control flow markers");
  }
  std::map<const Value*, std::pair<const Value*, uint64_t>> part;
  for (const auto& node : graph.nodes) {
    if (node->op != "Concat" || node->outputs.size() != 1) continue;
    const Value* out = node->outputs[0];
    const int64_t axis = node->i("axis");
    bool ok =
        !graph_outputs.count(out) && axis >= 0 && axis < static_cast<int64_t>(out->type.rank());
    for (int64_t d = 0; ok && d < axis; ++d) ok = out->type.dims[d] == 1;
    uint64_t delta = 0;
    std::vector<std::pair<const Value*, uint64_t>> parts;
    for (const Value* in : node->inputs) {
      if (!ok) break;
      ok = in && in->producer && !in->isConstant() && !graph_outputs.count(in) && !root.count(in) &&
           !part.count(in) && uses[in] == 1 && in->producer->op != "Concat" &&
           delta % kAlign == 0 && isDeviceValue(in) == isGpuNode(*node) &&
           region[in->producer] == region[node.get()];
      for (const auto& [seen, at] : parts) ok = ok && seen != in;
      if (!ok) break;
      parts.emplace_back(in, delta);
      delta += in->type.bytes();
    }
    if (!ok || parts.empty() || delta != out->type.bytes()) continue;
    for (const auto& [in, at] : parts) part[in] = {out, at};
    plan.aliased.push_back(node.get());
  }
  // Live ranges of the arena values, in definition order; a Concat's result
  // lives from its first input's definition.
  std::vector<const Value*> arena_values;
  std::map<const Value*, size_t> range_of;
  std::vector<LiveRange> ranges;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = *graph.nodes[n];
    if (plan.isAlias(&node)) continue;
    for (const Value* out : node.outputs) {
      if (graph_outputs.count(out)) continue;
      auto whole = part.find(out);
      if (whole != part.end()) out = whole->second.first;
      // A value defined again (an If's outputs, by both branches; a loop's
      // state, before and in the body) lives through its last definition.
      if (auto it = range_of.find(out); it != range_of.end()) {
        ranges[it->second].last = std::max(ranges[it->second].last, static_cast<int>(n));
        continue;
      }
      range_of[out] = ranges.size();
      arena_values.push_back(out);
      int at = static_cast<int>(n);
      ranges.push_back({out->type.bytes(), at, at});
    }
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = *graph.nodes[n];
    if (plan.isAlias(&node)) continue;  // a view reads nothing at run time
    for (const Value* in : node.inputs) {
      if (!in) continue;
      auto it = range_of.find(rootOf(in));
      // Inclusive: a node's inputs stay alive while it writes its outputs,
      // so no output shares memory with an input of the same node (but for
      // an output placed over its in_place input, below).
      if (it != range_of.end())
        ranges[it->second].last = std::max(ranges[it->second].last, static_cast<int>(n));
    }
  }
  // A value from before a loop that its body reads is read again by every
  // iteration: alive to the loop's end (inner loops first, so that an outer
  // loop sees the extended range).
  std::sort(loops.begin(), loops.end(),
            [](const auto& a, const auto& b) { return a.second - a.first < b.second - b.first; });
  for (const auto& [begin, end] : loops)
    for (LiveRange& r : ranges)
      if (r.first < begin && r.last > begin && r.last < end) r.last = end;
  // Outputs written over an input that dies at their node (in_place): the
  // output's range joins the input's, whose slot it takes (`owner`: a range
  // index to the range whose slot it uses, chains followed).
  std::vector<size_t> owner(ranges.size());
  std::iota(owner.begin(), owner.end(), 0);
  auto ownerOf = [&](size_t i) {
    while (owner[i] != i) i = owner[i];
    return i;
  };
  if (in_place && std::none_of(graph.nodes.begin(), graph.nodes.end(),
                               [](const auto& node) { return isControlMarker(*node); }))
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& node = *graph.nodes[n];
      if (plan.isAlias(&node) || isGpuNode(node) || node.outputs.empty()) continue;
      const int at = in_place(node);
      if (at < 0 || static_cast<size_t>(at) >= node.inputs.size()) continue;
      const Value* in = node.inputs[at];
      const Value* out = node.outputs[0];
      if (!in || root.count(in) || part.count(in) || part.count(out) || graph_outputs.count(out) ||
          !(in->type == out->type) || isDeviceValue(in) || isDeviceValue(out) ||
          !range_of.count(in) || !range_of.count(out))
        continue;
      const size_t slot = ownerOf(range_of[in]);
      bool ok = ranges[slot].last == static_cast<int>(n);
      for (size_t k = 0; ok && k < node.inputs.size(); ++k) {
        const Value* other = node.inputs[k];
        if (static_cast<int>(k) == at || !other) continue;
        auto it = range_of.find(rootOf(other));
        ok = it == range_of.end() || ownerOf(it->second) != slot;
      }
      if (!ok) continue;
      const size_t mine = range_of[out];
      owner[mine] = slot;
      ranges[slot].last = std::max(ranges[slot].last, ranges[mine].last);
    }
  // Host and device values are placed apart, each side in its own arena.
  for (const bool device : {false, true}) {
    std::vector<size_t> side;
    std::vector<LiveRange> side_ranges;
    for (size_t i = 0; i < arena_values.size(); ++i)
      if (isDeviceValue(arena_values[i]) == device && ownerOf(i) == i) {
        side.push_back(i);
        side_ranges.push_back(ranges[i]);
      }
    const uint32_t alignment = device ? ArenaPlan::kDeviceAlignment : kAlign;
    std::vector<uint64_t> offsets = planner.place(side_ranges, alignment);
    uint64_t& size = device ? plan.device_arena_size : plan.arena_size;
    for (size_t j = 0; j < side.size(); ++j) {
      const size_t i = side[j];
      plan.slices[arena_values[i]] = {device ? BufferKind::Device : BufferKind::Arena, 0,
                                      offsets[j], ranges[i].size, alignment};
      size = std::max(size, offsets[j] + ranges[i].size);
    }
  }
  for (size_t i = 0; i < arena_values.size(); ++i)
    if (ownerOf(i) != i) plan.slices[arena_values[i]] = plan.at(arena_values[ownerOf(i)]);
  for (const auto& [in, whole] : part) {
    BufferSlice slice = plan.at(whole.first);
    slice.offset += whole.second;
    slice.size = in->type.bytes();
    // A part starts a multiple of kAlign bytes into the result: its own
    // alignment is what that start keeps (a device result's 256 bytes need
    // not hold for its parts, and nanort refuses a buffer whose offset is not
    // a multiple of its alignment).
    while (slice.alignment > 1 && slice.offset % slice.alignment != 0) slice.alignment /= 2;
    plan.slices[in] = slice;
  }
  for (const auto& [view, owner] : root) {
    BufferSlice slice = plan.at(owner);
    plan.slices[view] = slice;
  }
  return plan;
}

std::string printPlan(const Graph& graph, const ArenaPlan& plan) {
  std::ostringstream os;
  os << "arena " << plan.arena_size << " bytes, constants " << plan.constants_size << " bytes\n";
  if (plan.device_arena_size != 0) os << "device arena " << plan.device_arena_size << " bytes\n";
  if (plan.scratch_size != 0)
    os << "scratch " << plan.scratch_size << " bytes per thread (the calling thread's at ["
       << plan.sessionArenaSize() - plan.scratch_size << ", " << plan.sessionArenaSize()
       << ") of a session's arena)\n";
  auto line = [&](const Value* v) {
    const BufferSlice& s = plan.at(v);
    os << "  %" << v->name << " " << kindName(s.kind);
    if (s.kind == BufferKind::Input || s.kind == BufferKind::Output) os << " " << s.index;
    if (s.kind == BufferKind::Constant || s.kind == BufferKind::Arena ||
        s.kind == BufferKind::Device)
      os << " [" << s.offset << ", " << s.offset + s.size << ")";
    os << " " << v->type.str() << "\n";
  };
  std::set<const Value*> printed;
  for (const Value* v : graph.inputs)
    if (printed.insert(v).second) line(v);
  for (const auto& node : graph.nodes) {
    for (const Value* v : node->inputs)
      if (v && v->isConstant() && printed.insert(v).second) line(v);
    for (const Value* v : node->outputs)
      if (printed.insert(v).second) line(v);
  }
  return os.str();
}

}  // namespace nanoc
