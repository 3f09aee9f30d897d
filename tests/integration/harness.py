"""Shared helpers for the integration tests: a real Slurm cluster with the
real xdeepd and plugin, started once per ctest run by the fixture
(scripts/local-stack.sh) and described by the environment ctest passes:
XDEEP_IT_DIR (the stack's directory), XDEEP_BUILD_DIR, XDEEP_SOURCE_DIR."""
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

STACK = os.environ.get("XDEEP_IT_DIR", "")
BUILD = os.environ.get("XDEEP_BUILD_DIR", "")
SOURCE = os.environ.get("XDEEP_SOURCE_DIR", "")
PLUGIN = os.path.join(BUILD, "spank_plugin", "xdeep_spank.so")
WORKLOADS = os.path.join(SOURCE, "examples", "workloads")
SHOW_ENV = os.path.join(SOURCE, "tests", "integration", "show_env.sh")
_LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


class Result:
    def __init__(self, rc, out, err, elapsed):
        self.rc = rc
        self.out = out
        self.err = err
        self.elapsed = elapsed

    def tasks(self):
        """The JSON lines show_env.sh printed, one per task."""
        rows = []
        for line in self.out.splitlines():
            if line.startswith("{"):
                rows.append(json.loads(line))
        return rows

    def xdeep_lines(self):
        return [l for l in (self.out + self.err).splitlines() if "xdeep:" in l]

    def __repr__(self):
        return f"rc={self.rc}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


def run(argv, conf=None, env=None, timeout=60, cwd=None, stdin=None):
    full_env = dict(os.environ)
    full_env["SLURM_CONF"] = conf or os.path.join(STACK, "slurm.conf")
    for key in list(full_env):
        if key.startswith(("SLURM_SPANK_", "XDEEP_TUNED", "XDEEP_REEXEC", "SLURM_JOB")):
            del full_env[key]
    full_env.update(env or {})
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, env=full_env, capture_output=True, text=True,
                              timeout=timeout, cwd=cwd or SOURCE, stdin=stdin)
    except subprocess.TimeoutExpired as e:
        # What the command said before it hung is what explains the hang.
        said = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        raise AssertionError(f"{' '.join(argv)}: still running after {timeout} s\n"
                             f"--- stdout\n{said(e.stdout)}\n--- stderr\n{said(e.stderr)}") from None
    return Result(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)


def daemon_process(argv, **popen_args):
    """subprocess.Popen for a daemon a test starts itself (an xdeepd on its own
    configuration): the daemon gets SIGTERM when the test process dies, however
    it dies (a ctest timeout, ^C before tearDown), so none outlives its test. A
    leftover xdeepd once drained a later stack's jobcomp spool; now it would
    keep that stack's daemon from starting. (A uid change clears the signal:
    not for daemons started through setpriv.)"""
    parent = os.getpid()

    def die_with_parent():
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the test died before prctl took effect
            os._exit(1)

    return subprocess.Popen(argv, preexec_fn=die_with_parent, **popen_args)


def alt_conf(directory, plugstack_line):
    """A copy of the cluster's slurm.conf whose srun loads `plugstack_line`."""
    plugstack = os.path.join(directory, "plugstack.conf")
    with open(plugstack, "w") as f:
        f.write(plugstack_line + "\n")
    conf = os.path.join(directory, "slurm.conf")
    with open(os.path.join(STACK, "slurm.conf")) as src, open(conf, "w") as dst:
        for line in src:
            if line.startswith("PlugStackConfig="):
                line = f"PlugStackConfig={plugstack}\n"
            dst.write(line)
    shutil.copy(os.path.join(STACK, "gres.conf"), os.path.join(directory, "gres.conf"))
    return conf


def daemon_log():
    with open(os.path.join(STACK, "xdeepd.log")) as f:
        return f.read()


def decisions_in_log():
    return re.findall(r"event=tune\.decided .*decision=(\w+)", daemon_log())


class StuckServer:
    """A unix-socket server that accepts and then either says nothing (hung)
    or answers bytes that are not HTTP/2 (garbage)."""

    def __init__(self, path, garbage=False):
        self.path = path
        self.garbage = garbage
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(path):
            os.unlink(path)
        self.sock.bind(path)
        self.sock.listen(16)
        self.conns = []
        self.stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(conn)
            if self.garbage:
                try:
                    conn.sendall(os.urandom(4096))
                except OSError:
                    pass

    def close(self):
        self.stop = True
        self.thread.join()
        for c in self.conns:
            c.close()
        self.sock.close()


class StackTest(unittest.TestCase):
    def setUp(self):
        if not STACK or not os.path.exists(os.path.join(STACK, "slurm.conf")):
            self.fail("XDEEP_IT_DIR does not hold a running stack; run through ctest")
        self.tmp = tempfile.mkdtemp(prefix="xdeep-it-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
