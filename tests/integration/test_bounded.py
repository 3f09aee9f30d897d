"""Bounded work per request (issue #27) on the real stack: worst-case requests
beside ordinary ones, through bench/daemon/decisions_bench (fresh MUNGE
credential per request). The worst case moves to the daemon's heavy lane, its
client's deadline stops it soon after it passes, and the ordinary requests'
p99 stays within 2x of what it was without them (the bench prints the
ratio). No stopped worst case goes on for more than 50 ms of the daemon's own
time past its deadline."""
import os
import re
import subprocess
import unittest

from harness import BUILD, SOURCE, STACK, daemon_log

BENCH = os.path.join(BUILD, "bench", "daemon", "decisions_bench")
WORST = os.path.join(SOURCE, "bench", "daemon", "worst_case.toml")


@unittest.skipUnless(os.path.exists(BENCH), "decisions_bench not built (XDEEP_BUILD_BENCH)")
class BoundedWorkTest(unittest.TestCase):
    def test_worst_case_requests_neither_starve_others_nor_outlive_their_client(self):
        before = len(daemon_log())
        proc = subprocess.run(
            [BENCH, "--daemon", f"unix://{STACK}/xdeepd.sock", "--clients", "4",
             "--seconds", "2", "--mix", "varied", "--heavy", "4", "--heavy-workload", WORST,
             # 8,000 ordinary calls of each kind: each p99 is then the 80th
             # slowest, and a burst of the shared machine's other work that
             # lands in one window moves it less than with 4,000.
             "--heavy-samples", "8000",
             # In 16 windows of each kind, 500 calls each: a burst of the
             # machine's other work (seconds) spans windows of both kinds.
             "--heavy-windows", "16",
             # Shorter than the worst case's set-up alone (parsing and
             # fingerprinting 100,000 layers, ~55 ms of CPU on the 2-core VM;
             # its whole search takes ~0.1 s since repeated layers are timed
             # once, so a longer deadline let most be answered): each is
             # stopped at one of the polls between the stages.
             "--heavy-deadline-ms", "40"],
            capture_output=True, text=True, timeout=120)
        print(proc.stdout)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        ratio = float(re.search(r"ordinary p99 ratio with / without worst-case requests: "
                                r"([0-9.]+)", proc.stdout).group(1))
        # Issue #27: unchanged within 2x (the bench compares equal samples
        # from interleaved windows, so the shared machine's load hits both).
        self.assertLessEqual(ratio, 2.0, "ordinary requests starved beside worst-case ones")
        log = daemon_log()[before:]
        self.assertIn("event=tune.heavy", log, "the worst case stayed in the ordinary lane")
        stops = re.findall(r"event=tune\.stopped .*late_ms=([0-9.]+)( queued_ms=[0-9.]+)?", log)
        self.assertTrue(stops, "no worst-case request was stopped at its deadline")
        self.assertTrue(all(queued for _, queued in stops),
                        "a stop without the heavy lane's run-queue wait (queued_ms): stopped "
                        "in the ordinary lane, or a kernel without /proc/thread-self/schedstat "
                        f"(CONFIG_SCHED_INFO): {stops}")
        stops = [(float(late), float(queued.split("=")[1])) for late, queued in stops]
        # Issue #27: a request stops within 50 ms of its client's deadline.
        # Measured in the daemon's own time: the wall-clock lateness less the
        # heavy lane's run-queue wait since its last poll (the cores taken by
        # other processes: a loaded CI machine once made it 390 ms with no
        # daemon work going on). Work between polls, a sleep or a lock held
        # after the deadline still counts.
        own = [max(0.0, late - queued) for late, queued in stops]
        self.assertLess(max(own), 50, "work went on after the client's deadline "
                        f"(late_ms, queued_ms): {stops}")


if __name__ == "__main__":
    unittest.main()
