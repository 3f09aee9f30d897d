"""The decision becomes the run (#21): the examples in examples/ run under a
tuned srun / sbatch on the local cluster (CPU, gloo, Debian's python3-torch)
and check from inside the job that ranks, world, micro-batch and
accumulation are the decided ones; the decision file lives in a private
directory under /tmp that is gone after the step; step times reach the
daemon from the compute node."""
import json
import os
import subprocess
import time
import unittest

from harness import BUILD, SOURCE, STACK, StackTest, daemon_log, run

PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch
EXAMPLES = os.path.join(SOURCE, "examples")
WORKLOADS = os.path.join(EXAMPLES, "workloads")
XDEEP = os.path.join(BUILD, "daemon", "xdeep")
PER_NODE = os.path.join(SOURCE, "tests", "integration", "per_node_launch.py")
ENV = {"PYTHONPATH": os.path.join(SOURCE, "python"), "OMP_NUM_THREADS": "1"}
CLI_ENV = {"XDEEP_DAEMON": "unix://" + os.path.join(STACK, "xdeepd.sock")}


ALICE, MALLORY = "xdeep-alice", "xdeep-mallory"
# What a task sees of its private directory, and every XDEEP_* variable.
SHOW_DIR = """#!/bin/sh
[ "${SLURM_PROCID:-0}" = 0 ] || exit 0
echo "dir=$XDEEP_JOB_TMP owner=$(stat -c '%U %a' "$XDEEP_JOB_TMP") home=$HOME"
echo 0.5 >> "$XDEEP_REPORT"
env | grep '^XDEEP_' | sort
"""


def as_user(user, argv):
    return ["runuser", "-u", user, "--", *argv]


def tune(workload, *more):
    return ["--xdeep-tune", "--xdeep-objective=time",
            f"--xdeep-workload={os.path.join(WORKLOADS, workload)}", *more]


def checks(text):
    return [json.loads(l.split(" ", 1)[1]) for l in text.splitlines()
            if l.startswith("xdeep-check ")]


def reports(decision):
    return [l for l in daemon_log().splitlines()
            if "event=report " in l and f"decision={decision}" in l]


