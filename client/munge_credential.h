// A fresh MUNGE credential for the calling process's uid/gid. Every request
// to xdeepd carries one; MUNGE refuses replays, so never reuse it.
#pragma once

#include <string>

namespace xdeep::client {

// Empty when munged cannot be reached (the daemon then says what is wrong).
std::string MungeCredential();

}  // namespace xdeep::client
