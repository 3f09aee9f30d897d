// Rank discovery from the environment and the TCP rendezvous for the NCCL id.
#include "profiler/bootstrap.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "profiler/deadline.h"

namespace xdeep::profiler {
namespace {

constexpr uint32_t kMagic = 0x78647062;  // "xdpb"

const char* Get(const EnvLookup& lookup, const char* name) {
  const char* v = lookup ? lookup(name) : std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

absl::StatusOr<int> GetInt(const EnvLookup& lookup, const char* name, int fallback, bool required) {
  const char* v = Get(lookup, name);
  if (v == nullptr) {
    if (required) return absl::InvalidArgumentError(absl::StrCat(name, " is not set"));
    return fallback;
  }
  int out = 0;
  if (!absl::SimpleAtoi(v, &out) || out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", v, "' is not a non-negative integer"));
  }
  return out;
}

// RAII file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    reset();
    fd_ = o.fd_;
    o.fd_ = -1;
    return *this;
  }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

int PollMs(const Deadline& d) {
  const int64_t ms = absl::ToInt64Milliseconds(d.Remaining());
  return static_cast<int>(std::min<int64_t>(ms, 200));
}

absl::Status SendAll(int fd, const void* data, size_t len, const Deadline& d) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    if (d.Expired()) return absl::DeadlineExceededError("rendezvous: send timed out");
    pollfd pfd{fd, POLLOUT, 0};
    if (poll(&pfd, 1, PollMs(d)) <= 0) continue;
    const ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::UnavailableError(
          absl::StrCat("rendezvous: send failed: ", std::strerror(errno)));
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, void* data, size_t len, const Deadline& d) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    if (d.Expired()) return absl::DeadlineExceededError("rendezvous: receive timed out");
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, PollMs(d)) <= 0) continue;
    const ssize_t n = recv(fd, p, len, 0);
    if (n == 0) return absl::UnavailableError("rendezvous: peer closed the connection");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::UnavailableError(
          absl::StrCat("rendezvous: receive failed: ", std::strerror(errno)));
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RunRoot(const DistEnv& env, const std::string& blob,
                                    const Deadline& d) {
  Fd listener(socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  bool v6 = listener.get() >= 0;
  if (!v6) listener = Fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (listener.get() < 0) return absl::InternalError("rendezvous: socket() failed");
  int one = 1, zero = 0;
  setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    // Dual stack, so peers resolving MASTER_ADDR to IPv4 or IPv6 both reach us.
    setsockopt(listener.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(env.master_port));
    rc = bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(env.master_port));
    rc = bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (rc != 0 || listen(listener.get(), 128) != 0) {
    return absl::UnavailableError(absl::StrCat("rendezvous: rank 0 cannot listen on port ",
                                               env.master_port, ": ", std::strerror(errno)));
  }
  std::vector<Fd> peers;
  std::set<int> seen;
  while (static_cast<int>(seen.size()) < env.world_size - 1) {
    if (d.Expired()) {
      std::vector<int> missing;
      for (int r = 1; r < env.world_size; ++r) {
        if (!seen.count(r)) missing.push_back(r);
      }
      return absl::DeadlineExceededError(
          absl::StrCat("rendezvous: rank(s) ", absl::StrJoin(missing, ","), " of ", env.world_size,
                       " did not connect to port ", env.master_port, " in time"));
    }
    pollfd pfd{listener.get(), POLLIN, 0};
    if (poll(&pfd, 1, PollMs(d)) <= 0) continue;
    Fd c(accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (c.get() < 0) continue;
    uint32_t hello[3];
    // A stray connection (port scanner, a previous job) must not block the others.
    if (!RecvAll(c.get(), hello, sizeof(hello), Deadline::In(absl::Seconds(2)).Min(d)).ok())
      continue;
    const uint32_t magic = ntohl(hello[0]);
    const int rank = static_cast<int>(ntohl(hello[1]));
    const int world = static_cast<int>(ntohl(hello[2]));
    if (magic != kMagic) continue;
    if (world != env.world_size) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rendezvous: rank ", rank, " says world size ", world, ", rank 0 has ", env.world_size));
    }
    if (rank <= 0 || rank >= env.world_size || seen.count(rank)) {
      return absl::FailedPreconditionError(
          absl::StrCat("rendezvous: duplicate or invalid rank ", rank));
    }
    seen.insert(rank);
    peers.push_back(std::move(c));
  }
  const uint32_t len = htonl(static_cast<uint32_t>(blob.size()));
  for (Fd& p : peers) {
    if (absl::Status s = SendAll(p.get(), &len, sizeof(len), d); !s.ok()) return s;
    if (absl::Status s = SendAll(p.get(), blob.data(), blob.size(), d); !s.ok()) return s;
  }
  // Wait for each peer's acknowledgement so rank 0 does not close before they read.
  for (Fd& p : peers) {
    char ack = 0;
    if (absl::Status s = RecvAll(p.get(), &ack, 1, d); !s.ok()) return s;
  }
  return blob;
}