@unittest.skipUnless(os.path.exists(PYTHON), "Debian's python3 is not installed")
class HandoffTest(StackTest):
    def assert_decided_world(self, r, launcher="srun"):
        self.assertEqual(r.rc, 0, r)
        rows = checks(r.out)
        self.assertTrue(rows, r)
        first = rows[0]
        self.assertEqual(len(rows), first["world"], r)
        self.assertEqual(sorted(x["rank"] for x in rows), list(range(first["world"])), r)
        for x in rows:
            self.assertEqual(x["decision"], first["decision"], r)
            self.assertEqual(x["launcher"], launcher, r)
            self.assertEqual(x["master"], first["master"], r)
            # The private directory, never the home.
            self.assertRegex(x["decision_file"], r"^/tmp/xdeep-\d+\.\d+-\w+/decision\.json$")
            self.assertFalse(os.path.exists(os.path.dirname(x["decision_file"])), x)
        # The numbers the script used are the ones the daemon decided.
        decided = [l for l in daemon_log().splitlines()
                   if "event=tune.decided" in l and first["decision"] in l]
        self.assertEqual(len(decided), 1, r)
        return rows

    def assert_reported(self, decision, steps):
        # slurmstepd reports after srun has returned: wait for it a little.
        want = lambda l: f"steps={steps}" in l and "exit=0" in l and "ok=true" in l
        deadline = time.monotonic() + 15
        while not any(want(l) for l in reports(decision)) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertTrue(any(want(l) for l in reports(decision)), daemon_log()[-2000:])

    def test_srun_ddp(self):
        r = run(["srun", "-N2", "--gpus-per-node=1", *tune("ddp.toml"), PYTHON,
                 os.path.join(EXAMPLES, "ddp_fsdp.py"), "--steps", "3"], env=ENV, timeout=120)
        rows = self.assert_decided_world(r)
        for x in rows:
            # srun-native: one Slurm task per rank, in rank order.
            self.assertEqual(x["slurm_task"], str(x["rank"]), x)
            self.assertEqual(x["samples_per_step"], x["global_batch"], x)
        self.assert_reported(rows[0]["decision"], 3)

    def test_torchrun_mode_starts_one_task_per_node(self):
        r = run(["srun", "-N2", "--gpus-per-node=2", *tune("ddp.toml", "--xdeep-launcher=torchrun"),
                 PYTHON, PER_NODE, os.path.join(EXAMPLES, "ddp_fsdp.py"), "--steps", "2"],
                env=ENV, timeout=120)
        rows = self.assert_decided_world(r, launcher="torchrun")
        nodes = {x["slurm_task"] for x in rows}
        # One Slurm task per node; the launcher started the GPUs' processes.
        self.assertEqual(len(nodes) * rows[0]["local_world"], rows[0]["world"], r)
        for x in rows:
            self.assertEqual(x["rank"] // x["local_world"], int(x["slurm_task"]), x)
        self.assert_reported(rows[0]["decision"], 2)

    def test_workload_names_its_launcher(self):
        workload = os.path.join(self.tmp, "torchrun.toml")
        with open(os.path.join(WORKLOADS, "ddp.toml")) as src, open(workload, "w") as dst:
            dst.write(src.read() + 'launcher = "torchrun"\n')
        show = ("echo task=$SLURM_PROCID ntasks=$SLURM_NTASKS launcher=$XDEEP_LAUNCHER "
                "nproc=$PET_NPROC_PER_NODE gpn=$XDEEP_GPUS_PER_NODE nodes=$XDEEP_NODES "
                "rank=${RANK:-unset}")
        r = run(["srun", "-N2", "--gpus-per-node=2", "--xdeep-tune", "--xdeep-objective=time",
                 f"--xdeep-workload={workload}", "sh", "-c", show])
        self.assertEqual(r.rc, 0, r)
        rows = [dict(w.split("=", 1) for w in l.split()) for l in r.out.splitlines()
                if l.startswith("task=")]
        self.assertTrue(rows, r)
        for row in rows:
            self.assertEqual(row["launcher"], "torchrun", r)
            self.assertEqual(row["ntasks"], row["nodes"], "one task per node")
            self.assertEqual(row["nproc"], row["gpn"], "torchrun starts the decided GPUs")
            self.assertEqual(row["rank"], "unset", "torchrun gives its processes their ranks")
        self.assertEqual(len(rows), int(rows[0]["nodes"]), r)

    def test_sbatch_deepspeed(self):
        out = os.path.join(self.tmp, "job.out")
        os.chmod(self.tmp, 0o755)
        r = run(["sbatch", "--wait", "-N2", "--gpus-per-node=1", *tune("ddp.toml"), "-o", out,
                 f"--wrap=srun {PYTHON} {os.path.join(EXAMPLES, 'deepspeed_train.py')} --steps 2"],
                env=ENV, timeout=150)
        self.assertEqual(r.rc, 0, r)
        with open(out) as f:
            text = f.read()
        r.out = text
        rows = self.assert_decided_world(r)
        for x in rows:
            self.assertEqual(x["train_batch_size"], x["global_batch"], x)
        self.assert_reported(rows[0]["decision"], 2)

    def test_megatron_tp_pp(self):
        r = run(["srun", "-N2", "--gpus-per-node=2", *tune("tp-pp.toml"), PYTHON,
                 os.path.join(EXAMPLES, "megatron_tp_pp.py"), "--steps", "2"], env=ENV, timeout=120)
        rows = self.assert_decided_world(r)
        self.assertEqual({(x["tp"], x["pp"]) for x in rows}, {(2, 2)}, r)
        last = [x for x in rows if x["coords"][2] == x["pp"] - 1]
        for x in last:
            self.assertEqual(x["outputs_checked"], 2 * x["grad_accumulation"], x)
        # Megatron's order: a TP group is two neighbouring ranks on one node.
        for x in rows:
            self.assertEqual(x["tp_group"], [x["rank"] - x["rank"] % 2, x["rank"] - x["rank"] % 2 + 1])

    def shared_script(self):
        for user in (ALICE, MALLORY):
            if subprocess.run(["id", user], capture_output=True).returncode != 0:
                subprocess.run(["useradd", "-M", "-s", "/bin/sh", user], check=True)
        os.chmod(self.tmp, 0o755)
        script = os.path.join(self.tmp, "show_dir.sh")
        with open(script, "w") as f:
            f.write(SHOW_DIR)
        os.chmod(script, 0o755)
        return script

    def test_private_directory_belongs_to_the_user_and_reports_as_the_user(self):
        script = self.shared_script()
        r = run(as_user(ALICE, ["srun", "-N1", "--gpus-per-node=1", *tune("ddp.toml"), script]))
        self.assertEqual(r.rc, 0, r)
        line = next(l for l in r.out.splitlines() if l.startswith("dir="))
        directory = line.split()[0][4:]
        self.assertIn(f"owner={ALICE} 700", line)
        self.assertTrue(directory.startswith("/tmp/xdeep-"), line)
        self.assertFalse(os.path.exists(directory), "removed when the step ended")
        decision = next(l for l in r.out.splitlines() if l.startswith("XDEEP_DECISION_ID="))
        decision = decision.split("=", 1)[1]
        self.assertTrue(any(f"user={ALICE}" in l and "steps=1" in l and "ok=true" in l
                            for l in reports(decision)), reports(decision))

    def test_forged_decision_in_the_environment_adds_nothing_to_anothers(self):
        script = self.shared_script()
        r = run(as_user(ALICE, ["srun", "-N1", "--gpus-per-node=1", *tune("ddp.toml"), script]))
        self.assertEqual(r.rc, 0, r)
        forged = dict(l.split("=", 1) for l in r.out.splitlines() if l.startswith("XDEEP_"))
        forged = {k: v for k, v in forged.items() if k not in ("XDEEP_JOB_TMP",
                                                               "XDEEP_DECISION_FILE", "XDEEP_REPORT")}
        forged["XDEEP_TUNED"] = forged["XDEEP_DECISION_ID"]
        before = len(reports(forged["XDEEP_DECISION_ID"]))
        # Mallory's own job claims Alice's decision: its step report goes out as Mallory.
        r = run(as_user(MALLORY, ["env", *[f"{k}={v}" for k, v in forged.items()],
                                  "srun", "-N1", script]))
        self.assertEqual(r.rc, 0, r)
        after = reports(forged["XDEEP_DECISION_ID"])[before:]
        self.assertEqual(len(after), 1, after)
        self.assertIn(f"user={MALLORY}", after[0])
        self.assertIn("ok=false", after[0])

    def test_plan_emits_what_the_job_reads(self):
        r = run([XDEEP, "plan", "-w", os.path.join(WORKLOADS, "tp-pp.toml"), "-N2",
                 "--gpus-per-node=2", "--emit", "megatron"], env=CLI_ENV)
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.out, r"--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 ")
        r = run([XDEEP, "plan", "-w", os.path.join(WORKLOADS, "tp-pp.toml"), "-N2",
                 "--gpus-per-node=2", "--emit", "lightning"], env=CLI_ENV)
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("no pipeline parallelism", r.err)
        r = run([XDEEP, "emit", "deepspeed"], env={"XDEEP_DECISION_FILE": ""})
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("XDEEP_DECISION_FILE is not set", r.err)


if __name__ == "__main__":
    unittest.main()
