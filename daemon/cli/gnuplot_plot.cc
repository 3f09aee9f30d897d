// gnuplot pictures (see gnuplot_plot.h).
#include "daemon/cli/gnuplot_plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "client/decision_output.h"

extern char** environ;

namespace xdeep::cli {
namespace {

namespace fs = std::filesystem;

// A gnuplot single-quoted string: '' stands for a quote.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "''";
    else if (c != '\n')
      out += c;
  }
  return out + "'";
}

// "set terminal" for the file's extension; empty when neither .svg nor .png.
std::string Terminal(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".svg")
    return "set terminal svg size 1000,650 dynamic font 'sans,13' background '#ffffff'";
  if (ext == ".png") return "set terminal pngcairo size 1200,780 font 'sans,12'";
  return "";
}

// A scratch directory removed with everything in it when this goes away.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "xdeep-plot-XXXXXX").string();
    if (mkdtemp(pattern.data())) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs gnuplot on `script`, which writes `tmp_output`; then moves it to `path`.
bool RunGnuplot(const ScratchDir& dir, const std::string& script, const fs::path& tmp_output,
                const std::string& path, std::string* error) {
  const fs::path script_file = dir.path() / "plot.gp";
  const fs::path log_file = dir.path() / "gnuplot.log";
  {
    std::ofstream out(script_file);
    out << script;
    if (!out) {
      *error = "cannot write " + script_file.string();
      return false;
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::string program = "gnuplot", arg = script_file.string();
  char* argv[] = {program.data(), arg.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    *error = std::string("cannot run gnuplot (") + std::strerror(rc) +
             "); install it: apt-get install gnuplot-nox";
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::error_code ec;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::exists(tmp_output, ec) ||
      fs::file_size(tmp_output, ec) == 0) {
    std::ifstream log(log_file);
    std::stringstream text;
    text << log.rdbuf();
    *error = "gnuplot failed: " + text.str();
    fs::remove(tmp_output, ec);
    return false;
  }
  // Same directory as `path`: the rename is atomic, nothing half-written stays.
  fs::rename(tmp_output, path, ec);
  if (ec) {
    *error = "cannot write " + path + ": " + ec.message();
    fs::remove(tmp_output, ec);
    return false;
  }
  return true;
}

// Checks the extension, where the picture goes and the scratch directory; the
// output gnuplot writes first (beside `path`, so the final rename stays on one
// file system).
bool PrepareOutput(const std::string& path, const ScratchDir& dir, std::string* terminal,
                   fs::path* tmp_output, std::string* error) {
  if (dir.path().empty()) {
    *error = "cannot create a temporary directory";
    return false;
  }
  *terminal = Terminal(path);
  if (terminal->empty()) {
    *error = path + ": the picture's name must end in .svg or .png";
    return false;
  }
  fs::path target(path);
  fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    *error = "cannot write " + path + ": " + parent.string() + " is not a directory";
    return false;
  }
  *tmp_output = parent / ("." + target.filename().string() + ".partial-" +
                          std::to_string(getpid()) + target.extension().string());
  return true;
}

struct Point {
  double time_h, cost;
  std::string label;
};

}  // namespace

bool PlotPlan(const client::TuneAnswer& a, const std::string& path, std::string* error) {
  std::string terminal;
  fs::path tmp_output;
  ScratchDir dir;
  if (!PrepareOutput(path, dir, &terminal, &tmp_output, error)) return false;

  // Every layout with a time and a cost, by strategy (recomputation apart).
  std::map<std::string, std::vector<Point>> series;
  std::vector<Point> all;
  auto add = [&](const client::LayoutRow& r) {
    if (r.time_to_solution_s <= 0 || r.cost <= 0) return;
    Point p{r.time_to_solution_s / 3600, r.cost,
            client::StrategyLabel(r) + " " + std::to_string(r.nodes) + "x" +
                std::to_string(r.gpus_per_node)};
    series[client::StrategyLabel(r)].push_back(p);
    all.push_back(p);
  };
  add(a.best);
  for (const client::LayoutRow& r : a.alternatives) add(r);
  if (all.empty()) {
    *error = "nothing to plot: no layout has a predicted time and cost";
    return false;
  }
  // The Pareto front: by time, each point cheaper than every faster one.
  std::vector<Point> front = all;
  std::sort(front.begin(), front.end(), [](const Point& x, const Point& y) {
    return x.time_h < y.time_h || (x.time_h == y.time_h && x.cost < y.cost);
  });
  std::vector<Point> pareto;
  for (const Point& p : front) {
    if (pareto.empty() || p.cost < pareto.back().cost) pareto.push_back(p);
  }

  auto write = [&](const std::string& name, const std::vector<Point>& points) {
    std::ofstream out(dir.path() / name);
    for (const Point& p : points) out << p.time_h << " " << p.cost << "\n";
    return (dir.path() / name).string();
  };
  std::ostringstream gp;
  gp << terminal << "\nset output " << Quoted(tmp_output.string()) << "\n"
     << "set title " << Quoted("xdeep plan: " + a.workload_name + " on " + a.hardware_label)
     << " noenhanced\n"
     << "set xlabel 'predicted time to solution (hours)'\n"
     << "set ylabel " << Quoted("predicted cost (" + a.currency + ")") << "\n"
     << "set grid lc rgb '#dddddd'\nset key outside right top noenhanced box\n"
     << "set offsets graph 0.08, graph 0.08, graph 0.1, graph 0.1\n";
  const Point chosen{a.best.time_to_solution_s / 3600, a.best.cost, ""};
  if (a.best.time_to_solution_s > 0 && a.best.cost > 0) {
    gp << "set label 1 " << Quoted("chosen: " + all.front().label) << " at " << chosen.time_h << ","
       << chosen.cost << " offset 1.5,1.2 noenhanced font ',12'\n";
  }
  gp << "plot " << Quoted(write("pareto.dat", pareto))
     << " using 1:2 with linespoints lw 2 dt 2 pt 4 ps 2.6 lc rgb '#555555' title 'Pareto front "
        "(layouts shown)'";
  int index = 0;
  for (const auto& [label, points] : series) {
    gp << ", \\\n  " << Quoted(write("s" + std::to_string(index++) + ".dat", points))
       << " using 1:2 with points pt 7 ps 1.6 title " << Quoted(label);
  }
  if (a.best.time_to_solution_s > 0 && a.best.cost > 0) {
    gp << ", \\\n  " << Quoted(write("chosen.dat", {chosen}))
       << " using 1:2 with points pt 6 ps 4 lw 3 lc rgb '#d62728' title 'chosen'";
  }
  gp << "\n";
  return RunGnuplot(dir, gp.str(), tmp_output, path, error);
}

