// The client socket (daemon/client_socket.h) with the plugin's socket client
// (client/socket_daemon_client.h): Tune streams its events and Report answers
// over it, a refusal reaches the client as one, a client that hangs up
// cancels its search, malformed requests are refused, and no uid can hold
// more than its share of connections (silent ones included).
#include "daemon/client_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "client/admit_wire.h"
#include "client/socket_daemon_client.h"
#include "daemon/server.h"

namespace xdeep::daemon {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

int ConnectTo(const std::string& path) {
  std::string error;
  const int fd = client::ConnectLocalSocket(path, &error);
  EXPECT_GE(fd, 0) << error;
  return fd;
}

client::TuneQuery Query(const std::string& partition) {
  client::TuneQuery q;
  q.mode = "auto";
  q.workload_preset = "gpt-125m";
  q.partition = partition;
  return q;
}

class ClientSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/client_socket_test_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/d.sock.client";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Partition "refuse" is refused; "hang" keeps the stream until cancelled;
  // anything else gets one progress event and a decision naming it.
  std::unique_ptr<ClientSocket> Start(ClientSocket::Limits limits = {}) {
    auto s = ClientSocket::Start(
        path_,
        {.tune =
             [this](const xdeep::v1::TuneRequest& req, std::chrono::system_clock::time_point,
                    std::shared_ptr<TuneStream> stream, const std::string&) {
               ++tuned_;
               if (req.partition() == "refuse") {
                 stream->Finish(absl::PermissionDeniedError("over budget"));
                 return;
               }
               if (req.partition() == "hang") {
                 hung_ = stream;
                 return;
               }
               xdeep::v1::TuneEvent progress;
               progress.mutable_progress()->set_stage("probe");
               progress.mutable_progress()->set_message("waiting");
               stream->Push(progress);
               xdeep::v1::TuneEvent decided;
               decided.mutable_decision()->set_decision_id("d-" + req.partition());
               decided.mutable_decision()->mutable_config()->set_nodes(2);
               decided.mutable_decision()->mutable_config()->set_gpus_per_node(4);
               stream->Push(decided);
               stream->Finish(absl::OkStatus());
             },
         .report =
             [this](const xdeep::v1::ReportRequest& req, xdeep::v1::ReportResponse*) {
               ++reported_;
               return req.decision_id() == "mine" ? absl::OkStatus()
                                                  : absl::PermissionDeniedError(
                                                        "decision belongs to another user");
             }},
        limits);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // The transport alone: the handlers above never look at the credential, so
  // the test needs no munged (MUNGE's own checks: tests/daemon/identity_test.cc).
  std::unique_ptr<client::DaemonClient> Connect() {
    return client::ConnectDaemonSocket(path_, [] { return std::string("test credential"); });
  }

  std::string dir_, path_;
  std::atomic<int> tuned_{0}, reported_{0};
  std::shared_ptr<TuneStream> hung_;
};

TEST_F(ClientSocketTest, TuneStreamsItsEventsAndReportAnswers) {
  auto socket = Start();
  auto c = Connect();
  std::vector<std::string> lines;
  client::TuneAnswer answer;
  client::ClientError error;
  ASSERT_TRUE(c->Tune(
      Query("gpu"), steady_clock::now() + milliseconds(3000),
      [&](const std::string& stage, const std::string& line) { lines.push_back(stage + line); },
      &answer, &error))
      << error.message;
  EXPECT_EQ(answer.decision_id, "d-gpu");
  EXPECT_EQ(answer.best.nodes, 2);
  EXPECT_EQ(lines, std::vector<std::string>{"probewaiting"});
  client::ReportQuery report;
  report.decision_id = "mine";
  EXPECT_TRUE(c->Report(report, steady_clock::now() + milliseconds(3000), &error))
      << error.message;
  EXPECT_EQ(std::filesystem::status(path_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0666));
}

TEST_F(ClientSocketTest, RefusalsReachTheClientAsRefusals) {
  auto socket = Start();
  auto c = Connect();
  client::TuneAnswer answer;
  client::ClientError error;
  EXPECT_FALSE(c->Tune(Query("refuse"), steady_clock::now() + milliseconds(3000), nullptr,
                       &answer, &error));
  EXPECT_EQ(error.kind, client::ClientError::kRefused);
  EXPECT_EQ(error.message, "over budget");
  client::ReportQuery report;
  report.decision_id = "someone-elses";
  EXPECT_FALSE(c->Report(report, steady_clock::now() + milliseconds(3000), &error));
  EXPECT_EQ(error.kind, client::ClientError::kRefused);
  EXPECT_NE(error.message.find("another user"), std::string::npos) << error.message;
}

TEST_F(ClientSocketTest, AClientThatGoesAwayCancelsItsSearch) {
  auto socket = Start();
  auto c = Connect();
  client::TuneAnswer answer;
  client::ClientError error;
  // The client gives up after 200 ms and closes its connection.
  EXPECT_FALSE(c->Tune(Query("hang"), steady_clock::now() + milliseconds(200), nullptr, &answer,
                       &error));
  EXPECT_EQ(error.kind, client::ClientError::kUnavailable);
  const auto gave_up = steady_clock::now();
  ASSERT_NE(hung_, nullptr);
  while (!hung_->cancelled() && steady_clock::now() - gave_up < milliseconds(2000)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(hung_->cancelled());
  EXPECT_LT(steady_clock::now() - gave_up, milliseconds(50));
}

TEST_F(ClientSocketTest, MalformedRequestsAreRefusedAndServingGoesOn) {
  auto socket = Start();
  struct Case {
    std::string bytes;
    std::string says;
  };
  // Past the size limit; no timeout; an unknown kind; no TuneRequest; cut short.
  const Case cases[] = {{std::string("\x01\x7f\xff\xff\xff", 5), "allowed"},
                        {std::string("\x01\0\0\0\x02\0\0", 7), "without its timeout"},
                        {std::string("\x09\0\0\0\x04\0\0\0\x10", 9), "unknown request kind 9"},
                        {std::string("\x01\0\0\0\x07\0\0\0\x10\xff\xff\xff", 12),
                         "not a TuneRequest"},
                        {std::string("\x02\0\0\0\x07\0\0\0\x10\xff\xff\xff", 12),
                         "not a ReportRequest"},
                        {std::string("\x01\0\0", 3), "closed before"}};
  for (const Case& c : cases) {
    const int fd = ConnectTo(path_);
    ASSERT_EQ(write(fd, c.bytes.data(), c.bytes.size()), static_cast<ssize_t>(c.bytes.size()));
    shutdown(fd, SHUT_WR);
    client::AdmitFrame frame;
    std::string error;
    ASSERT_TRUE(client::ReadAdmitFrame(fd, steady_clock::now() + milliseconds(3000), &frame,
                                       &error, client::kClientFrameMaxBytes))
        << error;
    close(fd);
    EXPECT_EQ(frame.status, static_cast<uint8_t>(absl::StatusCode::kInvalidArgument));
    EXPECT_NE(frame.payload.find(c.says), std::string::npos) << frame.payload;
  }
  EXPECT_EQ(tuned_.load() + reported_.load(), 0);
  auto c = Connect();
  client::TuneAnswer answer;
  client::ClientError error;
  EXPECT_TRUE(c->Tune(Query("gpu"), steady_clock::now() + milliseconds(3000), nullptr, &answer,
                      &error))
      << error.message;
}

TEST_F(ClientSocketTest, SilentConnectionsHoldOnlyTheirOwnUsersShare) {
  auto socket = Start({.io_timeout = milliseconds(5000), .per_user = 3, .total = 512});
  // Two silent connections: another request of the same uid is still served
  // at once (each connection has its own thread)...
  const int a = ConnectTo(path_), b = ConnectTo(path_);
  auto c = Connect();
  client::TuneAnswer answer;
  client::ClientError error;
  const auto t0 = steady_clock::now();
  ASSERT_TRUE(c->Tune(Query("gpu"), t0 + milliseconds(3000), nullptr, &answer, &error))
      << error.message;
  EXPECT_LT(steady_clock::now() - t0, milliseconds(1000));
  // ...but a third silent one fills the uid's share: the next is turned away
  // at once with a message, not left waiting.
  // (Once the daemon has accepted it: on a loaded machine that may take a while.)
  const int d = ConnectTo(path_);
  bool turned_away = false;
  for (const auto since = steady_clock::now();
       !turned_away && steady_clock::now() - since < milliseconds(3000);) {
    client::TuneAnswer more;
    turned_away = !c->Tune(Query("gpu"), steady_clock::now() + milliseconds(3000), nullptr, &more,
                           &error);
  }
  ASSERT_TRUE(turned_away);
  EXPECT_EQ(error.kind, client::ClientError::kUnavailable);
  EXPECT_NE(error.message.find("holds 3 connections"), std::string::npos) << error.message;
  close(a);
  close(b);
  close(d);
  // Their threads end on the closed connections; the share is free again.
  const auto closed = steady_clock::now();
  bool served = false;
  while (!served && steady_clock::now() - closed < milliseconds(3000)) {
    client::TuneAnswer again;
    served = c->Tune(Query("gpu"), steady_clock::now() + milliseconds(3000), nullptr, &again,
                     &error);
    if (!served) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(served) << error.message;
}

// The assembled daemon: the socket sits beside a unix listen socket, the
// service answers on it, and it goes with the daemon.
TEST_F(ClientSocketTest, DaemonServesItBesideItsListenSocket) {
  DaemonConfig config;
  config.server.listen = "unix://" + dir_ + "/d.sock";
  config.store.path = dir_ + "/d.db";
  config.store.jobcomp_spool = dir_ + "/jobcomp";  // not the host's spool
  config.identity.mode = "none";
  EXPECT_EQ(client::ClientSocketPath(config.server.listen), path_);
  EXPECT_EQ(client::ClientSocketPath("0.0.0.0:50051"), "");
  {
    auto daemon = Daemon::Start(config);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    auto c = Connect();
    client::ReportQuery report;
    report.decision_id = "no-such-decision";
    client::ClientError error;
    EXPECT_FALSE(c->Report(report, steady_clock::now() + milliseconds(3000), &error));
    EXPECT_EQ(error.kind, client::ClientError::kRefused) << error.message;
  }
  EXPECT_FALSE(std::filesystem::exists(path_));
}

}  // namespace
}  // namespace xdeep::daemon
