// MUNGE identity against the real munged: the uid comes from the credential;
// forged, replayed and expired credentials are refused.
#include "daemon/identity.h"

#include <gtest/gtest.h>
#include <munge.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "client/munge_credential.h"

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

// The clients' credentials carry no cipher (client/munge_credential.cc): the
// MAC alone must make them tamper-proof, the replay cache must still hold.
TEST_F(IdentityTest, ClientCredentialsHaveNoCipherButAMac) {
  const std::string cred = client::MungeCredential();
  ASSERT_FALSE(cred.empty());
  munge_ctx_t ctx = munge_ctx_create();
  uid_t uid = 0;
  gid_t gid = 0;
  ASSERT_EQ(munge_decode(cred.c_str(), ctx, nullptr, nullptr, &uid, &gid), EMUNGE_SUCCESS);
  int cipher = -1, mac = -1;
  munge_ctx_get(ctx, MUNGE_OPT_CIPHER_TYPE, &cipher);
  munge_ctx_get(ctx, MUNGE_OPT_MAC_TYPE, &mac);
  munge_ctx_destroy(ctx);
  EXPECT_EQ(cipher, MUNGE_CIPHER_NONE);
  EXPECT_NE(mac, MUNGE_MAC_NONE);
  EXPECT_EQ(uid, getuid());
}

TEST_F(IdentityTest, EveryAlteredCharacterOfAClientCredentialIsRefused) {
  // "MUNGE:" base64 ":"; each character of the base64 swapped for the one
  // whose 6-bit value differs in its top bit (never an unused padding bit),
  // so every field (uid, gid, times, TTL, address, MAC) gets altered in turn.
  constexpr std::string_view kBase64 =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string cred = client::MungeCredential();
  ASSERT_TRUE(cred.starts_with("MUNGE:") && cred.ends_with(":")) << cred;
  int altered = 0;
  for (size_t i = 6; i + 1 < cred.size(); ++i) {
    const size_t value = kBase64.find(cred[i]);
    if (value == std::string_view::npos) continue;  // '=' padding
    std::string forged = cred;
    forged[i] = kBase64[value ^ 32];
    auto caller = auth_->Verify(forged);
    EXPECT_EQ(caller.status().code(), absl::StatusCode::kUnauthenticated)
        << "character " << i << " altered: " << forged;
    ++altered;
  }
  EXPECT_GT(altered, 60);
  // None of the forgeries used up the real one, which works once.
  ASSERT_TRUE(auth_->Verify(cred).ok());
  EXPECT_NE(std::string(auth_->Verify(cred).status().message()).find("replayed"),
            std::string::npos);
}

}  // namespace
}  // namespace xdeep::daemon
