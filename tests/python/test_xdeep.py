"""The xdeep Python package: decision file, rank-to-group mapping, framework
settings (against the C++ `xdeep emit`), step reports, and init_distributed
in a real 4-process gloo world when torch is importable."""
import json
import os
import subprocess
import tempfile
import unittest

import xdeep
from xdeep.groups import all_groups

CLI = os.environ.get("XDEEP_CLI", "")


def decision_doc(**over):
    doc = {
        "schema": "xdeep.decision/1", "decision_id": "abc123", "workload": "gpt",
        "launcher": "srun",
        "layout": {"nodes": 2, "gpus_per_node": 4, "ranks": 8, "tasks_per_node": 4},
        "parallel": {"strategy": "dp2xtp2xpp2 (interleaved v2)", "dp": 2, "tp": 2, "pp": 2,
                     "cp": 1, "sharding_stage": 1, "pipeline_schedule": "interleaved",
                     "virtual_stages": 2, "rank_order": "tp-cp-dp-pp"},
        "batch": {"micro_batch": 4, "grad_accumulation": 8, "global_batch": 64},
        "recompute": True,
        "predicted": {"step_time_s": 0.5, "cost": 1.25, "time_to_solution_s": 3600.0,
                      "memory_per_gpu_bytes": 1 << 30},
    }
    for key, value in over.items():
        section, _, field = key.partition("__")
        if field:
            doc[section][field] = value
        else:
            doc[section] = value
    return doc


class DecisionTest(unittest.TestCase):
    def write(self, doc):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(doc, f) if not isinstance(doc, str) else f.write(doc)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_reads_every_field(self):
        d = xdeep.decision(self.write(decision_doc()))
        self.assertEqual((d.dp, d.tp, d.pp, d.cp), (2, 2, 2, 1))
        self.assertEqual((d.micro_batch, d.grad_accumulation, d.global_batch), (4, 8, 64))
        self.assertEqual((d.pipeline_schedule, d.virtual_stages), ("interleaved", 2))
        self.assertTrue(d.recompute)
        self.assertEqual(d.predicted["step_time_s"], 0.5)

    def test_environment_names_the_file(self):
        path = self.write(decision_doc())
        old = os.environ.get("XDEEP_DECISION_FILE")
        os.environ["XDEEP_DECISION_FILE"] = path
        try:
            self.assertEqual(xdeep.decision().decision_id, "abc123")
        finally:
            os.environ.pop("XDEEP_DECISION_FILE")
            if old is not None:
                os.environ["XDEEP_DECISION_FILE"] = old

    def test_bad_files_are_one_clear_error(self):
        cases = {
            "not json": "{",
            "other schema": decision_doc(schema="xdeep.decision/9"),
            "dp x tp x pp": decision_doc(parallel__dp=3),
            "global batch": decision_doc(batch__global_batch=65),
            "missing": {k: v for k, v in decision_doc().items() if k != "batch"},
            "zero": decision_doc(batch__micro_batch=0),
        }
        for name, doc in cases.items():
            with self.subTest(name), self.assertRaises(xdeep.DecisionError):
                xdeep.decision(self.write(doc))
        with self.assertRaises(xdeep.DecisionError):
            xdeep.decision("/nonexistent/decision.json")


class GroupTest(unittest.TestCase):
    def setUp(self):
        self.d = xdeep.Decision.from_json(decision_doc())

    def test_tp_is_fastest_and_contiguous(self):
        self.assertEqual(xdeep.group_ranks(self.d, "tp", 5), [4, 5])
        self.assertEqual(xdeep.group_ranks(self.d, "dp", 1), [1, 3])
        self.assertEqual(xdeep.group_ranks(self.d, "pp", 2), [2, 6])
        self.assertEqual(xdeep.coordinates(self.d, 7), xdeep.RankCoordinates(tp=1, cp=0, dp=1, pp=1))

    def test_groups_partition_the_world(self):
        for kind, size in (("tp", 2), ("dp", 2), ("pp", 2), ("cp", 1)):
            groups = all_groups(self.d, kind)
            flat = sorted(r for g in groups for r in g)
            self.assertEqual(flat, list(range(8)), kind)
            self.assertTrue(all(len(g) == size for g in groups), kind)

    def test_rank_outside_world_is_refused(self):
        with self.assertRaises(ValueError):
            xdeep.coordinates(self.d, 8)


