#include "plan_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <functional>
#include <string_view>

#include "program_generated.h"
#include "report_text.h"

namespace nanort::tools {

namespace fb = nanort::fb;

namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

// Length of the UTF-8 sequence at s[i] if it encodes a character XML 1.0
// allows (and that prints), else 0.
size_t XmlCharLength(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return c >= 0x20 && c < 0x7f ? 1 : 0;
  uint32_t cp = 0;
  const size_t n = Utf8Decode(s, i, &cp);
  if (n == 0 || cp < 0xa0 || cp == 0xfffe || cp == 0xffff) return 0;  // C1 controls, non-characters
  return n;
}

// Splits raw bytes into displayed characters: each a printable character, or
// \xNN for a byte that is not one (a control byte, invalid UTF-8).
std::vector<std::string> DisplayChars(std::string_view s) {
  std::vector<std::string> chars;
  for (size_t i = 0; i < s.size();) {
    const size_t n = XmlCharLength(s, i);
    if (n == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i]));
      chars.emplace_back(buf);
      i += 1;
    } else {
      chars.emplace_back(s.substr(i, n));
      i += n;
    }
  }
  return chars;
}

size_t DisplayWidth(std::string_view s) {
  size_t width = 0;
  for (const std::string& c : DisplayChars(s)) width += c[0] == '\\' && c.size() == 4 ? 4 : 1;
  return width;
}

// XML text for raw bytes: escaped, and at most `max_chars` displayed
// characters (the middle elided with "…" when longer; \xNN counts as 4).
std::string XmlText(std::string_view s, size_t max_chars = SIZE_MAX) {
  const std::vector<std::string> chars = DisplayChars(s);
  std::vector<std::string> shown;
  if (DisplayWidth(s) <= max_chars) {
    shown = chars;
  } else if (max_chars > 0) {
    // Keep the head and the tail: names such as /layer1/layer1.0/conv1/Conv_output_0
    // differ at both ends.
    const size_t keep = max_chars - 1;
    const size_t head = (keep + 1) / 2, tail = keep - head;
    shown.assign(chars.begin(), chars.begin() + std::min(head, chars.size()));
    shown.push_back("\xe2\x80\xa6");
    shown.insert(shown.end(), chars.end() - std::min(tail, chars.size()), chars.end());
  }
  std::string out;
  for (const std::string& c : shown) {
    if (c == "&") {
      out += "&amp;";
    } else if (c == "<") {
      out += "&lt;";
    } else if (c == ">") {
      out += "&gt;";
    } else if (c == "\"") {
      out += "&quot;";
    } else if (c == "'") {
      out += "&apos;";
    } else {
      out += c;
    }
  }
  return out;
}

