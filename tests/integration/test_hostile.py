"""A hostile but ordinary user against strict budgets, on the real stack
(slurmctld with job_submit.lua and the jobcomp script, slurmd, xdeepd as its
own user, MUNGE): bypassing the plugin with their own slurm.conf, --export=NONE,
arrays, heterogeneous jobs (each component held and charged on its own),
forged, replayed and other users' admission tokens, the admission socket asked
directly or held open, other users' decision ids,
forged failure reports while the job runs, a node failing under a job, a hung
daemon, a full ledger disk, SIGKILLs of the daemon under concurrent launches, a
second daemon started on the running one's spool or ledger.
Refusals come at submission with one line and a non-zero exit; charges come
from slurmctld's record of each job; no user makes a node change state
(sinfo -R stays empty)."""
import calendar
import collections
import contextlib
import os
import random
import re
import shlex
import signal
import sqlite3
import subprocess
import threading
import time
import unittest

from harness import (BUILD, PLUGIN, STACK, WORKLOADS, StackTest, alt_conf, daemon_log,
                     daemon_process, run)

GPT = os.path.join(WORKLOADS, "gpt-125m.toml")
LOAD = os.path.join(BUILD, "tests", "daemon", "ledger_load")
XDEEPD = os.path.join(BUILD, "daemon", "xdeepd")
ADMIT = os.path.join(BUILD, "spank_plugin", "xdeep-admit")
ALICE, MALLORY = "xdeep-alice", "xdeep-mallory"
PRICE = 2.5  # the stack's price_per_gpu_hour


def as_user(user, argv):
    return ["runuser", "-u", user, "--", *argv]


def uid_of(user):
    return int(subprocess.run(["id", "-u", user], capture_output=True, text=True).stdout)


def ledger():
    return sqlite3.connect(os.path.join(STACK, "xdeep.db"))


def reservation(decision):
    return ledger().execute("SELECT state, uid, amount, settled_amount, job_id FROM reservations "
                            "WHERE decision_id = ?", (decision,)).fetchone()


def full_decision_id(prefix):
    row = ledger().execute("SELECT decision_id FROM reservations WHERE decision_id LIKE ?",
                           (prefix + "%",)).fetchone()
    return row[0] if row else None


def charges_of(job_ids):
    marks = ",".join("?" * len(job_ids))
    return ledger().execute(f"SELECT job_id, decision_id, uid, gpus, end_unix - start_unix, amount "
                            f"FROM job_charges WHERE job_id IN ({marks})", job_ids).fetchall()


def wait_for_charges(job_ids, timeout_s=40):
    rows = []
    for _ in range(int(timeout_s / 0.25)):
        rows = charges_of(job_ids)
        if len(rows) == len(job_ids):
            return rows
        time.sleep(0.25)
    return rows


def slurm_record(job_id):
    """scontrol's record of a job and the GPUs it was allocated (its per-node
    detail lines: "Nodes=n[1-2] ... GRES=gpu:4(IDX:0-3)"), while Slurm remembers it."""
    out = run(["scontrol", "-d", "show", "job", str(job_id)]).out
    gpus = 0
    for nodes, count in re.findall(r"^\s+Nodes=(\S+) .*GRES=gpu(?::[^:(]+)?:(\d+)\(", out, re.M):
        hosts = run(["scontrol", "show", "hostnames", nodes]).out.split()
        gpus += len(hosts) * int(count)
    return out, gpus


def decision_of(result):
    """The decision the plugin printed (its first 12 characters), in full."""
    match = re.search(r"decision (\w+)\)", result.err)
    return full_decision_id(match.group(1)) if match else None


def forged_env_launch(user, argv, decision="forged", token=None):
    """The launch as the plugin sees a re-executed tuned launch: the hostile
    user sets the guard variables by hand (exec keeps the pid)."""
    exports = f"export XDEEP_TUNED={shlex.quote(decision)} XDEEP_REEXEC_PID=$$"
    if token is not None:
        exports += f" XDEEP_ADMISSION={shlex.quote(token)}"
    return as_user(user, ["bash", "-c", f'{exports}; exec "$@"', "forged", *argv])


def ensure_users(*users):
    """Each test class makes the local users it acts as: unittest runs the
    classes in name order, so none may rely on another having made them."""
    for user in users:
        if subprocess.run(["id", user], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "-M", "-s", "/bin/sh", user], check=True)


