// xdeepd: the xdeep tuning daemon. Flags live here only; everything else is
// in the daemon library.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "daemon/config.h"
#include "daemon/instance_lock.h"
#include "daemon/log_file.h"
#include "daemon/server.h"

int main(int argc, char** argv) {
  // Debian's abseil is built with assertions on, so every absl::Mutex (gRPC
  // takes several per call) also records a lock-order graph for deadlock
  // detection: 2-3 % of a decision's CPU, for a check meant for debug builds.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"xdeepd: the xdeep tuning daemon"};
  app.set_version_flag("--version", "xdeepd " XDEEP_VERSION);
  std::string config_path = "/etc/xdeep/xdeepd.toml";
  bool check_only = false;
  app.add_option("-c,--config", config_path, "daemon configuration (TOML)");
  app.add_flag("--check-config", check_only, "validate the configuration and exit");
  CLI11_PARSE(app, argc, argv);

  auto config = xdeep::daemon::LoadDaemonConfig(config_path);
  if (!config.ok()) {
    std::cerr << "xdeepd: " << config.status().message() << "\n";
    return 2;
  }
  if (check_only) {
    auto hardware = xdeep::daemon::LoadHardwareProfile(config->hardware);
    if (!hardware.ok()) {
      std::cerr << "xdeepd: " << hardware.status().message() << "\n";
      return 2;
    }
    std::cout << "xdeepd: " << config_path << " is valid\n";
    // Valid even while a daemon runs on it (checked before a reload); the
    // admin starting a second one by hand learns here that it would be refused.
    for (const std::string& note : xdeep::daemon::InstanceLockNotes(config->store)) {
      std::cout << "xdeepd: " << note << "\n";
    }
    return 0;
  }

  // Ledger, WAL, store, spool and log are the daemon user's alone.
  umask(077);
  std::shared_ptr<xdeep::daemon::ReopenableFileSink> log_file;
  try {
    if (!config->log.file.empty()) {
      log_file = std::make_shared<xdeep::daemon::ReopenableFileSink>(config->log.file);
      spdlog::set_default_logger(std::make_shared<spdlog::logger>("xdeepd", log_file));
    }
  } catch (const spdlog::spdlog_ex& e) {
    std::cerr << "xdeepd: cannot open log file: " << e.what() << "\n";
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(config->log.level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l %v");
  spdlog::flush_on(spdlog::level::info);

  // Block the signals before any thread starts so only the signal thread sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  spdlog::info("event=starting version={} config={}", XDEEP_VERSION, config_path);
  auto daemon = xdeep::daemon::Daemon::Start(*config);
  if (!daemon.ok()) {
    spdlog::error("event=start_failed reason=\"{}\"", std::string(daemon.status().message()));
    std::cerr << "xdeepd: " << daemon.status().message() << "\n";
    return 1;
  }

  // systemd (Type=notify) starts units that need xdeepd only now that it
  // answers; without systemd (no NOTIFY_SOCKET) this does nothing.
  sd_notifyf(0, "READY=1\nSTATUS=xdeepd %s serving on %s", XDEEP_VERSION,
             config->server.listen.c_str());

  std::thread signal_thread([&] {
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (sig == SIGHUP) {
        // logrotate moved the log away: the next line goes to a new file.
        sd_notify(0, "RELOADING=1");
        std::string error;
        if (log_file != nullptr && !log_file->Reopen(&error)) {
          spdlog::error("event=log.reopen_failed reason=\"{}\"", error);
        } else if (log_file != nullptr) {
          spdlog::info("event=log.reopened version={}", XDEEP_VERSION);
        }
        (void)(*daemon)->ReloadPolicy();  // logs the outcome; a bad file keeps the old policy
        sd_notify(0, "READY=1");
        continue;
      }
      spdlog::info("event=signal signal={}", sig);
      sd_notify(0, "STOPPING=1");
      (*daemon)->Shutdown();
      return;
    }
  });
  (*daemon)->Wait();
  signal_thread.join();
  daemon->reset();
  spdlog::info("event=stopped");
  return 0;
}