// 802816 -> "784 KiB", 6422528 -> "6.12 MiB", 100 -> "100 B".
std::string HumanBytes(uint64_t v) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (v < 1024) return std::to_string(v) + " B";
  double value = static_cast<double>(v);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, value >= 100 ? "%.0f" : value >= 10 ? "%.1f" : "%.2f", value);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s + " " + kUnits[unit];
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// A light colour of its own for the k-th buffer (golden-angle hues).
std::string FillColor(size_t k) {
  const double h = std::fmod(static_cast<double>(k) * 137.507764, 360.0) / 60.0;
  const double s = 0.55, l = 0.72;
  const double c = (1 - std::fabs(2 * l - 1)) * s;
  const double x = c * (1 - std::fabs(std::fmod(h, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  switch (static_cast<int>(h)) {
    case 0:
      r = c, g = x;
      break;
    case 1:
      r = x, g = c;
      break;
    case 2:
      g = c, b = x;
      break;
    case 3:
      g = x, b = c;
      break;
    case 4:
      r = x, b = c;
      break;
    default:
      r = c, b = x;
      break;
  }
  const double m = l - c / 2;
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround((r + m) * 255)),
                static_cast<int>(std::lround((g + m) * 255)),
                static_cast<int>(std::lround((b + m) * 255)));
  return buf;
}

std::string ReuseText(const ArenaPlan& plan) {
  if (plan.arena_size == 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", ReuseFactor(plan));
  return buf;
}

}  // namespace

ArenaPlan BuildArenaPlan(const fb::Program* p) {
  ArenaPlan plan;
  plan.model_name = std::string(Str(p->model_name()));
  plan.arena_size = p->arena_size();
  const flatbuffers::uoffset_t num_buffers = Size(p->buffers());
  std::vector<int64_t> slot(num_buffers, -1);  // buffer id -> index in plan.buffers
  for (flatbuffers::uoffset_t i = 0; i < num_buffers; ++i) {
    const fb::Buffer* b = p->buffers()->Get(i);
    if (b->kind() != fb::BufferKind::Arena) continue;
    PlanBuffer pb;
    pb.id = i;
    pb.name = std::string(Str(b->name()));
    pb.offset = b->offset();
    pb.size = b->size();
    pb.past_arena =
        b->size() > UINT64_MAX - b->offset() || b->offset() + b->size() > p->arena_size();
    slot[i] = static_cast<int64_t>(plan.buffers.size());
    plan.buffers_size_sum = SaturatingAdd(plan.buffers_size_sum, b->size());
    plan.buffers.push_back(std::move(pb));
  }
  auto use = [&](uint32_t buffer, int64_t thunk) {
    if (buffer >= num_buffers || slot[buffer] < 0) return;
    PlanBuffer& pb = plan.buffers[static_cast<size_t>(slot[buffer])];
    if (pb.first < 0) pb.first = thunk;
    pb.last = std::max(pb.last, thunk);
  };
  for (flatbuffers::uoffset_t e = 0; e < Size(p->entries()); ++e) {
    const fb::Entry* entry = p->entries()->Get(e);
    plan.entries.push_back({plan.thunk_ops.size(), std::string(Str(entry->name()))});
    // Thunks in pre-order (nanort's numbering): an If's branches and a
    // Loop's body follow their thunk. A buffer a loop body uses lives at
    // least across the body's thunks; one that carries state across
    // iterations is defined before the loop and read after it (the
    // verifier's rule), so its span covers the loop too.
    std::function<void(const flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>*)> walk =
        [&](const flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>* thunks) {
          for (flatbuffers::uoffset_t t = 0; t < Size(thunks); ++t) {
            const fb::Thunk* th = thunks->Get(t);
            const auto index = static_cast<int64_t>(plan.thunk_ops.size());
            plan.thunk_ops.emplace_back(Str(th->op()));
            if (const fb::KernelThunk* k = th->kind_as_KernelThunk()) {
              for (flatbuffers::uoffset_t a = 0; a < Size(k->args()); ++a) {
                use(k->args()->Get(a), index);
              }
            } else if (const fb::CopyThunk* c = th->kind_as_CopyThunk()) {
              use(c->src(), index);
              use(c->dst(), index);
            } else if (const fb::IfThunk* f = th->kind_as_IfThunk()) {
              use(f->cond(), index);
              for (flatbuffers::uoffset_t o = 0; o < Size(f->outputs()); ++o) {
                use(f->outputs()->Get(o), index);
              }
              walk(f->then_thunks());
              walk(f->else_thunks());
            } else if (const fb::LoopThunk* l = th->kind_as_LoopThunk()) {
              use(l->trip_count(), index);
              use(l->cond(), index);
              use(l->counter(), index);
              walk(l->body());
            }
          }
        };
    walk(entry->thunks());
  }
  return plan;
}

double ReuseFactor(const ArenaPlan& plan) {
  if (plan.arena_size == 0) return 0;
  return static_cast<double>(plan.buffers_size_sum) / static_cast<double>(plan.arena_size);
}

std::string ArenaPlanSummary(const ArenaPlan& plan) {
  std::string out;
  Appendf(&out, "arena peak: %llu bytes (the program's arena size)\n",
          static_cast<unsigned long long>(plan.arena_size));
  Appendf(&out, "arena buffers: %zu, %llu bytes in all\n", plan.buffers.size(),
          static_cast<unsigned long long>(plan.buffers_size_sum));
  Appendf(&out, "reuse factor: %s (sum of the arena buffers' sizes / peak)\n",
          ReuseText(plan).c_str());
  return out;
}

std::string ArenaPlanSvg(const ArenaPlan& plan, const std::string& source) {
  // Layout, in SVG user units (pixels at 100%).
  constexpr double kWidth = 1400, kLeft = 96, kRight = 24, kPlotTop = 84, kPlotHeight = 600;
  constexpr double kPlotWidth = kWidth - kLeft - kRight;
  constexpr double kMonoChar = 6.02;   // advance of a 10px monospace character
  constexpr double kLabelChar = 5.42;  // ... of a 9px one
  const size_t num_thunks = plan.thunk_ops.size();
  const double col = kPlotWidth / static_cast<double>(std::max<size_t>(1, num_thunks));
  uint64_t top = std::max<uint64_t>(plan.arena_size, 1);
  for (const PlanBuffer& b : plan.buffers) top = std::max(top, SaturatingAdd(b.offset, b.size));
  const double scale = kPlotHeight / static_cast<double>(top);
  const double plot_bottom = kPlotTop + kPlotHeight;
  auto x_of = [&](int64_t thunk) { return kLeft + static_cast<double>(thunk) * col; };
  auto y_of = [&](uint64_t offset) { return plot_bottom - static_cast<double>(offset) * scale; };

  // Below the plot: the thunks' op names (one per column when there is room,
  // else every few thunks' index), then the legend.
  const bool op_per_column = col >= 10 && num_thunks > 0;
  constexpr size_t kOpChars = 24;
  size_t longest_op_label = 0;
  for (size_t t = 0; op_per_column && t < num_thunks; ++t) {
    const size_t op = std::min(DisplayWidth(plan.thunk_ops[t]), kOpChars - 4);
    longest_op_label = std::max(longest_op_label, std::to_string(t).size() + 1 + op);
  }
  const double axis_labels =
      op_per_column ? 16 + static_cast<double>(longest_op_label) * kLabelChar : 24;
  const double legend_top = plot_bottom + axis_labels + 40;
  constexpr double kLegendLine = 14;
  // As many legend columns (up to 4) as leave room for the longest name; at
  // least 2, eliding the middle of longer names.
  constexpr size_t kLegendFields = 26;  // "b12   784 KiB t3-7      "
  size_t longest = 0;
  for (const PlanBuffer& b : plan.buffers) longest = std::max(longest, DisplayWidth(b.name));
  size_t legend_columns = 4;
  while (legend_columns > 2 && (kPlotWidth / static_cast<double>(legend_columns) - 18) / kMonoChar <
                                   static_cast<double>(kLegendFields + longest)) {
    --legend_columns;
  }
  const double legend_col = kPlotWidth / static_cast<double>(legend_columns);
  const size_t legend_rows = (plan.buffers.size() + legend_columns - 1) / legend_columns;
  const double height = legend_top + 20 + static_cast<double>(legend_rows) * kLegendLine + 16;

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  Appendf(&out,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%s\" height=\"%s\" "
          "viewBox=\"0 0 %s %s\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
          Num(kWidth).c_str(), Num(height).c_str(), Num(kWidth).c_str(), Num(height).c_str());
  out +=
      "<style>\n"
      ".buffer rect{stroke:#333;stroke-width:0.6;fill-opacity:0.85}\n"
      ".buffer.unused rect{fill:none;stroke:#888;stroke-dasharray:4 3}\n"
      ".buffer.bad rect{stroke:#d00;stroke-width:2}\n"
      ".label{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:9px;fill:#111}\n"
      ".legend{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:10px;fill:#111}\n"
      ".axis{font-size:10px;fill:#333}\n"
      ".grid{stroke:#ddd;stroke-width:0.6}\n"
      "</style>\n";
  Appendf(&out, "<rect x=\"0\" y=\"0\" width=\"%s\" height=\"%s\" fill=\"#fff\"/>\n",
          Num(kWidth).c_str(), Num(height).c_str());
  Appendf(&out,
          "<text id=\"title\" x=\"%s\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Arena plan "
          "of model &quot;%s&quot; (%s)</text>\n",
          Num(kLeft).c_str(), XmlText(plan.model_name, 60).c_str(), XmlText(source, 80).c_str());
  Appendf(&out,
          "<text id=\"summary\" x=\"%s\" y=\"44\" font-size=\"12\">peak %s (%llu bytes, the arena "
          "size) \xc2\xb7 %zu arena buffers, %s (%llu bytes) in all \xc2\xb7 reuse factor %s "
          "(sum / peak) \xc2\xb7 %zu thunks</text>\n",
          Num(kLeft).c_str(), HumanBytes(plan.arena_size).c_str(),
          static_cast<unsigned long long>(plan.arena_size), plan.buffers.size(),
          HumanBytes(plan.buffers_size_sum).c_str(),
          static_cast<unsigned long long>(plan.buffers_size_sum), ReuseText(plan).c_str(),
          num_thunks);
  Appendf(&out,
          "<text x=\"%s\" y=\"62\" font-size=\"11\" fill=\"#555\">Each rectangle is an arena "
          "buffer: its arena offset upwards, its live range rightwards (from the thunk that "
          "writes it to the last that reads it). Dashed: used by no thunk.</text>\n",
          Num(kLeft).c_str());

  // Axes and grid.
  uint64_t step = 1;
  while (step < top / 8) step *= 2;
  out += "<g id=\"y-axis\">\n";
  for (uint64_t v = 0; v <= top; v += step) {
    const double y = y_of(v);
    Appendf(&out,
            "<line class=\"grid\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>"
            "<text class=\"axis\" x=\"%s\" y=\"%s\" text-anchor=\"end\">%s</text>\n",
            Num(kLeft).c_str(), Num(y).c_str(), Num(kLeft + kPlotWidth).c_str(), Num(y).c_str(),
            Num(kLeft - 6).c_str(), Num(y + 3.5).c_str(), HumanBytes(v).c_str());
    if (v > UINT64_MAX - step) break;
  }
  Appendf(&out,
          "<text class=\"axis\" transform=\"translate(14 %s) rotate(-90)\" "
          "text-anchor=\"middle\">arena offset</text>\n",
          Num(kPlotTop + kPlotHeight / 2).c_str());
  out += "</g>\n";

  out += "<g id=\"x-axis\">\n";
  size_t every = 1;
  if (!op_per_column) {
    const size_t steps[] = {1, 2, 5};
    for (size_t scale10 = 1; static_cast<double>(every) * col < 36; scale10 *= 10) {
      for (size_t s : steps) {
        every = s * scale10;
        if (static_cast<double>(every) * col >= 36) break;
      }
    }
  }
  for (size_t t = 0; t < num_thunks; t += every) {
    const double x = x_of(static_cast<int64_t>(t));
    Appendf(&out, "<line class=\"grid\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", Num(x).c_str(),
            Num(kPlotTop).c_str(), Num(x).c_str(), Num(plot_bottom + 4).c_str());
    if (op_per_column) {
      const double cx = x + col / 2 + 3;
      Appendf(&out,
              "<text class=\"label\" transform=\"translate(%s %s) rotate(-90)\" "
              "text-anchor=\"end\">%zu %s</text>\n",
              Num(cx).c_str(), Num(plot_bottom + 8).c_str(), t,
              XmlText(plan.thunk_ops[t], kOpChars - 4).c_str());
    } else {
      Appendf(&out, "<text class=\"axis\" x=\"%s\" y=\"%s\">%zu</text>\n", Num(x + 2).c_str(),
              Num(plot_bottom + 16).c_str(), t);
    }
  }
  Appendf(&out, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#333\"/>\n",
          Num(kLeft).c_str(), Num(plot_bottom).c_str(), Num(kLeft + kPlotWidth).c_str(),
          Num(plot_bottom).c_str());
  Appendf(&out,
          "<text class=\"axis\" x=\"%s\" y=\"%s\" text-anchor=\"middle\">thunk (execution order%s)"
          "</text>\n",
          Num(kLeft + kPlotWidth / 2).c_str(), Num(plot_bottom + axis_labels + 8).c_str(),
          op_per_column ? ": index and op" : "");
  // Where each entry's thunks begin, when there are several.
  if (plan.entries.size() > 1) {
    for (const ArenaPlan::EntryStart& e : plan.entries) {
      const double x = x_of(static_cast<int64_t>(e.first_thunk));
      Appendf(&out,
              "<line class=\"entry\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#06c\"/>"
              "<text class=\"axis\" x=\"%s\" y=\"%s\" fill=\"#06c\">entry %s</text>\n",
              Num(x).c_str(), Num(kPlotTop - 10).c_str(), Num(x).c_str(), Num(plot_bottom).c_str(),
              Num(x + 2).c_str(), Num(kPlotTop - 2).c_str(), XmlText(e.name, 24).c_str());
    }
  }
  out += "</g>\n";

  // The buffers.
  out += "<g id=\"buffers\">\n";
  if (plan.buffers.empty()) {
    Appendf(&out,
            "<text id=\"no-arena\" x=\"%s\" y=\"%s\" font-size=\"16\" text-anchor=\"middle\">"
            "This program has no arena buffers (arena size %llu bytes).</text>\n",
            Num(kLeft + kPlotWidth / 2).c_str(), Num(kPlotTop + kPlotHeight / 2).c_str(),
            static_cast<unsigned long long>(plan.arena_size));
  }
  for (size_t k = 0; k < plan.buffers.size(); ++k) {
    const PlanBuffer& b = plan.buffers[k];
    const bool used = b.first >= 0;
    const double x = used ? x_of(b.first) : kLeft;
    const double w = used ? static_cast<double>(b.last - b.first + 1) * col : kPlotWidth;
    const double y = y_of(SaturatingAdd(b.offset, b.size));
    const double h = static_cast<double>(b.size) * scale;
    std::string live = used ? "thunks " + std::to_string(b.first) + "-" + std::to_string(b.last)
                            : "used by no thunk";
    Appendf(&out,
            "<g class=\"buffer%s%s\" id=\"buffer-%u\"><title>buffer %u &quot;%s&quot;: %llu bytes "
            "(%s) at arena offset %llu, %s%s</title>",
            used ? "" : " unused", b.past_arena ? " bad" : "", b.id, b.id, XmlText(b.name).c_str(),
            static_cast<unsigned long long>(b.size), HumanBytes(b.size).c_str(),
            static_cast<unsigned long long>(b.offset), live.c_str(),
            b.past_arena ? ", ENDS PAST THE ARENA" : "");
    Appendf(&out, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"%s%s%s/>", Num(x).c_str(),
            Num(y).c_str(), Num(w).c_str(), Num(h).c_str(), used ? " fill=\"" : "",
            used ? FillColor(k).c_str() : "", used ? "\"" : "");
    // A label inside when it fits: the id and size, then the name.
    const auto fit = static_cast<size_t>(std::max(0.0, (w - 4) / kLabelChar));
    // (Appended, not "b" + to_string(): GCC 12 warns falsely of -Wrestrict.)
    std::string tag = "b";
    tag += std::to_string(b.id);
    const std::string tag_size = tag + " " + HumanBytes(b.size);
    if (h >= 10 && fit >= tag.size()) {
      Appendf(&out, "<text class=\"label\" x=\"%s\" y=\"%s\">%s</text>", Num(x + 2).c_str(),
              Num(y + 9).c_str(), fit >= tag_size.size() ? tag_size.c_str() : tag.c_str());
      if (h >= 21 && fit >= 16) {
        Appendf(&out, "<text class=\"label\" x=\"%s\" y=\"%s\">%s</text>", Num(x + 2).c_str(),
                Num(y + 19).c_str(), XmlText(b.name, fit).c_str());
      }
    }
    out += "</g>\n";
  }
  out += "</g>\n";

  // The peak, over the buffers.
  const double peak_y = y_of(plan.arena_size);
  Appendf(&out,
          "<line id=\"peak\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#d00\" "
          "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
          Num(kLeft).c_str(), Num(peak_y).c_str(), Num(kLeft + kPlotWidth).c_str(),
          Num(peak_y).c_str());
  Appendf(&out,
          "<text id=\"peak-label\" x=\"%s\" y=\"%s\" font-size=\"11\" fill=\"#d00\" "
          "text-anchor=\"end\">peak: %s (%llu bytes, the arena size)</text>\n",
          Num(kLeft + kPlotWidth).c_str(), Num(peak_y - 4).c_str(),
          HumanBytes(plan.arena_size).c_str(), static_cast<unsigned long long>(plan.arena_size));

  // The legend: every buffer's id, size, live range and name.
  out += "<g id=\"legend\">\n";
  Appendf(&out,
          "<text class=\"axis\" x=\"%s\" y=\"%s\" font-weight=\"bold\">Arena buffers (b = index "
          "in the program's buffer table, t = live range in thunks)</text>\n",
          Num(kLeft).c_str(), Num(legend_top).c_str());
  for (size_t k = 0; k < plan.buffers.size(); ++k) {
    const PlanBuffer& b = plan.buffers[k];
    const double x = kLeft + static_cast<double>(k / legend_rows) * legend_col;
    const double y = legend_top + 20 + static_cast<double>(k % legend_rows) * kLegendLine;
    char live[48] = "unused";
    if (b.first >= 0) {
      std::snprintf(live, sizeof live, "t%lld-%lld", static_cast<long long>(b.first),
                    static_cast<long long>(b.last));
    }
    char fields[96];
    std::snprintf(fields, sizeof fields, "b%-4u %9s %-9s ", b.id, HumanBytes(b.size).c_str(), live);
    const auto room = static_cast<size_t>((legend_col - 18) / kMonoChar);
    const size_t name_room =
        room > std::string_view(fields).size() + 4 ? room - std::string_view(fields).size() : 4;
    Appendf(&out,
            "<g class=\"legend-item\" id=\"legend-%u\"><rect x=\"%s\" y=\"%s\" width=\"10\" "
            "height=\"10\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.6\"/>"
            "<text class=\"legend\" x=\"%s\" y=\"%s\" xml:space=\"preserve\">%s%s</text></g>\n",
            b.id, Num(x).c_str(), Num(y - 9).c_str(), b.first < 0 ? "none" : FillColor(k).c_str(),
            Num(x + 14).c_str(), Num(y).c_str(), fields, XmlText(b.name, name_room).c_str());
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace nanort::tools
