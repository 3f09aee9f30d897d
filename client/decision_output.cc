// Decision formatting and environment (see decision_output.h).
#include "client/decision_output.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace xdeep::client {
namespace {

std::string Format(const char* fmt, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, fmt, args...);
  return buffer;
}

std::string Duration(double seconds) {
  if (seconds < 120) return Format("%.0f s", seconds);
  if (seconds < 7200) return Format("%.1f min", seconds / 60);
  if (seconds < 3 * 86400) return Format("%.1f h", seconds / 3600);
  return Format("%.1f d", seconds / 86400);
}

// A rejected layout may never have been timed or priced: its zeros are
// "not known", not "free and instant".
constexpr const char* kUnknown = "-";

// One column of the explain table. Essential columns stay at any width; the
// others are added, in `priority` order, while they fit.
struct Column {
  const char* header;
  bool right_aligned;
  bool essential;
  int priority;  // lower is added first (optional columns only)
  std::function<std::string(const LayoutRow&, const std::string& currency)> cell;
};

const std::vector<Column>& Columns() {
  static const std::vector<Column> columns = {
      {"strategy", false, true, 0, [](const LayoutRow& r, auto&) { return StrategyLabel(r); }},
      {"nodes x gpus", true, true, 0,
       [](const LayoutRow& r, auto&) { return Format("%d x %d", r.nodes, r.gpus_per_node); }},
      {"mbs x acc", true, true, 0,
       [](const LayoutRow& r, auto&) {
         return Format("%d x %d", r.micro_batch, r.grad_accumulation);
       }},
      {"batch", true, false, 1,
       [](const LayoutRow& r, auto&) {
         return r.global_batch > 0 ? Format("%lld", static_cast<long long>(r.global_batch))
                                   : std::string(kUnknown);
       }},
      {"mem GiB", true, false, 0,
       [](const LayoutRow& r, auto&) {
         return r.memory_per_gpu_bytes > 0
                    ? Format("%.1f", static_cast<double>(r.memory_per_gpu_bytes) / (1ull << 30))
                    : std::string(kUnknown);
       }},
      {"dp tp pp zero", true, false, 2,
       [](const LayoutRow& r, auto&) {
         return Format("%d %d %d %d", r.dp, r.tp, r.pp, r.sharding_stage);
       }},
      {"step s", true, true, 0,
       [](const LayoutRow& r, auto&) {
         return r.step_time_s > 0 ? Format("%.4f", r.step_time_s) : std::string(kUnknown);
       }},
      {"time", true, true, 0,
       [](const LayoutRow& r, auto&) {
         return r.time_to_solution_s > 0 ? Duration(r.time_to_solution_s) : std::string(kUnknown);
       }},
      {"cost", true, true, 0,
       [](const LayoutRow& r, const std::string& currency) {
         return r.cost > 0 ? Format("%.2f %s", r.cost, currency.c_str()) : std::string(kUnknown);
       }},
  };
  return columns;
}

// The first `width` bytes of `text`, ending in "..." when cut, never inside a
// UTF-8 sequence.
std::string Cut(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  if (width <= 3) return text.substr(0, width);
  size_t end = width - 3;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "...";
}

// Optional columns are added only while "why" keeps this much room.
constexpr size_t kMinWhyWidth = 36;
// Narrower than this, "why" is still printed this wide (the line overflows).
constexpr size_t kLeastWhyWidth = 12;

// `text` in lines of at most `width` bytes, broken at spaces where possible.
std::vector<std::string> Wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string rest = text;
  while (rest.size() > width) {
    size_t cut = rest.rfind(' ', width);
    if (cut == std::string::npos || cut == 0) cut = width;
    while (cut > 0 && (static_cast<unsigned char>(rest[cut]) & 0xC0) == 0x80) --cut;
    if (cut == 0) cut = width;  // not UTF-8 after all: cut anywhere, but always advance
    lines.push_back(rest.substr(0, cut));
    rest.erase(0, cut);
    while (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
  }
  if (!rest.empty() || lines.empty()) lines.push_back(rest);
  return lines;
}

}  // namespace

// "; 12 checkpointed jobs of at most 24.0 h (holding 3.10 EUR at a time)",
// empty for a run that is one job.
std::string SegmentsNote(const TuneAnswer& a) {
  if (a.segments <= 1) return "";
  return Format("; %d checkpointed jobs of at most %s (holding %.2f %s at a time)", a.segments,
                Duration(a.time_limit_s).c_str(), a.segment_cost, a.currency.c_str());
}

std::string SummaryLine(const TuneAnswer& a) {
  const LayoutRow& b = a.best;
  return Format(
      "%s: %s on %d node%s x %d GPU%s, micro-batch %d x %d accumulation = global batch %lld; "
      "predicted %.4f s/step, %s, %.2f %s (%s; decision %s)",
      a.workload_name.c_str(), b.strategy.c_str(), b.nodes, b.nodes == 1 ? "" : "s",
      b.gpus_per_node, b.gpus_per_node == 1 ? "" : "s", b.micro_batch, b.grad_accumulation,
      static_cast<long long>(b.global_batch), b.step_time_s, Duration(b.time_to_solution_s).c_str(),
      b.cost, a.currency.c_str(), a.hardware_label.c_str(), a.decision_id.substr(0, 12).c_str()) +
         SegmentsNote(a);
}

