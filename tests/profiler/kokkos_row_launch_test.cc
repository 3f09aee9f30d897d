// The row kernels' form from device properties (profiler/kokkos_row_launch.h): the
// properties CUDA reports for the two cards measured (runs 14-16), and devices that differ
// in one property at a time.
#include "profiler/kokkos_row_launch.h"

#include <gtest/gtest.h>

#include <limits>

namespace xdeep::profiler::kokkos {
namespace {

// cudaDeviceGetAttribute's figures: SMs, 2 x memory clock (kHz) x bus width, threads and
// registers per SM.
DeviceProperties Device(int sms, double memory_khz, int bus_bits, int threads = 2048,
                        int registers = 65536) {
  return {sms, 2.0 * memory_khz * 1e3 * bus_bits / 8, threads, registers};
}
const DeviceProperties kH100 = Device(132, 2619000, 5120);  // 3.35 TB/s
// Run 16's H200 read 4814 GB/s (3134 MHz x 6144 bit); nvidia-smi's maximum is 3201 MHz.
const DeviceProperties kH200 = Device(132, 3134000, 6144);
const DeviceProperties kH200AtMaxClock = Device(132, 3201000, 6144);

TEST(KokkosRowLaunchTest, H100KeepsTheGroupedFormAtFiveRowsPerSm) {
  EXPECT_EQ(RowsPerMultiprocessor(RowForm::kGrouped, kH100), 5);  // 48 x 256 x 5 of 64 K
  EXPECT_EQ(RowsWanted(kH100), 4);
  const RowLaunch l = ChooseRowLaunch(kH100);
  EXPECT_EQ(l.form, RowForm::kGrouped);
  EXPECT_EQ(l.softmax_form, RowForm::kGrouped);  // run 14: both within 5 % of the twins
  EXPECT_EQ(l.rows_per_multiprocessor, 5);
  EXPECT_EQ(Describe(l), "grouped, 5 rows per SM");
}

// The layer norm compact (run 17: 0.977 / 0.985 of its twin), the softmax in the resident
// form, which holds more rows (8 by threads and its 32 registers; run 20: 0.983 of its twin
// in the probe; the three-pass forms stayed 6-15 % behind theirs: compact 0.849 / 0.858 in
// run 17, lanes 0.894 / 0.900 in run 18, wide 0.930-0.938 in run 19).
TEST(KokkosRowLaunchTest, H200GetsTheCompactFormAndTheSoftmaxTheResidentForm) {
  for (const DeviceProperties& d : {kH200, kH200AtMaxClock}) {
    EXPECT_EQ(RowsWanted(d), 6);
    const RowLaunch l = ChooseRowLaunch(d);
    EXPECT_EQ(l.form, RowForm::kCompact);
    EXPECT_EQ(l.rows_per_multiprocessor, 6);  // 40 x 256 x 6 = 61440 of 64 K registers
    EXPECT_EQ(RowsPerMultiprocessor(RowForm::kLanes, d), 6);
    EXPECT_EQ(RowsPerMultiprocessor(RowForm::kWide, d), 9);  // 56 x 128 x 9 = 64512
    EXPECT_EQ(Describe({RowForm::kWide, 9, RowForm::kWide}), "wide, 9 rows per SM");
    EXPECT_EQ(RowsPerMultiprocessor(RowForm::kResident, d), 8);  // 32 x 256 x 8 = 65536
    EXPECT_EQ(l.softmax_form, RowForm::kResident);
    EXPECT_EQ(Describe(l), "compact, 6 rows per SM; softmax resident");
  }
}

// Where the grouped form already holds the rows wanted, the softmax keeps it too (the
// H100's case above); where the compact form is taken for fewer threads per SM, so is the
// resident form for the softmax (both 6 by threads).
TEST(KokkosRowLaunchTest, TheSoftmaxFollowsTheCompactFormIntoTheResidentForm) {
  const DeviceProperties narrow = Device(132, 3201000, 6144, 1536);
  EXPECT_EQ(ChooseRowLaunch(narrow).form, RowForm::kCompact);
  EXPECT_EQ(ChooseRowLaunch(narrow).softmax_form, RowForm::kResident);
  EXPECT_EQ(RowsPerMultiprocessor(RowForm::kResident, narrow), 6);
  const DeviceProperties wide = Device(264, 3201000, 6144);
  EXPECT_EQ(ChooseRowLaunch(wide).softmax_form, RowForm::kGrouped);
}

// It is the bandwidth per SM that counts, not the card: the H200's bandwidth spread over
// twice the SMs needs no more rows than the grouped form holds; twice the bus on 132 SMs
// wants more rows than either form holds, and gets the form that holds more.
TEST(KokkosRowLaunchTest, BandwidthPerMultiprocessorDecides) {
  const DeviceProperties wide = Device(264, 3201000, 6144);
  EXPECT_EQ(RowsWanted(wide), 3);
  EXPECT_EQ(ChooseRowLaunch(wide).form, RowForm::kGrouped);
  const DeviceProperties fast = Device(132, 3201000, 12288);
  EXPECT_EQ(RowsWanted(fast), 12);
  EXPECT_EQ(ChooseRowLaunch(fast).form, RowForm::kCompact);
  EXPECT_EQ(ChooseRowLaunch(fast).rows_per_multiprocessor, 6);
}

// Registers or threads per SM change what each form holds: with a register file of
// 128 K both hold 8 (threads: 2048 / 256), so the grouped form stays even where 6 rows are
// wanted; with 1536 threads per SM both hold 5 or 6 by threads and registers.
TEST(KokkosRowLaunchTest, WhatEachFormHoldsFollowsRegistersAndThreads) {
  const DeviceProperties big = Device(132, 3201000, 6144, 2048, 131072);
  EXPECT_EQ(RowsPerMultiprocessor(RowForm::kGrouped, big), 8);
  EXPECT_EQ(RowsPerMultiprocessor(RowForm::kCompact, big), 8);
  EXPECT_EQ(ChooseRowLaunch(big).form, RowForm::kGrouped);
  const DeviceProperties narrow = Device(132, 3201000, 6144, 1536);
  EXPECT_EQ(RowsPerMultiprocessor(RowForm::kGrouped, narrow), 5);
  EXPECT_EQ(RowsPerMultiprocessor(RowForm::kCompact, narrow), 6);
  EXPECT_EQ(ChooseRowLaunch(narrow).form, RowForm::kCompact);
  const DeviceProperties few_threads = Device(132, 3201000, 6144, 1024);
  EXPECT_EQ(RowsPerMultiprocessor(RowForm::kCompact, few_threads), 4);
  EXPECT_EQ(ChooseRowLaunch(few_threads).form, RowForm::kGrouped);  // both hold 4
}

// A backend that reports nothing (HIP, a host), or absurd figures: the grouped form, as
// before the choice existed, and no division by zero or overflow.
TEST(KokkosRowLaunchTest, UnknownOrAbsurdPropertiesKeepTheGroupedForm) {
  DeviceProperties none;
  DeviceProperties no_sms = kH200, no_threads = kH200, no_registers = kH200;
  no_sms.multiprocessors = 0;
  no_threads.max_threads_per_multiprocessor = 0;
  no_registers.registers_per_multiprocessor = -1;
  DeviceProperties nan_bw = kH200, inf_bw = kH200, negative_bw = kH200;
  nan_bw.peak_bytes_per_second = std::numeric_limits<double>::quiet_NaN();
  inf_bw.peak_bytes_per_second = std::numeric_limits<double>::infinity();
  negative_bw.peak_bytes_per_second = -4.9e12;
  for (const DeviceProperties& d :
       {none, no_sms, no_threads, no_registers, nan_bw, inf_bw, negative_bw}) {
    EXPECT_EQ(ChooseRowLaunch(d).form, RowForm::kGrouped);
  }
  EXPECT_EQ(RowsWanted(none), 0);
  EXPECT_EQ(Describe(ChooseRowLaunch(none)), "grouped");
  // A petabyte per second on one SM: bounded, and still a form that fits.
  const DeviceProperties huge = Device(1, 1e12, 1 << 20);
  EXPECT_EQ(RowsWanted(huge), 1024);
  EXPECT_EQ(ChooseRowLaunch(huge).form, RowForm::kCompact);
}

}  // namespace
}  // namespace xdeep::profiler::kokkos
