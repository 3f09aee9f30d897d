// CredentialSupply (see credential_supply.h).
#include "bench/daemon/credential_supply.h"

#include "client/munge_credential.h"

namespace xdeep::bench {

CredentialSupply::CredentialSupply(size_t ahead)
    : ahead_(ahead == 0 ? 1 : ahead), maker_([this] { Make(); }) {}

CredentialSupply::~CredentialSupply() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  taken_.notify_all();
  maker_.join();
}

std::string CredentialSupply::Take() {
  std::unique_lock lock(mu_);
  made_.wait(lock, [this] { return !ready_.empty(); });
  std::string credential = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  taken_.notify_one();
  return credential;
}

void CredentialSupply::Make() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      taken_.wait(lock, [this] { return stopping_ || ready_.size() < ahead_; });
      if (stopping_) return;
    }
    std::string credential = client::MungeCredential();
    {
      std::lock_guard lock(mu_);
      ready_.push_back(std::move(credential));
    }
    made_.notify_one();
  }
}

}  // namespace xdeep::bench
