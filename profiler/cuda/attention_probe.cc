// Attention probe: unfused self-attention forward (Q.K^T, softmax, P.V) at the
// workload's batch, heads, sequence length and head size, bf16 or fp16.
//
// Layout is PyTorch's [batch*heads, seq, head_dim], row-major and contiguous. In
// cuBLASLt's column-major terms: scores^T = K . Q^T (K transposed, Q not), and
// O^T = V^T . P^T (no transposes), each strided-batched over batch*heads. The data
// check recomputes sampled output rows in double precision on the host.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "profiler/cuda/cublaslt_util.h"
#include "profiler/cuda/cuda_util.h"
#include "profiler/cuda/kernels.h"
#include "profiler/gpu_probes.h"

namespace xdeep::profiler {
namespace {

using cuda::DeviceBuffer;

// One strided-batched matmul: descriptor, layouts and the heuristic's first algorithm.
struct BatchedMatmul {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};

  ~BatchedMatmul() {
    if (op) cublasLtMatmulDescDestroy(op);
    for (auto* l : {a, b, c}) {
      if (l) cublasLtMatrixLayoutDestroy(l);
    }
  }

  static absl::Status Layout(cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows,
                             int64_t cols, int64_t ld, int batch, int64_t stride) {
    XDEEP_LT_RETURN(cublasLtMatrixLayoutCreate(l, t, rows, cols, ld));
    XDEEP_LT_RETURN(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                     sizeof(batch)));
    XDEEP_LT_RETURN(cublasLtMatrixLayoutSetAttribute(
        *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    return absl::OkStatus();
  }

  // Column-major C (m x n) = op(A) . B; A stored (a_rows x a_cols, ld a_rows).
  absl::Status Init(cublasLtHandle_t h, cudaDataType_t t, bool trans_a, int64_t m, int64_t n,
                    int64_t k, int batch, size_t workspace) {
    XDEEP_LT_RETURN(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    XDEEP_LT_RETURN(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    XDEEP_LT_RETURN(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    if (absl::Status s = Layout(&a, t, a_rows, a_cols, a_rows, batch, a_rows * a_cols); !s.ok())
      return s;
    if (absl::Status s = Layout(&b, t, k, n, k, batch, k * n); !s.ok()) return s;
    if (absl::Status s = Layout(&c, t, m, n, m, batch, m * n); !s.ok()) return s;
    cublasLtMatmulPreference_t pref = nullptr;
    XDEEP_LT_RETURN(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                         sizeof(workspace));
    cublasLtMatmulHeuristicResult_t found{};
    int returned = 0;
    const cublasStatus_t hs =
        cublasLtMatmulAlgoGetHeuristic(h, op, a, b, c, c, pref, 1, &found, &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    XDEEP_LT_RETURN(hs);
    if (returned == 0)
      return absl::NotFoundError("cuBLASLt has no algorithm for this attention shape");
    algo = found.algo;
    return absl::OkStatus();
  }

  absl::Status Run(cublasLtHandle_t h, const void* A, const void* B, void* C, void* ws,
                   size_t ws_bytes, cudaStream_t s) const {
    const float alpha = 1.f, beta = 0.f;
    XDEEP_LT_RETURN(
        cublasLtMatmul(h, op, &alpha, A, a, B, b, &beta, C, c, C, c, &algo, ws, ws_bytes, s));
    return absl::OkStatus();
  }
};

class AttentionProbe : public Probe {
 public:
  AttentionProbe(cublasLtHandle_t h, cudaStream_t s, DeviceBuffer* ws, AttentionSpec spec,
                 DType dtype)
      : h_(h), stream_(s), ws_(ws), spec_(spec), dtype_(dtype) {}
  ~AttentionProbe() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }

  std::string Name() const override {
    return absl::StrCat("cublaslt.attention b", spec_.batch, " h", spec_.heads, " s", spec_.seq,
                        " d", spec_.head_dim, spec_.causal ? " causal " : " ", DTypeName(dtype_));
  }

  absl::Status Setup(const Deadline&) override {
    if (dtype_ != DType::kBf16 && dtype_ != DType::kFp16) {
      return absl::InvalidArgumentError("attention is probed in bf16 or fp16");
    }
    const int64_t bh = spec_.batch * spec_.heads, s = spec_.seq, d = spec_.head_dim;
    const int64_t eb = DTypeBytes(dtype_);
    for (DeviceBuffer* b : {&q_, &k_, &v_, &o_}) {
      if (absl::Status st = b->Allocate(bh * s * d * eb); !st.ok()) return st;
    }
    if (absl::Status st = p_.Allocate(bh * s * s * eb); !st.ok()) return st;
    const cuda::ElemKind kind = Kind();
    XDEEP_CUDA_RETURN(cuda::LaunchFillRandom(q_.get(), bh * s * d, kind, 11, stream_));
    XDEEP_CUDA_RETURN(cuda::LaunchFillRandom(k_.get(), bh * s * d, kind, 12, stream_));
    XDEEP_CUDA_RETURN(cuda::LaunchFillRandom(v_.get(), bh * s * d, kind, 13, stream_));
    XDEEP_CUDA_RETURN(cudaEventCreate(&start_));
    XDEEP_CUDA_RETURN(cudaEventCreate(&stop_));
    const cudaDataType_t t = cuda::StorageType(dtype_);
    const int batch = static_cast<int>(bh);
    // scores^T (s x s) = K (s x d, stored d x s) . Q^T (d x s)
    if (absl::Status st = qk_.Init(h_, t, true, s, s, d, batch, ws_->bytes()); !st.ok()) return st;
    // O^T (d x s) = V^T (d x s) . P^T (s x s)
    return pv_.Init(h_, t, false, d, s, s, batch, ws_->bytes());
  }

  absl::StatusOr<double> RunBatch(int reps, const Deadline& deadline) override {
    XDEEP_CUDA_RETURN(cudaEventRecord(start_, stream_));
    for (int r = 0; r < reps; ++r) {
      if (absl::Status s = Forward(); !s.ok()) return s;
    }
    XDEEP_CUDA_RETURN(cudaEventRecord(stop_, stream_));
    if (absl::Status s = cuda::WaitEvent(stop_, deadline, nullptr); !s.ok()) return s;
    float ms = 0;
    XDEEP_CUDA_RETURN(cudaEventElapsedTime(&ms, start_, stop_));
    return ms / 1e3;
  }

  absl::Status Check(const Deadline&) override {
    XDEEP_CUDA_RETURN(cudaStreamSynchronize(stream_));
    const int64_t s = spec_.seq, d = spec_.head_dim, eb = DTypeBytes(dtype_);
    const int64_t bh = spec_.batch * spec_.heads;
    std::vector<char> q(d * eb), k(s * d * eb), v(s * d * eb), o(d * eb);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (int sample = 0; sample < 4; ++sample) {
      const int64_t head = (sample * 7919) % bh;
      const int64_t row = (sample * 104729 + 17) % s;
      const int64_t head_off = head * s * d * eb;
      XDEEP_CUDA_RETURN(cudaMemcpy(q.data(), q_.as<char>() + head_off + row * d * eb, d * eb,
                                   cudaMemcpyDeviceToHost));
      XDEEP_CUDA_RETURN(
          cudaMemcpy(k.data(), k_.as<char>() + head_off, s * d * eb, cudaMemcpyDeviceToHost));
      XDEEP_CUDA_RETURN(
          cudaMemcpy(v.data(), v_.as<char>() + head_off, s * d * eb, cudaMemcpyDeviceToHost));
      XDEEP_CUDA_RETURN(cudaMemcpy(o.data(), o_.as<char>() + head_off + row * d * eb, d * eb,
                                   cudaMemcpyDeviceToHost));
      const int64_t limit = spec_.causal ? row + 1 : s;
      std::vector<double> w(limit);
      double m = -1e300, sum = 0;
      for (int64_t j = 0; j < limit; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < d; ++x) {
          dot += cuda::LoadAsDouble(q.data(), x, dtype_) *
                 cuda::LoadAsDouble(k.data(), j * d + x, dtype_);
        }
        w[j] = dot * scale;
        m = std::max(m, w[j]);
      }
      for (double& x : w) sum += (x = std::exp(x - m));
      for (int64_t x = 0; x < d; ++x) {
        double ref = 0, mag = 0;
        for (int64_t j = 0; j < limit; ++j) {
          const double term = w[j] / sum * cuda::LoadAsDouble(v.data(), j * d + x, dtype_);
          ref += term;
          mag += std::abs(term);
        }
        const double got = cuda::LoadAsDouble(o.data(), x, dtype_);
        // Scores and probabilities are rounded to 16 bits between the kernels.
        if (!std::isfinite(got) || std::abs(got - ref) > 3e-2 * mag + 1e-3) {
          return absl::DataLossError(absl::StrCat("data check failed at head ", head, " row ", row,
                                                  " col ", x, ": got ", got, ", expected ", ref));
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  cuda::ElemKind Kind() const {
    return dtype_ == DType::kBf16 ? cuda::ElemKind::kBf16 : cuda::ElemKind::kFp16;
  }

  absl::Status Forward() {
    const int64_t bh = spec_.batch * spec_.heads;
    if (absl::Status s =
            qk_.Run(h_, k_.get(), q_.get(), p_.get(), ws_->get(), ws_->bytes(), stream_);
        !s.ok()) {
      return s;
    }
    XDEEP_CUDA_RETURN(cuda::LaunchSoftmaxRows(p_.get(), bh * spec_.seq, spec_.seq, Kind(),
                                              1.f / std::sqrt(static_cast<float>(spec_.head_dim)),
                                              spec_.causal, stream_));
    return pv_.Run(h_, v_.get(), p_.get(), o_.get(), ws_->get(), ws_->bytes(), stream_);
  }

  cublasLtHandle_t h_;
  cudaStream_t stream_;
  DeviceBuffer* ws_;
  AttentionSpec spec_;
  DType dtype_;
  DeviceBuffer q_, k_, v_, p_, o_;
  BatchedMatmul qk_, pv_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

std::vector<AttentionEntry> RunAttentionProbes(const AttentionProbeOptions& options,
                                               std::vector<ErrorEntry>* errors) {
  std::vector<AttentionEntry> out;
  auto fail = [&](const std::string& probe, const absl::Status& s) {
    if (errors) errors->push_back({probe, std::string(s.message())});
  };
  if (options.shapes.empty()) return out;
  cublasLtHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    fail("cublaslt.attention", absl::InternalError("cublasLtCreate failed"));
    return out;
  }
  DeviceBuffer ws;
  absl::Status s =
      cuda::CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  if (s.ok()) s = ws.Allocate(options.workspace_bytes);
  if (!s.ok()) {
    fail("cublaslt.attention", s);
  } else {
    bool stop = false;
    for (DType dtype : options.dtypes) {
      if (stop) break;
      if (dtype != DType::kBf16 && dtype != DType::kFp16)
        continue;  // attention trains in 16-bit types
      for (const AttentionSpec& spec : options.shapes) {
        AttentionProbe probe(handle, stream, &ws, spec, dtype);
        absl::StatusOr<ProbeResult> r = RunProbe(probe, options.harness);
        if (!r.ok()) {
          fail(probe.Name(), r.status());
          if (absl::IsDeadlineExceeded(r.status())) {  // the stream is still busy
            stop = true;
            break;
          }
          continue;
        }
        AttentionEntry e;
        e.batch = spec.batch;
        e.heads = spec.heads;
        e.seq = spec.seq;
        e.head_dim = spec.head_dim;
        e.causal = spec.causal;
        e.dtype = std::string(DTypeName(dtype));
        e.timing = TimingFrom(*r);
        e.tflops = spec.Flops() / r->per_op.median / 1e12;
        out.push_back(e);
      }
    }
  }
  ws.Free();
  if (stream) cudaStreamDestroy(stream);
  cublasLtDestroy(handle);
  return out;
}

}  // namespace xdeep::profiler
