// Slurm host lists ("n[1-3,7],gpu[01-02]") as plain names, so the plugin can
// count -w / -x nodes and trim a node list to the decided node count.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace xdeep::spank {

// The names of a host list in order, or nullopt when it is malformed or
// names more than `limit` hosts.
std::optional<std::vector<std::string>> ExpandHostlist(const std::string& list,
                                                       size_t limit = 65536);

}  // namespace xdeep::spank
