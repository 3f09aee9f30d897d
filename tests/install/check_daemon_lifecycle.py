#!/usr/bin/env python3
"""The real xdeepd as systemd runs it (Type=notify): READY=1 only once it
answers, RELOADING=1 / READY=1 around SIGHUP, which reopens the log file (as
logrotate expects) and keeps writing to the old one when the path is gone,
STOPPING=1 on SIGTERM. `xdeep status` reports the versions.

Usage: check_daemon_lifecycle.py XDEEPD XDEEP VERSION
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

XDEEPD, XDEEP, VERSION = sys.argv[1:4]


class DaemonLifecycle(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="xdeepd-lifecycle-")
        self.logdir = os.path.join(self.dir, "log")
        os.mkdir(self.logdir)
        self.log = os.path.join(self.logdir, "xdeepd.log")
        self.listen = "unix://" + os.path.join(self.dir, "d.sock")
        config = os.path.join(self.dir, "xdeepd.toml")
        with open(config, "w") as f:
            f.write(f'[server]\nlisten = "{self.listen}"\n'
                    f'[store]\npath = "{self.dir}/d.db"\n'
                    f'[log]\nfile = "{self.log}"\n'
                    '[identity]\nmode = "none"\n')
        # systemd's side of sd_notify: a datagram socket named in NOTIFY_SOCKET.
        self.notify_path = os.path.join(self.dir, "notify")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notify.settimeout(60)
        env = dict(os.environ, NOTIFY_SOCKET=self.notify_path)
        self.proc = subprocess.Popen([XDEEPD, "--config", config], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def tearDown(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.notify.close()
        subprocess.run(["rm", "-rf", self.dir], check=True)

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def message(self):
        return self.notify.recv(4096).decode()

    def wait_for_log(self, path, text):
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(path) and text in self.read(path):
                return
            time.sleep(0.05)
        self.fail(f"{path} never said {text!r}: "
                  f"{self.read(path) if os.path.exists(path) else 'absent'}")

    def status(self):
        r = subprocess.run([XDEEP, "--daemon", self.listen, "status", "--json"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout), r.stderr

    def test_ready_reload_reopen_stop(self):
        ready = self.message()
        self.assertIn("READY=1", ready)
        self.assertIn(f"xdeepd {VERSION} serving on {self.listen}", ready)
        # Ready means answering: the very first request succeeds.
        doc, stderr = self.status()
        self.assertEqual(doc["schema"], "xdeep.status/1")
        self.assertEqual(doc["daemon_version"], VERSION)
        self.assertFalse(doc["version_skew"])
        self.assertEqual(stderr, "")
        self.assertGreaterEqual(doc["store_schema"], 2)
        self.assertGreaterEqual(doc["ledger_schema"], 3)
        self.wait_for_log(self.log, f"event=starting version={VERSION}")

        # logrotate: move the file away, SIGHUP, the next line goes to a new file.
        os.rename(self.log, self.log + ".1")
        self.proc.send_signal(signal.SIGHUP)
        self.assertEqual(self.message(), "RELOADING=1")
        self.assertEqual(self.message(), "READY=1")
        self.wait_for_log(self.log, f"event=log.reopened version={VERSION}")
        self.assertNotIn("log.reopened", self.read(self.log + ".1"))
        self.assertEqual(os.stat(self.log).st_mode & 0o777, 0o600)

        # The directory gone: the reopen fails, and says so in the old file.
        os.rename(self.logdir, self.logdir + ".old")
        self.proc.send_signal(signal.SIGHUP)
        self.assertEqual(self.message(), "RELOADING=1")
        self.assertEqual(self.message(), "READY=1")
        self.wait_for_log(os.path.join(self.logdir + ".old", "xdeepd.log"),
                          "event=log.reopen_failed")
        self.status()  # still serving

        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.message(), "STOPPING=1")
        self.assertEqual(self.proc.wait(timeout=30), 0)

    def test_status_of_a_daemon_down_is_one_line(self):
        self.assertIn("READY=1", self.message())
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        r = subprocess.run([XDEEP, "--daemon", self.listen, "status", "--json"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("cannot reach xdeepd at " + self.listen, r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
