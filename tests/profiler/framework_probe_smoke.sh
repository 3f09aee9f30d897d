#!/usr/bin/env bash
# framework_probe.py on the CPU, with one rank and with two (Gloo), as the daemon and
# bench/validate/run_device.sh run it on GPUs: its reports must pass `xdeep-probe
# merge` (the C++ reader) keeping what the tuner reads. Debian's PyTorch has no FSDP2:
# its passes are skipped with a message, which is checked too.
#   framework_probe_smoke.sh XDEEP_PROBE
set -euo pipefail
xdeep_probe=$1
here=$(cd "$(dirname "$0")" && pwd)
probe=$here/../../profiler/framework_probe.py
# The first Python with PyTorch (a pyenv python3 may shadow Debian's).
py=
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import torch" 2> /dev/null; then py=$candidate; break; fi
done
[ -n "$py" ] || { echo "no Python with PyTorch here: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONPATH=$here/torch_sdpa_shim
# A rank that hangs fails here in 4 minutes (a loaded 2-core CI host needs 2+ for one
# rank), with its stderr, not at ctest's timeout.
probe_run() {
  local name=$1; shift
  timeout 240 "$py" "$probe" --cpu --steps 3 --warmup 1 "$@" --out "$tmp/$name.json" 2> "$tmp/$name.err" || {
    echo "FAIL: framework_probe.py $* exited $? (124: timed out); its stderr:"; cat "$tmp/$name.err"; exit 1; }
}
probe_run one
probe_run two --ranks 2
if ! "$py" -c "import torch.distributed.fsdp as f; f.fully_shard" 2> /dev/null; then
  grep -q "no FSDP pass" "$tmp/one.err" || { echo "FAIL: no word of the skipped FSDP pass"; exit 1; }
fi
# The tiny GPT's TP pass and, beside it, the Llama-style decoder's plain and TP passes
# (llama_*): where this PyTorch has DTensor tensor parallelism (Debian's 1.13 has not),
# on both entries; else a word of the skipped pass.
tp=0
if "$py" -c "import torch.distributed.tensor.parallel, torch.distributed.device_mesh" 2> /dev/null; then
  tp=1
else
  grep -q "no TP pass" "$tmp/one.err" || { echo "FAIL: no word of the skipped TP pass"; exit 1; }
fi
"$xdeep_probe" merge "$tmp/one.json" "$tmp/two.json" --out "$tmp/merged.json"
python3 - "$tmp/merged.json" "$tp" <<'PY'
import json
import sys
entries = json.load(open(sys.argv[1]))["framework"]
def fail(what):
    sys.exit(f"FAIL: {what}: {json.dumps(entries)[:2000]}")
for ranks in (1, 2):
    mine = [e for e in entries if e.get("ranks") == ranks and e["hidden" if e["model"] == "gpt" else "depth"] in (128, 50)]
    if sorted(e["model"] for e in mine) != ["gpt", "resnet"]:
        fail(f"the tiny GPT and ResNet-50 on {ranks} rank(s)")
    for e in mine:
        if not (e["median_s"] > 0 and e["kernels"] > 0 and e.get("ddp_median_s", 0) > 0
                and e.get("step_host_s", 0) > 0):
            fail(f"{e['model']} on {ranks} rank(s) without its times, kernels, DDP pass or optimizer step")
        if (e.get("straggle", 0) >= 1) != (ranks > 1):
            fail(f"{e['model']} on {ranks} rank(s): the ranks' straggle only where several ran")
        tp_keys = ("tp_median_s", "tp_linears", "llama_median_s", "llama_tp_median_s", "llama_tp_linears")
        if e["model"] == "gpt" and sys.argv[2] == "1":
            if not all(e.get(k, 0) > 0 for k in tp_keys) or e["llama_tp_linears"] != 7 * e["layers"]:
                fail(f"the GPT on {ranks} rank(s) without its and the Llama-style block's TP passes")
            print(f"framework probe smoke: {ranks} rank(s): GPT {e['median_s'] * 1e3:.1f} ms, "
                  f"{e['tp_median_s'] * 1e3:.1f} ms under TP; Llama-style {e['llama_median_s'] * 1e3:.1f} ms, "
                  f"{e['llama_tp_median_s'] * 1e3:.1f} ms under TP ({e['llama_tp_linears']} split Linears)")
        elif any(k in e for k in tp_keys):
            fail(f"{e['model']} on {ranks} rank(s): TP fields without a TP pass")
wide = [e for e in entries if e["model"] == "gpt" and e["hidden"] > 128]
if len(wide) != 1 or wide[0]["ranks"] != 1:
    fail("one memory-bound GPT, on one rank")
print(f"framework probe smoke: {len(entries)} entries merged")
PY
