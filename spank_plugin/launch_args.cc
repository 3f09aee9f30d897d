// Launch command-line parsing and rewriting (see launch_args.h).
#include "spank_plugin/launch_args.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

namespace xdeep::spank {
namespace {

// "4", "2-4", "gpu:4", "h100:8" -> the largest count.
int CountOf(std::string_view value) {
  if (size_t colon = value.rfind(':'); colon != std::string_view::npos)
    value.remove_prefix(colon + 1);
  if (size_t dash = value.find('-'); dash != std::string_view::npos) value.remove_prefix(dash + 1);
  return std::atoi(std::string(value).c_str());
}

struct OptionSpec {
  const char* short_name;  // "-N" or nullptr
  const char* long_name;   // "--nodes"
};

// Matches argv[i] against an option that takes a value; returns the value and
// advances i past a separate argument.
bool Match(const std::vector<std::string>& argv, size_t& i, const OptionSpec& spec,
           std::string* value) {
  std::string_view arg = argv[i];
  if (spec.short_name != nullptr && arg.starts_with(spec.short_name)) {
    if (arg.size() > 2) {
      *value = std::string(arg.substr(2));
      return true;
    }
    if (i + 1 < argv.size()) {
      *value = argv[++i];
      return true;
    }
    return false;
  }
  std::string_view name = spec.long_name;
  if (!arg.starts_with(name)) return false;
  if (arg.size() == name.size()) {
    if (i + 1 < argv.size()) {
      *value = argv[++i];
      return true;
    }
    return false;
  }
  if (arg[name.size()] == '=') {
    *value = std::string(arg.substr(name.size() + 1));
    return true;
  }
  return false;
}

constexpr OptionSpec kNodes{"-N", "--nodes"};
constexpr OptionSpec kTasks{"-n", "--ntasks"};
constexpr OptionSpec kGpusPerNode{nullptr, "--gpus-per-node"};
constexpr OptionSpec kGpus{"-G", "--gpus"};
constexpr OptionSpec kPartition{"-p", "--partition"};
constexpr OptionSpec kAccount{"-A", "--account"};
// Removed on rewrite: they would contradict the inserted layout.
constexpr OptionSpec kConflicting[] = {
    {"-G", "--gpus"}, {nullptr, "--ntasks-per-node"}, {nullptr, "--gpus-per-task"}};

}  // namespace

LaunchBounds ParseLaunchBounds(const std::vector<std::string>& argv, int first_command) {
  LaunchBounds b;
  const size_t end = std::min<size_t>(argv.size(), std::max(first_command, 1));
  for (size_t i = 1; i < end; ++i) {
    std::string v;
    // --gpus-per-node must be tried before --gpus, which is its prefix.
    if (Match(argv, i, kGpusPerNode, &v)) {
      b.gpus_per_node = CountOf(v);
    } else if (Match(argv, i, kNodes, &v)) {
      b.nodes = CountOf(v);
    } else if (Match(argv, i, kTasks, &v)) {
      b.tasks = CountOf(v);
    } else if (Match(argv, i, kGpus, &v)) {
      b.gpus = CountOf(v);
    } else if (Match(argv, i, kPartition, &v)) {
      b.partition = v;
    } else if (Match(argv, i, kAccount, &v)) {
      b.account = v;
    }
  }
  return b;
}

std::vector<std::string> RewriteLaunch(const std::vector<std::string>& argv, int first_command,
                                       const LaunchShape& shape) {
  std::vector<std::string> out;
  const size_t end = std::min<size_t>(argv.size(), std::max(first_command, 1));
  for (size_t i = 0; i < end; ++i) {
    if (i > 0) {
      std::string v;
      size_t j = i;
      bool conflicting = false;
      std::string_view arg = argv[i];
      if (!arg.starts_with("--gpus-per-node")) {
        for (const OptionSpec& spec : kConflicting) {
          if (Match(argv, j, spec, &v)) {
            conflicting = true;
            break;
          }
        }
      }
      if (conflicting) {
        i = j;
        continue;
      }
    }
    out.push_back(argv[i]);
  }
  out.push_back("--nodes=" + std::to_string(shape.nodes));
  out.push_back("--ntasks=" + std::to_string(shape.tasks));
  out.push_back("--gpus-per-node=" + std::to_string(shape.gpus_per_node));
  out.insert(out.end(), argv.begin() + static_cast<long>(end), argv.end());
  return out;
}

std::vector<std::string> ReadSelfCmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  size_t start = 0;
  while (start < all.size()) {
    size_t nul = all.find('\0', start);
    if (nul == std::string::npos) nul = all.size();
    argv.push_back(all.substr(start, nul - start));
    start = nul + 1;
  }
  return argv;
}

}  // namespace xdeep::spank
