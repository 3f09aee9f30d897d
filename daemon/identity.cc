// MUNGE-backed Authenticator (see identity.h).
#include "daemon/identity.h"

#include <fmt/format.h>
#include <munge.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "absl/status/status.h"

namespace xdeep::daemon {

namespace {

std::string LookUpUserName(uint32_t uid) {
  struct passwd pw {};
  struct passwd* result = nullptr;
  char buffer[4096];
  if (getpwuid_r(uid, &pw, buffer, sizeof buffer, &result) == 0 && result != nullptr) {
    return result->pw_name;
  }
  return std::to_string(uid);
}

}  // namespace

std::string UserName(uint32_t uid) {
  // Every request names its caller: reading the passwd database each time
  // (open, fstat, read, close) was 3-4 % of a decision's CPU. A name is kept
  // for a minute, so a renamed or new user is seen soon after.
  using Clock = std::chrono::steady_clock;
  constexpr auto kKeep = std::chrono::seconds(60);
  constexpr size_t kMaxKept = 4096;
  struct Kept {
    std::string name;
    Clock::time_point until;
  };
  static std::mutex mu;
  static std::unordered_map<uint32_t, Kept> kept;
  const auto now = Clock::now();
  {
    std::lock_guard lock(mu);
    auto it = kept.find(uid);
    if (it != kept.end() && now < it->second.until) return it->second.name;
  }
  std::string name = LookUpUserName(uid);
  std::lock_guard lock(mu);
  if (kept.size() >= kMaxKept) kept.clear();
  kept[uid] = Kept{name, now + kKeep};
  return name;
}

namespace {

class MungeAuthenticator final : public Authenticator {
 public:
  explicit MungeAuthenticator(std::string socket) : socket_(std::move(socket)) {}

  absl::StatusOr<Caller> Verify(const std::string& credential) const override {
    if (credential.empty()) {
      return absl::UnauthenticatedError(
          "request carries no MUNGE credential; is munged running on the submit host?");
    }
    munge_ctx_t ctx = munge_ctx_create();
    if (ctx == nullptr) return absl::ResourceExhaustedError("munge_ctx_create failed");
    if (!socket_.empty()) munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket_.c_str());
    uid_t uid = 0;
    gid_t gid = 0;
    munge_err_t err = munge_decode(credential.c_str(), ctx, nullptr, nullptr, &uid, &gid);
    std::string why = err == EMUNGE_SUCCESS ? "" : munge_ctx_strerror(ctx);
    munge_ctx_destroy(ctx);
    switch (err) {
      case EMUNGE_SUCCESS:
        return Caller{uid, gid, UserName(uid)};
      case EMUNGE_CRED_EXPIRED:
        return absl::UnauthenticatedError("MUNGE credential expired; check the clocks");
      case EMUNGE_CRED_REPLAYED:
        return absl::UnauthenticatedError("MUNGE credential was replayed");
      case EMUNGE_SOCKET:
        return absl::UnavailableError(fmt::format("cannot reach munged: {}", why));
      default:
        return absl::UnauthenticatedError(fmt::format("invalid MUNGE credential: {}", why));
    }
  }

 private:
  std::string socket_;
};

class TrustingAuthenticator final : public Authenticator {
 public:
  absl::StatusOr<Caller> Verify(const std::string&) const override {
    return Caller{static_cast<uint32_t>(getuid()), static_cast<uint32_t>(getgid()),
                  UserName(getuid())};
  }
};

}  // namespace

std::unique_ptr<Authenticator> MakeMungeAuthenticator(std::string socket_path) {
  return std::make_unique<MungeAuthenticator>(std::move(socket_path));
}

std::unique_ptr<Authenticator> MakeTrustingAuthenticator() {
  return std::make_unique<TrustingAuthenticator>();
}

}  // namespace xdeep::daemon
