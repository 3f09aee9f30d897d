"""The daemon's view of the cluster, from the real slurmctld: nodes from
`sinfo --json`, partitions from `scontrol show partition` (daemon/slurm_inventory.h).
A partition this suite creates bounds every layout by its own nodes; one whose
only node is drained has none to offer; an unknown one is named back."""
import json
import os

from harness import BUILD, STACK, StackTest, run

XDEEP = os.path.join(BUILD, "daemon", "xdeep")
DAEMON = ["--daemon", f"unix://{STACK}/xdeepd.sock"]
ONE = "xdeep-one"          # one node of the stack
DRAINED = "xdeep-drained"  # another node, drained during one test


def node_names():
    r = run(["sinfo", "--json"])
    assert r.rc == 0, r
    return sorted(n["name"] for n in json.loads(r.out)["nodes"])


def plan(partition, *extra):
    return run([XDEEP, *DAEMON, "--json", "plan", "-w", "gpt-1.3b", "--objective", "time",
                "-p", partition, *extra])


class InventoryTest(StackTest):
    @classmethod
    def setUpClass(cls):
        cls.nodes = node_names()
        assert len(cls.nodes) >= 3, cls.nodes
        for name, node in ((ONE, cls.nodes[0]), (DRAINED, cls.nodes[-1])):
            run(["scontrol", "delete", f"PartitionName={name}"])
            r = run(["scontrol", "create", f"PartitionName={name}", f"Nodes={node}", "State=UP"])
            assert r.rc == 0, r

    @classmethod
    def tearDownClass(cls):
        for name in (ONE, DRAINED):
            run(["scontrol", "delete", f"PartitionName={name}"])

    def test_a_partition_bounds_every_layout_by_its_nodes(self):
        whole = plan("debug")
        self.assertEqual(whole.rc, 0, whole)
        self.assertGreater(json.loads(whole.out)["chosen"]["nodes"], 1,
                           "with three nodes the fastest layout spans several")
        one = plan(ONE)
        self.assertEqual(one.rc, 0, one)
        doc = json.loads(one.out)
        for layout in [doc["chosen"]] + doc["alternatives"]:
            self.assertEqual(layout["nodes"], 1, layout)
            self.assertLessEqual(layout["gpus_per_node"], 4, layout)

    def test_a_partition_without_usable_nodes_is_refused(self):
        node = self.nodes[-1]
        r = run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=xdeep-test"])
        self.assertEqual(r.rc, 0, r)
        try:
            refused = plan(DRAINED)
        finally:
            run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])
        self.assertNotEqual(refused.rc, 0, refused)
        self.assertIn(f"partition '{DRAINED}' has no usable nodes right now", refused.err)

    def test_an_unknown_partition_is_named_back(self):
        r = plan("no-such-partition")
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("Slurm has no partition 'no-such-partition'; check the name with sinfo",
                      r.err)
