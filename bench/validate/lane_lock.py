"""A lock two single-GPU lanes share, so that no step is timed beside the other lane's build.

library_suite.py's --lane-lock (run_library.sh passes it to its two single-GPU lanes when they run
side by side); bench/validate/lane_lock_test.py checks it (ctest bench.validate.lane_lock).
"""
import contextlib
import fcntl
import time


class LaneLock:
    """--lane-lock FILE: no step is timed while the other single-GPU lane does host-heavy work.

    run_library.sh runs two single-GPU lanes side by side (one process a GPU). A model's build
    (its parameters initialised on the CPU with OMP_NUM_THREADS threads, then copied to the GPU)
    beside host-bound steps slowed them 1.15-1.30x on one H200 (h23h,
    data/checks/2026-11-28_h200x1_host_drift: AMD-Llama-135m's mb1 1.30x, GPT-2's 1.15x), and run 15's
    AMD-Llama-135m rows were timed beside Qwen1.5-1.8B's build. With this lock a lane's host-heavy
    work -- its start (torch's and the libraries' imports, CUDA's context), each model's build and
    copy to the GPU, and freeing it -- and each configuration's steps (warm-up and timed) are two
    kinds that exclude each other across the lanes: host work beside host work and steps beside
    steps go on as before (the lanes still time side by side, and build side by side), steps never
    run beside the other lane's host work. Each kind holds its file shared (flock: FILE.host,
    FILE.steps); entering one kind takes the other's file exclusively for a moment, so it waits
    until the other lane has left that kind, and does so holding FILE (the gate), so that a lane
    waiting to build is not passed by the other lane's next configuration, nor the other way round.
    The seconds a lane waited are in its file (meta lane_wait_s, each record's lock_wait_s). A
    process that dies drops its locks (the kernel releases flock with the file). Without FILE (one
    GPU, where run_library.sh runs the lanes in turn, and every two-GPU mode) it does nothing.
    """

    def __init__(self, path):
        self.path = path
        self.waited_s = 0.0
        self.held_kind = None
        self.gate = None
        if path:
            self.gate = open(path, "a")
            self.files = {"host": open(path + ".host", "a"), "steps": open(path + ".steps", "a")}

    def enter(self, kind):
        """Starts host work ("host") or timed steps ("steps"); returns the seconds waited."""
        if not self.gate:
            return 0.0
        other = "steps" if kind == "host" else "host"
        t0 = time.time()
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.files[other], fcntl.LOCK_EX)  # until the other lane has left `other`
            fcntl.flock(self.files[kind], fcntl.LOCK_SH)
            fcntl.flock(self.files[other], fcntl.LOCK_UN)
        finally:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        self.held_kind = kind
        waited = time.time() - t0
        self.waited_s += waited
        return waited

    def leave(self):
        if self.gate and self.held_kind:
            fcntl.flock(self.files[self.held_kind], fcntl.LOCK_UN)
            self.held_kind = None

    @contextlib.contextmanager
    def held(self, kind):
        """The lock for host work ("host") or for timed steps ("steps"); yields the seconds waited."""
        waited = self.enter(kind)
        try:
            yield waited
        finally:
            self.leave()


def lane_lock_arg(argv):
    for i, a in enumerate(argv):
        if a == "--lane-lock" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--lane-lock="):
            return a.split("=", 1)[1]
    return None