std::string LogAxisTics(double lo, double hi) {
  for (const std::vector<double>& mantissas :
       {std::vector<double>{1, 1.5, 2, 3, 4, 5, 6, 8}, std::vector<double>{1, 2, 5},
        std::vector<double>{1}}) {
    std::vector<double> tics;
    for (int e = static_cast<int>(std::floor(std::log10(lo))) - 1;
         e <= static_cast<int>(std::ceil(std::log10(hi))); ++e) {
      for (double m : mantissas) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) tics.push_back(v);  // 6 * 0.1 > 0.6
      }
    }
    if (tics.size() <= 8 || mantissas.size() == 1) {
      std::ostringstream out;
      out << "(";
      for (size_t i = 0; i < tics.size(); ++i) out << (i ? ", " : "") << tics[i];
      out << ")";
      return out.str();
    }
  }
  return "";
}

bool PlotHistory(const v1::ListDecisionsResponse& history, const std::string& path,
                 std::string* error) {
  std::string terminal;
  fs::path tmp_output;
  ScratchDir dir;
  if (!PrepareOutput(path, dir, &terminal, &tmp_output, error)) return false;
  std::map<std::string, std::vector<std::pair<double, double>>> by_workload;
  double lo = 1e300, hi = 0;
  for (const v1::DecisionSummary& d : history.decisions()) {
    if (d.predicted_step_time_s() <= 0 || d.measured_step_time_s() <= 0) continue;
    by_workload[d.workload()].push_back({d.predicted_step_time_s(), d.measured_step_time_s()});
    lo = std::min({lo, d.predicted_step_time_s(), d.measured_step_time_s()});
    hi = std::max({hi, d.predicted_step_time_s(), d.measured_step_time_s()});
  }
  if (by_workload.empty()) {
    *error =
        "nothing to plot: no decision in this history has a measured step time yet "
        "(runs report them through $XDEEP_REPORT)";
    return false;
  }
  std::ostringstream gp;
  gp << terminal << "\nset output " << Quoted(tmp_output.string()) << "\n"
     << "set title 'xdeep history: predicted against measured step time'\n"
     << "set xlabel 'predicted step time (s)'\nset ylabel 'measured step time (s, median)'\n"
     << "set logscale xy\nset grid lc rgb '#dddddd'\nset key outside right top noenhanced box\n"
     << "set xrange [" << lo / 1.5 << ":" << hi * 1.5 << "]\nset yrange [" << lo / 1.5 << ":"
     << hi * 1.5 << "]\nset size ratio -1\n"
     << "set format xy '%g'\nset xtics " << LogAxisTics(lo / 1.5, hi * 1.5) << "\nset ytics "
     << LogAxisTics(lo / 1.5, hi * 1.5) << "\n"
     << "plot x with lines lw 2 lc rgb '#555555' title 'measured = predicted', \\\n"
     << "  1.2*x with lines dt 2 lc rgb '#aaaaaa' title '+/- 20 %', \\\n"
     << "  x/1.2 with lines dt 2 lc rgb '#aaaaaa' notitle";
  int index = 0;
  for (const auto& [workload, points] : by_workload) {
    const fs::path file = dir.path() / ("w" + std::to_string(index++) + ".dat");
    std::ofstream out(file);
    for (const auto& [predicted, measured] : points) out << predicted << " " << measured << "\n";
    gp << ", \\\n  " << Quoted(file.string()) << " using 1:2 with points pt 7 ps 1.5 title "
       << Quoted(workload);
  }
  gp << "\n";
  return RunGnuplot(dir, gp.str(), tmp_output, path, error);
}

}  // namespace xdeep::cli
