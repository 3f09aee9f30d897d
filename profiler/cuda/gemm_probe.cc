// cuBLASLt GEMM probe: the workload's GEMM shapes at bf16, fp16, tf32 and fp32.
//
// Row-major C[m,n] = A[m,k] . B[k,n], computed in cuBLASLt's column-major terms as
// C^T = B^T . A^T. A layer's passes store their operands as nn.Linear holds them
// (forward reads the weight transposed, wgrad reads dY transposed), so cuBLAS picks
// the kernels training runs; bench/profiler/compare_torch.py builds the same views for
// torch.matmul. Inputs are random non-zero values; the check recomputes sampled output
// elements in double precision on the host after the timed samples.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cublaslt_shapes.h"
#include "profiler/cuda/cublaslt_util.h"
#include "profiler/cuda/cuda_util.h"
#include "profiler/cuda/kernels.h"
#include "profiler/gpu_probes.h"
#include "spdlog/spdlog.h"

namespace xdeep::profiler {
namespace {

using cuda::DeviceBuffer;
using cuda::LtStatus;
using cuda::StorageType;

// Relative error bound against sum |a_l * b_l|, set by the output's rounding (bf16 8
// bits, fp16 11) and tf32's 10-bit inputs; far above rounding, far below a wrong index.
double Tolerance(DType t) {
  switch (t) {
    case DType::kBf16:
      return 1.6e-2;
    case DType::kFp16:
      return 4e-3;
    case DType::kTf32:
      return 4e-3;
    case DType::kFp32:
      return 1e-5;
  }
  return 1e-2;
}

// One attribute of an algorithm's configuration; -1 where this cuBLASLt lacks it.
int64_t AlgoAttribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  // Attributes are 16, 32 or 64 bits wide and the size passed must match: ask first.
  size_t size = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, nullptr, 0, &size) !=
          CUBLAS_STATUS_SUCCESS ||
      size == 0 || size > sizeof(uint64_t)) {
    return -1;
  }
  uint64_t v = 0;  // little-endian host: a narrower attribute fills the low bytes
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, size, &size) != CUBLAS_STATUS_SUCCESS) {
    return -1;
  }
  return static_cast<int64_t>(v);
}

