// The row kernels' launch from device properties (profiler/kokkos_row_launch.h): the
// properties CUDA reports for the two cards measured (runs 14 and 15), and devices that
// differ in one property at a time.
#include "profiler/kokkos_row_launch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace xdeep::profiler::kokkos {
namespace {

// cudaDeviceGetAttribute's figures: SMs, 2 x memory clock (kHz) x bus width, threads and
// registers per SM, warp.
DeviceProperties Device(int sms, double memory_khz, int bus_bits, int threads = 2048,
                        int registers = 65536) {
  return {sms, 2.0 * memory_khz * 1e3 * bus_bits / 8, threads, registers, 32};
}
const DeviceProperties kH100 = Device(132, 2619000, 5120);  // 3.35 TB/s
const DeviceProperties kH200 = Device(132, 3201000, 6144);  // 4.92 TB/s

TEST(KokkosRowLaunchTest, H100KeepsTheGroupedFormAtFiveRowsPerSm) {
  EXPECT_EQ(GroupedRowsPerMultiprocessor(kH100), 5);  // 47 registers x 256 threads
  EXPECT_EQ(RowsWanted(kH100), 4);
  const RowLaunch l = ChooseRowLaunch(kH100);
  EXPECT_EQ(l.form, RowForm::kGrouped);
  EXPECT_EQ(l.team_size, 256);
  EXPECT_EQ(l.rows_per_multiprocessor, 5);
}

TEST(KokkosRowLaunchTest, H200GetsSixLeanRowsPerSm) {
  EXPECT_EQ(RowsWanted(kH200), 6);
  const RowLaunch l = ChooseRowLaunch(kH200);
  EXPECT_EQ(l.form, RowForm::kLean);
  EXPECT_EQ(l.team_size, 320);  // 6 x 320 = 1920 threads; a 7th would need 2240
  EXPECT_EQ(l.rows_per_multiprocessor, 6);
  EXPECT_EQ(Describe(l), "lean, team 320, 6 rows per SM");
}

// It is the bandwidth per SM that counts, not the card: the H200's bandwidth spread over
// twice the SMs needs no more rows than the grouped form holds.
TEST(KokkosRowLaunchTest, BandwidthPerMultiprocessorDecides) {
  const DeviceProperties wide = Device(264, 3201000, 6144);
  EXPECT_EQ(RowsWanted(wide), 3);
  EXPECT_EQ(ChooseRowLaunch(wide).form, RowForm::kGrouped);
  // Twice the H200's bus on its SMs: as many rows as 256-thread teams fit, no more.
  const RowLaunch fast = ChooseRowLaunch(Device(132, 3201000, 12288));
  EXPECT_EQ(fast.form, RowForm::kLean);
  EXPECT_EQ(fast.rows_per_multiprocessor, 8);
  EXPECT_EQ(fast.team_size, 256);
}

// 1536 threads per SM (as on sm_86 / sm_89): the grouped form holds 5 rows by registers
// and threads alike; 6 lean rows take 256 threads each.
TEST(KokkosRowLaunchTest, FewerThreadsPerMultiprocessor) {
  const DeviceProperties d = Device(132, 3201000, 6144, 1536);
  EXPECT_EQ(GroupedRowsPerMultiprocessor(d), 5);
  const RowLaunch l = ChooseRowLaunch(d);
  EXPECT_EQ(l.form, RowForm::kLean);
  EXPECT_EQ(l.rows_per_multiprocessor, 6);
  EXPECT_EQ(l.team_size, 256);
}

// Half the register file: the grouped form holds 2 rows, and no lean launch that would
// hold more fits its registers (4 x 512 x 32 > 32 K), so it stays grouped rather than
// launch teams that cannot be resident.
TEST(KokkosRowLaunchTest, LeanNeverAsksForMoreRegistersThanTheSmHas) {
  const DeviceProperties small = Device(132, 2619000, 5120, 2048, 32768);
  EXPECT_EQ(GroupedRowsPerMultiprocessor(small), 2);
  const RowLaunch l = ChooseRowLaunch(small);
  EXPECT_EQ(l.form, RowForm::kGrouped);
  for (const DeviceProperties& d : {kH100, kH200, small, Device(132, 3201000, 12288, 1536)}) {
    const RowLaunch c = ChooseRowLaunch(d);
    if (c.form != RowForm::kLean) continue;
    EXPECT_LE(c.rows_per_multiprocessor * c.team_size * kLeanRegisters,
              d.registers_per_multiprocessor);
    EXPECT_LE(c.team_size, kLeanMaxTeamSize);
  }
}

// The team size holds exactly the rows asked for by the thread count.
TEST(KokkosRowLaunchTest, LeanTeamSizeHoldsExactlyTheRows) {
  for (int rows = 4; rows <= 8; ++rows) {
    const int team = LeanTeamSize(rows, kH200);
    ASSERT_GT(team, 0) << rows;
    EXPECT_EQ(team % 32, 0) << rows;
    EXPECT_LE(rows * team, 2048) << rows;
    EXPECT_GT((rows + 1) * team, 2048) << rows;
  }
  EXPECT_EQ(LeanTeamSize(3, kH200), 0);  // 672 threads: above the launch bounds
  EXPECT_EQ(LeanTeamSize(0, kH200), 0);
  EXPECT_EQ(LeanTeamSize(-2, kH200), 0);
}

// A backend that reports nothing (HIP, a host), or absurd figures: the grouped form, as
// before the choice existed, and no division by zero or overflow.
TEST(KokkosRowLaunchTest, UnknownOrAbsurdPropertiesKeepTheGroupedForm) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  DeviceProperties none;
  DeviceProperties no_sms = kH200, no_threads = kH200, no_registers = kH200, no_warp = kH200;
  no_sms.multiprocessors = 0;
  no_threads.max_threads_per_multiprocessor = 0;
  no_registers.registers_per_multiprocessor = -1;
  no_warp.warp_size = 0;
  DeviceProperties nan_bw = kH200, inf_bw = kH200, negative_bw = kH200;
  nan_bw.peak_bytes_per_second = nan;
  inf_bw.peak_bytes_per_second = inf;
  negative_bw.peak_bytes_per_second = -4.9e12;
  for (const DeviceProperties& d :
       {none, no_sms, no_threads, no_registers, no_warp, nan_bw, inf_bw, negative_bw}) {
    const RowLaunch l = ChooseRowLaunch(d);
    EXPECT_EQ(l.form, RowForm::kGrouped);
    EXPECT_EQ(l.team_size, 256);
  }
  EXPECT_EQ(RowsWanted(none), 0);
  EXPECT_EQ(Describe(ChooseRowLaunch(none)), "grouped, team 256");
  // A petabyte per second on one SM: bounded, and still a launch that fits.
  const RowLaunch huge = ChooseRowLaunch(Device(1, 1e12, 1 << 20));
  EXPECT_EQ(RowsWanted(Device(1, 1e12, 1 << 20)), 1024);
  EXPECT_EQ(huge.form, RowForm::kLean);
  EXPECT_EQ(huge.rows_per_multiprocessor, 8);
}

}  // namespace
}  // namespace xdeep::profiler::kokkos
