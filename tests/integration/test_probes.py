"""xdeep-probe and the daemon's probe scheduler through the real local Slurm
(issue 5, item 5): the CPU (Kokkos) suite as a step, rank discovery across two
nodes from Slurm's environment, and ProbeScheduler's sbatch / squeue / scancel path
(tests/daemon/probe_scheduler_submit runs one real ProbeScheduler::Run)."""
import json
import os
import re
import socket
import time
import unittest

from harness import BUILD, StackTest, run

PROBE = os.path.join(BUILD, "profiler", "xdeep-probe")
SCHEMA = "xdeep.probe_report/1"


def submit_tool():
    # Built from tests/daemon/ (the daemon's test directory) once wired there.
    for path in (os.path.join(BUILD, "tests", "daemon", "probe_scheduler_submit"),
                 os.path.join(BUILD, "probe_scheduler_submit")):
        if os.access(path, os.X_OK):
            return path
    return None


class ProbeStepTest(StackTest):
    def setUp(self):
        super().setUp()
        self.assertTrue(os.access(PROBE, os.X_OK), f"{PROBE} is not built")

    def test_cpu_suite_as_a_slurm_step_writes_a_valid_report(self):
        out = os.path.join(self.tmp, "r.json")
        r = run(["srun", "-n1", PROBE, "compute", "--suite", "cpu", "--host-bytes", "16M",
                 "--time-limit", "50", "--out", out], timeout=90)
        self.assertEqual(r.rc, 0, r)
        v = run([PROBE, "validate", out])
        self.assertEqual(v.rc, 0, v)

        with open(out) as f:
            report = json.load(f)
        self.assertEqual(report["schema"], SCHEMA)
        # Every slurmd of the local cluster runs on this host.
        self.assertEqual(report["host"], socket.gethostname())
        self.assertNotIn("gpu", report)  # CPU suite: no GPU figures claimed
        self.assertEqual(report["errors"], [])
        self.assertGreater(report["elapsed_s"], 0)
        host = {b["kernel"]: b for b in report["bandwidth"]
                if b["space"] == "host" and b["backend"] == "kokkos"}
        self.assertEqual(set(host), {"copy", "triad", "adam_update"}, report["bandwidth"])
        for kernel, b in host.items():
            self.assertGreater(b["gbps"], 0.1, kernel)
            self.assertGreater(b["iterations"], 0, kernel)
            self.assertLessEqual(b["min_s"], b["median_s"], kernel)
            self.assertLessEqual(b["median_s"], b["p95_s"], kernel)
            # gbps is bytes / median (decimal GB/s), as docs/probe_report.md says.
            self.assertAlmostEqual(b["gbps"], b["bytes"] / b["median_s"] / 1e9,
                                   delta=b["gbps"] * 1e-6, msg=kernel)

    def test_validate_rejects_a_damaged_report(self):
        out = os.path.join(self.tmp, "r.json")
        r = run(["srun", "-n1", PROBE, "compute", "--suite", "cpu", "--host-bytes", "16M",
                 "--out", out], timeout=90)
        self.assertEqual(r.rc, 0, r)
        with open(out) as f:
            report = json.load(f)
        report["schema"] = "xdeep.probe_report/99"
        with open(out, "w") as f:
            json.dump(report, f)
        v = run([PROBE, "validate", out])
        self.assertNotEqual(v.rc, 0, v)

    def test_bootstrap_across_two_nodes_from_slurm_environment(self):
        r = run(["srun", "-N2", "-n2", PROBE, "bootstrap", "--timeout", "20"], timeout=60)
        self.assertEqual(r.rc, 0, r)
        rows = [re.match(r"rank (\d+)/(\d+) local (\d+)/(\d+) nodes (\d+) source (\S+) "
                         r"master (\S+):(\d+) token (\S+)", line)
                for line in r.out.splitlines() if line.startswith("rank ")]
        self.assertEqual(len(rows), 2, r)
        self.assertTrue(all(rows), r)
        self.assertEqual(sorted(int(m.group(1)) for m in rows), [0, 1], r)
        for m in rows:
            self.assertEqual(m.group(2), "2", r)       # world size from SLURM_NTASKS
            self.assertEqual(m.group(3), "0", r)       # one task per node
            self.assertEqual(m.group(5), "2", r)       # nodes from SLURM_STEP_NUM_NODES
            self.assertEqual(m.group(6), "slurm", r)
        # Rank 1 can only print rank 0's token by receiving it over the rendezvous.
        self.assertEqual(rows[0].group(9), rows[1].group(9), r)
        self.assertEqual(rows[0].group(8), rows[1].group(8), r)  # same derived port


class ProbeSchedulerTest(StackTest):
    """ProbeScheduler::Run against the real slurmctld: submit, wait, cancel, check."""

    def setUp(self):
        super().setUp()
        self.tool = submit_tool()
        self.assertIsNotNone(self.tool, "probe_scheduler_submit is not built")

    def submit(self, *extra, probe=PROBE, partition="debug", wait="60", timeout=120):
        r = run([self.tool, "--probe", probe, "--reports-dir", os.path.join(self.tmp, "reports"),
                 "--partition", partition, "--time-limit-min", "1", "--wait", wait, *extra],
                timeout=timeout)
        lines = [l for l in r.out.splitlines() if l.startswith("{")]
        self.assertEqual(len(lines), 1, r)
        return r, json.loads(lines[0])

    def job_state(self, job_id):
        q = run(["squeue", "-h", "-j", job_id, "-t", "all", "-o", "%T"])
        return q.out.strip() if q.rc == 0 else ""

    def test_cpu_probe_job_gives_a_valid_report(self):
        r, res = self.submit()
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(res["ok"], res)
        self.assertTrue(os.path.exists(res["report"]), res)
        self.assertEqual(run([PROBE, "validate", res["report"]]).rc, 0)
        with open(res["report"]) as f:
            report = json.load(f)
        self.assertEqual(report["schema"], SCHEMA)
        self.assertTrue(all(b["gbps"] > 0 for b in report["bandwidth"]), report)
        # Done means the job left the queue (or finished there), not just a file.
        self.assertIn(self.job_state(res["job_id"]), ("", "COMPLETED"))
        self.assertTrue(os.path.exists(res["log"]), res)

    def test_deadline_cancels_the_job(self):
        # The CPU suite takes ~2 s; a 0.3 s wait must end in a cancelled job.
        r, res = self.submit(wait="0.3", timeout=60)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(res["code"], "DEADLINE_EXCEEDED", res)
        self.assertIn("cancelled", res["message"])
        job_id = re.search(r"probe job (\d+)", res["message"]).group(1)
        state = None
        for _ in range(50):
            state = self.job_state(job_id)
            if state in ("", "CANCELLED"):
                break
            time.sleep(0.2)
        self.assertIn(state, ("", "CANCELLED"), f"job {job_id} still {state}")

    def test_failed_job_is_reported_with_its_log(self):
        r, res = self.submit(probe="/nonexistent/xdeep-probe")
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(res["code"], "ABORTED", res)
        self.assertIn("without a report", res["message"])

    def test_unknown_partition_is_refused_by_sbatch(self):
        r, res = self.submit(partition="no-such-partition")
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(res["code"], "UNAVAILABLE", res)
        self.assertIn("sbatch refused", res["message"])


if __name__ == "__main__":
    unittest.main()