int TerminalColumns(int fd) {
  if (const char* env = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0 && n < 100000) return static_cast<int>(n);
  }
  struct winsize size {};
  if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 0;
}

std::string StrategyLabel(const LayoutRow& r) {
  return r.strategy + (r.recompute ? "+rc" : r.selective_recompute ? "+src" : "");
}

std::vector<std::string> ExplainTable(const TuneAnswer& a, const TableLayout& layout) {
  std::vector<const LayoutRow*> rows = {&a.best};
  for (const LayoutRow& r : a.alternatives) rows.push_back(&r);

  // Cells and natural widths of every column.
  const std::vector<Column>& columns = Columns();
  std::vector<std::vector<std::string>> cells(columns.size());
  std::vector<size_t> widths(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    widths[c] = std::strlen(columns[c].header);
    for (const LayoutRow* r : rows) {
      cells[c].push_back(columns[c].cell(*r, a.currency));
      widths[c] = std::max(widths[c], cells[c].back().size());
    }
  }

  // Which columns are shown: all when wide or unlimited, else the essential
  // ones plus optional ones by priority while "why" keeps kMinWhyWidth.
  const bool unlimited = layout.wide || layout.width <= 0;
  std::vector<bool> shown(columns.size());
  size_t used = 2;  // the "* " marker
  for (size_t c = 0; c < columns.size(); ++c) {
    shown[c] = unlimited || columns[c].essential;
    if (shown[c]) used += widths[c] + 2;
  }
  if (!unlimited) {
    std::vector<size_t> optional;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (!columns[c].essential) optional.push_back(c);
    }
    std::stable_sort(optional.begin(), optional.end(),
                     [&](size_t x, size_t y) { return columns[x].priority < columns[y].priority; });
    for (size_t c : optional) {
      if (used + widths[c] + 2 + kMinWhyWidth > static_cast<size_t>(layout.width)) break;
      shown[c] = true;
      used += widths[c] + 2;
    }
  }
  const size_t why_width =
      unlimited ? std::string::npos
                : std::max<size_t>(kLeastWhyWidth, static_cast<size_t>(layout.width) -
                                                       std::min<size_t>(used, layout.width));

  auto line = [&](const std::string& marker, auto&& text_of, const std::string& why) {
    std::string out = marker;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (!shown[c]) continue;
      const std::string text = text_of(c);
      const std::string pad(widths[c] - text.size(), ' ');
      out += columns[c].right_aligned ? pad + text : text + pad;
      out += "  ";
    }
    out += Cut(why, why_width);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };

  // Prose (the heading, the chosen layout's reason, the legend) wraps to the width.
  std::vector<std::string> lines;
  auto prose = [&](const std::string& text) {
    if (unlimited) {
      lines.push_back(text);
      return;
    }
    for (std::string& l : Wrap(text, static_cast<size_t>(std::max(layout.width, 20)))) {
      lines.push_back(std::move(l));
    }
  };
  prose(Format("workload %s, %s, %llu configurations evaluated", a.workload_name.c_str(),
               a.hardware_label.c_str(), static_cast<unsigned long long>(a.candidates_evaluated)));
  lines.push_back(line(
      "  ", [&](size_t c) { return std::string(columns[c].header); }, "why"));
  bool any_recompute = false, any_selective = false, any_unknown = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    lines.push_back(line(
        i == 0 ? "* " : "  ", [&](size_t c) { return cells[c][i]; }, rows[i]->why));
    any_recompute |= rows[i]->recompute;
    any_selective |= rows[i]->selective_recompute;
    any_unknown |= rows[i]->step_time_s <= 0 || rows[i]->cost <= 0;
  }
  // The chosen row's reason is a sentence; when the table cut it, it follows in full.
  if (!unlimited && a.best.why.size() > why_width) prose("* " + a.best.why);
  if (a.time_limit_s > 0) {
    prose(a.segments > 1
              ? Format("time limit %s per job: planned as %d checkpointed segments, each a job "
                       "within it, requeued until the last; the budget holds one segment's "
                       "cost (%.2f %s) at a time",
                       Duration(a.time_limit_s).c_str(), a.segments, a.segment_cost,
                       a.currency.c_str())
              : Format("time limit %s per job: the run fits in one job",
                       Duration(a.time_limit_s).c_str()));
  }
  if (!a.limited_by.empty()) prose("limited by: " + a.limited_by);
  std::string legend = "* chosen";
  if (any_recompute) legend += "; +rc: activations recomputed in the backward pass";
  if (any_selective) legend += "; +src: the attention core recomputed in the backward pass";
  if (any_unknown) legend += "; -: not estimated (rejected before timing)";
  prose(legend + "; strategy names: xdeep help strategies");
  return lines;
}

}  // namespace xdeep::client
