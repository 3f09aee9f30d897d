#!/usr/bin/env python3
"""Merge the one-configuration result files of run_device_fresh.sh.

  merge_fresh.py OUT.json DESCRIPTION FILE...

Each FILE is measure_pytorch.py's output for one configuration, run in its own
process; OUT.json gets the first file's meta (with the per-run command and date
moved into each run) and every run, in a fixed order.
"""
import fcntl
import json
import os
import sys

ORDER = ["gpt-125m", "gpt-350m", "resnet50", "gpt-760m", "gpt-1.3b"]


def main():
    out, description, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    meta, runs = None, []
    for f in files:
        try:
            with open(f) as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            continue  # still being written, or the process died before writing
        for run in doc.get("runs", []):
            run["command"] = doc["meta"]["command"]
            run["date"] = doc["meta"]["date"]
            for key in ("eager_op_host_s", "cpus"):  # per process
                if key in doc["meta"]:
                    run[key] = doc["meta"][key]
            runs.append(run)
        if meta is None:
            meta = dict(doc["meta"])
    if meta is None:
        return
    meta.pop("command", None)
    meta["date"] = min(r["date"] for r in runs) if runs else meta["date"]
    meta["processes"] = description
    runs.sort(key=lambda r: (ORDER.index(r["model"]) if r["model"] in ORDER else 99,
                             r.get("grad_accum", 1), r["micro_batch"]))
    with open(out + ".tmp", "w") as fh:
        json.dump({"meta": meta, "runs": runs}, fh, indent=1)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    with open("/tmp/merge_fresh.lock", "w") as lock:  # lanes merge side by side
        fcntl.flock(lock, fcntl.LOCK_EX)
        main()