class HostileUserTest(StackTest):
    def setUp(self):
        super().setUp()
        ensure_users(ALICE, MALLORY)
        os.chmod(self.tmp, 0o777)

    def tearDown(self):
        # Nothing a user did may change a node's state.
        reasons = run(["sinfo", "-R", "-h"]).out.strip()
        states = set(run(["sinfo", "-h", "-N", "-o", "%t"]).out.split())
        super().tearDown()
        self.assertEqual(reasons, "", "a node was drained or downed")
        # "plnd": the backfill pass planned a (heterogeneous) job there; not a failure.
        self.assertTrue(states <= {"idle", "mix", "alloc", "comp", "plnd"}, states)

    def assert_refused_at_submission(self, r, reason):
        self.assertNotEqual(r.rc, 0, r)
        lines = [l for l in r.err.splitlines() if "xdeep:" in l]
        self.assertEqual(len(lines), 1, r)
        self.assertIn(reason, lines[0])
        self.assertNotRegex(r.out, r"Submitted batch job|job \d+ queued", r)

    def user_jobs(self, user):
        return run(["squeue", "-h", "-u", user, "-o", "%i"]).out.split()

    # --- refusal before allocation ---------------------------------------

    def test_own_slurm_conf_is_refused_at_submission(self):
        conf = alt_conf(self.tmp, "")  # no plugin at all
        for argv, reason in ((["sbatch", "-p", "strict", "--wrap=true"], "no xdeep reservation"),
                             (["sbatch", "-p", "strict", "--array=0-3", "--wrap=true"],
                              "no xdeep reservation"),
                             (["srun", "-p", "strict", "true"], "no xdeep reservation"),
                             (["salloc", "-p", "strict", "true"], "no xdeep reservation"),
                             (["sbatch", "-p", "debug,strict", "--wrap=true"],
                              "exactly one partition")):
            t0 = time.monotonic()
            r = run(as_user(MALLORY, argv), conf=conf)
            self.assert_refused_at_submission(r, reason)
            self.assertLess(time.monotonic() - t0, 3.0, r)
        self.assertEqual(self.user_jobs(MALLORY), [])
        # The plain user's partition is untouched: no token, no daemon call.
        ok = run(as_user(MALLORY, ["srun", "-p", "debug", "true"]), conf=conf)
        self.assertEqual(ok.rc, 0, ok)

    def test_heterogeneous_job_needs_time_limits_and_budget(self):
        # No token proves a component: each strict one is held from its --time.
        r = run(as_user(MALLORY, ["sbatch", "-p", "debug", "--wrap=true", ":", "-p", "strict",
                                  "--wrap=true"]))
        self.assert_refused_at_submission(r, "needs a time limit (--time)")
        r = run(as_user(MALLORY, ["sbatch", "-p", "strict", "--time=1", "--wrap=true", ":",
                                  "-p", "strict", "-N3", "--gpus-per-node=4", "--time=1500-0"]))
        self.assert_refused_at_submission(r, "over budget")
        self.assertEqual(self.user_jobs(MALLORY), [])

    def test_heterogeneous_components_are_each_held_and_charged(self):
        r = run(as_user(ALICE, ["sbatch", "--parsable", "-o", "/dev/null", "-p", "strict", "-N1",
                                "--gpus-per-node=1", "--time=1", "--wrap=sleep 2", ":",
                                "-p", "strict", "-N1", "--gpus-per-node=3", "--time=2"]))
        self.assertEqual(r.rc, 0, r)
        leader = int(r.out.strip().split(";")[0])
        ids = re.search(r"HetJobIdSet=(\d+)-(\d+)", run(["scontrol", "show", "job", str(leader)]).out)
        self.assertIsNotNone(ids)
        jobs = list(range(int(ids.group(1)), int(ids.group(2)) + 1))
        self.assertEqual(len(jobs), 2)
        # Slurm starts heterogeneous jobs on a backfill pass (every 30 s).
        rows = wait_for_charges(jobs, timeout_s=120)
        self.assertEqual(len(rows), 2, rows)
        by_job = {row[0]: row for row in rows}
        for job, gpus, minutes in ((jobs[0], 1, 1), (jobs[1], 3, 2)):
            _, decision, uid, charged_gpus, run_s, amount = by_job[job]
            self.assertIsNotNone(decision, f"component {job} was not charged to its own hold")
            self.assertEqual((uid, charged_gpus), (uid_of(ALICE), gpus))
            self.assertGreaterEqual(run_s, 2)
            self.assertAlmostEqual(amount, gpus * run_s / 3600 * PRICE, delta=1e-9)
            state, _, held, settled, job_id = reservation(decision)
            self.assertAlmostEqual(held, gpus * minutes / 60 * PRICE, delta=1e-9)
            self.assertEqual((state, job_id), ("settled", job))
            self.assertAlmostEqual(settled, amount, delta=1e-9)
        self.assertNotEqual(by_job[jobs[0]][1], by_job[jobs[1]][1])

    def test_forged_admission_token_is_refused(self):
        r = run(forged_env_launch(MALLORY, ["sbatch", "-p", "strict", "--wrap=true"],
                                  token="00" * 32))
        self.assert_refused_at_submission(r, "unknown or was already used")
        # Not hex: never reaches slurmctld's shell, still refused.
        if os.path.exists("/tmp/xdeep-pwned"):
            os.unlink("/tmp/xdeep-pwned")
        r = run(forged_env_launch(MALLORY, ["sbatch", "-p", "strict", "--wrap=true"],
                                  token="x;touch${IFS}/tmp/xdeep-pwned"))
        self.assert_refused_at_submission(r, "unknown or was already used")
        self.assertFalse(os.path.exists("/tmp/xdeep-pwned"))

    def test_admission_socket_answers_only_slurmctlds_user(self):
        """The admission socket trusts the kernel's word on the caller: a user
        who runs xdeep-admit, or talks to the socket, is no controller."""
        sock = os.path.join(STACK, "xdeepd.sock.admit")
        self.assertEqual(os.stat(sock).st_mode & 0o777, 0o666)
        decision, token = self.reserve_as(MALLORY)
        r = run(as_user(MALLORY, [ADMIT, f"--socket={sock}", f"--uid={uid_of(MALLORY)}",
                                  "--partition=strict", "--nodes=1", f"--token={token}"]))
        self.assertEqual(r.rc, 1, r)
        self.assertIn("controller_users", r.out)
        self.assertIn("not xdeep-mallory", r.out)
        self.assertEqual(reservation(decision)[0], "reserved", "a refused caller consumed it")
        # Claiming to be root in the request changes nothing: the uid is the kernel's.
        r = run(as_user(MALLORY, [ADMIT, f"--socket={sock}", "--uid=0", "--partition=strict",
                                  "--nodes=1", f"--token={token}"]))
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(reservation(decision)[0], "reserved")

    @contextlib.contextmanager
    def silent_connections(self, user, sock, count):
        """`count` connections to `sock` that `user` holds open, saying nothing."""
        hold = ("import socket, sys, time\n"
                "conns = []\n"
                f"for _ in range({count}):\n"
                "    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); conns.append(s)\n"
                "print('holding', flush=True)\n"
                "time.sleep(30)\n")
        holder = subprocess.Popen(as_user(user, ["python3", "-c", hold, sock]),
                                  stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "holding")
            yield
        finally:
            holder.kill()
            holder.wait()

    def test_silent_connections_cannot_stall_the_admission_check(self):
        """Mallory holds connections to the admission socket open and says
        nothing, hoping slurmctld's check times out (fail=open admits): each is
        refused on accept, and the next strict submission is checked at once."""
        sock = os.path.join(STACK, "xdeepd.sock.admit")
        with self.silent_connections(MALLORY, sock, 8):
            t0 = time.monotonic()
            r = run(as_user(MALLORY, ["sbatch", "-p", "strict", "--wrap=true"]))
            waited = time.monotonic() - t0
        # The daemon's refusal, not fail=open's admission after TIMEOUT_MS.
        self.assert_refused_at_submission(r, "no xdeep reservation")
        self.assertLess(waited, 2.5, "the check waited on Mallory's connections")

    # The client socket (daemon/client_socket.h): srun's plugin asks there
    # without gRPC; a request's MUNGE credential is still what names the caller.
    CLIENT_ASK = (
        "import socket, struct, subprocess, sys\n"
        "def varint(n):\n"
        "    out = b''\n"
        "    while True:\n"
        "        out += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)]); n >>= 7\n"
        "        if not n: return out\n"
        "def field(num, data): return varint(num << 3 | 2) + varint(len(data)) + data\n"
        "def ask(cred, claimed_uid):\n"
        "    req = field(1, cred) + field(4, field(2, b'gpt-125m'))\n"
        "    req += varint(16 << 3) + varint(claimed_uid)  # TuneRequest.uid\n"
        "    body = struct.pack('>I', 3000) + req\n"
        "    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
        "    s.sendall(bytes([1]) + struct.pack('>I', len(body)) + body)\n"
        "    data = b''\n"
        "    while chunk := s.recv(65536): data += chunk\n"
        "    events, end = 0, 'OK'\n"
        "    while len(data) >= 5:\n"
        "        status, n = data[0], struct.unpack('>I', data[1:5])[0]\n"
        "        payload, data = data[5:5 + n], data[5 + n:]\n"
        "        if status: end = f'ERR {status} {payload.decode(errors=\"replace\")}'\n"
        "        else: events += 1\n"
        "    print(end, events, flush=True)\n"
        "cred = subprocess.run(['munge', '-n'], capture_output=True).stdout.strip()\n"
        "claimed = int(sys.argv[2])\n"
        "ask(cred, claimed); ask(cred, claimed); ask(b'', 0); ask(b'not a credential', 0)\n")

    def test_client_socket_callers_are_who_munge_says(self):
        """Mallory talks to the client socket herself, claiming Alice's uid in
        the request: the decision is hers (her own credential), her credential
        replayed is refused, and so are a missing and a made-up one."""
        sock = os.path.join(STACK, "xdeepd.sock.client")
        self.assertEqual(os.stat(sock).st_mode & 0o777, 0o666)
        decided = r"event=tune\.decided user=(\S+) uid=(\d+)"
        before = len(re.findall(decided, daemon_log()))
        r = run(as_user(MALLORY, ["python3", "-c", self.CLIENT_ASK, sock, str(uid_of(ALICE))]))
        self.assertEqual(r.rc, 0, r)
        first, replayed, missing, made_up = r.out.splitlines()
        self.assertRegex(first, r"^OK [1-9]")
        self.assertRegex(replayed, r"^ERR 16 .*replayed")  # UNAUTHENTICATED
        self.assertRegex(missing, r"^ERR 16 ")
        self.assertRegex(made_up, r"^ERR 16 ")
        self.assertEqual(re.findall(decided, daemon_log())[before:],
                         [(MALLORY, str(uid_of(MALLORY)))])

    def test_silent_client_socket_connections_cannot_stall_others(self):
        """Mallory holds many connections to the client socket open and says
        nothing: she holds only her own share, and Alice's tuned launch is
        decided at once, not run untuned after the plugin's timeout."""
        sock = os.path.join(STACK, "xdeepd.sock.client")
        alice_decided = f"event=tune.decided user={ALICE}"
        before = daemon_log().count(alice_decided)
        with self.silent_connections(MALLORY, sock, 64):
            t0 = time.monotonic()
            r = run(as_user(ALICE, ["srun", "--xdeep-tune", f"--xdeep-workload={GPT}", "-N1",
                                    "true"]))
            waited = time.monotonic() - t0
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("unavailable", r.err, r)
        self.assertEqual(daemon_log().count(alice_decided), before + 1)
        self.assertLess(waited, 2.5, "Alice's launch waited on Mallory's connections")
        self.assertIn("event=client_socket.busy uid=" + str(uid_of(MALLORY)), daemon_log())

    def reserve_as(self, user):
        """A strict reservation made through the daemon as `user` (one Tune, as
        srun's plugin makes it), with the token a user could capture."""
        out = os.path.join(self.tmp, "load")
        os.makedirs(out, exist_ok=True)
        os.chmod(out, 0o777)
        uid = uid_of(user)
        r = subprocess.run([LOAD, "--daemon", f"unix://{STACK}/xdeepd.sock", "--out", out,
                            "--users", "1", "--launches", "1", "--uid-base", str(uid)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out, f"{uid}.txt")) as f:
            kind, decision, token = f.read().split()[:3]
        self.assertEqual(kind, "reserved")
        return decision, token

    def test_replayed_credential_is_refused(self):
        r = subprocess.run([LOAD, "--replay", "--daemon", f"unix://{STACK}/xdeepd.sock",
                            "--out", self.tmp, "--uid-base", str(uid_of(MALLORY))],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        first, again = r.stdout.splitlines()
        self.assertTrue(first.startswith("first OK"), r.stdout)
        self.assertRegex(again, r"^replayed 16 .*replayed")  # UNAUTHENTICATED

    def test_tokens_are_single_use_and_bound_to_their_user(self):
        decision, token = self.reserve_as(ALICE)
        # Mallory holds Alice's token (and knows her decision id): refused.
        r = run(forged_env_launch(MALLORY, ["sbatch", "-p", "strict", "--wrap=true"],
                                  decision=decision, token=token))
        self.assert_refused_at_submission(r, "belongs to another user")
        self.assertEqual(reservation(decision)[0], "reserved")
        # Mallory reporting Alice's launch as failed frees nothing.
        r = run(forged_env_launch(MALLORY, ["srun", "-w", "nosuchnode", "true"],
                                  decision=decision))
        self.assertEqual(reservation(decision)[0], "reserved")
        # Alice submits with it: admitted, bound to the job by the controller.
        r = run(forged_env_launch(ALICE, ["sbatch", "--parsable", "-p", "strict",
                                          "--wrap=sleep 1"], decision=decision, token=token))
        self.assertEqual(r.rc, 0, r)
        job = int(r.out.strip().split(";")[0])
        self.assertEqual(reservation(decision)[0], "bound")
        # The same token again: refused, whoever sends it.
        for user in (ALICE, MALLORY):
            r = run(forged_env_launch(user, ["sbatch", "-p", "strict", "--wrap=true"],
                                      decision=decision, token=token))
            self.assert_refused_at_submission(r, "unknown or was already used")
        rows = wait_for_charges([job])
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual(rows[0][1], decision)
        self.assertEqual(reservation(decision)[0], "settled")

    # --- Slurm is the authority for what ran -----------------------------

    def test_export_none_batch_job_without_srun_is_charged_from_slurms_record(self):
        out = os.path.join(self.tmp, "job.out")
        r = run(as_user(ALICE, ["sbatch", "--parsable", "--export=NONE", "-p", "strict",
                                "-o", out, "--xdeep-tune", f"--xdeep-workload={GPT}",
                                "--wrap=sleep 2"]))
        self.assertEqual(r.rc, 0, r)
        job = int(r.out.strip().splitlines()[-1].split(";")[0])
        decision = decision_of(r)
        self.assertEqual(reservation(decision)[0], "bound")
        record, gpus = "", 0
        for _ in range(80):  # Slurm's own record: GPUs while it runs, then its end
            record, allocated = slurm_record(job)
            gpus = max(gpus, allocated)
            if "JobState=COMPLETED" in record:
                break
            time.sleep(0.1)
        self.assertIn("JobState=COMPLETED", record)
        self.assertGreater(gpus, 0, record)
        rows = wait_for_charges([job])
        self.assertEqual(len(rows), 1, rows)
        _, charged_decision, uid, charged_gpus, run_s, amount = rows[0]
        self.assertEqual((charged_decision, uid, charged_gpus), (decision, uid_of(ALICE), gpus))
        self.assertGreaterEqual(run_s, 2)
        self.assertAlmostEqual(amount, gpus * run_s / 3600 * PRICE, delta=1e-9)
        self.assertEqual(reservation(decision)[0], "settled")

    def test_every_array_task_is_charged(self):
        r = run(as_user(ALICE, ["sbatch", "--wait", "-p", "strict", "--array=0-2", "-o", "/dev/null",
                                "--xdeep-tune", f"--xdeep-workload={GPT}", "--wrap=sleep 1"]),
                timeout=120)
        self.assertEqual(r.rc, 0, r)
        decision = decision_of(r)
        array_job = int(re.search(r"Submitted batch job (\d+)", r.out).group(1))
        jobs = [array_job, array_job + 1, array_job + 2]
        rows = wait_for_charges(jobs)
        self.assertEqual(len(rows), 3, rows)
        self.assertEqual({row[1] for row in rows}, {decision})
        self.assertTrue(all(row[4] >= 1 for row in rows), rows)
        state, _, amount, settled, _ = reservation(decision)
        self.assertEqual(state, "settled")
        self.assertAlmostEqual(settled, sum(row[5] for row in rows), delta=1e-9)

    def test_requeued_job_is_charged_for_each_run(self):
        r = run(as_user(ALICE, ["sbatch", "--parsable", "-p", "strict", "-o", "/dev/null",
                                "--xdeep-tune", f"--xdeep-workload={GPT}", "--wrap=sleep 5"]))
        self.assertEqual(r.rc, 0, r)
        job = int(r.out.strip().splitlines()[-1].split(";")[0])
        decision = decision_of(r)
        for _ in range(40):
            if "JobState=RUNNING" in run(["scontrol", "-o", "show", "job", str(job)]).out:
                break
            time.sleep(0.1)
        time.sleep(3.5)  # long enough for a ledger pass (2 s) to see it running
        self.assertEqual(run(["scontrol", "requeue", str(job)]).rc, 0)
        # A requeued job waits out its credentials' lifetime before it runs
        # again (slurm-cluster.sh: AuthInfo=cred_expire=10).
        rows = []
        for _ in range(240):
            rows = ledger().execute("SELECT start_unix, end_unix - start_unix, decision_id, amount "
                                    "FROM job_charges WHERE job_id = ? ORDER BY start_unix",
                                    (job,)).fetchall()
            if len(rows) == 2:
                break
            time.sleep(0.25)
        self.assertEqual(len(rows), 2, rows)
        (first_start, first_s, d1, a1), (second_start, second_s, d2, a2) = rows
        self.assertEqual((d1, d2), (decision, decision))
        self.assertGreaterEqual(first_s, 3, "the run before the requeue is charged for its time")
        self.assertGreaterEqual(second_s, 5)
        self.assertGreater(second_start, first_start)
        self.assertAlmostEqual(reservation(decision)[3], a1 + a2, delta=1e-9)

    def test_node_failure_is_not_billed_and_the_rerun_is(self):
        # The node fails under a running job (an admin downs it): Slurm ends
        # the run as NODE_FAIL and requeues the job. That period is the site's
        # failure, charged 0 (docs/admin.md); the hold stays for the rerun,
        # which is billed and closes it.
        r = run(as_user(ALICE, ["sbatch", "--parsable", "-p", "strict", "-o", "/dev/null",
                                "--xdeep-tune", f"--xdeep-workload={GPT}",
                                "--xdeep-cost-tolerance=0", "--wrap=sleep 5"]))
        self.assertEqual(r.rc, 0, r)
        job = int(r.out.strip().splitlines()[-1].split(";")[0])
        decision = decision_of(r)
        node = ""
        for _ in range(80):
            node = run(["squeue", "-h", "-j", str(job), "-t", "RUNNING", "-o", "%N"]).out.strip()
            if node:
                break
            time.sleep(0.25)
        self.assertTrue(node, "the job never ran")
        time.sleep(2)
        down = run(["scontrol", "update", f"nodename={node}", "state=down", "reason=xdeep-test"])
        self.assertEqual(down.rc, 0, down)
        db = ledger()
        try:
            rows = []
            for _ in range(480):  # the rerun waits out its credential (cred_expire=10)
                # The charges and the hold read in one snapshot: the rerun's
                # charge and its settling are one commit, which must not land
                # between two reads.
                db.execute("BEGIN")
                rows = db.execute("SELECT state, end_unix - start_unix, decision_id, gpus, "
                                  "amount FROM job_charges WHERE job_id = ? ORDER BY "
                                  "start_unix", (job,)).fetchall()
                hold = db.execute("SELECT state FROM reservations WHERE decision_id = ?",
                                  (decision,)).fetchone()[0]
                db.rollback()
                if len(rows) == 1:
                    self.assertEqual(hold, "bound", f"the hold left early: charges {rows}")
                if len(rows) == 2:
                    break
                time.sleep(0.25)
        finally:
            db.close()
            run(["scontrol", "update", f"nodename={node}", "state=resume"])
        self.assertEqual(len(rows), 2, rows)
        (failed, failed_s, d1, _, failed_amount), (done, done_s, d2, gpus, amount) = rows
        self.assertEqual((failed, done), ("NODE_FAIL", "COMPLETED"))
        self.assertEqual((d1, d2), (decision, decision))
        self.assertGreaterEqual(failed_s, 2)
        self.assertEqual(failed_amount, 0)
        self.assertGreaterEqual(done_s, 5)
        self.assertAlmostEqual(amount, gpus * done_s / 3600 * PRICE, delta=1e-9)
        state, _, _, settled, _ = reservation(decision)
        self.assertEqual(state, "settled")
        self.assertAlmostEqual(settled, amount, delta=1e-9)

    def test_failure_report_while_the_job_runs_frees_nothing(self):
        r = run(as_user(ALICE, ["sbatch", "--parsable", "-p", "strict", "-o", "/dev/null",
                                "--xdeep-tune", f"--xdeep-workload={GPT}", "--wrap=sleep 4"]))
        self.assertEqual(r.rc, 0, r)
        job = int(r.out.strip().splitlines()[-1].split(";")[0])
        decision = decision_of(r)
        # The owner claims the launch failed (an srun that never got a job).
        forged = run(forged_env_launch(ALICE, ["srun", "-w", "nosuchnode", "true"],
                                       decision=decision))
        self.assertNotEqual(forged.rc, 0, forged)
        self.assertEqual(reservation(decision)[0], "bound")
        rows = wait_for_charges([job])
        self.assertEqual(len(rows), 1, rows)
        self.assertGreaterEqual(rows[0][4], 4)
        self.assertEqual(reservation(decision)[0], "settled")

    def test_failed_submission_releases_its_hold_at_once(self):
        # srun reports the failure itself; Slurm holds no job for the decision.
        r = run(as_user(ALICE, ["srun", "-p", "strict", "-w", "nosuchnode", "--xdeep-tune",
                                f"--xdeep-workload={GPT}", "true"]))
        self.assertNotEqual(r.rc, 0, r)
        decision = decision_of(r)
        # The report is srun's last call; on a loaded host srun may stop waiting
        # for it (its deadline is what is left of timeout_ms) while the daemon
        # still asks Slurm. So wait a moment, and tell the report's release from
        # the ledger pass's (10 s grace) by the daemon's own record of it.
        released = f"event=report.released decision={decision} "
        for _ in range(24):
            if released in daemon_log():
                break
            time.sleep(0.25)
        self.assertIn(released, daemon_log(), f"srun's report freed nothing: {r.err}")
        self.assertEqual(reservation(decision)[0], "released")
        # sbatch cannot: the daemon finds the admitted hold with no job in
        # Slurm on its next ledger pass (2 s here) after a 10 s grace.
        r = run(as_user(ALICE, ["sbatch", "-p", "strict", "-w", "nosuchnode", "--xdeep-tune",
                                f"--xdeep-workload={GPT}", "--wrap=true"]))
        self.assertNotEqual(r.rc, 0, r)
        decision = decision_of(r)
        self.assertEqual(reservation(decision)[0], "bound")
        state = None
        for _ in range(80):
            state = reservation(decision)[0]
            if state == "released":
                break
            time.sleep(0.25)
        self.assertEqual(state, "released")

    # --- daemon outage ---------------------------------------------------

    def test_hung_daemon_fail_open_runs_and_charges_later(self):
        with open(os.path.join(STACK, "run", "xdeepd.fgpid")) as f:
            pid = int(f.read())
        conf = alt_conf(self.tmp, "")
        os.kill(pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            plain = run(as_user(MALLORY, ["srun", "-p", "debug", "true"]))
            plain_s = time.monotonic() - t0
            r = run(as_user(MALLORY, ["sbatch", "--parsable", "-p", "strict", "-o", "/dev/null",
                                      "--gpus-per-node=2", "--wrap=sleep 1"]), conf=conf,
                    timeout=30)
        finally:
            os.kill(pid, signal.SIGCONT)
        self.assertEqual(plain.rc, 0, plain)
        self.assertLess(plain_s, 1.5, "a plain step waited for the daemon")
        self.assertEqual(r.rc, 0, r)  # fail=open: the controller admits it
        job = int(r.out.strip().split(";")[0])
        rows = wait_for_charges([job])
        self.assertEqual(len(rows), 1, rows)
        self.assertIsNone(rows[0][1], "no reservation: an unreserved charge")
        self.assertEqual(rows[0][2], uid_of(MALLORY))
        self.assertEqual(rows[0][3], 2, "the GPUs Slurm allocated, not the node's 4")
        self.assertAlmostEqual(rows[0][5], 2 * rows[0][4] / 3600 * PRICE, delta=1e-9)
        self.assertGreater(rows[0][5], 0)

    def test_hung_daemon_fail_closed_refuses_at_submission(self):
        lua = os.path.join(STACK, "job_submit.lua")
        with open(lua) as f:
            original = f.read()
        self.assertIn('local FAIL = "open"', original)
        with open(os.path.join(STACK, "run", "xdeepd.fgpid")) as f:
            pid = int(f.read())
        conf = alt_conf(self.tmp, "")
        try:
            # slurmctld reloads job_submit.lua when the file changes.
            with open(lua, "w") as f:
                f.write(original.replace('local FAIL = "open"', 'local FAIL = "closed"'))
            os.kill(pid, signal.SIGSTOP)
            t0 = time.monotonic()
            r = run(as_user(MALLORY, ["sbatch", "-p", "strict", "--wrap=true"]), conf=conf)
            waited = time.monotonic() - t0
        finally:
            os.kill(pid, signal.SIGCONT)
            with open(lua, "w") as f:
                f.write(original)
        self.assert_refused_at_submission(r, "needs the xdeep budget daemon, which is unavailable")
        self.assertLess(waited, 3.0 + 1.5, "slurmctld waited past TIMEOUT_MS")
        self.assertEqual(self.user_jobs(MALLORY), [])

    # --- least privilege ---------------------------------------------------

    def test_daemon_runs_as_its_own_user_and_keeps_its_records_private(self):
        with open(os.path.join(STACK, "run", "xdeepd.fgpid")) as f:
            pid = int(f.read())
        daemon_uid = os.stat(f"/proc/{pid}").st_uid
        self.assertNotEqual(daemon_uid, 0)
        for name in ("xdeep.db", "xdeep.db-wal", "xdeepd.log", "jobcomp"):
            st = os.stat(os.path.join(STACK, name))
            self.assertEqual(st.st_uid, daemon_uid, name)
            self.assertEqual(st.st_mode & 0o027, 0, f"{name} is {oct(st.st_mode)}")
        self.assertEqual(os.stat(os.path.join(STACK, "xdeepd.sock")).st_mode & 0o777, 0o666)
        r = run(as_user(MALLORY, ["sqlite3", os.path.join(STACK, "xdeep.db"),
                                  "SELECT COUNT(*) FROM reservations"]))
        self.assertNotEqual(r.rc, 0, r)


RESTARTED = []  # daemons this module started; local-stack.sh stops them by pid


def process_gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] == "Z"
    except FileNotFoundError:
        return True


def restart_stack_daemon(kill_signal):
    """Kills the stack's xdeepd with `kill_signal` and starts it again as
    local-stack.sh does (its own user, the pid recorded for the stop)."""
    pid_file = os.path.join(STACK, "run", "xdeepd.fgpid")
    with open(pid_file) as f:
        pid = int(f.read())
    os.kill(pid, kill_signal)
    for _ in range(100):
        if process_gone(pid):
            break
        time.sleep(0.05)
    owner = os.stat(os.path.join(STACK, "xdeep.db")).st_uid
    with open(os.path.join(STACK, "xdeepd.out"), "ab") as out:
        proc = subprocess.Popen(["setpriv", f"--reuid={owner}", f"--regid={owner}", "--clear-groups",
                                 XDEEPD, "--config", os.path.join(STACK, "xdeepd.toml")],
                                env=dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf")),
                                stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    RESTARTED.append(proc)
    with open(pid_file, "w") as f:
        f.write(str(proc.pid))
    sock = os.path.join(STACK, "xdeepd.sock")
    for _ in range(200):
        with open(os.path.join(STACK, "xdeepd.log")) as log:
            if os.path.exists(sock) and f"pid={proc.pid}" in log.read():
                return proc
        time.sleep(0.05)
    raise AssertionError("xdeepd did not come back")


def month_start():
    """Start of the stack's budget period (budget_period = "monthly", UTC)."""
    now = time.gmtime()
    return calendar.timegm((now.tm_year, now.tm_mon, 1, 0, 0, 0))


def budget_use(user):
    """(spent, held) of `user` this period, as the daemon counts it: settled
    holds and unreserved charges spent; reserved and bound holds held."""
    since = month_start()
    db = ledger()
    spent = db.execute("SELECT COALESCE(SUM(settled_amount), 0) FROM reservations WHERE user = ? "
                       "AND state = 'settled' AND closed_unix >= ?", (user, since)).fetchone()[0]
    spent += db.execute("SELECT COALESCE(SUM(amount), 0) FROM job_charges WHERE user = ? AND "
                        "decision_id IS NULL AND charged_unix >= ?", (user, since)).fetchone()[0]
    held = db.execute("SELECT COALESCE(SUM(amount), 0) FROM reservations WHERE user = ? AND "
                      "state IN ('reserved', 'bound')", (user,)).fetchone()[0]
    return spent, held


def slurm_time(text):
    return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))  # local time, as Slurm prints


