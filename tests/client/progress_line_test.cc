// A progress line redraws in place on a terminal (a real pty) and prints few
// plain lines elsewhere: a new one when what it says changes, not when only
// its figures do, and at least one a minute.
#include "client/progress_line.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace xdeep::client {
namespace {

using std::chrono::seconds;

TEST(ProgressLine, PlainLinesOnlyWhenTheTextChangesOrAMinutePassed) {
  std::vector<std::string> lines;
  ProgressLine line({}, [&](const std::string& l) { lines.push_back(l); });
  const auto t0 = ProgressLine::Clock::time_point{};
  line.Update("probe job 7: PENDING, 0:01 elapsed, at most 5:00", t0 + seconds(1));
  line.Update("probe job 7: PENDING, 0:06 elapsed, at most 5:00", t0 + seconds(6));
  line.Update("probe job 7: RUNNING, 0:11 elapsed, at most 5:00", t0 + seconds(11));
  line.Update("probe job 7: RUNNING, 0:16 elapsed, at most 5:00", t0 + seconds(16));
  line.Update("probe job 7: RUNNING, 1:11 elapsed, at most 5:00", t0 + seconds(71));
  line.Done();
  const std::vector<std::string> want = {"probe job 7: PENDING, 0:01 elapsed, at most 5:00",
                                         "probe job 7: RUNNING, 0:11 elapsed, at most 5:00",
                                         "probe job 7: RUNNING, 1:11 elapsed, at most 5:00"};
  EXPECT_EQ(lines, want);
}

TEST(ProgressLine, RedrawsOneLineOnATerminal) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  auto writer = TerminalWriter(slave);
  ASSERT_TRUE(writer) << "a pty is a terminal";
  int plain = 0;
  {
    ProgressLine line(writer, [&](const std::string&) { ++plain; });
    line.Update("waiting 0:01");
    line.Update("waiting 0:02");
  }  // the destructor ends the line
  EXPECT_EQ(plain, 0);
  // The pty hands each write over on its own: read until the line's end
  // arrives (or a second passes without more).
  std::string seen;
  pollfd ready{master, POLLIN, 0};
  while (seen.find('\n') == std::string::npos && poll(&ready, 1, 1000) == 1) {
    char buf[256];
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  // Carriage return + erase line before each redraw, one newline at the end
  // (the pty turns "\n" into "\r\n").
  EXPECT_EQ(seen, "\r\033[Kwaiting 0:01\r\033[Kwaiting 0:02\r\n");
  close(master);
  close(slave);
}

TEST(ProgressLine, APipeIsNoTerminal) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_FALSE(TerminalWriter(fds[1]));
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace xdeep::client
