#!/usr/bin/env python3
"""Stands in for torchrun in the local integration tests: Debian's torchrun
(torch 1.13) fails on Python 3.11 (AttributeError in elastic's to_map before
any worker starts). It does what torchrun's static rendezvous does with the
PET_* options the plugin sets for --xdeep-launcher=torchrun: start
PET_NPROC_PER_NODE processes with RANK = node rank x nproc + local rank,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE; exit with the worst status."""
import os
import subprocess
import sys

nnodes = int(os.environ["PET_NNODES"])
nproc = int(os.environ["PET_NPROC_PER_NODE"])
node = int(os.environ["PET_NODE_RANK"])
procs = []
for local in range(nproc):
    env = dict(os.environ, RANK=str(node * nproc + local), WORLD_SIZE=str(nnodes * nproc),
               LOCAL_RANK=str(local), LOCAL_WORLD_SIZE=str(nproc),
               MASTER_ADDR=os.environ["PET_MASTER_ADDR"],
               MASTER_PORT=os.environ["PET_MASTER_PORT"], TORCHELASTIC_RUN_ID="xdeep-test")
    procs.append(subprocess.Popen([sys.executable] + sys.argv[1:], env=env))
sys.exit(max(p.wait() for p in procs))
