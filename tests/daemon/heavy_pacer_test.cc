// The heavy lane's pacing (heavy_pacer.h), on a simulated clock: how long it
// sleeps for the CPU it used, and when it must not sleep at all.
#include "daemon/heavy_pacer.h"

#include <gtest/gtest.h>

#include <chrono>

namespace xdeep::daemon {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// A heavy thread's wall clock and CPU clock; a sleep moves only the wall clock.
struct SimulatedThread {
  HeavyPacer::Clock::time_point wall{std::chrono::hours(1)};
  double cpu_s = 0;
  microseconds slept{0};
  int naps = 0;

  HeavyPacer::Options Options() {
    HeavyPacer::Options o;
    o.now = [this] { return wall; };
    o.thread_cpu_s = [this] { return cpu_s; };
    o.sleep = [this](microseconds d) {
      wall += d;
      slept += d;
      ++naps;
    };
    return o;
  }
  // Computes for `d`: both clocks move.
  void Run(microseconds d) {
    wall += d;
    cpu_s += std::chrono::duration<double>(d).count();
  }
  HeavyPacer::Clock::time_point Far() const { return wall + std::chrono::hours(1); }
};

const auto kNeverGone = [] { return false; };

TEST(HeavyPacerTest, OwesNothingForWhatTheThreadUsedBeforeItsFirstCheckpoint) {
  SimulatedThread t;
  t.cpu_s = 10;
  HeavyPacer pacer(t.Options());
  pacer.NoteOrdinary();
  pacer.Checkpoint(t.Far(), kNeverGone);
  EXPECT_EQ(t.slept, microseconds(0));
}

TEST(HeavyPacerTest, RunsUnpacedWhileNoOrdinaryRequestArrives) {
  SimulatedThread t;
  HeavyPacer pacer(t.Options());
  pacer.Checkpoint(t.Far(), kNeverGone);
  for (int i = 0; i < 20; ++i) {
    t.Run(milliseconds(50));
    pacer.Checkpoint(t.Far(), kNeverGone);
  }
  EXPECT_EQ(t.slept, microseconds(0));
}

TEST(HeavyPacerTest, HoldsItsShareWhileOrdinaryRequestsArrive) {
  SimulatedThread t;
  HeavyPacer::Options o = t.Options();
  o.share = 0.2;
  HeavyPacer pacer(o);
  const auto start = t.wall;
  pacer.Checkpoint(t.Far(), kNeverGone);
  for (int i = 0; i < 100; ++i) {
    pacer.NoteOrdinary();
    t.Run(milliseconds(10));
    pacer.Checkpoint(t.Far(), kNeverGone);
  }
  // 1 s of CPU at 20 % of a core: ~5 s of wall time (less the first burst).
  const double wall_s = std::chrono::duration<double>(t.wall - start).count();
  EXPECT_NEAR(t.cpu_s / wall_s, 0.2, 0.01);
  EXPECT_GE(t.naps, 100);  // short naps: a cancel is noticed within one
}

TEST(HeavyPacerTest, NeverSleepsPastTheDeadline) {
  SimulatedThread t;
  HeavyPacer pacer(t.Options());
  pacer.Checkpoint(t.Far(), kNeverGone);
  pacer.NoteOrdinary();
  t.Run(milliseconds(100));  // owes ~0.5 s at 20 %
  pacer.NoteOrdinary();
  pacer.Checkpoint(t.wall + milliseconds(20), kNeverGone);
  EXPECT_EQ(t.slept, milliseconds(20));
  pacer.Checkpoint(t.wall, kNeverGone);  // the deadline has passed: no sleep at all
  EXPECT_EQ(t.slept, milliseconds(20));
}

TEST(HeavyPacerTest, StopsSleepingOnceTheClientIsGone) {
  SimulatedThread t;
  HeavyPacer pacer(t.Options());
  pacer.Checkpoint(t.Far(), kNeverGone);
  pacer.NoteOrdinary();
  t.Run(milliseconds(100));
  pacer.NoteOrdinary();
  pacer.Checkpoint(t.Far(), [&t] { return t.naps >= 2; });
  EXPECT_EQ(t.naps, 2);
  EXPECT_LE(t.slept, milliseconds(10));
}

TEST(HeavyPacerTest, WhatItUsedInAQuietSpellIsNotOwedAfterwards) {
  SimulatedThread t;
  HeavyPacer pacer(t.Options());
  pacer.Checkpoint(t.Far(), kNeverGone);
  pacer.NoteOrdinary();
  t.Run(milliseconds(100));  // ordinary requests stopped arriving 100 ms ago
  t.Run(milliseconds(100));
  pacer.Checkpoint(t.Far(), kNeverGone);
  EXPECT_EQ(t.slept, microseconds(0));
  pacer.NoteOrdinary();
  t.Run(milliseconds(1));  // within the burst
  pacer.Checkpoint(t.Far(), kNeverGone);
  EXPECT_EQ(t.slept, microseconds(0));
  // The pacing stops, too, once they stop arriving while it sleeps.
  t.Run(milliseconds(60));
  pacer.Checkpoint(t.Far(), kNeverGone);
  EXPECT_GT(t.slept, microseconds(0));
  EXPECT_LE(t.slept, milliseconds(100));
}

}  // namespace
}  // namespace xdeep::daemon
