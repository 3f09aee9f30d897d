// Fresh MUNGE credentials made ahead by a thread of their own, each handed out
// once: the client threads that drive calls never wait for munged, and the
// daemon still gets a new credential with every request (encoded moments
// before it is sent; MUNGE's TTL is minutes).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace xdeep::bench {

class CredentialSupply {
 public:
  // Keeps up to `ahead` credentials ready.
  explicit CredentialSupply(size_t ahead);
  ~CredentialSupply();
  CredentialSupply(const CredentialSupply&) = delete;
  CredentialSupply& operator=(const CredentialSupply&) = delete;

  // The next credential (empty when munged cannot be reached).
  std::string Take();
  // Encodes `n` more now, from `threads` threads, before the caller's timed
  // window: each is still handed out once, seconds after it was made (MUNGE's
  // TTL is minutes). On a cluster srun's credential is encoded by its submit
  // host's munged, not by the daemon host's, which this VM's bench shares.
  void Prefill(size_t n, int threads);
  // Credentials handed out so far; those ready now.
  size_t taken() {
    std::lock_guard lock(mu_);
    return taken_count_;
  }
  size_t ready() {
    std::lock_guard lock(mu_);
    return ready_.size();
  }

 private:
  void Make();

  const size_t ahead_;
  std::mutex mu_;
  std::condition_variable taken_, made_;
  std::deque<std::string> ready_;
  size_t taken_count_ = 0;  // guarded by mu_
  bool stopping_ = false;
  std::thread maker_;
};

}  // namespace xdeep::bench
