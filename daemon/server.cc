// Daemon assembly (see server.h).
#include "daemon/server.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_builder.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"

namespace xdeep::daemon {
namespace {

constexpr std::string_view kUnixPrefix = "unix://";

// A stale socket from a crashed daemon would make bind fail; a live daemon
// on it is an error the admin must see.
absl::Status PrepareUnixSocket(const std::string& listen) {
  if (!listen.starts_with(kUnixPrefix)) return absl::OkStatus();
  std::filesystem::path path(listen.substr(kUnixPrefix.size()));
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    return absl::FailedPreconditionError(
        fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
  }
  std::filesystem::remove(path, ec);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<tuner::HardwareProfile> LoadHardwareProfile(const HardwareConfig& config) {
  if (!config.probe_reports.empty()) {
    const std::string& path = config.probe_reports.front();
    std::ifstream in(path);
    if (!in) {
      return absl::NotFoundError(
          fmt::format("{}: cannot read probe report ([hardware] probe_reports)", path));
    }
    std::stringstream text;
    text << in.rdbuf();
    return tuner::HardwareProfileFromProbeReport(text.str(), path);
  }
  auto profile = tuner::BuiltinHardwareProfile(config.profile);
  if (!profile.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("[hardware] profile = \"{}\" is not a built-in profile; use one of: {}",
                    config.profile, fmt::join(tuner::BuiltinHardwareProfileNames(), ", ")));
  }
  return profile;
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const DaemonConfig& config) {
  auto daemon = std::unique_ptr<Daemon>(new Daemon());
  daemon->config_ = config;

  auto store = Store::Open(config.store.path);
  if (!store.ok()) return store.status();
  daemon->store_ = std::move(*store);

  auto hardware = LoadHardwareProfile(config.hardware);
  if (!hardware.ok()) return hardware.status();
  spdlog::info("event=hardware profile=\"{}\"", hardware->Label());

  daemon->auth_ = config.identity.mode == "munge"
                      ? MakeMungeAuthenticator(config.identity.munge_socket)
                      : MakeTrustingAuthenticator();
  daemon->inventory_ = std::make_unique<SlurmInventory>();
  SlurmInventory* inventory = daemon->inventory_.get();
  daemon->maker_ = std::make_unique<DecisionMaker>(
      config.policy, std::move(*hardware),
      [inventory](const std::string& partition) { return inventory->Shape(partition); },
      daemon->store_.get());
  daemon->work_ = std::make_unique<WorkQueue>(config.server.worker_threads);
  daemon->service_ = std::make_unique<TuningService>(daemon->maker_.get(), daemon->auth_.get(),
                                                     daemon->store_.get(), daemon->work_.get());

  if (absl::Status s = PrepareUnixSocket(config.server.listen); !s.ok()) return s;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.server.listen, grpc::InsecureServerCredentials(),
                           &daemon->bound_port_);
  builder.RegisterService(daemon->service_.get());
  daemon->server_ = builder.BuildAndStart();
  if (daemon->server_ == nullptr) {
    return absl::UnavailableError(fmt::format(
        "cannot listen on {}; is another xdeepd running? ([server] listen)", config.server.listen));
  }
  if (config.server.listen.starts_with(kUnixPrefix)) {
    // Every user's srun connects; identity comes from MUNGE, not from the socket.
    chmod(config.server.listen.substr(kUnixPrefix.size()).c_str(), 0666);
  }
  spdlog::info("event=listening address={} port={} pid={}", config.server.listen,
               daemon->bound_port_, getpid());
  return daemon;
}

void Daemon::Shutdown() {
  if (server_ == nullptr) return;
  spdlog::info("event=shutdown grace_ms={}", config_.server.shutdown_grace_ms);
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(config_.server.shutdown_grace_ms));
}

void Daemon::Wait() {
  if (server_ != nullptr) server_->Wait();
}

Daemon::~Daemon() {
  Shutdown();
  work_.reset();  // joins workers before the maker and store they use go away
}

}  // namespace xdeep::daemon
