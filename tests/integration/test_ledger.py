"""The ledger under load: 1,000 concurrent tuned launches from 50 distinct users
(MUNGE-authenticated uids) against a real xdeepd, each followed by a hostile
report (negative run time) that must change nothing; then a controller (root,
as slurmctld's job_submit.lua and jobcomp script would) admits every decision
with its single-use token and spools a job-completion record for it, some
delivered twice. The same again with the daemon killed (SIGKILL) at random
points and restarted. Every job is charged exactly once, at GPUs x Slurm's run
time x price; no budget is exceeded; no hold is left open."""
import collections
import glob
import os
import random
import signal
import sqlite3
import subprocess
import time
import unittest

from harness import BUILD, STACK, StackTest, daemon_process

XDEEPD = os.path.join(BUILD, "daemon", "xdeepd")
LOAD = os.path.join(BUILD, "tests", "daemon", "ledger_load")
USERS = 50
LAUNCHES = 20
LIMIT = 5000.0
PRICE = 2.5


class LedgerLoadTest(StackTest):
    def start_daemon(self):
        env = dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf"))
        proc = daemon_process([XDEEPD, "--config", self.config], env=env,
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
        self.spool = os.path.join(self.tmp, "spool")
        os.makedirs(self.out)
        os.makedirs(self.spool)
        os.chmod(self.out, 0o777)
        self.config = os.path.join(self.tmp, "xdeepd.toml")
        with open(self.config, "w") as f:
            f.write(f'[server]\nlisten = "unix://{self.sock}"\nworker_threads = 4\n'
                    f'ledger_interval_s = 1\n'
                    f'[store]\npath = "{self.db}"\njobcomp_spool = "{self.spool}"\n'
                    f'[log]\nfile = "{self.tmp}/d.log"\n'
                    f'[policy]\nprice_per_gpu_hour = {PRICE}\n'
                    f'[policy.partition.strict]\nenforcement = "strict"\n'
                    f'[budget.user."*"]\nlimit = {LIMIT}\n')
        os.chmod(self.tmp, 0o755)

    def run_users(self):
        return subprocess.Popen([LOAD, "--daemon", f"unix://{self.sock}", "--out", self.out,
                                 "--users", str(USERS), "--launches", str(LAUNCHES),
                                 "--retry-s", "60"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def run_controller(self):
        return subprocess.Popen([LOAD, "--controller", "--daemon", f"unix://{self.sock}",
                                 "--out", self.out, "--spool", self.spool, "--users", str(USERS),
                                 "--retry-s", "60", "--price", str(PRICE)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def client_view(self):
        reserved, refused, lost = {}, 0, []
        for path in glob.glob(os.path.join(self.out, "*.txt")):
            with open(path) as f:
                for line in f:
                    kind, rest = line.split(" ", 1)
                    if kind == "reserved":
                        decision = rest.split()[0]
                        self.assertNotIn(decision, reserved, "a decision was handed out twice")
                        reserved[decision] = rest
                    elif kind == "refused":
                        refused += 1
                    else:
                        lost.append(line.strip())
        return reserved, refused, lost

    def jobs(self):
        jobs = {}
        for path in glob.glob(os.path.join(self.out, "jobs", "*.txt")):
            with open(path) as f:
                for line in f:
                    _, job, decision, uid, cost = line.split()
                    jobs[int(job)] = (decision, int(uid), float(cost))
        return jobs

    def wait_for_spool(self):
        for _ in range(300):
            if not glob.glob(os.path.join(self.spool, "*.job")):
                return
            time.sleep(0.1)
        self.fail("the daemon did not drain its jobcomp spool")

    def check_ledger(self, jobs):
        db = sqlite3.connect(self.db)
        charges = db.execute("SELECT job_id, decision_id, uid, amount FROM job_charges").fetchall()
        by_job = {c[0]: c for c in charges}
        self.assertEqual(len(by_job), len(charges))
        # Every job Slurm recorded is charged once, to its decision, at its run time.
        self.assertEqual(set(by_job), set(jobs))
        for job, (decision, uid, cost) in jobs.items():
            self.assertEqual(by_job[job][1], decision)
            self.assertEqual(by_job[job][2], uid)
            self.assertAlmostEqual(by_job[job][3], cost, delta=1e-9 * max(1.0, cost))
        rows = db.execute("SELECT decision_id, user, state, amount, settled_amount "
                          "FROM reservations").fetchall()
        by_id = {r[0]: r for r in rows}
        for job, (decision, _, cost) in jobs.items():
            self.assertEqual(by_id[decision][2], "settled")
            self.assertAlmostEqual(by_id[decision][4], cost, delta=1e-9 * max(1.0, cost))
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
        # The totals the triggers keep in each write's own transaction (group
        # commits batch many) match the rows: nothing was half-written.
        held = collections.defaultdict(lambda: [0, 0.0])
        for r in rows:
            if r[2] in ("reserved", "bound"):
                held[r[1]][0] += 1
                held[r[1]][1] += r[3]
        kept = {name: (holds, amount) for name, holds, amount in db.execute(
            "SELECT name, holds, amount FROM held_by_scope WHERE kind = 'user' AND holds > 0")}
        self.assertEqual(set(kept), set(held))
        for user, (holds, amount) in held.items():
            self.assertEqual(kept[user][0], holds, user)
            self.assertAlmostEqual(kept[user][1], amount, delta=1e-6 * max(1.0, amount))
        spent = collections.defaultdict(float)
        for name, amount in db.execute("SELECT name, amount FROM spent_by_day WHERE kind = 'user'"):
            spent[name] += amount
        for user in per_user:
            settled = sum(r[4] for r in rows if r[1] == user and r[2] == "settled")
            self.assertAlmostEqual(spent[user], settled, delta=1e-6 * max(1.0, settled))
        self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        return rows

    def test_thousand_concurrent_launches(self):
        daemon = self.start_daemon()
        try:
            t0 = time.monotonic()
            users = self.run_users()
            out, _ = users.communicate(timeout=600)
            self.assertEqual(users.returncode, 0, out)
            reserved, refused, lost = self.client_view()
            self.assertEqual(lost, [])
            self.assertEqual(len(reserved) + refused, USERS * LAUNCHES)
            self.assertGreater(refused, 0, "the budget never bit: raise the load or lower LIMIT")
            controller = self.run_controller()
            out, _ = controller.communicate(timeout=600)
            self.assertEqual(controller.returncode, 0, out)
            self.wait_for_spool()
            jobs = self.jobs()
            self.assertEqual(len(jobs), len(reserved))
            rows = self.check_ledger(jobs)
            self.assertEqual([r for r in rows if r[2] in ("reserved", "bound")], [])
            print(f"\n{USERS * LAUNCHES} launches + {len(jobs)} admissions and records in "
                  f"{time.monotonic() - t0:.1f} s: {refused} refused over budget")
        finally:
            daemon.terminate()
            daemon.wait()

    def kill_and_restart(self, daemon, after_s):
        time.sleep(after_s)
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        os.unlink(self.sock)
        time.sleep(0.3)
        return self.start_daemon()

    def test_daemon_killed_at_random_points_and_restarted(self):
        rng = random.Random(23)
        daemon = self.start_daemon()
        try:
            users = self.run_users()
            for _ in range(3):
                daemon = self.kill_and_restart(daemon, rng.uniform(0.3, 1.5))
            out, _ = users.communicate(timeout=600)
            self.assertEqual(users.returncode, 0, out)
            reserved, refused, lost = self.client_view()
            self.assertEqual(lost, [])
            controller = self.run_controller()
            for _ in range(3):
                daemon = self.kill_and_restart(daemon, rng.uniform(0.2, 1.0))
            out, _ = controller.communicate(timeout=600)
            self.assertEqual(controller.returncode, 0, out)
            self.wait_for_spool()
            jobs = self.jobs()
            self.assertEqual(len(jobs), len(reserved))
            rows = self.check_ledger(jobs)
            # Holds whose decision never reached a client (the daemon died
            # before answering) stay open until they expire; nothing else does.
            open_rows = [r for r in rows if r[2] in ("reserved", "bound")]
            self.assertTrue(all(r[0] not in reserved for r in open_rows))
            print(f"\nkilled 6 times: {len(jobs)} jobs charged once each, {refused} refused, "
                  f"{len(open_rows)} unanswered holds left for expiry")
        finally:
            daemon.terminate()
            daemon.wait()


if __name__ == "__main__":
    unittest.main()
