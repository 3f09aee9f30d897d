// A listening local Unix socket with a stop signal, shared by the daemon's
// two framed sockets (admit_socket.h, client_socket.h). Everyone may connect
// (mode 0666): who may ask is decided per connection, from the kernel's
// word or a MUNGE credential.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace xdeep::daemon {

class UnixListener {
 public:
  // Listens on `path`, replacing a crashed daemon's socket there. `setting`
  // names the configuration key in messages ("[server] admit_socket").
  static absl::StatusOr<std::unique_ptr<UnixListener>> Open(const std::string& path, int backlog,
                                                            std::string_view what,
                                                            std::string_view setting);

  // Closes the socket and removes it.
  ~UnixListener();

  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // The next connection (close-on-exec), or -1 once Stop() was called.
  int Accept();

  // Wakes Accept() and everyone polling stop_fd(), now and later.
  void Stop();

  // Readable once Stop() was called: poll it beside a connection.
  int stop_fd() const { return stop_fd_; }

 private:
  UnixListener() = default;

  std::string path_;
  std::string what_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // an eventfd
};

}  // namespace xdeep::daemon
