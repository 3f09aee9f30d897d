"""A tuned srun / sbatch / salloc through the real plugin and daemon."""
import os
import unittest

from harness import SHOW_ENV, WORKLOADS, StackTest, decisions_in_log, run

GPT = os.path.join(WORKLOADS, "gpt-125m.toml")
TUNE_FOR_TIME = ["--xdeep-tune", "--xdeep-objective=time", f"--xdeep-workload={GPT}"]


class TunedLaunchTest(StackTest):
    def assert_layout_applied(self, r):
        tasks = r.tasks()
        self.assertTrue(tasks, r)
        first = tasks[0]
        # What Slurm gave every task is what xdeep decided.
        self.assertEqual(len(tasks), int(first["xdeep_tasks"]), r)
        for t in tasks:
            self.assertEqual(t["ntasks"], int(t["xdeep_tasks"]), r)
            self.assertEqual(t["nnodes"], int(t["xdeep_nodes"]), r)
            self.assertEqual(t["gpus_on_node"], int(t["xdeep_gpn"]), r)
            self.assertEqual(t["decision"], first["decision"], r)
        self.assertEqual(len({t["node"] for t in tasks}), first["nnodes"], r)
        # dp x tp x pp covers every task.
        self.assertEqual(len(tasks) % int(first["xdeep_dp"]), 0, r)
        batch = int(first["xdeep_batch"])
        self.assertEqual(batch % (int(first["xdeep_mb"]) * int(first["xdeep_accum"])), 0, r)
        return tasks

    def test_tuned_launch_rewrites_nodes_tasks_gpus(self):
        before = len(decisions_in_log())
        r = run(["srun", *TUNE_FOR_TIME, SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        tasks = self.assert_layout_applied(r)
        # Least time on 3 nodes x 4 GPUs: more than the single task srun runs by default.
        self.assertGreater(tasks[0]["ntasks"], 1, r)
        self.assertIn(tasks[0]["decision"], decisions_in_log()[before:])
        summary = [l for l in r.xdeep_lines() if "predicted" in l]
        self.assertEqual(len(summary), 1, r)

    def test_user_nodes_are_an_upper_bound(self):
        r = run(["srun", "-N1", *TUNE_FOR_TIME, SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        tasks = self.assert_layout_applied(r)
        self.assertEqual(tasks[0]["nnodes"], 1, r)

    def test_user_tasks_are_an_upper_bound(self):
        r = run(["srun", "-n2", *TUNE_FOR_TIME, SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        tasks = self.assert_layout_applied(r)
        self.assertLessEqual(tasks[0]["ntasks"], 2, r)

    def test_user_gpus_per_node_are_an_upper_bound(self):
        r = run(["srun", "--gpus-per-node=2", *TUNE_FOR_TIME, SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        tasks = self.assert_layout_applied(r)
        self.assertLessEqual(tasks[0]["gpus_on_node"], 2, r)

    def test_advise_prints_and_runs_unchanged(self):
        r = run(["srun", "--xdeep-tune=advise", "--xdeep-objective=time",
                 f"--xdeep-workload={GPT}", SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        tasks = r.tasks()
        self.assertEqual(len(tasks), 1, r)
        self.assertEqual(tasks[0]["xdeep_nodes"], "", r)
        self.assertTrue(any("advice:" in l for l in r.xdeep_lines()), r)

    def test_explain_prints_table_and_does_not_launch(self):
        before = len(decisions_in_log())
        r = run(["srun", "--xdeep-tune=explain", f"--xdeep-workload={GPT}", SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.tasks(), [], r)
        lines = r.xdeep_lines()
        self.assertTrue(any("strategy" in l and "cost" in l for l in lines), r)
        self.assertTrue(any(l.lstrip().startswith("xdeep: *") for l in lines), r)
        self.assertEqual(len(decisions_in_log()), before + 1)

    def test_off_does_nothing(self):
        before = len(decisions_in_log())
        r = run(["srun", "--xdeep-tune=off", f"--xdeep-workload={GPT}", SHOW_ENV])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(r.tasks()), 1, r)
        self.assertEqual(r.xdeep_lines(), [], r)
        self.assertEqual(len(decisions_in_log()), before)

    def test_spank_env_var_form(self):
        r = run(["srun", SHOW_ENV], env={
            "SLURM_SPANK__SLURM_SPANK_OPTION_xdeep_xdeep_tune": "auto",
            "SLURM_SPANK__SLURM_SPANK_OPTION_xdeep_xdeep_workload": GPT,
            "SLURM_SPANK__SLURM_SPANK_OPTION_xdeep_xdeep_objective": "time"})
        self.assertEqual(r.rc, 0, r)
        self.assertGreater(self.assert_layout_applied(r)[0]["ntasks"], 1, r)

    def test_plain_env_var_form(self):
        r = run(["srun", SHOW_ENV],
                env={"XDEEP_TUNE": "auto", "XDEEP_WORKLOAD": GPT, "XDEEP_OBJECTIVE": "time"})
        self.assertEqual(r.rc, 0, r)
        self.assertGreater(self.assert_layout_applied(r)[0]["ntasks"], 1, r)

    def test_command_line_beats_env_var(self):
        r = run(["srun", "--xdeep-tune=off", SHOW_ENV],
                env={"XDEEP_TUNE": "auto", "XDEEP_WORKLOAD": GPT})
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(r.tasks()), 1, r)

    def test_sbatch_tunes_once(self):
        out = os.path.join(self.tmp, "job.out")
        script = os.path.join(self.tmp, "job.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/bash\nsrun {SHOW_ENV}\n")
        before = len(decisions_in_log())
        r = run(["sbatch", "--wait", "-o", out, *TUNE_FOR_TIME, script], timeout=120)
        self.assertEqual(r.rc, 0, r)
        with open(out) as f:
            job_output = f.read()
        r.out = job_output
        tasks = self.assert_layout_applied(r)
        self.assertGreater(tasks[0]["ntasks"], 1, job_output)
        # The srun inside the job saw the option again but did not tune twice.
        self.assertEqual(len(decisions_in_log()), before + 1)
        self.assertNotIn("predicted", job_output)

    def test_srun_inside_salloc_stays_within_allocation(self):
        r = run(["salloc", "-N1", "-n2", "--gpus-per-node=2",
                 "srun", *TUNE_FOR_TIME, SHOW_ENV], timeout=120)
        self.assertEqual(r.rc, 0, r)
        tasks = self.assert_layout_applied(r)
        self.assertEqual(tasks[0]["nnodes"], 1, r)
        self.assertLessEqual(tasks[0]["ntasks"], 2, r)
        self.assertLessEqual(tasks[0]["gpus_on_node"], 2, r)

    def test_salloc_tunes_the_allocation(self):
        before = len(decisions_in_log())
        r = run(["salloc", *TUNE_FOR_TIME, "srun", SHOW_ENV], timeout=120)
        self.assertEqual(r.rc, 0, r)
        tasks = self.assert_layout_applied(r)
        self.assertGreater(tasks[0]["ntasks"], 1, r)
        self.assertEqual(len(decisions_in_log()), before + 1)

    def test_malformed_workload_names_file_line_and_fix(self):
        path = os.path.join(self.tmp, "broken.toml")
        with open(path, "w") as f:
            f.write('[model]\ntype = "transformer"\nlayers = "twelve"\n')
        r = run(["srun", "--xdeep-tune", f"--xdeep-workload={path}", SHOW_ENV])
        self.assertNotEqual(r.rc, 0, r)
        self.assertEqual(r.tasks(), [], r)
        message = "\n".join(r.xdeep_lines())
        self.assertIn(f"{path}:", message, r)
        self.assertRegex(message, rf"{path}:\d+", r)
        self.assertIn(";", message, r)

    def test_missing_workload_file(self):
        r = run(["srun", "--xdeep-tune", "--xdeep-workload=/nonexistent/w.toml", SHOW_ENV])
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("/nonexistent/w.toml does not exist", r.err, r)


if __name__ == "__main__":
    unittest.main()