class SlurmWatch(threading.Thread):
    """Slurm's own view of `user`'s jobs, sampled while they run and end
    (slurmctld forgets a job MinJobAge = 10 s after it ends; no slurmdbd
    here): per job the runs' start times, the last end, nodes, GPUs
    allocated (scontrol's per-node GRES lines), restarts and state. Each
    sample also reads the user's budget use from the ledger."""

    def __init__(self, user):
        super().__init__(daemon=True)
        self.user = user
        self.jobs = {}
        self.max_use = 0.0
        self.errors = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                self.sample()
            except Exception as e:  # a slow scontrol under load: the next sample
                self.errors.append(repr(e))
            self.stopping.wait(0.5)

    @staticmethod
    def hosts(nodes):
        if "[" not in nodes and "," not in nodes:
            return 1
        return len(run(["scontrol", "show", "hostnames", nodes]).out.split())

    def sample(self):
        spent, held = budget_use(self.user)
        self.max_use = max(self.max_use, spent + held)
        out = run(["scontrol", "-d", "show", "job"]).out
        for block in out.split("\n\n"):
            job = re.search(r"^JobId=(\d+)", block)
            if not job or f"UserId={self.user}(" not in block:
                continue
            field = lambda name: (re.search(rf"\b{name}=(\S+)", block) or [None, None])[1]
            seen = self.jobs.setdefault(int(job.group(1)), {"starts": set(), "gpus": 0})
            seen["state"] = field("JobState")
            seen["restarts"] = int(field("Restarts") or 0)
            if field("StartTime") not in (None, "Unknown", "None"):
                start = slurm_time(field("StartTime"))
                if seen["state"] in ("RUNNING", "COMPLETING", "COMPLETED", "FAILED", "NODE_FAIL"):
                    seen["starts"].add(start)
                    seen["start"] = start
                    seen["nodes"] = int(field("NumNodes"))
            if seen["state"] == "COMPLETED" and field("EndTime") not in (None, "Unknown"):
                seen["end"] = slurm_time(field("EndTime"))
            gpus = 0
            for nodes, count in re.findall(r"^\s+Nodes=(\S+) .*GRES=gpu(?::[^:(]+)?:(\d+)\(",
                                           block, re.M):
                gpus += self.hosts(nodes) * int(count)
            if gpus:
                seen["gpus"] = gpus

    def stop(self):
        self.stopping.set()
        self.join()
        self.sample()


