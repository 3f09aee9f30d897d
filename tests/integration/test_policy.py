"""Site policy, budgets and identity through the real plugin, daemon and Slurm:
strict enforcement at submission (slurmctld's job_submit.lua), over-budget
refusals, settlement from Slurm's job-completion records and release in the
ledger, per-user visibility, and policy reload on SIGHUP. The hostile user's
side of the same lives in test_hostile.py."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
import unittest

from harness import (BUILD, PLUGIN, SHOW_ENV, SOURCE, STACK, WORKLOADS, StackTest, alt_conf,
                     daemon_log, daemon_process, run)

GPT = os.path.join(WORKLOADS, "gpt-125m.toml")
XDEEP = os.path.join(BUILD, "daemon", "xdeep")
XDEEPD = os.path.join(BUILD, "daemon", "xdeepd")
POOR = "xdeep-poor"  # a user with a 5 EUR budget in the stack's policy


def ledger_row(decision):
    db = sqlite3.connect(os.path.join(STACK, "xdeep.db"))
    return db.execute("SELECT state, amount, settled_amount, gpus, job_id FROM reservations "
                      "WHERE decision_id = ?", (decision,)).fetchone()


def as_user(user, argv):
    return ["runuser", "-u", user, "--", *argv]


class PolicyTest(StackTest):
    def setUp(self):
        super().setUp()
        if subprocess.run(["id", POOR], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "-M", "-s", "/bin/sh", POOR], check=True)

    def test_strict_partition_refuses_a_job_without_reservation_at_submission(self):
        # The user skips the plugin with their own SLURM_CONF; slurmctld's
        # job_submit.lua still asks for a reservation.
        conf = alt_conf(self.tmp, "")
        r = run(["srun", "-p", "strict", SHOW_ENV], conf=conf)
        self.assertNotEqual(r.rc, 0, r)
        self.assertEqual(r.tasks(), [], r)
        self.assertIn("xdeep: partition strict: no xdeep reservation", r.err, r)
        self.assertRegex(daemon_log(), r"event=admit uid=0 partition=strict strict=true "
                                       r"admitted=false decision=- reason=\"no xdeep reservation")

    def test_strict_partition_runs_a_tuned_step(self):
        r = run(["srun", "-p", "strict", "--xdeep-tune", f"--xdeep-workload={GPT}", SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        tasks = r.tasks()
        self.assertTrue(tasks, r)
        decision = tasks[0]["decision"]
        self.assertRegex(daemon_log(), rf"event=admit uid=0 partition=strict strict=true "
                                       rf"admitted=true decision={decision}")

    def test_tuned_batch_job_on_strict_partition(self):
        out = os.path.join(self.tmp, "job.out")
        script = os.path.join(self.tmp, "job.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/bash\nsrun {SHOW_ENV}\n")
        r = run(["sbatch", "--wait", "-p", "strict", "-o", out, "--xdeep-tune",
                 f"--xdeep-workload={GPT}", script], timeout=120)
        self.assertEqual(r.rc, 0, r)
        with open(out) as f:
            self.assertIn('"decision"', f.read())

    def test_batch_job_is_settled_from_slurms_run_time(self):
        out = os.path.join(self.tmp, "job.out")
        script = os.path.join(self.tmp, "job.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/bash\nsrun {SHOW_ENV}\nsleep 2\n")
        r = run(["sbatch", "--wait", "-o", out, "--xdeep-tune", f"--xdeep-workload={GPT}", script],
                timeout=120)
        self.assertEqual(r.rc, 0, r)
        decision = re.search(r"decision (\w+)\)", r.err).group(1)
        row = None
        for _ in range(40):  # the stack's ledger pass runs every 2 s
            row = sqlite3.connect(os.path.join(STACK, "xdeep.db")).execute(
                "SELECT state, amount, settled_amount, gpus FROM reservations "
                "WHERE decision_id LIKE ?", (decision + "%",)).fetchone()
            if row and row[0] == "settled":
                break
            time.sleep(0.5)
        state, amount, settled, gpus = row
        self.assertEqual(state, "settled")
        # Slurm's RunTime (whole seconds, at least the 2 s sleep) x GPUs x 2.5 EUR/h.
        self.assertGreaterEqual(settled, gpus * 2 / 3600 * 2.5 - 1e-9)
        self.assertLess(settled, amount)

    def test_over_budget_stops_before_allocation_with_one_line(self):
        r = run(as_user(POOR, ["srun", "-p", "strict", "--xdeep-tune", "--xdeep-objective=time",
                               f"--xdeep-workload={GPT}", SHOW_ENV]))
        self.assertNotEqual(r.rc, 0, r)
        self.assertEqual(r.tasks(), [], r)
        lines = r.xdeep_lines()
        self.assertEqual(len(lines), 1, r)
        self.assertRegex(lines[0], r"over budget: predicted cost [\d.]+ EUR")
        self.assertIn(f"user {POOR}: remaining 5.00 of 5.00", lines[0])
        self.assertIn("no configuration fits", lines[0])
        self.assertNotIn(f"user={POOR}", re.findall(r"event=tune\.decided .*", daemon_log())[-1])

    def test_job_budget_cap(self):
        r = run(["srun", "--xdeep-tune", "--xdeep-budget=1", f"--xdeep-workload={GPT}", SHOW_ENV])
        self.assertNotEqual(r.rc, 0, r)
        self.assertEqual(r.tasks(), [], r)
        self.assertTrue(any("budget" in l for l in r.xdeep_lines()), r)

    def test_tuned_run_is_settled_at_real_cost(self):
        r = run(["srun", "--xdeep-tune", f"--xdeep-workload={GPT}", SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        decision = r.tasks()[0]["decision"]
        row = None
        for _ in range(80):  # the record reaches the ledger on its next pass (2 s)
            row = ledger_row(decision)
            if row[0] == "settled":
                break
            time.sleep(0.25)
        state, amount, settled, gpus, job = row
        self.assertEqual(state, "settled")
        self.assertIsNotNone(job)
        # GPUs x Slurm's run time (whole seconds) x 2.5 EUR/GPU-hour.
        self.assertGreaterEqual(settled, 0)
        self.assertLessEqual(settled, gpus * (r.elapsed + 1) / 3600 * 2.5 + 1e-9)
        self.assertLess(settled, amount)

    def test_failed_launch_releases_its_reservation(self):
        r = run(["srun", "-w", "nosuchnode", "--xdeep-tune", f"--xdeep-workload={GPT}", SHOW_ENV])
        self.assertNotEqual(r.rc, 0, r)
        decision = re.search(r"decision (\w+)\)", r.err).group(1)
        rows = sqlite3.connect(os.path.join(STACK, "xdeep.db")).execute(
            "SELECT state FROM reservations WHERE decision_id LIKE ?", (decision + "%",)).fetchall()
        self.assertEqual(rows, [("released",)])

    def test_budget_command_and_privacy(self):
        env = {"XDEEP_DAEMON": f"unix://{STACK}/xdeepd.sock"}
        mine = run(as_user(POOR, [XDEEP, "budget"]), env=env)
        self.assertEqual(mine.rc, 0, mine)
        self.assertRegex(mine.out, rf"user\s+{POOR}\s+monthly\s+\S+ \S+\s+5\.00\s+0\.00\s+0\.00\s+5\.00")
        other = run(as_user(POOR, [XDEEP, "budget", "--user", "root"]), env=env)
        self.assertNotEqual(other.rc, 0, other)
        self.assertIn("may not read root's records", other.err)
        history = run(as_user(POOR, [XDEEP, "history", "--user", "*"]), env=env)
        self.assertNotEqual(history.rc, 0, history)
        admin = run([XDEEP, "budget", "--user", POOR], env=env)
        self.assertEqual(admin.rc, 0, admin)
        self.assertIn(POOR, admin.out)
        reload = run(as_user(POOR, [XDEEP, "reload"]), env=env)
        self.assertNotEqual(reload.rc, 0, reload)
        self.assertIn("not an admin", reload.err)


class ProbeTriggerTest(StackTest):
    def test_admin_runs_probes_through_slurm_users_cannot(self):
        env = {"XDEEP_DAEMON": f"unix://{STACK}/xdeepd.sock"}
        refused = run(as_user(POOR, [XDEEP, "probe"]), env=env)
        self.assertNotEqual(refused.rc, 0, refused)
        self.assertIn("not an admin", refused.err)
        r = run([XDEEP, "probe", "-p", "debug"], env=env, timeout=180)
        self.assertEqual(r.rc, 0, r)
        path = re.search(r"report: (\S+)", r.out).group(1)
        self.assertTrue(os.path.exists(path), r)
        self.assertRegex(r.out, r"[1-9]\d* bandwidth")
        db = sqlite3.connect(os.path.join(STACK, "xdeep.db"))
        self.assertIn((path,), db.execute("SELECT path FROM probe_reports").fetchall())


class OwnDaemonTest(StackTest):
    """A second xdeepd on the same cluster with its own policy."""

    def start(self, policy):
        self.sock = os.path.join(self.tmp, "d.sock")
        config = os.path.join(self.tmp, "xdeepd.toml")
        with open(config, "w") as f:
            f.write(f'[server]\nlisten = "unix://{self.sock}"\n[store]\npath = "{self.tmp}/d.db"\n'
                    f'[log]\nfile = "{self.tmp}/d.log"\n' + policy)
        env = dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf"))
        self.daemon = daemon_process([XDEEPD, "--config", config], env=env)
        for _ in range(100):
            if os.path.exists(self.sock):
                return
            time.sleep(0.05)
        self.fail("xdeepd did not start")

    def tearDown(self):
        self.daemon.terminate()
        self.daemon.wait()
        super().tearDown()


class ProbeLimitsTest(OwnDaemonTest):
    def stand_in_probe(self, then=""):
        """A probe_path that records its arguments (self.probe_args()), then runs `then`."""
        path = os.path.join(self.tmp, "probe.sh")
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\necho "$@" > {self.tmp}/probe_args\n{then}\n')
        os.chmod(path, 0o755)
        os.chmod(self.tmp, 0o755)
        return path

    def probe_args(self):
        with open(os.path.join(self.tmp, "probe_args")) as f:
            return f.read().split()

    def test_launch_waits_at_most_max_wait_then_decides(self):
        hang = self.stand_in_probe("sleep 120")
        self.start(f'[policy]\nadmins = ["root"]\n[probes]\non_launch = true\nmax_wait_s = 2\n'
                   f'time_limit_s = 180\nbudget = 1000\nprobe_path = "{hang}"\n'
                   f'reports_dir = "{self.tmp}/reports"\n')
        conf = alt_conf(self.tmp, f"required {PLUGIN} daemon=unix://{self.sock} timeout_ms=10000")
        r = run(["srun", "--xdeep-tune", f"--xdeep-workload={GPT}", SHOW_ENV], conf=conf)
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(r.tasks(), r)
        probe_lines = [l for l in r.xdeep_lines() if "[probe]" in l]
        self.assertIn("waiting at most 2 s", probe_lines[0])
        self.assertIn("deciding from built-in profile", probe_lines[-1])
        # The wait in between: what runs, elapsed, at most. Not a terminal, so
        # plain lines, a new one only when the job's state changes.
        waits = probe_lines[1:-1]
        self.assertGreaterEqual(len(waits), 1, r)
        states = []
        for line in waits:
            m = re.search(r"\[probe\] probe job \d+ \(compute set, partition \S+\): ([A-Za-z]+), "
                          r"0:0\d elapsed, at most 0:02$", line)
            self.assertTrue(m, line)
            states.append(m.group(1))
        self.assertEqual(len(states), len(set(states)), waits)
        self.assertLess(r.elapsed, 8, r)
        # The probe job was cancelled, not left running.
        time.sleep(1)
        queue = subprocess.run(["squeue", "-h", "-n", "xdeep-probe", "-t", "PD,R"],
                               env=dict(os.environ, SLURM_CONF=conf), capture_output=True,
                               text=True).stdout
        self.assertEqual(queue.strip(), "")
        # The compute probe was given the launching workload's own GEMM shapes
        # (written before the job is submitted; the job itself may not have
        # started within the 2 s, so its arguments are checked only if it did).
        written = [f for f in os.listdir(os.path.join(self.tmp, "reports"))
                   if f.endswith("-shapes.json") and not f.endswith("-heuristic-shapes.json")]
        self.assertEqual(len(written), 1, written)
        # And the GEMMs whose kernel cuBLASLt's heuristic is asked for after them.
        asked = written[0].replace("-shapes.json", "-heuristic-shapes.json")
        with open(os.path.join(self.tmp, "reports", asked)) as f:
            self.assertGreater(len(json.load(f)["gemms"]), 0)
        path = os.path.join(self.tmp, "reports", written[0])
        with open(path) as f:
            shapes = json.load(f)
        self.assertEqual(shapes["schema"], "xdeep.gemm_shapes/1")
        self.assertGreater(len(shapes["layers"]), 0)
        if os.path.exists(os.path.join(self.tmp, "probe_args")):
            args = self.probe_args()
            self.assertEqual(args[args.index("--shapes") + 1], path)
        # Once per partition: the next launch does not wait again.
        again = run(["srun", "--xdeep-tune", f"--xdeep-workload={GPT}", SHOW_ENV], conf=conf)
        self.assertEqual([l for l in again.xdeep_lines() if "[probe]" in l], [], again)

    def test_probe_wait_redraws_one_line_on_a_terminal(self):
        hang = self.stand_in_probe("sleep 120")
        self.start(f'[policy]\nadmins = ["root"]\n[probes]\non_launch = true\nmax_wait_s = 3\n'
                   f'time_limit_s = 180\nbudget = 1000\nprobe_path = "{hang}"\n'
                   f'reports_dir = "{self.tmp}/reports"\n')
        conf = alt_conf(self.tmp, f"required {PLUGIN} daemon=unix://{self.sock} timeout_ms=10000")
        # script(1) gives srun a real terminal; its typescript keeps the bytes.
        typescript = os.path.join(self.tmp, "typescript")
        srun = f"srun --xdeep-tune --xdeep-workload={GPT} true"
        r = run(["script", "-qec", srun, typescript], conf=conf, timeout=120)
        self.assertEqual(r.rc, 0, r)
        with open(typescript, "rb") as f:
            seen = f.read().decode(errors="replace")
        # Each update goes back to the line's start and clears it: one line.
        redraws = re.findall(r"\r\x1b\[Kxdeep: \[probe\] probe job \d+ \(compute set, partition "
                             r"\S+\): [A-Za-z]+, 0:0\d elapsed, at most 0:03", seen)
        self.assertGreaterEqual(len(redraws), 1, seen)
        self.assertIn("deciding from built-in profile", seen)

    def test_admin_probe_measures_the_named_workloads_shapes(self):
        record = self.stand_in_probe()
        self.start('[policy]\nadmins = ["root"]\n[probes]\npartition = "debug"\n'
                   f'time_limit_s = 180\nbudget = 1000\nprobe_path = "{record}"\n'
                   f'reports_dir = "{self.tmp}/reports"\n')
        r = run([XDEEP, "--daemon", f"unix://{self.sock}", "probe", "-w", "gpt-125m",
                 "--gpus-per-node", "1"])
        # The stand-in writes no report: the job fails, and says so.
        self.assertNotEqual(r.rc, 0, r)
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "probe_args")), r)
        args = self.probe_args()
        with open(args[args.index("--shapes") + 1]) as f:
            shapes = json.load(f)
        # GPT-125M's output head: 1024 tokens per sample, 768 -> 50257.
        self.assertIn({"tokens": 1024, "in": 768, "out": 50257},
                      [{k: l[k] for k in ("tokens", "in", "out")} for l in shapes["layers"]])
        missing = run([XDEEP, "--daemon", f"unix://{self.sock}", "probe", "-w", "nope/x.toml",
                       "--gpus-per-node", "1"])
        self.assertEqual(missing.rc, 1, missing)
        self.assertIn("does not exist", missing.err)

    def asked_copy(self, path):
        """The heuristic_stand_in's copy of the shapes file `path` it was given."""
        return os.path.join(self.tmp, "asked-" + os.path.basename(path))

    def leftover_inputs(self, reports):
        """Probe jobs' inputs and merged intermediates left in `reports`."""
        return [f for f in os.listdir(reports)
                if f.endswith("-shapes.json") or f.endswith(".heuristic.json")]

    def heuristic_stand_in(self):
        """A probe_path for a GPU partition without a GPU: the timed compute set
        answers with a real H200 report (each GEMM with the cuBLASLt kernel it
        ran), the heuristic step with the tile in self.tmp/tile for every shape
        it is asked about, in the report format xdeep-probe writes; `merge` is
        the real xdeep-probe's. Each call's arguments go to self.tmp/probe_calls,
        each heuristic shapes file it is given to self.asked_copy(path)."""
        path = os.path.join(self.tmp, "probe.py")
        fit = os.path.join(SOURCE, "bench", "validate", "data", "calibration",
                           "2026-11-27_h200x1_gemm_seed6607", "gemm_fit.json")
        real = os.path.join(BUILD, "profiler", "xdeep-probe")
        with open(path, "w") as f:
            f.write(f"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open({os.path.join(self.tmp, "probe_calls")!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
if args[0] == "merge":
    os.execv({real!r}, [{real!r}] + args)
with open({fit!r}) as f:
    report = json.load(f)
if args[args.index("--suite") + 1] == "gemm-heuristic":
    with open(args[args.index("--shapes") + 1]) as f:
        shapes = json.load(f)
    # A copy for the test: the daemon removes the job's inputs once it is done.
    asked = os.path.basename(args[args.index("--shapes") + 1])
    with open(os.path.join({self.tmp!r}, "asked-" + asked), "w") as f:
        json.dump(shapes, f)
    with open({os.path.join(self.tmp, "tile")!r}) as f:
        tile_m, tile_n = map(int, f.read().split())
    kernel = {{"algo": 66, "tile_id": 24, "stages_id": 35, "swizzle": 0, "reduction": 0,
              "tile_m": tile_m, "tile_n": tile_n, "split_k": 1, "cluster_m": 2, "cluster_n": 1}}
    report.update(gemm=[], bandwidth=[], elapsed_s=0.5, gemm_algos=[
        {{"m": g["m"], "n": g["n"], "k": g["k"], "dtype": g["dtype"], "pass": g["pass"],
         "layer": g["label"], "kernel": kernel}} for g in shapes["gemms"]])
out = args[args.index("--out") + 1]
with open(out + ".part", "w") as f:
    json.dump(report, f)
os.replace(out + ".part", out)
""")
        os.chmod(path, 0o755)
        os.chmod(self.tmp, 0o755)
        return path

    def test_probe_job_asks_the_heuristic_and_the_model_times_shapes_on_its_kernels(self):
        probe = self.heuristic_stand_in()
        reports = os.path.join(self.tmp, "reports")
        self.start('[policy]\nadmins = ["root"]\n[probes]\npartition = "debug"\n'
                   f'time_limit_s = 180\nbudget = 1000\nprobe_path = "{probe}"\n'
                   f'reports_dir = "{reports}"\n')
        daemon = ["--daemon", f"unix://{self.sock}"]

        def probe_with_tile(tile):
            with open(os.path.join(self.tmp, "tile"), "w") as f:
                f.write(tile)
            r = run([XDEEP, *daemon, "probe", "-w", "gpt-125m", "--gpus-per-node", "1"],
                    timeout=180)
            self.assertEqual(r.rc, 0, r)
            path = re.search(r"report: (\S+)", r.out).group(1)
            with open(path) as f:
                report = json.load(f)
            plan = run([XDEEP, *daemon, "plan", "-w", "gpt-125m", "--json"])
            self.assertEqual(plan.rc, 0, plan)
            return r, path, report, json.loads(plan.out)["chosen"]

        r, path, report, chosen = probe_with_tile("128 256")
        # The job ran the timed set, then the heuristic on the shapes file the
        # daemon wrote next to the reports, then merged its answers in.
        with open(os.path.join(self.tmp, "probe_calls")) as f:
            calls = [line.split() for line in f]
        # (The plan's decision may have queued a heuristic-only job after them:
        # the partition's GPUs per node give shapes a 1-GPU probe did not ask.)
        self.assertEqual([c[:3] for c in calls[:3]], [["compute", "--suite", "gpu"],
                                                  ["compute", "--suite", "gemm-heuristic"],
                                                  ["merge", path, path + ".heuristic.json"]])
        asked = calls[1][calls[1].index("--shapes") + 1]
        self.assertEqual(os.path.dirname(asked), reports)
        self.assertIn("--no-anchors", calls[1])
        with open(self.asked_copy(asked)) as f:
            shapes = json.load(f)
        # Merged and ingested: the report stays, the job's inputs and the
        # heuristic's own answers do not.
        self.assertFalse(os.path.exists(asked))
        self.assertFalse(os.path.exists(calls[0][calls[0].index("--shapes") + 1]))
        self.assertFalse(os.path.exists(path + ".heuristic.json"))
        self.assertTrue(os.path.exists(path))
        # Every GEMM of GPT-125M the search may try: its head at micro-batch 64
        # (65,536 tokens x 768 -> 50257), forward, as the model looks it up.
        self.assertIn({"m": 65536, "n": 50257, "k": 768, "pass": "fwd", "dtype": "bf16"},
                      [{k: g[k] for k in ("m", "n", "k", "pass", "dtype")}
                       for g in shapes["gemms"]])
        # Stored with the profile: the report keeps the timed points and holds
        # every answer; the daemon's store lists it as ingested.
        self.assertEqual(len(report["gemm"]), 423)
        self.assertEqual(len(report["gemm_algos"]), len(shapes["gemms"]))
        self.assertIn(f"{len(shapes['gemms'])} GEMM kernels from cuBLASLt's heuristic", r.out)
        db = sqlite3.connect(os.path.join(self.tmp, "d.db"))
        self.assertEqual(db.execute("SELECT ingested FROM probe_reports WHERE path = ?",
                                    (path,)).fetchall(), [(1,)])
        # The model times the untimed shapes on the heuristic's tile: another
        # tile, another prediction.
        _, _, _, again = probe_with_tile("64 96")
        self.assertNotEqual(again["step_time_s"], chosen["step_time_s"], (chosen, again))

    def test_a_new_workloads_shapes_are_asked_once_and_its_next_decision_uses_them(self):
        probe = self.heuristic_stand_in()
        reports = os.path.join(self.tmp, "reports")
        self.start('[policy]\nadmins = ["root"]\n[probes]\npartition = "debug"\n'
                   f'time_limit_s = 180\nbudget = 1000\nprobe_path = "{probe}"\n'
                   f'reports_dir = "{reports}"\nheuristic_interval_s = 600\n')
        daemon = ["--daemon", f"unix://{self.sock}"]
        with open(os.path.join(self.tmp, "tile"), "w") as f:
            f.write("128 256")
        r = run([XDEEP, *daemon, "probe", "-w", "gpt-125m", "--gpus-per-node", "1"], timeout=180)
        self.assertEqual(r.rc, 0, r)
        answers_file = os.path.join(reports, "gemm-heuristic-answers.json")

        def stored():
            with open(answers_file) as f:
                books = json.load(f)["books"]
            self.assertEqual(len(books), 1, [b["key"] for b in books])
            self.assertEqual(books[0]["key"],
                             "gpu=NVIDIA H200 cc=9.0 cublaslt=13.1.0 driver=13.0 runtime=13.0")
            return {tuple(a[:5]) for a in books[0]["answers"]}

        def calls():
            with open(os.path.join(self.tmp, "probe_calls")) as f:
                return [line.split() for line in f]

        first = stored()
        self.assertEqual(len(calls()), 3)  # timed set, heuristic, merge
        # A workload no preset and no earlier probe has the shapes of.
        other = os.path.join(self.tmp, "narrow.toml")
        with open(other, "w") as f:
            f.write('name = "narrow-640"\n[model]\nfamily = "transformer"\nlayers = 4\n'
                    'hidden = 640\nheads = 10\nkv_heads = 10\nffn = 2560\nseq_len = 1024\n'
                    'vocab = 32768\n[training]\nprecision = "bf16-autocast"\n'
                    '[batch]\nglobal = 64\nmay_change = false\n')
        # The heuristic-only job answers with another tile: a prediction that
        # changes when its answers arrive is one that uses them.
        with open(os.path.join(self.tmp, "tile"), "w") as f:
            f.write("64 96")

        def plan():
            p = run([XDEEP, *daemon, "plan", "-w", other, "--json"], timeout=120)
            self.assertEqual(p.rc, 0, p)
            return json.loads(p.out)["chosen"]

        before = plan()
        # Decided at once; one heuristic-only job asks about its shapes.
        deadline = time.time() + 60
        while time.time() < deadline and len(stored()) == len(first):
            time.sleep(0.2)
        jobs = [c for c in calls()[3:] if c[:3] == ["compute", "--suite", "gemm-heuristic"]]
        self.assertEqual(len(jobs), 1, calls())
        self.assertEqual(calls()[3:], jobs)  # no timed set, nothing merged
        self.assertIn("--no-anchors", jobs[0])
        with open(self.asked_copy(jobs[0][jobs[0].index("--shapes") + 1])) as f:
            asked = json.load(f)["gemms"]
        self.assertGreater(len(asked), 0)
        self.assertTrue(all(g["label"].startswith("narrow-640.") for g in asked), asked[:3])
        # Stored beside the first workload's answers.
        passes = {"fwd": 0, "dgrad": 1, "wgrad": 2}
        dtypes = {"fp32": 0, "tf32": 1, "bf16": 2, "fp16": 3}
        new = {(g["m"], g["n"], g["k"], dtypes[g["dtype"]], passes[g["pass"]]) for g in asked}
        self.assertEqual(stored(), first | new)
        self.assertFalse(first & new)
        # The next decision uses them, and asks for nothing more.
        deadline = time.time() + 30
        after = plan()
        while time.time() < deadline and after["step_time_s"] == before["step_time_s"]:
            time.sleep(0.2)
            after = plan()
        self.assertNotEqual(after["step_time_s"], before["step_time_s"], (before, after))
        plan()
        self.assertEqual(len(calls()), 4, calls())
        with open(os.path.join(self.tmp, "d.log")) as f:
            log = f.read()
        self.assertEqual(log.count("event=probe.heuristic_submit"), 1, log)
        self.assertIn("event=probe.heuristic_done", log)
        # Both jobs over: neither left its shapes files or answers behind.
        self.assertEqual(self.leftover_inputs(reports), [])

    def test_probe_budget(self):
        self.start('[policy]\nadmins = ["root"]\nprice_per_gpu_hour = 2.5\n'
                   f'[probes]\npartition = "debug"\ntime_limit_s = 60\nbudget = 0.01\n'
                   f'probe_path = "{BUILD}/profiler/xdeep-probe"\nreports_dir = "{self.tmp}/r"\n')
        r = run([XDEEP, "--daemon", f"unix://{self.sock}", "probe"])
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("probe budget exhausted", r.err)


class PolicyReloadTest(StackTest):
    def test_sighup_reload_keeps_old_policy_on_error(self):
        sock = os.path.join(self.tmp, "d.sock")
        log = os.path.join(self.tmp, "d.log")
        config = os.path.join(self.tmp, "xdeepd.toml")
        base = (f'[server]\nlisten = "unix://{sock}"\n[store]\npath = "{self.tmp}/d.db"\n'
                f'[log]\nfile = "{log}"\n[identity]\nmode = "none"\n')
        with open(config, "w") as f:
            f.write(base + '[policy]\nmax_nodes = 1\n')
        env = dict(os.environ, SLURM_CONF=os.path.join(STACK, "slurm.conf"))
        daemon = daemon_process([XDEEPD, "--config", config], env=env)
        try:
            for _ in range(100):
                if os.path.exists(sock):
                    break
                time.sleep(0.05)
            plan = [XDEEP, "--daemon", f"unix://{sock}", "plan", "-w", "gpt-125m",
                    "--objective", "time", "--json"]
            nodes = lambda out: json.loads(out)["chosen"]["nodes"]
            first = run(plan)
            self.assertEqual(first.rc, 0, first)
            self.assertEqual(nodes(first.out), 1)
            with open(config, "w") as f:
                f.write(base + '[policy]\nmax_nodes = 3\nmax_nodez = 3\n')
            daemon.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            with open(log) as f:
                text = f.read()
            self.assertIn(f"{config}:11: unknown key 'max_nodez' in [policy]", text)
            self.assertEqual(nodes(run(plan).out), 1, "the old policy stays")
            with open(config, "w") as f:
                f.write(base + '[policy]\nmax_nodes = 3\n')
            daemon.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            self.assertGreater(nodes(run(plan).out), 1)
            self.assertEqual(daemon.poll(), None, "the daemon kept running")
        finally:
            daemon.terminate()
            daemon.wait()


if __name__ == "__main__":
    unittest.main()