class FrameworkTest(unittest.TestCase):
    def setUp(self):
        self.d = xdeep.Decision.from_json(decision_doc())

    def test_deepspeed(self):
        c = xdeep.deepspeed_config(self.d)
        self.assertEqual(c["train_batch_size"], 64)
        self.assertEqual(c["train_micro_batch_size_per_gpu"], 4)
        self.assertEqual(c["gradient_accumulation_steps"], 8)
        self.assertEqual(c["zero_optimization"]["stage"], 1)

    def test_megatron(self):
        a = xdeep.megatron_args(self.d)
        self.assertEqual(a[a.index("--tensor-model-parallel-size") + 1], "2")
        self.assertEqual(a[a.index("--num-virtual-stages-per-pipeline-rank") + 1], "2")
        self.assertIn("--use-distributed-optimizer", a)
        self.assertEqual(xdeep.megatron_core_kwargs(self.d)["virtual_pipeline_model_parallel_size"], 2)

    def test_selective_recompute(self):
        d = xdeep.Decision.from_json(decision_doc(recompute=False, selective_recompute=True))
        a = xdeep.megatron_args(d)
        self.assertEqual(a[a.index("--recompute-granularity") + 1], "selective")
        self.assertNotIn("--recompute-method", a)
        self.assertNotIn("activation_checkpointing", xdeep.deepspeed_config(d))
        with self.assertRaises(xdeep.DecisionError):
            xdeep.Decision.from_json(decision_doc(recompute=True, selective_recompute=True))

    def test_lightning_refuses_pipelines(self):
        with self.assertRaises(ValueError):
            xdeep.lightning_settings(self.d)

    def test_torchrun_fills_what_the_job_has(self):
        args = xdeep.torchrun_args(self.d, {"MASTER_ADDR": "n1", "MASTER_PORT": "29600"})
        self.assertIn("--master_addr=n1", args)
        self.assertIn("--node_rank=${XDEEP_NODE_RANK}", args)

    @unittest.skipUnless(CLI, "XDEEP_CLI names the C++ xdeep (ctest sets it)")
    def test_same_text_as_the_cli(self):
        variants = [decision_doc(),
                    decision_doc(parallel__pp=1, parallel__dp=4, parallel__pipeline_schedule=None,
                                 parallel__virtual_stages=1, batch__global_batch=128,
                                 parallel__sharding_stage=3, recompute=False),
                    decision_doc(launcher="torchrun", layout__tasks_per_node=1),
                    decision_doc(recompute=False, selective_recompute=True)]
        env = dict(os.environ, MASTER_ADDR="10.0.0.7")
        env.pop("MASTER_PORT", None)
        env.pop("XDEEP_NODE_RANK", None)
        for doc in variants:
            f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
            json.dump(doc, f)
            f.close()
            self.addCleanup(os.unlink, f.name)
            d = xdeep.decision(f.name)
            for fmt in ("json", "torchrun", "deepspeed", "megatron", "lightning", "accelerate"):
                with self.subTest(fmt=fmt, pp=d.pp):
                    cli = subprocess.run([CLI, "emit", fmt, "--decision", f.name], env=env,
                                         capture_output=True, text=True)
                    try:
                        ours = xdeep.emit(fmt, d, env)
                    except ValueError:
                        self.assertNotEqual(cli.returncode, 0, cli.stdout)
                        continue
                    self.assertEqual(cli.returncode, 0, cli.stderr)
                    if fmt in ("json", "deepspeed", "lightning"):
                        self.assertEqual(json.loads(cli.stdout), json.loads(ours))
                    else:
                        self.assertEqual(cli.stdout, ours)


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "step_times")
        self.saved = {k: os.environ.get(k) for k in ("XDEEP_REPORT", "RANK")}
        os.environ["XDEEP_REPORT"] = self.path

    def tearDown(self):
        for k, v in self.saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
        if os.path.exists(self.path):
            os.unlink(self.path)
        os.rmdir(self.dir)

    def test_rank_zero_appends(self):
        os.environ["RANK"] = "0"
        self.assertTrue(xdeep.report_step(0.25))
        self.assertTrue(xdeep.report_step(0.5))
        with open(self.path) as f:
            self.assertEqual([float(x) for x in f], [0.25, 0.5])

    def test_other_ranks_and_bad_numbers(self):
        os.environ["RANK"] = "3"
        self.assertFalse(xdeep.report_step(0.25))
        self.assertFalse(os.path.exists(self.path))
        for bad in (float("nan"), -1, 0, "fast"):
            with self.assertRaises(ValueError):
                xdeep.report_step(bad)


def _torch():
    try:
        import torch.distributed as dist  # noqa: F401
        return dist.is_available() and dist.is_gloo_available()
    except ImportError:
        return False


def _worker(rank, path, port, queue):
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": "4", "LOCAL_RANK": str(rank % 2),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                       "XDEEP_DECISION_FILE": path})
    import torch
    import torch.distributed as dist
    g = xdeep.init_distributed(backend="gloo", timeout=60)
    out = {}
    for kind in ("tp", "dp", "pp"):
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=g.groups[kind])
        out[kind] = t.item()
    queue.put((rank, out, g.members))
    dist.destroy_process_group()


@unittest.skipUnless(_torch(), "torch with gloo is not importable here")
class InitDistributedTest(unittest.TestCase):
    # dp2 x tp2 on 2 nodes: both kinds of group hold two ranks.
    DOC = decision_doc(layout__gpus_per_node=2, layout__ranks=4, layout__tasks_per_node=2,
                       parallel__pp=1, parallel__pipeline_schedule=None,
                       parallel__virtual_stages=1, batch__global_batch=64)

    def test_groups_sum_their_members(self):
        import socket

        import torch.multiprocessing as mp
        path = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(self.DOC, path)
        path.close()
        self.addCleanup(os.unlink, path.name)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        procs = [ctx.Process(target=_worker, args=(r, path.name, port, queue)) for r in range(4)]
        for p in procs:
            p.start()
        results = dict((r, (out, members)) for r, out, members in (queue.get(timeout=90)
                                                                    for _ in procs))
        for p in procs:
            p.join(30)
            self.assertEqual(p.exitcode, 0)
        d = xdeep.Decision.from_json(self.DOC)
        for rank, (out, members) in results.items():
            for kind in ("tp", "dp", "pp"):
                expected = xdeep.group_ranks(d, kind, rank)
                self.assertEqual(members[kind], expected)
                self.assertEqual(out[kind], float(sum(expected)), (rank, kind))


if __name__ == "__main__":
    unittest.main()
