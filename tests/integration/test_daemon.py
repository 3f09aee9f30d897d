"""xdeepd as a process: strict config refusal, graceful SIGTERM."""
import os
import signal
import subprocess
import time
import unittest

from harness import BUILD, StackTest, daemon_process

XDEEPD = os.path.join(BUILD, "daemon", "xdeepd")


class DaemonProcessTest(StackTest):
    def write_config(self, text):
        path = os.path.join(self.tmp, "xdeepd.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_bad_config_refused_with_file_and_line(self):
        path = self.write_config('[server]\nlisten = "unix:///tmp/x.sock"\nthreads = 4\n')
        r = subprocess.run([XDEEPD, "--config", path], capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 2, r)
        self.assertIn(f"{path}:3: unknown key 'threads' in [server]", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_check_config(self):
        path = self.write_config('[hardware]\nprofile = "h100-sxm"\n')
        r = subprocess.run([XDEEPD, "--check-config", "--config", path], capture_output=True,
                           text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r)
        bad = self.write_config('[hardware]\nprofile = "abacus"\n')
        r = subprocess.run([XDEEPD, "--check-config", "--config", bad], capture_output=True,
                           text=True, timeout=10)
        self.assertEqual(r.returncode, 2, r)
        self.assertIn("h100-sxm", r.stderr)

    def test_unknown_flag(self):
        r = subprocess.run([XDEEPD, "--colour"], capture_output=True, text=True, timeout=10)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("colour", r.stderr + r.stdout)

    def test_sigterm_shuts_down_gracefully(self):
        sock = os.path.join(self.tmp, "d.sock")
        log = os.path.join(self.tmp, "d.log")
        path = self.write_config(
            f'[server]\nlisten = "unix://{sock}"\nshutdown_grace_ms = 2000\n'
            f'[store]\npath = "{self.tmp}/d.db"\n[log]\nfile = "{log}"\n')
        daemon = daemon_process([XDEEPD, "--config", path])
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        self.assertTrue(os.path.exists(sock))
        t0 = time.monotonic()
        daemon.send_signal(signal.SIGTERM)
        self.assertEqual(daemon.wait(timeout=10), 0)
        self.assertLess(time.monotonic() - t0, 3.0)
        with open(log) as f:
            text = f.read()
        self.assertIn("event=shutdown", text)
        self.assertIn("event=stopped", text)
        # The database is intact and reopens.
        daemon = daemon_process([XDEEPD, "--config", path])
        time.sleep(0.5)
        daemon.send_signal(signal.SIGTERM)
        self.assertEqual(daemon.wait(timeout=10), 0)


if __name__ == "__main__":
    unittest.main()
