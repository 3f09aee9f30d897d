// Memory-bandwidth probes written as Kokkos kernels: copy, triad and a fused Adam
// update (the optimizer step is bandwidth-bound: 4 arrays read, 3 written per element).
//
// They run on Kokkos' default host execution space (Debian's Kokkos is Serial-only);
// a site's own Kokkos build with a device backend runs the same kernels templated on
// its execution space. Kokkos must be initialised by the caller (xdeep-probe's main or
// a test environment): Kokkos allows one initialize per process.
#ifndef XDEEP_PROFILER_KOKKOS_PROBES_H_
#define XDEEP_PROFILER_KOKKOS_PROBES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "profiler/harness.h"
#include "profiler/report.h"

namespace xdeep::profiler {

struct KokkosBandwidthOptions {
  int64_t elements = int64_t{1} << 23;  // per array (doubles / floats)
  std::vector<std::string> kernels = {"copy", "triad", "adam_update"};
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
bool KokkosInitialized();

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_KOKKOS_PROBES_H_
