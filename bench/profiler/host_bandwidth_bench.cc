// Kokkos host bandwidth probes against a plain C++ loop doing the same work, timed the
// same way in the same run: the ratio shows what the Kokkos layer (Serial backend on
// Debian) costs or gains, so host figures in a report can be read against STREAM-like
// numbers. Usage: profiler_host_bandwidth_bench [elements per array, default 2^23].
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "profiler/kokkos_probes.h"

namespace {

// Median seconds per triad over `samples`, a[i] = b[i] + 3 c[i], fp32 as the probe.
double PlainTriad(int64_t n, int samples) {
  std::vector<float> a(n), b(n, 1.25f), c(n, 0.75f);
  std::vector<double> t;
  for (int s = 0; s < samples + 2; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s >= 2) t.push_back(dt);  // two warm-ups: first touch and page faults
  }
  if (a[n / 2] != 1.25f + 3.0f * 0.75f) std::abort();
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t{1} << 23;
  xdeep::profiler::kokkos::Runtime kokkos;
  xdeep::profiler::KokkosBandwidthOptions o;
  o.elements = n;
  o.row_length = 4;
  o.kernels = {"triad"};
  o.harness.max_samples = 10;
  std::vector<xdeep::profiler::ErrorEntry> errors;
  const auto entries = xdeep::profiler::RunKokkosHostBandwidth(o, &errors);
  if (entries.empty()) {
    std::fprintf(stderr, "kokkos triad failed: %s\n",
                 errors.empty() ? "?" : errors[0].message.c_str());
    return 1;
  }
  const double plain_s = PlainTriad(n, 10);
  const double plain_gbps = 3.0 * n * 4 / plain_s / 1e9;
  std::printf("triad %lld floats: kokkos %.2f GB/s, plain loop %.2f GB/s, ratio %.3f\n",
              static_cast<long long>(n), entries[0].gbps, plain_gbps, entries[0].gbps / plain_gbps);
  return 0;
}
