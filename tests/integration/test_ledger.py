"""The ledger under load: 1,000 concurrent launches from 50 distinct users
(MUNGE-authenticated uids) against a real xdeepd; then the same with the
daemon killed (SIGKILL) mid-load and restarted. The ledger's total must equal
the sum of the costs the clients were told, exactly; no budget may be
exceeded; no reservation may be lost or counted twice."""
import collections
import glob
import os
import signal
import sqlite3
import subprocess
import time
import unittest

from harness import BUILD, STACK, StackTest

XDEEPD = os.path.join(BUILD, "daemon", "xdeepd")
LOAD = os.path.join(BUILD, "tests", "daemon", "ledger_load")
USERS = 50
LAUNCHES = 20
LIMIT = 5000.0


class LedgerLoadTest(StackTest):
    def start_daemon(self):
        env = dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf"))
        proc = subprocess.Popen([XDEEPD, "--config", self.config], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(self.sock):
                return proc
            time.sleep(0.05)
        proc.kill()
        self.fail("xdeepd did not start")

    def setUp(self):
        super().setUp()
        self.sock = os.path.join(self.tmp, "d.sock")
        self.db = os.path.join(self.tmp, "d.db")
        self.out = os.path.join(self.tmp, "out")
        os.makedirs(self.out)
        os.chmod(self.out, 0o777)
        self.config = os.path.join(self.tmp, "xdeepd.toml")
        with open(self.config, "w") as f:
            f.write(f'[server]\nlisten = "unix://{self.sock}"\nworker_threads = 4\n'
                    f'[store]\npath = "{self.db}"\n[log]\nfile = "{self.tmp}/d.log"\n'
                    f'[policy]\nprice_per_gpu_hour = 2.5\n'
                    f'[policy.partition.strict]\nenforcement = "strict"\n'
                    f'[budget.user."*"]\nlimit = {LIMIT}\n')
        os.chmod(self.tmp, 0o755)

    def run_load(self):
        return subprocess.Popen([LOAD, "--daemon", f"unix://{self.sock}", "--out", self.out,
                                 "--users", str(USERS), "--launches", str(LAUNCHES),
                                 "--retry-s", "60"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def client_view(self):
        settled, refused, lost = {}, 0, []
        for path in glob.glob(os.path.join(self.out, "*.txt")):
            with open(path) as f:
                for line in f:
                    kind, rest = line.split(" ", 1)
                    if kind == "settled":
                        decision, cost = rest.split()
                        self.assertNotIn(decision, settled, "a decision was settled twice")
                        settled[decision] = float(cost)
                    elif kind == "refused":
                        refused += 1
                    else:
                        lost.append(line.strip())
        return settled, refused, lost

    def check_ledger(self, settled):
        db = sqlite3.connect(self.db)
        rows = db.execute("SELECT decision_id, user, state, amount, settled_amount "
                          "FROM reservations").fetchall()
        by_id = {r[0]: r for r in rows}
        self.assertEqual(len(by_id), len(rows))
        # Every cost a client was told is in the ledger, once, settled, equal.
        for decision, cost in settled.items():
            self.assertIn(decision, by_id)
            self.assertEqual(by_id[decision][2], "settled")
            self.assertEqual(by_id[decision][4], cost)
        ledger_total = db.execute("SELECT SUM(settled_amount) FROM reservations "
                                  "WHERE state='settled'").fetchone()[0] or 0.0
        self.assertAlmostEqual(ledger_total, sum(settled.values()), delta=1e-9 * max(1, ledger_total))
        # Settled rows the clients never heard of would be charges nobody knows about.
        unknown = [r for r in rows if r[2] == "settled" and r[0] not in settled]
        self.assertEqual(unknown, [])
        # No user spent or holds more than the budget.
        per_user = collections.defaultdict(float)
        for r in rows:
            if r[2] == "settled":
                per_user[r[1]] += r[4]
            elif r[2] in ("reserved", "bound"):
                per_user[r[1]] += r[3]
        self.assertEqual(len(per_user), USERS)
        for user, used in per_user.items():
            self.assertLessEqual(used, LIMIT + 1e-6, user)
        return rows

    def test_thousand_concurrent_launches(self):
        daemon = self.start_daemon()
        try:
            t0 = time.monotonic()
            load = self.run_load()
            out, _ = load.communicate(timeout=600)
            elapsed = time.monotonic() - t0
            self.assertEqual(load.returncode, 0, out)
            settled, refused, lost = self.client_view()
            self.assertEqual(lost, [])
            self.assertEqual(len(settled) + refused, USERS * LAUNCHES)
            self.assertGreater(refused, 0, "the budget never bit: raise the load or lower LIMIT")
            rows = self.check_ledger(settled)
            self.assertEqual([r for r in rows if r[2] in ("reserved", "bound")], [])
            print(f"\n{USERS * LAUNCHES} launches in {elapsed:.1f} s: {len(settled)} settled, "
                  f"{refused} refused over budget")
        finally:
            daemon.terminate()
            daemon.wait()

    def test_daemon_killed_mid_load_and_restarted(self):
        daemon = self.start_daemon()
        load = self.run_load()
        try:
            time.sleep(2.0)
            self.assertIsNone(load.poll(), "the load finished before the kill")
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
            os.unlink(self.sock)
            time.sleep(0.5)
            daemon = self.start_daemon()
            out, _ = load.communicate(timeout=600)
            self.assertEqual(load.returncode, 0, out)
            settled, refused, lost = self.client_view()
            self.assertEqual(lost, [])
            rows = self.check_ledger(settled)
            # Reservations whose decision never reached a client (the daemon
            # died before answering) stay open until they expire, unsettled.
            open_rows = [r for r in rows if r[2] in ("reserved", "bound")]
            self.assertTrue(all(r[0] not in settled for r in open_rows))
            self.assertLessEqual(len(open_rows), 4 * 2, "more in flight than worker threads")
            print(f"\nkilled mid-load: {len(settled)} settled, {refused} refused, "
                  f"{len(open_rows)} reservations left open for expiry")
        finally:
            daemon.terminate()
            daemon.wait()


if __name__ == "__main__":
    unittest.main()