class CrashTest(StackTest):
    """Concurrent tuned launches on the strict partition while xdeepd is
    SIGKILLed at random points, with a budget the launches exhaust (item 4
    of issue 23): every job Slurm ran is charged exactly once, as Slurm
    recorded it (runs, nodes, GPUs, seconds); the budget never holds more
    than its limit; every hold returns once Slurm has no job for it; no node
    changes state. A run Slurm ends as NODE_FAIL and requeues is waited out
    and charged 0 (docs/admin.md). bench/budget_crash.sh runs the large
    version."""

    LAUNCHES = int(os.environ.get("XDEEP_CRASH_LAUNCHES", "16"))
    KILLS = int(os.environ.get("XDEEP_CRASH_KILLS", "2"))
    # How many predicted holds Alice's budget covers at once: the rest of the
    # launches are refused for budget (while those hold it). Holds return as
    # jobs end, so how many are out at once depends on timing: 200 launches
    # on the 2-core VM had 46 to 100 out at the most.
    HOLDS = int(os.environ.get("XDEEP_CRASH_HOLDS", "0")) or max(2, LAUNCHES // 5)
    # The cheapest layout (one node): jobs run side by side on the 3 nodes.
    TUNE = ["--xdeep-tune", f"--xdeep-workload={GPT}", "--xdeep-cost-tolerance=0"]
    ADMISSION_WINDOW_S = 30  # unused holds return after this (the stack's default is 120)

    def setUp(self):
        super().setUp()
        ensure_users(ALICE)
        os.chmod(self.tmp, 0o777)
        self.config = os.path.join(STACK, "xdeepd.toml")
        with open(self.config) as f:
            self.original_config = f.read()
        self.addCleanup(self.set_config, self.original_config)
        # One launch first: what a hold costs (the decision is deterministic).
        r = run(as_user(ALICE, ["sbatch", "--parsable", "-p", "strict", "-o", "/dev/null",
                                *self.TUNE, "--wrap=true"]), cwd=self.tmp)
        self.assertEqual(r.rc, 0, r)
        self.hold = reservation(decision_of(r))[2]
        self.assertGreater(self.hold, 0)
        self.first_job = int(r.out.strip().splitlines()[-1].split(";")[0])
        self.assertEqual(len(wait_for_charges([self.first_job])), 1)
        spent, held = budget_use(ALICE)
        self.limit = spent + held + (self.HOLDS + 0.5) * self.hold
        self.set_config(self.original_config.replace(
            "[policy]\n", f"[policy]\nadmission_window_s = {self.ADMISSION_WINDOW_S}\n", 1)
            + f"[budget.user.{ALICE}]\nlimit = {self.limit:.6f}\n")

    def set_config(self, text):
        with open(self.config, "w") as f:
            f.write(text)
        reloads = daemon_log().count("event=policy.reloaded")
        with open(os.path.join(STACK, "run", "xdeepd.fgpid")) as f:
            os.kill(int(f.read()), signal.SIGHUP)
        for _ in range(100):
            if daemon_log().count("event=policy.reloaded") > reloads:
                return
            time.sleep(0.05)
        self.fail("xdeepd did not reload its policy")

    def tearDown(self):
        reasons = run(["sinfo", "-R", "-h"]).out.strip()
        super().tearDown()
        self.assertEqual(reasons, "", "a node was drained or downed")

    def test_sigkill_under_concurrent_strict_launches(self):
        rng = random.Random(int(os.environ.get("XDEEP_CRASH_SEED", "23")))
        watch = SlurmWatch(ALICE)
        watch.start()
        launches = [subprocess.Popen(
            as_user(ALICE, ["sbatch", "--parsable", "-p", "strict", "-o", "/dev/null", *self.TUNE,
                            "--wrap=sleep 1"]),
            env=dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf")), cwd=self.tmp,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(self.LAUNCHES)]
        for _ in range(self.KILLS):
            time.sleep(rng.uniform(0.05, 0.6))
            restart_stack_daemon(signal.SIGKILL)
        jobs, over_budget, refusals = [], 0, collections.Counter()
        for p in launches:
            out, err = p.communicate(timeout=600)
            if p.returncode == 0:
                jobs.append(int(out.strip().splitlines()[-1].split(";")[0]))
            else:  # refused (for budget, or the daemon died between decision and admission)
                self.assertRegex(err, r"error: xdeep: ", err)
                over_budget += "over budget" in err
                reason = re.search(r"error: xdeep: (?:partition \S+: )?([^:(;]{0,48})", err)
                refusals[reason.group(1).strip() if reason else "?"] += 1
        self.assertTrue(jobs, "no launch got through")
        if self.LAUNCHES > self.HOLDS + 1:
            self.assertGreater(over_budget, 0, "the budget never refused a launch")
        # Wait out Slurm: a job whose batch launch failed is requeued (NODE_FAIL)
        # and runs again after its credential expires.
        deadline = time.monotonic() + 300 + 3 * len(jobs)
        while run(["squeue", "-h", "-u", ALICE, "-o", "%i"]).out.split():
            self.assertLess(time.monotonic(), deadline, "Slurm still holds Alice's jobs")
            time.sleep(1)
        rows = []
        for _ in range(240):  # the jobcomp records of the last runs, then a ledger pass
            rows = ledger().execute(
                "SELECT job_id, start_unix, end_unix, decision_id, nodes, gpus, amount, state "
                "FROM job_charges WHERE uid = ? AND job_id > ? ORDER BY job_id, start_unix",
                (uid_of(ALICE), self.first_job)).fetchall()
            spool = [f for f in os.listdir(os.path.join(STACK, "jobcomp")) if f.endswith(".job")]
            if not spool and {r[0] for r in rows} >= set(jobs):
                break
            time.sleep(0.5)
        watch.stop()
        self.assertEqual(spool, [], "records left uncharged")

        # Every job that ran is charged exactly once per run, as Slurm recorded it.
        by_job = {}
        for row in rows:
            by_job.setdefault(row[0], []).append(row)
        self.assertEqual(set(by_job) - set(jobs), set(), "a charge for a job no launch submitted")
        ran = [job for job in jobs if watch.jobs.get(job, {}).get("starts")]
        self.assertEqual(len(ran), len(jobs), f"Slurm was not seen running every job: "
                         f"{sorted(set(jobs) - set(ran))}, sampling errors {watch.errors[-3:]}")
        for job in jobs:
            charged = by_job.get(job, [])
            self.assertTrue(charged, f"job {job} went uncharged")
            seen = watch.jobs[job]
            final = [r for r in charged if r[1] == seen["start"]]
            self.assertEqual(len(final), 1, (job, seen, charged))
            _, start, end, decision, nodes, gpus, amount, state = final[0]
            self.assertEqual(nodes, seen["nodes"], job)
            if seen["gpus"]:
                self.assertEqual(gpus, seen["gpus"], job)
            if "end" in seen:
                self.assertEqual(end, seen["end"], job)
            self.assertGreaterEqual(end - start, 1, job)
            self.assertAlmostEqual(amount, gpus * (end - start) / 3600 * PRICE, delta=1e-9)
            self.assertEqual(len(charged), seen["restarts"] + 1, (job, seen, charged))
            for earlier in charged:
                if earlier is not final[0] and earlier[7] in ("NODE_FAIL", "BOOT_FAIL"):
                    self.assertEqual(earlier[6], 0, ("a failed node's period was billed", earlier))
            if decision is not None:
                self.assertEqual(reservation(decision)[0], "settled", decision)
                self.assertAlmostEqual(reservation(decision)[3], sum(r[6] for r in charged),
                                       delta=1e-9)

        # No budget holds more than its limit, at any sample or at the end.
        spent, held = budget_use(ALICE)
        self.assertLessEqual(watch.max_use, self.limit + 1e-6)
        self.assertLessEqual(spent, self.limit + 1e-6)

        # Held amounts return: unused holds after the admission window,
        # bound ones once Slurm holds no job for them.
        latest = ledger().execute("SELECT COALESCE(MAX(expires_unix), 0) FROM reservations WHERE "
                                  "user = ? AND state = 'reserved'", (ALICE,)).fetchone()[0]
        deadline = max(latest, int(time.time())) + 30
        open_holds = []
        while time.time() < deadline:
            open_holds = ledger().execute(
                "SELECT decision_id, state, amount FROM reservations WHERE user = ? AND state IN "
                "('reserved', 'bound')", (ALICE,)).fetchall()
            if not open_holds:
                break
            time.sleep(0.5)
        self.assertEqual(open_holds, [], "held amounts did not return")
        self.assertAlmostEqual(budget_use(ALICE)[1], 0.0, delta=1e-9)
        print(f"\n{len(jobs)} of {self.LAUNCHES} launches submitted ({over_budget} refused for "
              f"budget), {len(ran)} seen running in Slurm, {len(rows)} runs charged once each "
              f"({sum(1 for r in rows if r[3] is None)} unreserved under fail=open, "
              f"{sum(1 for r in rows if r[7] == 'NODE_FAIL')} NODE_FAIL); budget use at most "
              f"{watch.max_use:.2f} of {self.limit:.2f}; every hold returned; refusals "
              f"{dict(refusals)}")


class SecondDaemonTest(StackTest):
    """The admin's mistake that lost charges in practice: a second xdeepd
    started on the running stack's configuration (or a copy naming the same
    ledger). It used to take the first daemon's job-completion records, so the
    first released holds it should have settled. Now it exits at once with one
    line naming the path, the running daemon's pid and the fix, and the first
    daemon settles its jobs as before."""

    def setUp(self):
        super().setUp()
        ensure_users(ALICE)
        os.chmod(self.tmp, 0o777)
        self.config = os.path.join(STACK, "xdeepd.toml")
        with open(self.config) as f:
            self.config_text = f.read()
        self.spool = re.search(r'^jobcomp_spool = "(.*)"', self.config_text, re.M).group(1)
        self.db = re.search(r'^path = "(.*)"', self.config_text, re.M).group(1)
        self.first = self.stack_daemon()
        self.assertFalse(process_gone(self.first))

    @staticmethod
    def stack_daemon():
        with open(os.path.join(STACK, "run", "xdeepd.fgpid")) as f:
            return int(f.read())

    def second_daemon(self, config):
        """xdeepd started by hand as the daemon's user on `config`: (exit code, stderr)."""
        owner = os.stat(self.db).st_uid
        proc = subprocess.Popen(["setpriv", f"--reuid={owner}", f"--regid={owner}", "--clear-groups",
                                 XDEEPD, "--config", config],
                                env=dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf")),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail("a second xdeepd kept running beside the stack's")
        return proc.returncode, err

    def assert_refused(self, config, what, key):
        """A second daemon on `config` exits non-zero with one line naming
        `what` (the path it shares), the first daemon's pid and `key`."""
        rc, err = self.second_daemon(config)
        lines = err.strip().splitlines()
        self.assertNotEqual(rc, 0, err)
        self.assertEqual(len(lines), 1, err)
        self.assertIn(f"the {what} ", lines[0])
        self.assertIn(f"(pid {self.first})", lines[0])
        self.assertIn("Stop that daemon first", lines[0])
        self.assertIn(key, lines[0])

    def test_second_daemon_is_refused_and_the_first_still_settles(self):
        self.assert_refused(self.config, f"jobcomp spool {self.spool}", "[store] jobcomp_spool")
        # --check-config says so, exits 0 (the file is valid) and takes nothing.
        r = run([XDEEPD, "--check-config", "--config", self.config])
        self.assertEqual(r.rc, 0, r)
        self.assertIn(f"xdeepd pid {self.first} is running on this configuration's jobcomp spool "
                      f"{self.spool}", r.out)
        self.assertIn(f"ledger database {self.db}", r.out)
        # A copy with its own spool, socket and log but the same ledger: refused too.
        own = os.path.join(self.tmp, "own")
        os.makedirs(os.path.join(own, "jobcomp"))
        os.chmod(own, 0o777)
        os.chmod(os.path.join(own, "jobcomp"), 0o777)
        copy = os.path.join(own, "xdeepd.toml")
        with open(copy, "w") as f:
            f.write(self.config_text.replace(f'"{self.spool}"', f'"{own}/jobcomp"')
                    .replace(f"unix://{STACK}/xdeepd.sock", f"unix://{own}/xdeepd.sock")
                    .replace(f"{STACK}/xdeepd.log", f"{own}/xdeepd.log"))
        self.assert_refused(copy, f"ledger database {self.db}", "[store] path")
        self.assertFalse(os.path.exists(os.path.join(own, "xdeepd.sock")))
        # The first daemon is unharmed: still running, still on its socket, and
        # it settles a job's charge from Slurm's record.
        self.assertFalse(process_gone(self.first))
        self.assertTrue(os.path.exists(os.path.join(STACK, "xdeepd.sock")))
        r = run(as_user(ALICE, ["sbatch", "--parsable", "-p", "strict", "-o", "/dev/null",
                                "--xdeep-tune", f"--xdeep-workload={GPT}", "--wrap=sleep 1"]),
                cwd=self.tmp)
        self.assertEqual(r.rc, 0, r)
        job = int(r.out.strip().splitlines()[-1].split(";")[0])
        decision = decision_of(r)
        self.assertIsNotNone(decision, r)
        rows = wait_for_charges([job])
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual(rows[0][1], decision)
        self.assertEqual(reservation(decision)[0], "settled")
        self.assertEqual(self.stack_daemon(), self.first)


class FullDiskTest(StackTest):
    """A daemon whose ledger lives on a full filesystem."""

    def setUp(self):
        super().setUp()
        self.mnt = os.path.join(self.tmp, "small")
        os.makedirs(self.mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", self.mnt],
                          capture_output=True).returncode != 0:
            self.skipTest("cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)")
        self.sock = os.path.join(self.tmp, "d.sock")
        config = os.path.join(self.tmp, "xdeepd.toml")
        with open(config, "w") as f:
            f.write(f'[server]\nlisten = "unix://{self.sock}"\n'
                    f'[store]\npath = "{self.mnt}/d.db"\njobcomp_spool = "{self.tmp}/spool"\n'
                    f'[log]\nfile = "{self.tmp}/d.log"\n')
        env = dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf"))
        self.daemon = daemon_process([XDEEPD, "--config", config], env=env)
        for _ in range(100):
            if os.path.exists(self.sock):
                break
            time.sleep(0.05)

    def tearDown(self):
        self.daemon.terminate()
        self.daemon.wait()
        subprocess.run(["umount", self.mnt])
        super().tearDown()

    def test_full_ledger_disk_has_its_own_message(self):
        fd = os.open(os.path.join(self.mnt, "filler"), os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096) > 0:
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        conf = alt_conf(self.tmp, f"required {PLUGIN} daemon=unix://{self.sock} timeout_ms=5000")
        r = run(["srun", "--xdeep-tune", f"--xdeep-workload={GPT}", "true"], conf=conf)
        lines = [l for l in r.err.splitlines() if "xdeep:" in l]
        self.assertNotEqual(r.rc, 0, r)
        self.assertEqual(len(lines), 1, r)
        self.assertIn("disk is full", lines[0])
        self.assertNotIn("unavailable", lines[0])


if __name__ == "__main__":
    unittest.main()