// NodeAddr of a Slurm node from `scontrol show node -o NAME`; empty if unknown.
std::string SlurmNodeAddr(const std::string& name) {
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return "";  // never hand an odd name to the shell
    }
  }
  const std::string cmd = absl::StrCat("timeout 5 scontrol show node -o ", name, " 2>/dev/null");
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  pclose(p);
  const size_t at = out.find("NodeAddr=");
  if (at == std::string::npos) return "";
  const size_t begin = at + 9;
  const size_t end = out.find_first_of(" \n", begin);
  return out.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

absl::StatusOr<std::string> RunPeer(const DistEnv& env, const Deadline& d) {
  std::string last_error = "no attempt";
  std::string addr = env.master_addr;
  bool asked_slurm = false;
  while (!d.Expired()) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = absl::StrCat(env.master_port);
    if (int rc = getaddrinfo(addr.c_str(), port.c_str(), &hints, &res); rc != 0) {
      last_error = absl::StrCat("cannot resolve ", addr, ": ", gai_strerror(rc));
      if (env.master_is_slurm_node && !asked_slurm) {
        asked_slurm = true;
        if (std::string a = SlurmNodeAddr(env.master_addr); !a.empty()) {
          addr = a;
          continue;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    Fd c;
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      Fd s(socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
      if (s.get() < 0) continue;
      // A blocking connect to a live host answers at once (accept or refuse); a silent
      // host is bounded by the outer loop's deadline through SO_SNDTIMEO.
      timeval tv{1, 0};
      setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
      if (connect(s.get(), ai->ai_addr, ai->ai_addrlen) == 0) {
        c = std::move(s);
        break;
      }
      last_error = std::strerror(errno);
    }
    freeaddrinfo(res);
    if (c.get() < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    fcntl(c.get(), F_SETFL, fcntl(c.get(), F_GETFL) | O_NONBLOCK);
    const uint32_t hello[3] = {htonl(kMagic), htonl(static_cast<uint32_t>(env.rank)),
                               htonl(static_cast<uint32_t>(env.world_size))};
    if (absl::Status s = SendAll(c.get(), hello, sizeof(hello), d); !s.ok()) return s;
    uint32_t len = 0;
    if (absl::Status s = RecvAll(c.get(), &len, sizeof(len), d); !s.ok()) return s;
    len = ntohl(len);
    if (len > (1u << 20))
      return absl::DataLossError("rendezvous: implausible blob size from rank 0");
    std::string blob(len, '\0');
    if (absl::Status s = RecvAll(c.get(), blob.data(), len, d); !s.ok()) return s;
    const char ack = 1;
    if (absl::Status s = SendAll(c.get(), &ack, 1, d); !s.ok()) return s;
    return blob;
  }
  return absl::DeadlineExceededError(absl::StrCat("rendezvous: rank ", env.rank,
                                                  " could not reach rank 0 at ", addr, ":",
                                                  env.master_port, " (", last_error, ")"));
}

}  // namespace

absl::StatusOr<std::string> FirstHostOfNodelist(absl::string_view nodelist) {
  if (nodelist.empty()) return absl::InvalidArgumentError("empty nodelist");
  const size_t comma = nodelist.find(',');
  const size_t bracket = nodelist.find('[');
  if (bracket == absl::string_view::npos || (comma != absl::string_view::npos && comma < bracket)) {
    return std::string(nodelist.substr(0, comma));
  }
  // prefix[range,...]suffix: the first host takes the first number of the first range.
  const absl::string_view prefix = nodelist.substr(0, bracket);
  const size_t close = nodelist.find(']', bracket);
  if (close == absl::string_view::npos)
    return absl::InvalidArgumentError(absl::StrCat("bad nodelist '", nodelist, "'"));
  absl::string_view inside = nodelist.substr(bracket + 1, close - bracket - 1);
  const size_t end = inside.find_first_of(",-");
  absl::string_view first = inside.substr(0, end);
  if (first.empty())
    return absl::InvalidArgumentError(absl::StrCat("bad nodelist '", nodelist, "'"));
  // Hosts after the bracket up to the next comma (e.g. "n[1-2]-ib").
  absl::string_view rest = nodelist.substr(close + 1);
  rest = rest.substr(0, rest.find(','));
  return absl::StrCat(prefix, first, rest);
}

int FirstTasksPerNode(absl::string_view tasks_per_node) {
  int v = 0;
  const size_t end = tasks_per_node.find_first_of("(,");
  if (!absl::SimpleAtoi(tasks_per_node.substr(0, end), &v)) return 1;
  return std::max(v, 1);
}

absl::StatusOr<DistEnv> DistEnvFromEnvironment(const EnvLookup& lookup) {
  DistEnv env;
  const bool explicit_vars = Get(lookup, "RANK") && Get(lookup, "WORLD_SIZE");
  const bool slurm = Get(lookup, "SLURM_PROCID") && Get(lookup, "SLURM_NTASKS");
  if (explicit_vars) {
    env.source = "env";
    absl::StatusOr<int> rank = GetInt(lookup, "RANK", 0, true);
    absl::StatusOr<int> world = GetInt(lookup, "WORLD_SIZE", 1, true);
    if (!rank.ok()) return rank.status();
    if (!world.ok()) return world.status();
    env.rank = *rank;
    env.world_size = *world;
    absl::StatusOr<int> local = GetInt(lookup, "LOCAL_RANK", env.rank, false);
    absl::StatusOr<int> local_size = GetInt(lookup, "LOCAL_WORLD_SIZE", env.world_size, false);
    if (!local.ok()) return local.status();
    if (!local_size.ok()) return local_size.status();
    env.local_rank = *local;
    env.local_size = std::max(*local_size, 1);
    env.nodes = std::max(1, (env.world_size + env.local_size - 1) / env.local_size);
  } else if (slurm) {
    env.source = "slurm";
    absl::StatusOr<int> rank = GetInt(lookup, "SLURM_PROCID", 0, true);
    absl::StatusOr<int> world = GetInt(lookup, "SLURM_NTASKS", 1, true);
    absl::StatusOr<int> local = GetInt(lookup, "SLURM_LOCALID", 0, false);
    if (!rank.ok()) return rank.status();
    if (!world.ok()) return world.status();
    if (!local.ok()) return local.status();
    env.rank = *rank;
    env.world_size = *world;
    env.local_rank = *local;
    const char* tpn = Get(lookup, "SLURM_STEP_TASKS_PER_NODE");
    if (tpn == nullptr) tpn = Get(lookup, "SLURM_TASKS_PER_NODE");
    env.local_size = tpn ? FirstTasksPerNode(tpn) : env.world_size;
    absl::StatusOr<int> nodes = GetInt(lookup, "SLURM_STEP_NUM_NODES", 0, false);
    if (nodes.ok() && *nodes == 0) nodes = GetInt(lookup, "SLURM_NNODES", 1, false);
    if (!nodes.ok()) return nodes.status();
    env.nodes = std::max(*nodes, 1);
    const char* nodelist = Get(lookup, "SLURM_STEP_NODELIST");
    if (nodelist == nullptr) nodelist = Get(lookup, "SLURM_JOB_NODELIST");
    if (nodelist == nullptr) nodelist = Get(lookup, "SLURM_NODELIST");
    if (nodelist != nullptr) {
      absl::StatusOr<std::string> first = FirstHostOfNodelist(nodelist);
      if (!first.ok()) return first.status();
      env.master_addr = *first;
      env.master_is_slurm_node = true;
    }
    // Two probe steps of different jobs may share a node: derive the port from the
    // job and step ids so they do not collide (MASTER_PORT overrides).
    absl::StatusOr<int> job = GetInt(lookup, "SLURM_JOB_ID", 0, false);
    absl::StatusOr<int> step = GetInt(lookup, "SLURM_STEP_ID", 0, false);
    env.master_port =
        20000 + static_cast<int>(((job.ok() ? *job : 0) * 7 + (step.ok() ? *step : 0)) % 20000);
  } else {
    return env;  // one process, nothing to discover
  }
  if (const char* addr = Get(lookup, "MASTER_ADDR")) {
    env.master_addr = addr;
    env.master_is_slurm_node = false;
  }
  absl::StatusOr<int> port = GetInt(lookup, "MASTER_PORT", env.master_port, false);
  if (!port.ok()) return port.status();
  env.master_port = *port;
  if (env.world_size < 1 || env.rank >= env.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", env.rank, " is outside world size ", env.world_size));
  }
  if (env.master_port <= 0 || env.master_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("bad MASTER_PORT ", env.master_port));
  }
  return env;
}

absl::StatusOr<std::string> ExchangeRootBlob(const DistEnv& env, const std::string& root_blob,
                                             absl::Duration timeout) {
  if (env.world_size <= 1) return root_blob;
  const Deadline d = Deadline::In(timeout);
  return env.rank == 0 ? RunRoot(env, root_blob, d) : RunPeer(env, d);
}

}  // namespace xdeep::profiler