// The algorithm's kernel in the GEMM's row-major terms (report.h GemmKernel). cuBLAS
// computes C^T (n x m): its tile's and cluster's rows run along our n, columns along m.
GemmKernel KernelOf(const cublasLtMatmulAlgo_t& algo) {
  auto attr = [&](cublasLtMatmulAlgoConfigAttributes_t a) {
    return static_cast<int>(std::max<int64_t>(AlgoAttribute(algo, a), 0));
  };
  GemmKernel k;
  k.algo = static_cast<int>(AlgoAttribute(algo, CUBLASLT_ALGO_CONFIG_ID));  // -1: unreadable
  k.tile_id = attr(CUBLASLT_ALGO_CONFIG_TILE_ID);
  k.stages_id = attr(CUBLASLT_ALGO_CONFIG_STAGES_ID);
  k.swizzle = attr(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  k.reduction = attr(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  k.split_k = std::max(1, attr(CUBLASLT_ALGO_CONFIG_SPLITK_NUM));
  for (const cuda::LtShapeId& t : cuda::kLtTiles) {
    if (t.id == k.tile_id) k.tile_n = t.rows, k.tile_m = t.cols;
  }
  const int cluster = attr(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  for (const cuda::LtShapeId& c : cuda::kLtClusters) {
    if (c.id == cluster) k.cluster_n = c.rows, k.cluster_m = c.cols;
  }
  return k;
}

// The configuration, logged with each candidate's time, so a shape where the probe
// falls behind torch.matmul can be traced to the kernel chosen (torch's profiler
// names its kernel by the same tile / cluster).
std::string AlgoLabel(const cublasLtMatmulAlgo_t& algo) {
  const GemmKernel k = KernelOf(algo);
  return absl::StrCat("id=", k.algo, " tile=", k.tile_id, " (", k.tile_m, "x", k.tile_n,
                      ") stages=", k.stages_id, " splitk=", k.split_k, " swizzle=", k.swizzle,
                      " cluster=", k.cluster_m, "x", k.cluster_n);
}

// A GEMM's cuBLASLt descriptors, operands stored the way PyTorch's nn.Linear (y = x W^T)
// holds them, so cuBLAS picks the kernels training runs: forward reads the weight W
// (out x in) transposed, the weight gradient dY^T X reads dY (tokens x out) transposed,
// dgrad dY W is plain. An odd dimension (a 50257-word vocabulary) then lands in the
// leading dimension it has there.
struct LtGemmDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  bool a_transposed = false, b_transposed = false;

  LtGemmDescriptors() = default;
  LtGemmDescriptors(const LtGemmDescriptors&) = delete;
  LtGemmDescriptors& operator=(const LtGemmDescriptors&) = delete;
  ~LtGemmDescriptors() {
    if (op) cublasLtMatmulDescDestroy(op);
    for (auto* l : {a, b, c}) {
      if (l) cublasLtMatrixLayoutDestroy(l);
    }
  }

  absl::Status Init(const GemmSpec& spec, DType dtype) {
    a_transposed = spec.pass == "wgrad";
    b_transposed = spec.pass == "fwd";
    const cublasComputeType_t compute =
        dtype == DType::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const cudaDataType_t st = StorageType(dtype);
    XDEEP_LT_RETURN(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F));
    // Row-major C = A B computed as column-major C^T = B^T A^T: cuBLAS's "A" is
    // B^T, its "B" is A^T, C^T is n x m (ld n). A stored transposed (k x m,
    // ld m) or B stored transposed (n x k, ld k) flips that operand's op.
    const cublasOperation_t op_b = b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    XDEEP_LT_RETURN(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)));
    XDEEP_LT_RETURN(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)));
    if (b_transposed) {
      XDEEP_LT_RETURN(cublasLtMatrixLayoutCreate(&a, st, spec.k, spec.n, spec.k));
    } else {
      XDEEP_LT_RETURN(cublasLtMatrixLayoutCreate(&a, st, spec.n, spec.k, spec.n));
    }
    if (a_transposed) {
      XDEEP_LT_RETURN(cublasLtMatrixLayoutCreate(&b, st, spec.m, spec.k, spec.m));
    } else {
      XDEEP_LT_RETURN(cublasLtMatrixLayoutCreate(&b, st, spec.k, spec.m, spec.k));
    }
    XDEEP_LT_RETURN(cublasLtMatrixLayoutCreate(&c, st, spec.n, spec.m, spec.n));
    return absl::OkStatus();
  }

  // The heuristic's first `count` algorithms for a workspace of `workspace` bytes,
  // best first; none is run.
  absl::StatusOr<std::vector<cublasLtMatmulHeuristicResult_t>> Heuristic(cublasLtHandle_t handle,
                                                                         size_t workspace,
                                                                         int count) const {
    cublasLtMatmulPreference_t pref = nullptr;
    XDEEP_LT_RETURN(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                         sizeof(workspace));
    std::vector<cublasLtMatmulHeuristicResult_t> found(std::max(count, 1));
    int returned = 0;
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(
        handle, op, a, b, c, c, pref, static_cast<int>(found.size()), found.data(), &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    XDEEP_LT_RETURN(hs);
    if (returned == 0) return absl::NotFoundError("cuBLASLt has no algorithm for this shape");
    found.resize(returned);
    return found;
  }
};

// Shared across probes: one handle and workspace per process, as a framework has.
struct LtContext {
  cublasLtHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  DeviceBuffer workspace;
  cuda::StreamGate gate;  // holds the stream while a timed batch is queued
  ~LtContext() {
    if (handle) cublasLtDestroy(handle);
    if (stream) cudaStreamDestroy(stream);
  }
};

