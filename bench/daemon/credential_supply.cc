// CredentialSupply (see credential_supply.h).
#include "bench/daemon/credential_supply.h"

#include <vector>

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
  ++taken_count_;
  const bool low = ready_.size() < ahead_;
  lock.unlock();
  if (low) taken_.notify_one();  // a prefilled supply leaves the maker asleep
  return credential;
}

void CredentialSupply::Prefill(size_t n, int threads) {
  std::vector<std::thread> makers;
  std::vector<std::vector<std::string>> made(static_cast<size_t>(std::max(1, threads)));
  for (size_t t = 0; t < made.size(); ++t) {
    makers.emplace_back([&, t] {
      for (size_t i = t; i < n; i += made.size()) made[t].push_back(client::MungeCredential());
    });
  }
  for (auto& m : makers) m.join();
  {
    std::lock_guard lock(mu_);
    for (auto& list : made) {
      for (auto& c : list) ready_.push_back(std::move(c));
    }
  }
  made_.notify_all();
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
