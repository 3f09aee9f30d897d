// The admission socket (daemon/admit_socket.h) with xdeep-admit's client
// (client/admit_client.h): the kernel's word on the caller decides, a caller
// who may not ask is refused before anything is read, and no client can hold
// the serving thread longer than its I/O timeout.
#include "daemon/admit_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>

#include "client/admit_client.h"
#include "client/admit_wire.h"
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

class AdmitSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/admit_socket_test_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/a.sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A socket whose handler admits when the caller is `allowed_uid`, naming
  // the caller's uid and the request's partition in the decision id.
  std::unique_ptr<AdmitSocket> Start(uint32_t allowed_uid, milliseconds io_timeout) {
    auto s = AdmitSocket::Start(
        path_,
        {.may_ask =
             [allowed_uid](const Caller& c) {
               return c.uid == allowed_uid
                          ? absl::OkStatus()
                          : absl::PermissionDeniedError("not a controller user: " + c.user);
             },
         .admit =
             [this](const Caller& c, const xdeep::v1::AdmitRequest& req,
                    xdeep::v1::AdmitResponse* resp) {
               ++admitted_;
               resp->set_admitted(true);
               resp->set_decision_id(std::to_string(c.uid) + "/" + req.partition());
               return absl::OkStatus();
             }},
        io_timeout);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  bool Ask(const std::string& partition, client::AdmitAnswer* answer, client::ClientError* error,
           milliseconds timeout = milliseconds(3000)) {
    client::AdmitQuery q;
    q.partition = partition;
    q.job_uid = 1234;
    return client::AskAdmission(path_, q, steady_clock::now() + timeout, answer, error);
  }

  std::string dir_, path_;
  std::atomic<int> admitted_{0};
};

TEST_F(AdmitSocketTest, TheKernelNamesTheCaller) {
  auto socket = Start(getuid(), milliseconds(2000));
  client::AdmitAnswer answer;
  client::ClientError error;
  ASSERT_TRUE(Ask("gpu", &answer, &error)) << error.message;
  EXPECT_TRUE(answer.admitted);
  EXPECT_EQ(answer.decision_id, std::to_string(getuid()) + "/gpu");
  EXPECT_EQ(std::filesystem::status(path_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0666));
}

TEST_F(AdmitSocketTest, OthersAreRefusedBeforeTheySendAByte) {
  auto socket = Start(getuid() + 1, milliseconds(5000));
  // A caller who sends nothing gets the refusal at once, not after the timeout.
  const int fd = ConnectTo(path_);
  const auto t0 = steady_clock::now();
  client::AdmitFrame frame;
  std::string error;
  ASSERT_TRUE(client::ReadAdmitFrame(fd, t0 + milliseconds(2000), &frame, &error)) << error;
  EXPECT_LT(steady_clock::now() - t0, milliseconds(1000));
  close(fd);
  EXPECT_EQ(frame.status, static_cast<uint8_t>(absl::StatusCode::kPermissionDenied));
  EXPECT_NE(frame.payload.find("not a controller user"), std::string::npos) << frame.payload;
  // Through the client: refused (exit 1 of xdeep-admit), never admitted.
  client::AdmitAnswer answer;
  client::ClientError cerr;
  EXPECT_FALSE(Ask("gpu", &answer, &cerr));
  EXPECT_EQ(cerr.kind, client::ClientError::kRefused);
  EXPECT_EQ(admitted_.load(), 0);
}

TEST_F(AdmitSocketTest, ASilentClientHoldsTheSocketOnlyForItsTimeout) {
  auto socket = Start(getuid(), milliseconds(200));
  const int silent = ConnectTo(path_);  // connects and never writes
  const auto t0 = steady_clock::now();
  client::AdmitAnswer answer;
  client::ClientError error;
  ASSERT_TRUE(Ask("gpu", &answer, &error, milliseconds(3000))) << error.message;
  EXPECT_LT(steady_clock::now() - t0, milliseconds(1500));
  EXPECT_TRUE(answer.admitted);
  close(silent);
}