class GemmProbe : public Probe {
 public:
  GemmProbe(LtContext* ctx, GemmSpec spec, DType dtype, const GemmProbeOptions& options)
      : ctx_(ctx),
        spec_(std::move(spec)),
        dtype_(dtype),
        candidates_(options.algo_candidates),
        settle_(options.settle),
        warm_up_(options.warm_up),
        duty_(options.duty) {}
  ~GemmProbe() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }

  // The algorithm timed (valid after Setup).
  GemmKernel Kernel() const { return KernelOf(algo_); }

  std::string Name() const override {
    return absl::StrCat("cublaslt.gemm ", spec_.m, "x", spec_.n, "x", spec_.k, " ",
                        DTypeName(dtype_), " ", spec_.pass);
  }

  absl::Status Setup(const Deadline& deadline) override {
    const int64_t eb = DTypeBytes(dtype_);
    if (absl::Status s = a_.Allocate(spec_.m * spec_.k * eb); !s.ok()) return s;
    if (absl::Status s = b_.Allocate(spec_.k * spec_.n * eb); !s.ok()) return s;
    if (absl::Status s = c_.Allocate(spec_.m * spec_.n * eb); !s.ok()) return s;
    XDEEP_CUDA_RETURN(cuda::LaunchFillRandom(a_.get(), spec_.m * spec_.k, cuda::ElemKindFor(dtype_),
                                             0x1234, ctx_->stream));
    XDEEP_CUDA_RETURN(cuda::LaunchFillRandom(b_.get(), spec_.k * spec_.n, cuda::ElemKindFor(dtype_),
                                             0x5678, ctx_->stream));
    XDEEP_CUDA_RETURN(cudaEventCreate(&start_));
    XDEEP_CUDA_RETURN(cudaEventCreate(&stop_));

    if (absl::Status st = lt_.Init(spec_, dtype_); !st.ok()) return st;
    absl::StatusOr<std::vector<cublasLtMatmulHeuristicResult_t>> heuristic =
        lt_.Heuristic(ctx_->handle, ctx_->workspace.bytes(), candidates_);
    if (!heuristic.ok()) return heuristic.status();
    const std::vector<cublasLtMatmulHeuristicResult_t>& found = *heuristic;
    const int returned = static_cast<int>(found.size());

    // Optional idle before the warm-up (--settle-ms): every shape then starts from the
    // same power state, whatever ran before it, so a baseline measured the same way
    // (compare_torch.py paired) differs from the probe in method only.
    if (settle_ > absl::ZeroDuration()) {
      XDEEP_CUDA_RETURN(cudaStreamSynchronize(ctx_->stream));
      absl::SleepFor(std::min(settle_, deadline.Remaining() / 4));
    }
    // Warm the GPU first: an idle H100/H200 clocks down, and the first timings of a
    // run come out low.
    algo_ = found[0].algo;
    for (absl::Time warm_until = absl::Now() + warm_up_; absl::Now() < warm_until;) {
      absl::StatusOr<double> w = RunBatch(2, deadline);
      if (!w.ok()) break;
    }
    best_index_ = 0;
    if (returned > 1) {
      // Opt-in (--algos N): time the heuristic's first candidates in interleaved rounds
      // and keep each one's best, so clocks still ramping favour no candidate. Timed
      // one after another, rates rose with the candidate's index whatever the kernel
      // (2026-11-26 H200 run 2), and a later, slower kernel won.
      std::vector<double> best_s(returned, 1e30);
      for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < returned; ++i) {
          if (round > 0 && best_s[i] >= 1e30) continue;  // refused this shape before
          algo_ = found[i].algo;
          absl::StatusOr<double> t = RunBatch(3, deadline);
          if (t.ok()) best_s[i] = std::min(best_s[i], *t);
        }
      }
      for (int i = 0; i < returned; ++i) {
        spdlog::debug("xdeep: {} candidate {} [{}]: {:.1f} TFLOP/s", Name(), i,
                      AlgoLabel(found[i].algo),
                      best_s[i] < 1e30 ? spec_.Flops() * 3 / best_s[i] / 1e12 : 0.0);
      }
      // The heuristic's first is what cuBLAS itself runs (torch.matmul launched the
      // same kernel at every bf16 / fp16 shape of run 2); another must be clearly
      // (> 2 %) faster to replace it.
      for (int i = 1; i < returned; ++i) {
        if (best_s[i] < best_s[best_index_] * (best_index_ == 0 ? 0.98 : 1.0)) best_index_ = i;
      }
      if (best_s[best_index_] >= 1e30) return absl::InternalError("no cuBLASLt algorithm ran");
    }
    algo_ = found[best_index_].algo;
    spdlog::debug("xdeep: {} chose candidate {} of {} [{}]", Name(), best_index_, returned,
                  AlgoLabel(algo_));
    return absl::OkStatus();
  }

  absl::StatusOr<double> RunBatch(int reps, const Deadline& deadline) override {
    const float alpha = 1.0f, beta = 0.0f;
    // The stream is held until the whole batch is queued: the events then time the
    // GEMMs back to back, without the first launch's host cost (StreamGate).
    // It opens no earlier than the duty cycle's idle after the last batch (GemmProbeOptions).
    if (absl::Status s = ctx_->gate.Close(ctx_->stream); !s.ok()) return s;
    const absl::Time open_at = absl::Now() + last_batch_ * (1.0 / duty_ - 1.0);
    {
      cuda::GateOpener open(&ctx_->gate);
      XDEEP_CUDA_RETURN(cudaEventRecord(start_, ctx_->stream));
      for (int r = 0; r < reps; ++r) {
        XDEEP_LT_RETURN(cublasLtMatmul(
            ctx_->handle, lt_.op, &alpha, b_.get(), lt_.a, a_.get(), lt_.b, &beta, c_.get(), lt_.c,
            c_.get(), lt_.c, &algo_, ctx_->workspace.get(), ctx_->workspace.bytes(), ctx_->stream));
      }
      XDEEP_CUDA_RETURN(cudaEventRecord(stop_, ctx_->stream));
      absl::SleepFor(open_at - absl::Now());  // (returns at once when negative)
    }
    if (absl::Status s = cuda::WaitEvent(stop_, deadline, nullptr); !s.ok()) return s;
    float ms = 0;
    XDEEP_CUDA_RETURN(cudaEventElapsedTime(&ms, start_, stop_));
    last_batch_ = absl::Milliseconds(ms);
    return ms / 1e3;
  }

  absl::Status Check(const Deadline&) override {
    XDEEP_CUDA_RETURN(cudaStreamSynchronize(ctx_->stream));
    const int64_t eb = DTypeBytes(dtype_);
    std::vector<char> row(spec_.k * eb), col(spec_.k * eb), out(eb);
    for (int s = 0; s < 8; ++s) {
      const int64_t i = (s * 7919 + 13) % spec_.m;
      const int64_t j = (s * 104729 + 31) % spec_.n;
      // Row i of A and column j of B, wherever their storage puts them.
      if (lt_.a_transposed) {
        XDEEP_CUDA_RETURN(cudaMemcpy2D(row.data(), eb, a_.as<char>() + i * eb, spec_.m * eb, eb,
                                       spec_.k, cudaMemcpyDeviceToHost));
      } else {
        XDEEP_CUDA_RETURN(cudaMemcpy(row.data(), a_.as<char>() + i * spec_.k * eb, spec_.k * eb,
                                     cudaMemcpyDeviceToHost));
      }
      if (lt_.b_transposed) {
        XDEEP_CUDA_RETURN(cudaMemcpy(col.data(), b_.as<char>() + j * spec_.k * eb, spec_.k * eb,
                                     cudaMemcpyDeviceToHost));
      } else {
        XDEEP_CUDA_RETURN(cudaMemcpy2D(col.data(), eb, b_.as<char>() + j * eb, spec_.n * eb, eb,
                                       spec_.k, cudaMemcpyDeviceToHost));
      }
      XDEEP_CUDA_RETURN(cudaMemcpy(out.data(), c_.as<char>() + (i * spec_.n + j) * eb, eb,
                                   cudaMemcpyDeviceToHost));
      double ref = 0, mag = 0;
      for (int64_t l = 0; l < spec_.k; ++l) {
        const double p =
            cuda::LoadAsDouble(row.data(), l, dtype_) * cuda::LoadAsDouble(col.data(), l, dtype_);
        ref += p;
        mag += std::abs(p);
      }
      const double got = cuda::LoadAsDouble(out.data(), 0, dtype_);
      if (!std::isfinite(got) || std::abs(got - ref) > Tolerance(dtype_) * mag + 1e-6) {
        return absl::DataLossError(absl::StrCat("data check failed at C[", i, ",", j, "]: got ",
                                                got, ", expected ", ref, " (sum|ab| ", mag, ")"));
      }
    }
    return absl::OkStatus();
  }

 private:
  LtContext* ctx_;
  GemmSpec spec_;
  DType dtype_;
  int candidates_;
  absl::Duration settle_;
  absl::Duration warm_up_;
  double duty_;
  absl::Duration last_batch_ = absl::ZeroDuration();
  DeviceBuffer a_, b_, c_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  LtGemmDescriptors lt_;
  cublasLtMatmulAlgo_t algo_{};
  int best_index_ = -1;
};

