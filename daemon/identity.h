// Who is calling: the uid/gid MUNGE vouches for. The daemon never takes a uid
// from a request field; a forged, expired or replayed credential is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace xdeep::daemon {

struct Caller {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string user;  // from the daemon host's passwd; the uid as text if unknown
};

// The user name of `uid` on this host, or the number as text.
std::string UserName(uint32_t uid);

class Authenticator {
 public:
  virtual ~Authenticator() = default;
  virtual absl::StatusOr<Caller> Verify(const std::string& credential) const = 0;
};

// Decodes credentials with libmunge (munged must run on the daemon's host).
std::unique_ptr<Authenticator> MakeMungeAuthenticator(std::string socket_path);

// Accepts every request as `uid` of the daemon's own process; for single-user
// test setups where the site has no MUNGE ([identity] mode = "none").
std::unique_ptr<Authenticator> MakeTrustingAuthenticator();

}  // namespace xdeep::daemon
