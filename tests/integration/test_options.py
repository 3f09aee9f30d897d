"""Slurm options under a tuned launch (docs/slurm-options.md), each checked
from inside the job: what Slurm gave every task (SLURM_*, CUDA_VISIBLE_DEVICES
from the fake GPUs' GRES) against the decision it received (XDEEP_*).
The cluster: 3 nodes n[1-3], 4 CPUs and 4 GPUs each."""
import gzip
import os
import re
import shutil
import unittest

from harness import SOURCE, WORKLOADS, StackTest, decisions_in_log, run

SHOW = os.path.join(SOURCE, "tests", "integration", "show_job_env.sh")
GPT = os.path.join(WORKLOADS, "gpt-125m.toml")
# Least time: unbounded, it takes several nodes and every GPU of each.
TUNE = ["--xdeep-tune", "--xdeep-objective=time", f"--xdeep-workload={GPT}"]
CPUS_PER_NODE = 4


class OptionsTest(StackTest):
    def assert_tuned(self, r):
        """Every task runs the one decision, and Slurm gave it exactly that."""
        self.assertEqual(r.rc, 0, r)
        tasks = r.tasks()
        self.assertTrue(tasks, r)
        first = tasks[0]
        self.assertTrue(first["decision"], r)
        self.assertEqual(len(tasks), int(first["xdeep_tasks"]), r)
        for t in tasks:
            self.assertEqual(t["decision"], first["decision"], r)
            self.assertEqual(t["ntasks"], int(t["xdeep_tasks"]), r)
            self.assertEqual(t["nnodes"], int(t["xdeep_nodes"]), r)
            self.assertEqual(t["gpus_on_node"], int(t["xdeep_gpn"]), r)
        self.assertEqual(len({t["node"] for t in tasks}), first["nnodes"], r)
        return tasks

    def batch(self, argv, script_text, stdin_path=None, env=None):
        out = os.path.join(self.tmp, "job.out")
        script = os.path.join(self.tmp, "job.sh")
        with open(script, "w") as f:
            f.write(script_text)
        if stdin_path is None:
            r = run(["sbatch", "--wait", "-o", out, *argv, script], env=env, timeout=120)
        else:
            with open(script) as f:
                r = run(["sbatch", "--wait", "-o", out, *argv], env=env, timeout=120, stdin=f)
        if os.path.exists(out):
            with open(out) as f:
                r.out = f.read()
        return r

    # --- bounds -----------------------------------------------------------

    def test_cpus_per_task_fit_the_node(self):
        # 4 CPUs per node, 2 per task: at most 2 tasks (GPUs) per node. Before,
        # the tuned job asked 4 tasks x 2 CPUs and stayed PENDING forever.
        r = run(["srun", "-c2", *TUNE, SHOW], timeout=60)
        tasks = self.assert_tuned(r)
        for t in tasks:
            self.assertLessEqual(t["gpus_on_node"] * 2, CPUS_PER_NODE, r)
            self.assertEqual(t["cpus_per_task"], "2", r)

    def test_cpus_per_gpu_fit_the_node(self):
        r = run(["srun", "--cpus-per-gpu=4", *TUNE, SHOW], timeout=60)
        tasks = self.assert_tuned(r)
        self.assertEqual(tasks[0]["gpus_on_node"], 1, r)

    def test_cpus_per_task_larger_than_a_node_is_one_clear_line(self):
        before = len(decisions_in_log())
        r = run(["srun", "-c8", *TUNE, SHOW], timeout=60)
        self.assertNotEqual(r.rc, 0, r)
        self.assertEqual(r.tasks(), [], r)
        self.assertTrue(any("-c/--cpus-per-gpu 8" in l for l in r.xdeep_lines()), r)
        self.assertEqual(len(decisions_in_log()), before)

    def test_gres_in_every_spelling(self):
        for spelling in (["--gres=gpu:2"], ["--gres", "gpu:2"], ["--gres=gpu:1,gpu:2"],
                         ["--gpus-per-node=2"], ["--gpus-per-node", "2"]):
            with self.subTest(spelling=spelling):
                r = run(["srun", *spelling, *TUNE, SHOW], timeout=60)
                tasks = self.assert_tuned(r)
                self.assertLessEqual(tasks[0]["gpus_on_node"], 2, r)

    def test_total_gpus_and_gpus_per_task(self):
        r = run(["srun", "-G", "3", "--gpus-per-task=1", *TUNE, SHOW], timeout=60)
        tasks = self.assert_tuned(r)
        self.assertLessEqual(len(tasks), 3, r)

    def test_ntasks_per_node(self):
        for spelling in ("--ntasks-per-node=1", "--tasks-per-node=1"):
            with self.subTest(spelling=spelling):
                r = run(["srun", spelling, *TUNE, SHOW], timeout=60)
                tasks = self.assert_tuned(r)
                nodes = [t["node"] for t in tasks]
                self.assertEqual(len(nodes), len(set(nodes)), r)

    def test_nodelist_is_a_bound_trimmed_to_the_decision(self):
        r = run(["srun", "-w", "n[2-3]", *TUNE, SHOW], timeout=60)
        tasks = self.assert_tuned(r)
        self.assertTrue({t["node"] for t in tasks} <= {"n2", "n3"}, r)
        r = run(["srun", "--nodelist=n3", *TUNE, SHOW], timeout=60)
        self.assertEqual({t["node"] for t in self.assert_tuned(r)}, {"n3"}, r)

    def test_exclude_takes_nodes_off(self):
        r = run(["srun", "-x", "n1,n2", *TUNE, SHOW], timeout=60)
        tasks = self.assert_tuned(r)
        self.assertEqual({t["node"] for t in tasks}, {"n3"}, r)

    def test_constraint_bounds_the_node_count(self):
        # Only n3 has the feature: an unbounded least-time decision takes 2 nodes,
        # which Slurm could not place ("Requested node configuration is not available").
        def features(value):
            r = run(["scontrol", "update", "NodeName=n3", f"AvailableFeatures={value}",
                     f"ActiveFeatures={value}"], timeout=30)
            self.assertEqual(r.rc, 0, r)
        features("fast")
        try:
            r = run(["srun", "-C", "fast", *TUNE, SHOW], timeout=60)
            tasks = self.assert_tuned(r)
            self.assertEqual({t["node"] for t in tasks}, {"n3"}, r)
            r = run(["srun", "-C", "nosuch", *TUNE, SHOW], timeout=60)
            self.assertNotEqual(r.rc, 0, r)
            self.assertTrue(any("has the features -C nosuch" in l for l in r.xdeep_lines()), r)
        finally:
            features("")

    def test_memory_per_gpu_and_per_cpu_fit_the_node(self):
        # RealMemory=4000 MB per node: 1500 MB per GPU leaves room for 2 GPUs' tasks.
        for argv in (["--mem-per-gpu=1500"], ["--mem-per-cpu=1000", "-c2"],
                     ["--mem-per-cpu", "1G", "-c", "2"]):
            with self.subTest(argv=argv):
                r = run(["srun", *argv, *TUNE, SHOW], timeout=60)
                tasks = self.assert_tuned(r)
                self.assertLessEqual(tasks[0]["gpus_on_node"], 2, r)
        r = run(["srun", "--mem-per-gpu=5G", *TUNE, SHOW], timeout=60)
        self.assertNotEqual(r.rc, 0, r)
        self.assertTrue(any("5120 MB for each GPU's task" in l for l in r.xdeep_lines()), r)
        r = run(["srun", "--mem=5000", *TUNE, SHOW], timeout=60)
        self.assertNotEqual(r.rc, 0, r)
        self.assertTrue(any("has --mem 5000 MB" in l for l in r.xdeep_lines()), r)
        r = run(["srun", "--mem=2G", *TUNE, SHOW], timeout=60)
        self.assert_tuned(r)

    def test_input_environment_is_a_bound(self):
        r = run(["srun", *TUNE, SHOW], env={"SLURM_GPUS_PER_NODE": "1", "SRUN_CPUS_PER_TASK": "1"},
                timeout=60)
        tasks = self.assert_tuned(r)
        self.assertEqual(tasks[0]["gpus_on_node"], 1, r)

    def test_preserve_env_does_not_undo_the_decision(self):
        # With -E kept, SLURM_JOB_NUM_NODES=3 would beat the decided --nodes.
        r = run(["srun", "-E", *TUNE, SHOW], env={"SLURM_JOB_NUM_NODES": "3"}, timeout=60)
        tasks = self.assert_tuned(r)
        self.assertLessEqual(tasks[0]["nnodes"], 3, r)

    # --- scope and environment ----------------------------------------------

    def test_chdir_is_where_the_workload_is(self):
        rundir = os.path.join(self.tmp, "run")
        os.makedirs(rundir)
        shutil.copy(GPT, os.path.join(rundir, "xdeep.toml"))
        r = run(["srun", "-D", rundir, "--xdeep-tune", "--xdeep-objective=time", SHOW],
                timeout=60)
        tasks = self.assert_tuned(r)
        self.assertEqual(tasks[0]["cwd"], rundir, r)

    def test_export_none_still_passes_the_decision(self):
        for launcher in ("srun", "sbatch"):
            with self.subTest(launcher=launcher):
                env = {"XDEEP_IT_MARKER": "leaked"}
                if launcher == "srun":
                    r = run(["srun", "--export=NONE", *TUNE, SHOW], env=env, timeout=60)
                else:
                    # The job's SLURM_EXPORT_ENV=NONE reaches the srun inside it too.
                    r = self.batch(["--export=NONE", *TUNE], f"#!/bin/bash\nsrun {SHOW}\n",
                                   env=env)
                tasks = self.assert_tuned(r)
                self.assertEqual(tasks[0]["marker"], "", r)

    def test_account_from_the_environment(self):
        r = run(["srun", *TUNE, SHOW], env={"SLURM_ACCOUNT": "physics"}, timeout=60)
        tasks = self.assert_tuned(r)
        self.assertEqual(tasks[0]["account"], "physics", r)

    # --- batch scripts ---------------------------------------------------------

    SCRIPT = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=2 -A chemistry\n"
              "#SBATCH --ntasks-per-node=2\nsrun " + SHOW + "\n")

    def test_sbatch_directives_are_bounds(self):
        r = self.batch(TUNE, self.SCRIPT)
        tasks = self.assert_tuned(r)
        self.assertEqual(tasks[0]["nnodes"], 1, r)
        self.assertLessEqual(tasks[0]["gpus_on_node"], 2, r)
        self.assertEqual(tasks[0]["account"], "chemistry", r)

    def test_partition_in_the_script_scopes_the_decision(self):
        # Partition "strict" admits at submission only jobs whose xdeep decision
        # was made for it: the #SBATCH line must reach the daemon.
        script = "#!/bin/bash\n#SBATCH -p strict\n#SBATCH -N 1\nsrun " + SHOW + "\n"
        r = self.batch(TUNE, script)
        tasks = self.assert_tuned(r)
        self.assertEqual(tasks[0]["partition"], "strict", r)
        r = self.batch(["--xdeep-tune", f"--xdeep-workload={GPT}"], script,
                       env={"SBATCH_PARTITION": "strict"})
        self.assertEqual(self.assert_tuned(r)[0]["partition"], "strict", r)

    def test_sbatch_script_redirected_on_stdin(self):
        r = self.batch(TUNE, self.SCRIPT, stdin_path=True)
        tasks = self.assert_tuned(r)
        self.assertEqual(tasks[0]["nnodes"], 1, r)
        self.assertLessEqual(tasks[0]["gpus_on_node"], 2, r)

    def test_sbatch_script_through_a_pipe_is_refused_clearly(self):
        script = os.path.join(self.tmp, "piped.sh")
        with open(script, "w") as f:
            f.write(self.SCRIPT)
        r = run(["sh", "-c", f"cat {script} | sbatch " + " ".join(TUNE)], timeout=60)
        self.assertNotEqual(r.rc, 0, r)
        self.assertTrue(any("came through a pipe" in l for l in r.xdeep_lines()), r)
        self.assertNotIn("Submitted batch job", r.out)

    def test_script_directives_are_overridden_consistently(self):
        # --gres in the script cannot be cut; the re-executed sbatch overrides it.
        script = "#!/bin/bash\n#SBATCH --gres=gpu:1 --gpus-per-task=1\nsrun " + SHOW + "\n"
        r = self.batch(["-N1", *TUNE], script)
        tasks = self.assert_tuned(r)
        self.assertEqual(tasks[0]["gpus_on_node"], 1, r)

    # --- refusals --------------------------------------------------------------

    def test_mode_word_where_the_program_should_be(self):
        before = len(decisions_in_log())
        for argv in (["srun", "--xdeep-tune", "explain", SHOW],
                     ["srun", "--xdeep-tune", "auto", SHOW],
                     ["sbatch", "--xdeep-tune", "advise", SHOW]):
            with self.subTest(argv=argv):
                # sbatch opens the script before any plugin runs: let "advise" exist.
                with open(os.path.join(self.workload_dir(), argv[2]), "w") as f:
                    f.write("#!/bin/sh\ntrue\n")
                r = run(argv, cwd=self.workload_dir(), timeout=60)
                self.assertNotEqual(r.rc, 0, r)
                self.assertEqual(r.tasks(), [], r)
                self.assertTrue(any(f"did you mean --xdeep-tune={argv[2]}?" in l
                                    for l in r.xdeep_lines()), r)
        self.assertEqual(len(decisions_in_log()), before)

    def test_refused_options_say_why(self):
        conf = os.path.join(self.tmp, "multi.conf")
        with open(conf, "w") as f:
            f.write(f"* {SHOW}\n")
        for argv, words in (
                (["srun", "--multi-prog", *TUNE, conf], "--multi-prog cannot be tuned"),
                (["srun", "--ntasks-per-core=1", *TUNE, SHOW], "one task per GPU"),
                (["salloc", *TUNE, "-n1", ":", "-n1", "srun", SHOW], "heterogeneous")):
            with self.subTest(argv=argv[1]):
                r = run(argv, timeout=60)
                self.assertNotEqual(r.rc, 0, r)
                self.assertEqual(r.tasks(), [], r)
                self.assertTrue(any(words in l for l in r.xdeep_lines()), r)

    def test_heterogeneous_step_tunes_component_zero_only(self):
        r = run(["srun", "-l", *TUNE, SHOW, ":", "-n1", "-N1", SHOW], timeout=90)
        self.assertEqual(r.rc, 0, r)
        rows = [line.split(": ", 1) for line in r.out.splitlines() if ": {" in line]
        import json
        tasks = [json.loads(row) for _, row in rows]
        tuned = [t for t in tasks if t["decision"]]
        untuned = [t for t in tasks if not t["decision"]]
        self.assertEqual(len(untuned), 1, r)  # component 1's one task got no XDEEP_*
        self.assertEqual(untuned[0]["xdeep_tuned"], "", r)
        self.assertEqual(len(tuned), int(tuned[0]["xdeep_tasks"]), r)
        self.assertEqual(len({t["node"] for t in tuned}), int(tuned[0]["xdeep_nodes"]), r)
        for t in tuned:
            self.assertEqual(t["gpus_on_node"], int(t["xdeep_gpn"]), r)

    def test_heterogeneous_step_untuned_gets_no_decision(self):
        r = run(["srun", "-n1", SHOW, ":", "-n1", SHOW], env={"XDEEP_TUNE": ""}, timeout=60)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(r.tasks()), 2, r)
        self.assertTrue(all(t["decision"] == "" for t in r.tasks()), r)

    # --- environment variables -------------------------------------------------

    STALE = {"XDEEP_BUDGET": "lots", "XDEEP_DEADLINE": "yesterday", "XDEEP_OBJECTIVE": "fastest",
             "XDEEP_WORKLOAD": ""}

    def test_stale_variables_never_break_an_untuned_launch(self):
        r = run(["srun", SHOW], env=self.STALE, timeout=60)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(r.tasks()), 1, r)
        r = run(["srun", "--xdeep-tune=off", SHOW], env=self.STALE, timeout=60)
        self.assertEqual(r.rc, 0, r)
        r = self.batch([], f"#!/bin/bash\nsrun {SHOW}\n", env=self.STALE)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(r.tasks()), 1, r)
        self.assertEqual(r.tasks()[0]["decision"], "", r)

    def test_stale_variable_with_tuning_asked_names_it(self):
        for name, value in self.STALE.items():
            with self.subTest(name=name):
                r = run(["srun", "--xdeep-tune", SHOW], env={name: value},
                        cwd=self.workload_dir(), timeout=60)
                self.assertNotEqual(r.rc, 0, r)
                self.assertEqual(r.tasks(), [], r)
                lines = [l for l in r.xdeep_lines() if name in l]
                self.assertEqual(len(lines), 1, r)

    def test_empty_xdeep_tune_does_not_turn_tuning_on(self):
        before = len(decisions_in_log())
        r = run(["srun", SHOW], env={"XDEEP_TUNE": "", "XDEEP_WORKLOAD": GPT}, timeout=60)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(r.tasks()), 1, r)
        self.assertEqual(r.tasks()[0]["decision"], "", r)
        self.assertEqual(len(decisions_in_log()), before)

    # --- workload files ---------------------------------------------------------

    def test_workload_files_that_are_not_text_files(self):
        binary = os.path.join(self.tmp, "model.bin")
        with open(binary, "wb") as f:
            f.write(b"\x7fELF\x02\x01\x01\x00" * 64)
        big = os.path.join(self.tmp, "big.toml")
        with open(big, "w") as f:
            f.write("# padding\n" * 300000)
        fifo = os.path.join(self.tmp, "w.fifo")
        os.mkfifo(fifo)
        for path, words in ((binary, "binary data"), ("/dev/zero", "a device"), (fifo, "a FIFO"),
                            (self.tmp, "a directory"), (big, "bytes, more than")):
            with self.subTest(path=path):
                r = run(["srun", "--xdeep-tune", f"--xdeep-workload={path}", SHOW], timeout=30)
                self.assertNotEqual(r.rc, 0, r)
                self.assertEqual(r.tasks(), [], r)
                lines = [l for l in r.xdeep_lines() if words in l]
                self.assertEqual(len(lines), 1, r)
                self.assertFalse(any("daemon unavailable" in l for l in r.xdeep_lines()), r)

    # --- the table itself --------------------------------------------------------

    def test_help_shows_the_equals_form(self):
        r = run(["srun", "--help"], timeout=30)
        text = re.sub(r"\s+", " ", r.out + r.err)
        self.assertIn("--xdeep-tune=auto|advise|explain|off", text)
        self.assertIn("give a mode as --xdeep-tune=MODE", text)

    def test_table_names_every_option_of_the_man_pages(self):
        with open(os.path.join(SOURCE, "docs", "slurm-options.md")) as f:
            doc = f.read()
        documented = set(re.findall(r"`--([a-z0-9_-]+)`", doc))
        for launcher in ("srun", "sbatch", "salloc"):
            page = f"/usr/share/man/man1/{launcher}.1.gz"
            if not os.path.exists(page):
                self.skipTest(f"{page} is not installed")
            with gzip.open(page, "rt", errors="replace") as f:
                text = f.read().replace("\\-", "-")
            # Option headings follow ".TP" lines: \fB--name\fR...
            names = set(re.findall(r"^\.TP\n(?:\\fB-\w\\fR, )?\\fB--([a-z0-9-]+)", text, re.M))
            self.assertGreater(len(names), 80, launcher)
            self.assertEqual(names - documented, set(), launcher)
            help_text = run([launcher, "--help"], timeout=30)
            listed = set(re.findall(r"--([a-z][a-z0-9-]+)", help_text.out + help_text.err))
            self.assertEqual({n for n in listed if not n.startswith("xdeep")} - documented, set(),
                             launcher)

    def workload_dir(self):
        """A directory with an xdeep.toml: a mode word must not start a tuned launch."""
        d = os.path.join(self.tmp, "wd")
        os.makedirs(d, exist_ok=True)
        shutil.copy(GPT, os.path.join(d, "xdeep.toml"))
        return d


if __name__ == "__main__":
    unittest.main()