// The report's entry for `spec` at `dtype`, before its timing or kernel.
GemmEntry EntryOf(const GemmSpec& spec, DType dtype) {
  GemmEntry e;
  e.m = spec.m;
  e.n = spec.n;
  e.k = spec.k;
  e.dtype = std::string(DTypeName(dtype));
  e.pass = spec.pass;
  e.layer = spec.layer;
  return e;
}

}  // namespace

std::vector<GemmEntry> RunGemmProbes(const GemmProbeOptions& options,
                                     std::vector<ErrorEntry>* errors) {
  std::vector<GemmEntry> out;
  auto fail = [&](const std::string& probe, const absl::Status& s) {
    if (errors) errors->push_back({probe, std::string(s.message())});
  };
  LtContext ctx;
  if (cublasStatus_t s = cublasLtCreate(&ctx.handle); s != CUBLAS_STATUS_SUCCESS) {
    fail("cublaslt.gemm", LtStatus(s, "cublasLtCreate"));
    return out;
  }
  if (absl::Status s =
          cuda::CudaStatus(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking), "stream");
      !s.ok()) {
    fail("cublaslt.gemm", s);
    return out;
  }
  if (absl::Status s = ctx.workspace.Allocate(options.workspace_bytes); !s.ok()) {
    fail("cublaslt.gemm", s);
    return out;
  }
  size_t total = 0;
  for (DType dtype : options.dtypes) {
    for (const GemmSpec& spec : options.gemms) total += spec.RunsAt(dtype) ? 1 : 0;
  }
  size_t started = 0;
  for (DType dtype : options.dtypes) {
    for (const GemmSpec& spec : options.gemms) {
      if (!spec.RunsAt(dtype)) continue;
      if (absl::Now() >= options.stop_starting) {
        fail("cublaslt.gemm",
             absl::DeadlineExceededError(absl::StrFormat(
                 "the run's time limit is near: %d of %d GEMMs skipped (timed %d); give the "
                 "probe a longer --time-limit or fewer shapes",
                 total - started, total, out.size())));
        return out;
      }
      ++started;
      GemmProbe probe(&ctx, spec, dtype, options);
      absl::StatusOr<ProbeResult> r = RunProbe(probe, options.harness);
      if (!r.ok()) {
        fail(probe.Name(), r.status());
        // Work that outlived its deadline is still queued on the stream: every later
        // probe would wait behind it and time out too, so stop the set here.
        if (absl::IsDeadlineExceeded(r.status())) {
          fail("cublaslt.gemm", absl::DeadlineExceededError("remaining GEMM probes skipped"));
          return out;
        }
        continue;
      }
      GemmEntry e = EntryOf(spec, dtype);
      e.timing = TimingFrom(*r);
      e.tflops = spec.Flops() / r->per_op.median / 1e12;
      e.kernel = probe.Kernel();
      out.push_back(e);
    }
  }
  if (ctx.gate.expired() > 0) {
    spdlog::warn(
        "xdeep: {} GEMM batches took longer to queue than the stream hold; their "
        "times include host enqueue",
        ctx.gate.expired());
  }
  return out;
}