TEST_F(AdmitSocketTest, MalformedFramesAreRefusedAndServingGoesOn) {
  auto socket = Start(getuid(), milliseconds(1000));
  struct Case {
    std::string bytes;
    std::string says;
  };
  // A length past the limit; a payload that is no AdmitRequest; a request
  // frame with a status byte set; a frame cut short.
  const Case cases[] = {{std::string("\0\x7f\xff\xff\xff", 5), "allowed"},
                        {std::string("\0\0\0\0\x03\xff\xff\xff", 8), "not an AdmitRequest"},
                        {std::string("\x05\0\0\0\0", 5), "not an AdmitRequest"},
                        {std::string("\0\0\0", 3), "closed before"}};
  for (const Case& c : cases) {
    const int fd = ConnectTo(path_);
    ASSERT_EQ(write(fd, c.bytes.data(), c.bytes.size()), static_cast<ssize_t>(c.bytes.size()));
    shutdown(fd, SHUT_WR);
    client::AdmitFrame frame;
    std::string error;
    ASSERT_TRUE(client::ReadAdmitFrame(fd, steady_clock::now() + milliseconds(3000), &frame,
                                       &error))
        << error;
    close(fd);
    EXPECT_EQ(frame.status, static_cast<uint8_t>(absl::StatusCode::kInvalidArgument));
    EXPECT_NE(frame.payload.find(c.says), std::string::npos) << frame.payload;
  }
  EXPECT_EQ(admitted_.load(), 0);
  client::AdmitAnswer answer;
  client::ClientError error;
  EXPECT_TRUE(Ask("gpu", &answer, &error)) << error.message;
}

TEST_F(AdmitSocketTest, NoDaemonIsUnavailableAndTheSocketGoesWithIt) {
  Start(getuid(), milliseconds(1000)).reset();
  EXPECT_FALSE(std::filesystem::exists(path_));
  client::AdmitAnswer answer;
  client::ClientError error;
  EXPECT_FALSE(Ask("gpu", &answer, &error));
  EXPECT_EQ(error.kind, client::ClientError::kUnavailable);
}

// The assembled daemon: the socket sits beside the gRPC one, and the service's
// own rule (controller_users) decides who may ask.
TEST_F(AdmitSocketTest, DaemonServesItBesideItsListenSocket) {
  DaemonConfig config;
  config.server.listen = "unix://" + dir_ + "/d.sock";
  config.store.path = dir_ + "/d.db";
  config.store.jobcomp_spool = dir_ + "/jobcomp";  // not the host's spool
  config.identity.mode = "none";
  config.identity.controller_users = {std::to_string(getuid())};
  path_ = dir_ + "/d.sock.admit";
  EXPECT_EQ(AdmitSocketPath(config.server), path_);
  {
    auto daemon = Daemon::Start(config);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    client::AdmitAnswer answer;
    client::ClientError error;
    ASSERT_TRUE(Ask("gpu", &answer, &error)) << error.message;
    EXPECT_TRUE(answer.admitted);  // advisory partition, no token
    EXPECT_EQ(answer.reason, "partition is not strictly enforced");
  }
  config.identity.controller_users = {"slurm-but-not-us"};
  auto daemon = Daemon::Start(config);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  client::AdmitAnswer answer;
  client::ClientError error;
  EXPECT_FALSE(Ask("gpu", &answer, &error));
  EXPECT_EQ(error.kind, client::ClientError::kRefused);
  EXPECT_NE(error.message.find("controller_users"), std::string::npos) << error.message;
}

TEST(AdmitSocketPathTest, BesideAUnixListenSocketNoneForTcpUnlessSet) {
  ServerConfig s;
  s.listen = "unix:///run/x/d.sock";
  EXPECT_EQ(AdmitSocketPath(s), "/run/x/d.sock.admit");
  s.listen = "0.0.0.0:50051";
  EXPECT_EQ(AdmitSocketPath(s), "");
  s.admit_socket = "/run/x/a.sock";
  EXPECT_EQ(AdmitSocketPath(s), "/run/x/a.sock");
}

}  // namespace
}  // namespace xdeep::daemon
