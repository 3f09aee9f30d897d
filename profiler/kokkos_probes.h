// Memory-bandwidth probes written as Kokkos kernels (profiler/kokkos_kernels.h): copy,
// triad, the fused AdamW update, layer norm, softmax and a bias + GeLU epilogue, fp32.
//
// They run on Kokkos' default host execution space, and on its default execution space
// where that is a device (a Kokkos built with CUDA or HIP, scripts/build-kokkos.sh).
// Kokkos must be initialised by the caller (kokkos::Runtime in xdeep-probe's main or a
// test environment): Kokkos allows one initialize per process.
#ifndef XDEEP_PROFILER_KOKKOS_PROBES_H_
#define XDEEP_PROFILER_KOKKOS_PROBES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/harness.h"
#include "profiler/kokkos_kernels.h"
#include "profiler/report.h"

namespace xdeep::profiler {

struct KokkosBandwidthOptions {
  int64_t elements = int64_t{1} << 23;  // fp32 per full array
  // Row length of layer_norm, softmax and bias_gelu (a hidden size, a sequence length);
  // rows = elements / row_length.
  int64_t row_length = 4096;
  std::vector<std::string> kernels = kokkos::KernelNames();
  // The row kernels' form; unset: the device's own choice (kokkos::DeviceRowLaunch).
  // Tests set it to run every form on any card.
  std::optional<kokkos::RowLaunch> row_launch;
  HarnessOptions harness;
};

// One BandwidthEntry per kernel that succeeded; failures go to `errors`.
std::vector<BandwidthEntry> RunKokkosHostBandwidth(const KokkosBandwidthOptions& options,
                                                   std::vector<ErrorEntry>* errors);

// The same kernels on Kokkos' default execution space when it is a device (a site
// Kokkos built with CUDA or HIP); an error entry when this Kokkos is host-only.
std::vector<BandwidthEntry> RunKokkosDeviceBandwidth(const KokkosBandwidthOptions& options,
                                                     std::vector<ErrorEntry>* errors);

// The Kokkos version and default execution space, for the report's "versions".
std::string KokkosVersionString();
// How the row kernels run on the device ("compact, 6 rows per SM; softmax resident"), for the same.
std::string KokkosRowLaunchString();
bool KokkosInitialized();
bool KokkosHasDeviceSpace();

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_KOKKOS_PROBES_H_
