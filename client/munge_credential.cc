// MUNGE credential encoding (see munge_credential.h).
#include "client/munge_credential.h"

#include <munge.h>

#include <cstdlib>

namespace xdeep::client {

std::string MungeCredential() {
  char* cred = nullptr;
  if (munge_encode(&cred, nullptr, nullptr, 0) != EMUNGE_SUCCESS) {
    std::free(cred);
    return "";
  }
  std::string out = cred;
  std::free(cred);
  return out;
}

}  // namespace xdeep::client
