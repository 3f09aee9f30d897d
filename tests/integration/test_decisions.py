"""Decisions users can trust (issue 20), on the real stack: learning from
reported runs is scoped to the user, the model fingerprint (architecture and
training settings, not the workload's name), the hardware profile and the
partition; a failed run (Slurm's record says so) and an implausible one
(flagged, one log line) teach nothing; owners and admins can forget a run."""
import os
import re
import stat
import subprocess
import tempfile
import time
import unittest

from harness import BUILD, SHOW_ENV, STACK, WORKLOADS, StackTest, daemon_log, run

GPT = os.path.join(WORKLOADS, "gpt-125m.toml")
XDEEP = os.path.join(BUILD, "daemon", "xdeep")
DAEMON = ["--daemon", f"unix://{STACK}/xdeepd.sock"]
ALICE, MALLORY = "xdeep-alice", "xdeep-mallory"

# Rank 0 writes $STEP three times as its step times, then the job exits $CODE.
STEP_SCRIPT = """#!/bin/sh
if [ "${SLURM_PROCID:-0}" = 0 ]; then
  printf '%s\\n%s\\n%s\\n' "$STEP" "$STEP" "$STEP" >> "$XDEEP_REPORT"
fi
exit "$CODE"
"""


def as_user(user, argv):
    return ["runuser", "-u", user, "--", *argv]


class DecisionsTest(StackTest):
    def setUp(self):
        super().setUp()
        for user in (ALICE, MALLORY):
            if subprocess.run(["id", user], capture_output=True).returncode != 0:
                subprocess.run(["useradd", "-M", "-s", "/bin/sh", user], check=True)
        # Readable by the test users: the step script, the other model, reports.
        self.shared = tempfile.mkdtemp(prefix="xdeep-decisions-")
        os.chmod(self.shared, 0o1777)
        self.script = os.path.join(self.shared, "steps.sh")
        with open(self.script, "w") as f:
            f.write(STEP_SCRIPT)
        os.chmod(self.script, 0o755)
        # Same name, another training setting: another model fingerprint.
        self.other_model = os.path.join(self.shared, "gpt-125m-adam.toml")
        with open(GPT) as src, open(self.other_model, "w") as dst:
            dst.write(src.read().replace('optimizer = "adamw"', 'optimizer = "adam"'))
        os.chmod(self.other_model, 0o644)

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.shared])
        super().tearDown()

    def plan_step_time(self, user, workload=GPT):
        r = run(as_user(user, [XDEEP, *DAEMON, "plan", "-w", workload, "--objective", "time"]))
        self.assertEqual(r.rc, 0, r)
        # The chosen row: "* strategy nodes x gpus mbs x acc batch mem dp tp pp zero step ...".
        row = next(l for l in r.out.splitlines() if l.startswith("* "))
        return float(row[2:].split()[13])

    def tuned_run(self, user, step_s, code):
        """A tuned srun whose rank 0 reports `step_s` per step and exits `code`."""
        env = ["env", f"STEP={step_s}", f"CODE={code}", f"XDEEP_REPORT_DIR={self.shared}"]
        r = run(as_user(user, [*env, "srun", "--xdeep-tune", "--xdeep-objective=time",
                               f"--xdeep-workload={GPT}", self.script]), timeout=120)
        self.assertEqual(r.rc, code, r)
        decided = re.findall(r"decision (\w{12})\)", r.err + r.out)
        self.assertEqual(len(decided), 1, r)
        return decided[0]

    def learning_state(self, user, prefix, timeout_s=40):
        """The history's learning column for a decision, once Slurm's record is in."""
        state = ""
        for _ in range(int(timeout_s / 0.5)):
            r = run(as_user(user, [XDEEP, *DAEMON, "history", "--limit", "50"]))
            self.assertEqual(r.rc, 0, r)
            rows = [l for l in r.out.splitlines()
                    if prefix in l.split()[2:3] and not l.startswith("when")]
            self.assertTrue(rows, r)
            state = rows[0].split("  ")[-1].strip()
            if state and state != "waiting for Slurm's record":
                return state
            time.sleep(0.5)
        return state

    def test_one_users_bad_and_failed_runs_move_no_one_elses_plan(self):
        alice = self.plan_step_time(ALICE)
        mallory = self.plan_step_time(MALLORY)
        other = self.plan_step_time(MALLORY, self.other_model)
        self.assertAlmostEqual(alice, mallory, places=4)  # nothing learned yet

        # A run far too fast (a CPU run of the README demo): kept, flagged, ignored.
        absurd = self.tuned_run(MALLORY, mallory / 400, 0)
        self.assertTrue(self.learning_state(MALLORY, absurd).startswith("ignored: median step"))
        lines = [l for l in daemon_log().splitlines()
                 if "event=learning.ignored" in l and f"decision={absurd}" in l]
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("learning_max_ratio", lines[0])

        # A plausible but failed run (exit code 3, Slurm records FAILED).
        failed = self.tuned_run(MALLORY, mallory * 1.5, 3)
        # The compute node reports the task's exit code with the step times; Slurm's
        # record (FAILED) follows: either one keeps the run out of learning.
        self.assertIn(self.learning_state(MALLORY, failed),
                      ("ignored: exit code 3", "ignored: Slurm recorded FAILED"))
        for user, workload, before in ((ALICE, GPT, alice), (MALLORY, GPT, mallory),
                                       (MALLORY, self.other_model, other)):
            self.assertAlmostEqual(self.plan_step_time(user, workload), before, places=4,
                                   msg=f"{user} {workload}")

        # A plausible successful run corrects mallory's own plan only.
        good = self.tuned_run(MALLORY, mallory * 1.5, 0)
        self.assertEqual(self.learning_state(MALLORY, good), "used")
        self.assertNotAlmostEqual(self.plan_step_time(MALLORY), mallory, places=4)
        self.assertAlmostEqual(self.plan_step_time(ALICE), alice, places=4)
        self.assertAlmostEqual(self.plan_step_time(MALLORY, self.other_model), other, places=4)

        # Only the owner (or an admin) forgets it; then the plan is as before.
        refused = run(as_user(ALICE, [XDEEP, *DAEMON, "history", "--forget", good]))
        self.assertNotEqual(refused.rc, 0, refused)
        self.assertIn("only its owner or an admin", refused.err)
        forgot = run(as_user(MALLORY, [XDEEP, *DAEMON, "history", "--forget", good]))
        self.assertEqual(forgot.rc, 0, forgot)
        self.assertIn("1 reported run(s) no longer correct predictions", forgot.out)
        self.assertEqual(self.learning_state(MALLORY, good), "forgotten")
        self.assertAlmostEqual(self.plan_step_time(MALLORY), mallory, places=4)


