// The assembled daemon over a real unix socket: health, errors as gRPC
// statuses, graceful shutdown.
#include "daemon/server.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "xdeep/v1/tuning.grpc.pb.h"

namespace xdeep::daemon {
namespace {

namespace v1 = xdeep::v1;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/xdeepd_test_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    config_.server.listen = "unix://" + dir_ + "/d.sock";
    config_.store.path = dir_ + "/d.db";
    config_.store.jobcomp_spool = dir_ + "/jobcomp";
    std::filesystem::create_directories(config_.store.jobcomp_spool);
    config_.identity.mode = "none";
    auto daemon = Daemon::Start(config_);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
    stub_ = v1::Tuning::NewStub(
        grpc::CreateChannel(config_.server.listen, grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }

  // What the daemon answers to a Bind of a decision it never made.
  grpc::StatusCode BindUnknownDecision() {
    v1::BindRequest req;
    req.set_decision_id("nope");
    req.set_job_id(3);
    v1::BindResponse resp;
    grpc::ClientContext ctx;
    return stub_->Bind(&ctx, req, &resp).error_code();
  }

  std::string dir_;
  DaemonConfig config_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<v1::Tuning::Stub> stub_;
};

TEST_F(ServerTest, BadWorkloadIsInvalidArgument) {
  v1::TuneRequest req;
  req.mutable_workload()->set_toml("this is not toml = = =");
  req.mutable_workload()->set_source_name("w.toml");
  grpc::ClientContext ctx;
  auto reader = stub_->Tune(&ctx, req);
  v1::TuneEvent event;
  while (reader->Read(&event)) {
  }
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("w.toml:1"), std::string::npos) << status.error_message();
}

TEST_F(ServerTest, BindUnknownDecisionIsNotFound) {
  EXPECT_EQ(BindUnknownDecision(), grpc::StatusCode::NOT_FOUND);
}

// An admin starts a second daemon on the running one's configuration: refused
// before it opens or binds anything, and the first keeps serving on its socket.
TEST_F(ServerTest, SecondDaemonOnTheSameSpoolOrDatabaseIsRefused) {
  auto second = Daemon::Start(config_);
  ASSERT_FALSE(second.ok());
  std::string message(second.status().message());
  EXPECT_NE(message.find("jobcomp spool " + config_.store.jobcomp_spool), std::string::npos)
      << message;
  EXPECT_NE(message.find("pid " + std::to_string(getpid())), std::string::npos) << message;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/d.sock"));
  // Its own spool and socket, the same database: refused for the database.
  DaemonConfig other = config_;
  other.store.jobcomp_spool = dir_ + "/other-jobcomp";
  other.server.listen = "unix://" + dir_ + "/other.sock";
  second = Daemon::Start(other);
  ASSERT_FALSE(second.ok());
  message = std::string(second.status().message());
  EXPECT_NE(message.find("ledger database " + config_.store.path), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/other.sock"));
  // The first daemon still answers.
  EXPECT_EQ(BindUnknownDecision(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServerTest, MungeRefusesMissingCredential) {
  daemon_.reset();
  config_.identity.mode = "munge";
  auto daemon = Daemon::Start(config_);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  daemon_ = std::move(*daemon);
  stub_ = v1::Tuning::NewStub(
      grpc::CreateChannel(config_.server.listen, grpc::InsecureChannelCredentials()));
  v1::BindRequest req;
  v1::BindResponse resp;
  grpc::ClientContext ctx;
  EXPECT_EQ(stub_->Bind(&ctx, req, &resp).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// grpc.health.v1.Health/Check with an empty request (all services); the
// reply's field 1 is the serving status (1 = SERVING).
TEST_F(ServerTest, HealthServiceSaysServing) {
  auto channel = grpc::CreateChannel(config_.server.listen, grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  grpc::ClientContext ctx;
  grpc::ByteBuffer request, reply;
  grpc::Slice empty("");
  request = grpc::ByteBuffer(&empty, 1);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &reply,
                    [&](grpc::Status s) {
                      std::lock_guard lock(mu);
                      status = s;
                      done = true;
                      cv.notify_one();
                    });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done; });
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(reply.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
}

// xdeep.v1.Tuning/Health: no credential (munge mode here), the daemon's
// version and schema versions; a client of another version is logged once.
TEST_F(ServerTest, HealthSaysTheVersionAndLogsASkewOnce) {
  daemon_.reset();
  config_.identity.mode = "munge";
  auto daemon = Daemon::Start(config_);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  daemon_ = std::move(*daemon);
  stub_ = v1::Tuning::NewStub(
      grpc::CreateChannel(config_.server.listen, grpc::InsecureChannelCredentials()));
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  for (const char* client : {XDEEP_VERSION, "0.0.1-skewed", "0.0.1-skewed"}) {
    v1::HealthRequest req;
    req.set_client_version(client);
    v1::HealthResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->Health(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.version(), XDEEP_VERSION);
    EXPECT_EQ(resp.listen(), config_.server.listen);
    EXPECT_GT(resp.started_unix(), 0);
    EXPECT_GE(resp.store_schema(), 2);
    EXPECT_GE(resp.ledger_schema(), 3);
  }
  spdlog::default_logger()->sinks().pop_back();
  const std::string text = log.str();
  const std::string skew =
      std::string("client_version=0.0.1-skewed daemon_version=") + XDEEP_VERSION;
  const size_t first = text.find(skew);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(skew, first + 1), std::string::npos) << "logged once per version: " << text;
  EXPECT_EQ(text.find(std::string("client_version=") + XDEEP_VERSION), std::string::npos) << text;
}

TEST(TcpServerTest, ListensOnTcpWhenConfigured) {
  DaemonConfig config;
  config.server.listen = "127.0.0.1:0";
  config.store.path = ":memory:";
  config.identity.mode = "none";
  auto daemon = Daemon::Start(config);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_GT((*daemon)->bound_port(), 0);
  auto stub = v1::Tuning::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string((*daemon)->bound_port()), grpc::InsecureChannelCredentials()));
  v1::BindRequest req;
  v1::BindResponse resp;
  grpc::ClientContext ctx;
  EXPECT_EQ(stub->Bind(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(LoadHardwareProfileTest, UnknownBuiltinListsTheKnownOnes) {
  HardwareConfig hw;
  hw.profile = "tpu-v9";
  auto p = LoadHardwareProfile(hw);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message()).find("h100-sxm"), std::string::npos);
}

}  // namespace
}  // namespace xdeep::daemon
