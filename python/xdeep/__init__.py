"""xdeep inside a tuned Slurm job.

The plugin writes the decision to $XDEEP_DECISION_FILE (docs/decision-file.md)
and sets the rendezvous variables; this package reads them. Pure Python, no
dependency; torch is imported only by init_distributed().

    import xdeep
    d = xdeep.decision()                  # the decided layout, batch, predictions
    groups = xdeep.init_distributed()     # torch process groups for dp / tp / pp / cp
    ds_config = xdeep.deepspeed_config()  # a DeepSpeed config dict
    args = xdeep.megatron_args()          # Megatron-LM command-line arguments
    xdeep.report_step(seconds)            # the daemon learns from real step times
"""
from .decision import Decision, DecisionError, decision
from .distributed import init_distributed
from .frameworks import (accelerate_config, deepspeed_config, emit, lightning_settings,
                         megatron_args, megatron_core_kwargs, torchrun_args)
from .groups import RankCoordinates, coordinates, group_ranks
from .report import report_step

__all__ = [
    "Decision", "DecisionError", "decision", "init_distributed", "accelerate_config",
    "deepspeed_config", "emit", "lightning_settings", "megatron_args", "megatron_core_kwargs",
    "torchrun_args", "RankCoordinates", "coordinates", "group_ranks", "report_step",
]