class CostToleranceTest(StackTest):
    """--xdeep-cost-tolerance through the real srun, plugin and daemon."""

    def chosen(self, *options, env=None):
        r = run(["srun", "--xdeep-tune=explain", "--xdeep-workload=gpt-1.3b", *options, "true"],
                env=env)
        self.assertEqual(r.rc, 0, r)
        # The plugin prints the chosen row in the table and once more on its own.
        rows = [l for l in r.xdeep_lines() if l.lstrip().startswith("xdeep: *")]
        self.assertTrue(rows, r)
        # "* " + a 28-wide strategy column, then nodes and gpu/n; the cost before its currency.
        row = rows[0].split("* ", 1)[1]
        tokens = row.split()
        nodes, gpn = int(tokens[1]), int(tokens[3])
        cost = float(re.search(r"([0-9.]+) EUR", row).group(1))
        return nodes * gpn, cost, row

    def test_default_is_fastest_within_five_percent_of_the_least_cost(self):
        cheapest_gpus, cheapest, _ = self.chosen("--xdeep-cost-tolerance=0")
        gpus, cost, row = self.chosen()
        self.assertLessEqual(cost, cheapest * 1.05 + 0.01, row)
        self.assertGreater(gpus, cheapest_gpus, row)  # gpt-1.3b scales: more GPUs, sooner
        self.assertIn("within 5.0% of the least", row)
        # The environment counts where the command line is silent.
        env_gpus, env_cost, _ = self.chosen(env={"XDEEP_COST_TOLERANCE": "0"})
        self.assertEqual((env_gpus, env_cost), (cheapest_gpus, cheapest))
        same, _, _ = self.chosen("--xdeep-cost-tolerance=5", env={"XDEEP_COST_TOLERANCE": "0"})
        self.assertEqual(same, gpus)

    def test_bad_tolerance_is_refused_with_one_line(self):
        r = run(["srun", "--xdeep-tune", "--xdeep-workload=gpt-1.3b",
                 "--xdeep-cost-tolerance=-3", "true"])
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("--xdeep-cost-tolerance=-3 is not a valid percentage", r.err)


class UserConstraintsTest(StackTest):
    """The workload's [parallel] table and --xdeep-strategies through the real stack."""

    def workload(self, table):
        path = os.path.join(self.tmp, "w.toml")
        with open(GPT) as src, open(path, "w") as dst:
            dst.write(src.read() + "\n[parallel]\n" + table + "\n")
        return path

    def explained_strategies(self, *options):
        r = run(["srun", "--xdeep-tune=explain", "--xdeep-objective=time", *options, "true"])
        self.assertEqual(r.rc, 0, r)
        rows = [l.split("xdeep:", 1)[1] for l in r.xdeep_lines()
                if re.match(r"xdeep: [* ] \S", l.lstrip()) and " EUR " in l]
        self.assertTrue(rows, r)
        return [row[2:].split()[0] for row in rows]

    def test_ddp_only_script_gets_data_parallelism_only(self):
        unconstrained = self.explained_strategies(f"--xdeep-workload={GPT}")
        self.assertFalse(all(re.fullmatch(r"dp\d+", s) for s in unconstrained), unconstrained)
        path = self.workload('strategies = ["dp"]')
        for s in self.explained_strategies(f"--xdeep-workload={path}"):
            self.assertRegex(s, r"^dp\d+$")
        # A real launch: every task is told a pure data-parallel strategy.
        r = run(["srun", "--xdeep-tune", "--xdeep-objective=time", f"--xdeep-workload={path}",
                 SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        tasks = r.tasks()
        self.assertGreater(len(tasks), 1, r)
        for t in tasks:
            self.assertRegex(t["xdeep_strategy"], r"^dp\d+$", r)

    def test_launch_list_narrows_the_table(self):
        path = self.workload('strategies = ["dp", "zero2", "zero3"]\nmax_pp = 1')
        for s in self.explained_strategies(f"--xdeep-workload={path}", "--xdeep-strategies=fsdp"):
            self.assertTrue(s == "dp1" or s.startswith("fsdp"), s)
        r = run(["srun", "--xdeep-tune", f"--xdeep-workload={GPT}", "--xdeep-strategies=dp,ddp2",
                 "true"])
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("'ddp2' is not a strategy", r.err)

    def test_bad_parallel_table_names_line_and_fix(self):
        path = self.workload('tp = 2\nmax_tp = 4')
        r = run(["srun", "--xdeep-tune", f"--xdeep-workload={path}", "true"])
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("give either 'tp' or 'max_tp', not both", r.err)


if __name__ == "__main__":
    unittest.main()