std::vector<GemmEntry> QueryGemmHeuristic(const GemmProbeOptions& options,
                                          std::vector<ErrorEntry>* errors) {
  std::vector<GemmEntry> out;
  int unnamed = 0;
  auto fail = [&](const std::string& probe, const absl::Status& s) {
    if (errors) errors->push_back({probe, std::string(s.message())});
  };
  cublasLtHandle_t handle = nullptr;
  if (cublasStatus_t s = cublasLtCreate(&handle); s != CUBLAS_STATUS_SUCCESS) {
    fail("cublaslt.heuristic", LtStatus(s, "cublasLtCreate"));
    return out;
  }
  for (DType dtype : options.dtypes) {
    for (const GemmSpec& spec : options.gemms) {
      if (!spec.RunsAt(dtype)) continue;
      const std::string name = absl::StrCat("cublaslt.heuristic ", spec.m, "x", spec.n, "x", spec.k,
                                            " ", DTypeName(dtype), " ", spec.pass);
      LtGemmDescriptors lt;
      if (absl::Status s = lt.Init(spec, dtype); !s.ok()) {
        fail(name, s);
        continue;
      }
      absl::StatusOr<std::vector<cublasLtMatmulHeuristicResult_t>> found =
          lt.Heuristic(handle, options.workspace_bytes, 1);
      if (!found.ok()) {
        fail(name, found.status());
        continue;
      }
      GemmEntry e = EntryOf(spec, dtype);
      e.kernel = KernelOf(found->front().algo);
      // A kernel without a tile this cuBLASLt names (a newer tile id) tells the
      // model nothing: the shape keeps the best-tile model, and the report
      // stays readable (an answer must carry its tile).
      if (!e.kernel.known()) {
        ++unnamed;
        continue;
      }
      out.push_back(e);
    }
  }
  cublasLtDestroy(handle);
  if (unnamed > 0) {
    spdlog::warn(
        "xdeep: the heuristic's kernel of {} shapes has no tile this probe knows; "
        "their time keeps the best-tile model",
        unnamed);
  }
  return out;
}

}  // namespace xdeep::profiler
