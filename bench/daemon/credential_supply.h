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

 private:
  void Make();

  const size_t ahead_;
  std::mutex mu_;
  std::condition_variable taken_, made_;
  std::deque<std::string> ready_;
  bool stopping_ = false;
  std::thread maker_;
};

}  // namespace xdeep::bench
