// MUNGE identity against the real munged: the uid comes from the credential;
// forged, replayed and expired credentials are refused.
#include "daemon/identity.h"

#include <gtest/gtest.h>
#include <munge.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace xdeep::daemon {
namespace {

std::string Encode(int ttl_s = 0) {
  munge_ctx_t ctx = munge_ctx_create();
  if (ttl_s > 0) munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl_s);
  char* cred = nullptr;
  munge_err_t err = munge_encode(&cred, ctx, nullptr, 0);
  munge_ctx_destroy(ctx);
  if (err != EMUNGE_SUCCESS) return "";
  std::string out = cred;
  std::free(cred);
  return out;
}

class IdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Encode().empty()) GTEST_SKIP() << "munged is not running";
  }
  std::unique_ptr<Authenticator> auth_ = MakeMungeAuthenticator("");
};

TEST_F(IdentityTest, UidComesFromTheCredential) {
  auto caller = auth_->Verify(Encode());
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ(caller->uid, getuid());
  EXPECT_FALSE(caller->user.empty());
}

TEST_F(IdentityTest, ReplayIsRefused) {
  const std::string cred = Encode();
  ASSERT_TRUE(auth_->Verify(cred).ok());
  auto again = auth_->Verify(cred);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(std::string(again.status().message()).find("replayed"), std::string::npos);
}

TEST_F(IdentityTest, ForgedIsRefused) {
  std::string cred = Encode();
  // Flip a character inside the encrypted payload.
  size_t mid = cred.size() / 2;
  cred[mid] = cred[mid] == 'A' ? 'B' : 'A';
  EXPECT_EQ(auth_->Verify(cred).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth_->Verify("MUNGE:not-a-credential:").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth_->Verify("").status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(IdentityTest, ExpiredIsRefused) {
  const std::string cred = Encode(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto caller = auth_->Verify(cred);
  ASSERT_FALSE(caller.ok());
  EXPECT_NE(std::string(caller.status().message()).find("expired"), std::string::npos)
      << caller.status().message();
}

}  // namespace
}  // namespace xdeep::daemon
