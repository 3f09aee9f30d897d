// NCCL collective probes: all-reduce, all-gather, reduce-scatter, broadcast,
// send/recv (ring) and all-to-all over a size sweep, with algbw/busbw as nccl-tests.
//
// Never hang: the communicator is created non-blocking (ncclConfig_t.blocking = 0), so
// init and every call return at once; we poll ncclCommGetAsyncError and the CUDA event
// of each batch against a deadline, and on timeout or error call ncclCommAbort, which
// also unblocks the peers' kernels. A dead peer shows up as such a timeout (or as an
// NCCL remote error) on the survivors.
//
// Every rank must issue the same sequence of calls, so the batch and sample counts are
// fixed from the size alone (HarnessOptions.batch, adaptive_stop = false).
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "profiler/cuda/cuda_util.h"
#include "profiler/cuda/kernels.h"
#include "profiler/gpu_probes.h"
#include "spdlog/spdlog.h"

namespace xdeep::profiler {
namespace {

using cuda::DeviceBuffer;

absl::Status NcclStatus(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess || r == ncclInProgress) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", ncclGetErrorString(r), " - ", ncclGetLastError(comm)));
}

// Polls a non-blocking communicator until its pending operation is done. Enqueueing a
// collective on a non-blocking communicator can return ncclInProgress for a few
// microseconds; sleeping at once (usleep's ~60 us floor) put ~180 us on every small
// message in the first H200 run (data/2026-11-26_h200x2_run1), so spin first.
absl::Status WaitComm(ncclComm_t comm, const Deadline& d, const char* what) {
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
  while (true) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return NcclStatus(r, "ncclCommGetAsyncError", comm);
    if (state == ncclSuccess) return absl::OkStatus();
    if (state != ncclInProgress) return NcclStatus(state, what, comm);
    if (d.Expired())
      return absl::DeadlineExceededError(absl::StrCat(what, ": NCCL did not finish in time"));
    if (std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
    } else {
      usleep(100);
    }
  }
}

ncclDataType_t NcclType(DType t) {
  switch (t) {
    case DType::kBf16:
      return ncclBfloat16;
    case DType::kFp16:
      return ncclFloat16;
    default:
      return ncclFloat32;
  }
}

// Fixed batching by size: small messages are latency-bound (many per sample), large
// ones take milliseconds each. Deterministic so every rank agrees.
int BatchFor(int64_t bytes) {
  if (bytes <= (int64_t{1} << 20)) return 20;
  if (bytes <= (int64_t{64} << 20)) return 5;
  return 2;
}

struct Shared {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  DeviceBuffer send, recv;
  int rank = 0, ranks = 1;
  DType dtype = DType::kFp32;
  std::vector<char> host;  // staging for checks
  cuda::StreamGate gate;   // holds the stream while a timed batch is queued
};

