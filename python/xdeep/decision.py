"""The decision file (schema xdeep.decision/1, docs/decision-file.md)."""
import json
import os
from dataclasses import dataclass, field
from typing import Optional

SCHEMA = "xdeep.decision/1"
RANK_ORDER = "tp-cp-dp-pp"
LAUNCHERS = ("srun", "torchrun", "accelerate", "deepspeed")


class DecisionError(Exception):
    """The decision file is missing, unreadable or inconsistent."""


@dataclass(frozen=True)
class Decision:
    decision_id: str
    workload: str
    launcher: str
    nodes: int
    gpus_per_node: int
    ranks: int
    strategy: str
    dp: int
    tp: int
    pp: int
    cp: int
    sequence_parallel: bool
    sharding_stage: int
    pipeline_schedule: Optional[str]
    virtual_stages: int
    rank_order: str
    micro_batch: int
    grad_accumulation: int
    global_batch: int
    recompute: bool
    selective_recompute: bool = False  # only the attention core recomputed (Megatron's selective)
    predicted: dict = field(default_factory=dict)
    time_limit_s: float = 0.0  # a job's time limit; 0: none
    segments: int = 1  # checkpointed jobs the run is planned as

    @property
    def per_node_launcher(self):
        return self.launcher != "srun"

    @classmethod
    def from_json(cls, doc):
        if not isinstance(doc, dict):
            raise DecisionError("the decision file is not a JSON object")
        if doc.get("schema") != SCHEMA:
            raise DecisionError(f"schema is {doc.get('schema')!r}, this package reads {SCHEMA}")
        try:
            layout, par, batch = doc["layout"], doc["parallel"], doc["batch"]
            d = cls(
                decision_id=str(doc["decision_id"]),
                workload=str(doc.get("workload", "")),
                launcher=str(doc.get("launcher", "srun")),
                nodes=int(layout["nodes"]),
                gpus_per_node=int(layout["gpus_per_node"]),
                ranks=int(layout["ranks"]),
                strategy=str(par.get("strategy", "")),
                dp=int(par["dp"]), tp=int(par["tp"]), pp=int(par["pp"]), cp=int(par.get("cp", 1)),
                sequence_parallel=bool(par.get("sequence_parallel", False)),
                sharding_stage=int(par["sharding_stage"]),
                pipeline_schedule=par.get("pipeline_schedule"),
                virtual_stages=int(par.get("virtual_stages", 1)),
                rank_order=str(par.get("rank_order", RANK_ORDER)),
                micro_batch=int(batch["micro_batch"]),
                grad_accumulation=int(batch["grad_accumulation"]),
                global_batch=int(batch["global_batch"]),
                recompute=bool(doc.get("recompute", False)),
                selective_recompute=bool(doc.get("selective_recompute", False)),
                predicted=dict(doc.get("predicted") or {}),
                time_limit_s=float((doc.get("time") or {}).get("limit_s", 0.0)),
                segments=int((doc.get("time") or {}).get("segments", 1)),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise DecisionError(f"a field is missing or has the wrong type: {e}") from None
        d.check()
        return d

    def check(self):
        if self.launcher not in LAUNCHERS:
            raise DecisionError(f"unknown launcher {self.launcher!r}")
        if self.rank_order != RANK_ORDER:
            raise DecisionError(f"rank order {self.rank_order!r}; this package knows {RANK_ORDER}")
        counts = (self.nodes, self.gpus_per_node, self.ranks, self.dp, self.tp, self.pp, self.cp,
                  self.micro_batch, self.grad_accumulation, self.global_batch, self.virtual_stages)
        if min(counts) < 1 or not 0 <= self.sharding_stage <= 3:
            raise DecisionError("the decision holds a count below 1 or a sharding stage outside 0-3")
        if self.nodes * self.gpus_per_node != self.ranks:
            raise DecisionError(f"nodes x GPUs per node ({self.nodes} x {self.gpus_per_node}) "
                                f"is not the {self.ranks} ranks")
        if self.dp * self.tp * self.pp * self.cp != self.ranks:
            raise DecisionError(f"dp x tp x pp x cp ({self.dp} x {self.tp} x {self.pp} x {self.cp})"
                                f" is not the {self.ranks} ranks")
        if self.recompute and self.selective_recompute:
            raise DecisionError("recompute and selective_recompute are both set; a decision has "
                                "one recomputation mode")
        if self.micro_batch * self.grad_accumulation * self.dp != self.global_batch:
            raise DecisionError("micro-batch x accumulation x dp is not the global batch "
                                f"{self.global_batch}")


def decision(path=None):
    """The decision of this job: `path`, else $XDEEP_DECISION_FILE."""
    path = path or os.environ.get("XDEEP_DECISION_FILE")
    if not path:
        raise DecisionError("XDEEP_DECISION_FILE is not set: this is not a tuned job "
                            "(launch with --xdeep-tune, or pass the file written by "
                            "`xdeep plan --emit json`)")
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise DecisionError(f"cannot read the decision file {path}: {e.strerror}") from None
    except ValueError as e:
        raise DecisionError(f"{path} is not JSON: {e}") from None
    return Decision.from_json(doc)
