"""The daemon down, hung, killed mid-request or speaking garbage: the launch
runs unchanged within timeout_ms + 100 ms with one warning, or is refused
with one line under fail=closed."""
import os
import signal
import subprocess
import time
import unittest

from harness import (BUILD, PLUGIN, SHOW_ENV, STACK, WORKLOADS, Result, StackTest,
                     StuckServer, alt_conf, daemon_process, run)

GPT = os.path.join(WORKLOADS, "gpt-125m.toml")
TIMEOUT_MS = 1000
SLACK_S = 0.1


class FailOpenTest(StackTest):
    def conf(self, socket_path, extra=""):
        return alt_conf(self.tmp, f"required {PLUGIN} daemon=unix://{socket_path} "
                                  f"timeout_ms={TIMEOUT_MS} {extra}".strip())

    def baseline(self, conf):
        """Seconds a plain srun of the same command takes, best of three."""
        return min(run(["srun", "--xdeep-tune=off", SHOW_ENV], conf=conf).elapsed
                   for _ in range(3))

    def assert_ran_unchanged(self, r, base):
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(r.tasks()), 1, r)
        self.assertEqual(r.tasks()[0]["xdeep_nodes"], "", r)
        warnings = r.xdeep_lines()
        self.assertEqual(len(warnings), 1, r)
        self.assertIn("unavailable", warnings[0])
        self.assertIn("running the launch unchanged", warnings[0])
        self.assertLessEqual(r.elapsed - base, TIMEOUT_MS / 1000 + SLACK_S, r)

    def tuned(self, conf):
        return run(["srun", "--xdeep-tune", f"--xdeep-workload={GPT}", SHOW_ENV], conf=conf)

    def test_daemon_absent(self):
        conf = self.conf(os.path.join(self.tmp, "absent.sock"))
        self.assert_ran_unchanged(self.tuned(conf), self.baseline(conf))

    def test_daemon_hung(self):
        sock = os.path.join(self.tmp, "hung.sock")
        server = StuckServer(sock)
        try:
            conf = self.conf(sock)
            base = self.baseline(conf)
            r = self.tuned(conf)
            self.assert_ran_unchanged(r, base)
            self.assertGreaterEqual(r.elapsed, TIMEOUT_MS / 1000 * 0.9, r)
        finally:
            server.close()

    def test_daemon_answers_garbage(self):
        sock = os.path.join(self.tmp, "garbage.sock")
        server = StuckServer(sock, garbage=True)
        try:
            conf = self.conf(sock)
            self.assert_ran_unchanged(self.tuned(conf), self.baseline(conf))
        finally:
            server.close()

    def test_daemon_killed_mid_request(self):
        sock = os.path.join(self.tmp, "killed.sock")
        config = os.path.join(self.tmp, "xdeepd.toml")
        with open(os.path.join(STACK, "xdeepd.toml")) as src, open(config, "w") as dst:
            dst.write(src.read().replace(f"unix://{STACK}/xdeepd.sock", f"unix://{sock}")
                      .replace(f"{STACK}/xdeep.db", f"{self.tmp}/xdeep.db")
                      .replace(f"{STACK}/xdeepd.log", f"{self.tmp}/xdeepd.log")
                      .replace(f"{STACK}/jobcomp", f"{self.tmp}/jobcomp"))
        daemon = daemon_process([os.path.join(BUILD, "daemon", "xdeepd"), "--config", config],
                                env=dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf")))
        try:
            for _ in range(100):
                if os.path.exists(sock):
                    break
                time.sleep(0.05)
            conf = self.conf(sock)
            base = self.baseline(conf)
            # Freeze the daemon so the request is in flight, then kill it.
            daemon.send_signal(signal.SIGSTOP)
            env = dict(os.environ, SLURM_CONF=conf)
            t0 = time.monotonic()
            srun = subprocess.Popen(["srun", "--xdeep-tune", f"--xdeep-workload={GPT}", SHOW_ENV],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            time.sleep(0.3)
            daemon.send_signal(signal.SIGKILL)
            out, err = srun.communicate(timeout=30)
            r = Result(srun.returncode, out, err, time.monotonic() - t0)
            self.assert_ran_unchanged(r, base)
        finally:
            daemon.kill()
            daemon.wait()

    def test_fail_closed_refuses_with_one_line(self):
        conf = self.conf(os.path.join(self.tmp, "absent.sock"), "fail=closed")
        r = self.tuned(conf)
        self.assertNotEqual(r.rc, 0, r)
        self.assertEqual(r.tasks(), [], r)
        lines = r.xdeep_lines()
        self.assertEqual(len(lines), 1, r)
        self.assertIn("refused", lines[0])


class PlugstackArgumentsTest(StackTest):
    def check_refused(self, args, needle):
        conf = alt_conf(self.tmp, f"required {PLUGIN} {args}")
        r = run(["srun", SHOW_ENV], conf=conf)
        self.assertNotEqual(r.rc, 0, r)
        self.assertEqual(r.tasks(), [], r)
        self.assertIn(needle, r.err, r)

    def test_unknown_key(self):
        self.check_refused("colour=blue", "unknown argument 'colour'")

    def test_bad_timeout(self):
        self.check_refused("timeout_ms=soon", "timeout_ms=soon is invalid")

    def test_bad_default(self):
        self.check_refused("default=maybe", "default=maybe is invalid")

    def test_bad_fail_mode(self):
        self.check_refused("fail=sometimes", "fail=sometimes is invalid")

    def test_not_key_value(self):
        self.check_refused("verbose", "must be key=value")


if __name__ == "__main__":
    unittest.main()