class CollectiveProbe : public Probe {
 public:
  CollectiveProbe(Shared* sh, CollectiveOp op, int64_t bytes) : sh_(sh), op_(op) {
    counts_ = CountsFor(op, bytes, DTypeBytes(sh->dtype), sh->ranks);
  }
  ~CollectiveProbe() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }
  const CollectiveCounts& counts() const { return counts_; }

  std::string Name() const override {
    return absl::StrCat("nccl.", CollectiveOpName(op_), " ", counts_.bytes, "B");
  }

  absl::Status Setup(const Deadline&) override {
    if (counts_.bytes == 0) return absl::InvalidArgumentError("size too small for this rank count");
    XDEEP_CUDA_RETURN(cudaEventCreateWithFlags(&start_, cudaEventDefault));
    XDEEP_CUDA_RETURN(cudaEventCreateWithFlags(&stop_, cudaEventDefault));
    XDEEP_CUDA_RETURN(cuda::LaunchFillPattern(sh_->send.get(), counts_.send_elems,
                                              cuda::ElemKindFor(sh_->dtype), sh_->rank,
                                              sh_->stream));
    // Poison the output with a value no correct result has, so unwritten parts fail.
    XDEEP_CUDA_RETURN(cudaMemsetAsync(sh_->recv.get(), 0xff,
                                      counts_.recv_elems * DTypeBytes(sh_->dtype), sh_->stream));
    XDEEP_CUDA_RETURN(cudaStreamSynchronize(sh_->stream));
    return absl::OkStatus();
  }

  absl::StatusOr<double> RunBatch(int reps, const Deadline& deadline) override {
    // Hold the stream until the batch is queued. On a non-blocking communicator every
    // collective call starts a thread (NCCL group.cc, groupLaunchNonBlocking) and
    // returns ncclInProgress: ~50 us of host time per call that a blocking communicator,
    // as torch.distributed uses, does not have. Timed from an event already passed, the
    // first call's cost sat in each batch (0.943 x torch at 64 MiB, H200 run 2); held,
    // the events time the collectives alone, which is what overlapped training sees.
    if (absl::Status s = sh_->gate.Close(sh_->stream); !s.ok()) return s;
    {
      cuda::GateOpener open(&sh_->gate);
      XDEEP_CUDA_RETURN(cudaEventRecord(start_, sh_->stream));
      for (int r = 0; r < reps; ++r) {
        if (absl::Status s = Issue(deadline); !s.ok()) return s;
      }
      XDEEP_CUDA_RETURN(cudaEventRecord(stop_, sh_->stream));
    }
    ncclComm_t comm = sh_->comm;
    absl::Status s = cuda::WaitEvent(stop_, deadline, [comm]() -> absl::Status {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm, &state);
      if (state != ncclSuccess && state != ncclInProgress)
        return NcclStatus(state, "NCCL async error", comm);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    float ms = 0;
    XDEEP_CUDA_RETURN(cudaEventElapsedTime(&ms, start_, stop_));
    return ms / 1e3;
  }

  absl::Status Check(const Deadline&) override {
    const int eb = DTypeBytes(sh_->dtype);
    const int64_t n = counts_.recv_elems;
    // Both ends and the middle: covers every peer's chunk boundaries for small n.
    const int64_t window = std::min<int64_t>(n, 4096);
    for (int64_t begin : {int64_t{0}, (n - window) / 2, n - window}) {
      sh_->host.resize(window * eb);
      XDEEP_CUDA_RETURN(cudaMemcpy(sh_->host.data(), sh_->recv.as<char>() + begin * eb, window * eb,
                                   cudaMemcpyDeviceToHost));
      for (int64_t w = 0; w < window; ++w) {
        const int64_t i = begin + w;
        const double got = cuda::LoadAsDouble(sh_->host.data(), w, sh_->dtype);
        const double want = Expected(i);
        if (!(std::abs(got - want) <= 1e-3 * std::abs(want))) {
          return absl::DataLossError(
              absl::StrCat("data check failed at element ", i, ": got ", got, ", expected ", want));
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  // Send buffers hold (rank + 1) + (index % 7) (kernels.h).
  double Expected(int64_t i) const {
    const int n = sh_->ranks, r = sh_->rank;
    auto v = [](int rank, int64_t idx) { return static_cast<double>(rank + 1 + idx % 7); };
    const int64_t c = counts_.call_count;
    switch (op_) {
      case CollectiveOp::kAllReduce: {
        double s = 0;
        for (int p = 0; p < n; ++p) s += v(p, i);
        return s;
      }
      case CollectiveOp::kAllGather:
        return v(static_cast<int>(i / c), i % c);
      case CollectiveOp::kReduceScatter: {
        double s = 0;
        for (int p = 0; p < n; ++p) s += v(p, r * c + i);
        return s;
      }
      case CollectiveOp::kBroadcast:
        return v(0, i);
      case CollectiveOp::kSendRecv:
        return v((r - 1 + n) % n, i);
      case CollectiveOp::kAllToAll: {
        const int p = static_cast<int>(i / c);
        return v(p, r * c + i % c);
      }
    }
    return 0;
  }

  absl::Status Issue(const Deadline& d) {
    ncclComm_t comm = sh_->comm;
    const ncclDataType_t t = NcclType(sh_->dtype);
    void* sb = sh_->send.get();
    void* rb = sh_->recv.get();
    const size_t eb = DTypeBytes(sh_->dtype);
    const int64_t c = counts_.call_count;
    ncclResult_t r = ncclSuccess;
    switch (op_) {
      case CollectiveOp::kAllReduce:
        r = ncclAllReduce(sb, rb, c, t, ncclSum, comm, sh_->stream);
        break;
      case CollectiveOp::kAllGather:
        r = ncclAllGather(sb, rb, c, t, comm, sh_->stream);
        break;
      case CollectiveOp::kReduceScatter:
        r = ncclReduceScatter(sb, rb, c, t, ncclSum, comm, sh_->stream);
        break;
      case CollectiveOp::kBroadcast:
        r = ncclBroadcast(sb, rb, c, t, 0, comm, sh_->stream);
        break;
      case CollectiveOp::kSendRecv: {
        const int n = sh_->ranks, me = sh_->rank;
        ncclGroupStart();
        ncclSend(sb, c, t, (me + 1) % n, comm, sh_->stream);
        ncclRecv(rb, c, t, (me - 1 + n) % n, comm, sh_->stream);
        r = ncclGroupEnd();
        break;
      }
      case CollectiveOp::kAllToAll: {
        ncclGroupStart();
        for (int p = 0; p < sh_->ranks; ++p) {
          ncclSend(static_cast<char*>(sb) + p * c * eb, c, t, p, comm, sh_->stream);
          ncclRecv(static_cast<char*>(rb) + p * c * eb, c, t, p, comm, sh_->stream);
        }
        r = ncclGroupEnd();
        break;
      }
    }
    if (r == ncclInProgress) return WaitComm(comm, d, "enqueue");
    return NcclStatus(r, "collective", comm);
  }

  Shared* sh_;
  CollectiveOp op_;
  CollectiveCounts counts_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

absl::Status RunCollectives(const DistEnv& env, const CollectiveOptions& options, Report* report) {
  if (absl::Status s = SelectDevice(env.local_rank); !s.ok()) return s;
  Shared sh;
  sh.rank = env.rank;
  sh.ranks = env.world_size;
  sh.dtype = options.dtype;

  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (env.rank == 0) {
    if (absl::Status s = NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr); !s.ok())
      return s;
  }
  absl::StatusOr<std::string> blob = ExchangeRootBlob(
      env, std::string(reinterpret_cast<const char*>(&id), sizeof(id)), options.init_timeout);
  if (!blob.ok()) return blob.status();
  if (blob->size() != sizeof(id))
    return absl::DataLossError("rendezvous delivered a malformed ncclUniqueId");
  std::memcpy(&id, blob->data(), sizeof(id));

  const Deadline init_deadline = Deadline::In(options.init_timeout);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t ir = ncclCommInitRankConfig(&sh.comm, env.world_size, id, env.rank, &config);
  absl::Status init = NcclStatus(ir, "ncclCommInitRankConfig", sh.comm);
  if (init.ok() && sh.comm != nullptr)
    init = WaitComm(sh.comm, init_deadline, "ncclCommInitRankConfig");
  // Buffers and stream are released before the communicator is torn down.
  // On error the communicator is aborted before anything that synchronises (stream
  // sync, cudaFree): a kernel waiting for a dead peer only ends through the abort.
  auto finish = [&](absl::Status s) {
    if (s.ok() && sh.stream) cudaStreamSynchronize(sh.stream);
    if (sh.comm) {
      if (s.ok()) {
        ncclCommFinalize(sh.comm);
        if (!WaitComm(sh.comm, Deadline::In(absl::Seconds(10)), "ncclCommFinalize").ok()) {
          ncclCommAbort(sh.comm);
        } else {
          ncclCommDestroy(sh.comm);
        }
      } else {
        ncclCommAbort(sh.comm);  // unblocks kernels waiting for a dead or slow peer
      }
      sh.comm = nullptr;
    }
    sh.send.Free();
    sh.recv.Free();
    if (sh.stream) cudaStreamDestroy(sh.stream);
    sh.stream = nullptr;
    return s;
  };
  if (!init.ok()) return finish(init);

  if (absl::Status s =
          cuda::CudaStatus(cudaStreamCreateWithFlags(&sh.stream, cudaStreamNonBlocking), "stream");
      !s.ok()) {
    return finish(s);
  }
  const int64_t max_bytes = options.max_bytes;
  if (absl::Status s = sh.send.Allocate(max_bytes); !s.ok()) return finish(s);
  if (absl::Status s = sh.recv.Allocate(max_bytes); !s.ok()) return finish(s);

  const std::vector<int64_t> sizes =
      SizeSweep(options.min_bytes, options.max_bytes, options.factor);
  for (CollectiveOp op : options.ops) {
    for (int64_t bytes : sizes) {
      CollectiveProbe probe(&sh, op, bytes);
      if (probe.counts().bytes == 0) continue;
      HarnessOptions h;
      h.warmup = options.warmup;
      h.batch = BatchFor(bytes);
      h.min_samples = h.max_samples = options.samples;
      h.adaptive_stop = false;
      h.time_limit = options.op_time_limit;
      absl::StatusOr<ProbeResult> r = RunProbe(probe, h);
      if (!r.ok()) return finish(r.status());
      CollectiveEntry e;
      e.op = std::string(CollectiveOpName(op));
      e.ranks = env.world_size;
      e.nodes = env.nodes;
      e.scope = env.nodes > 1 ? "inter_node" : "intra_node";
      e.bytes = probe.counts().bytes;
      e.dtype = std::string(DTypeName(options.dtype));
      e.timing = TimingFrom(*r);
      e.algbw_gbps = AlgBwGBps(e.bytes, r->per_op.median);
      e.busbw_gbps = BusBwGBps(op, env.world_size, e.bytes, r->per_op.median);
      report->collectives.push_back(e);
    }
  }
  if (sh.gate.expired() > 0) {
    spdlog::warn(
        "xdeep: {} collective batches took longer to queue than the stream hold; "
        "their times include host enqueue",
        sh.gate.expired());
  }
  return finish(absl::OkStatus());
}

}  // namespace xdeep::profiler
