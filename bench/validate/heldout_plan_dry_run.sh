#!/usr/bin/env bash
# A planned held-out library run, end to end without a GPU: run_library.sh with the plan's
# settings (PLAN_ENV, one VAR=value a line, as its README's command reads them), the GPU work
# replaced by stand-ins (the probes copy run 9's reports, the suite writes one made-up
# measurement per model, mode and micro-batch it was asked for), the real xdeep_validate
# reading the workload files (`shapes` for the compute probe, `compare` for the predictions)
# and the real xdeep-probe merging. Checks that every planned model has a workload file the
# tuner reads and an entry library_suite.py can build, that the suite's config (layers, widths,
# heads, key-value heads, vocabulary, tied head, sequence; a vision model's input side, patch
# tokens and CNN recipe) agrees with that workload file, that each mode is asked for exactly its
# planned models, that the frozen model predicts every one of them and that $OUT ends with only
# log.txt and results.tgz in it -- so the one-shot run cannot be lost to a typo.
#
#   heldout_plan_dry_run.sh XDEEP_PROBE XDEEP_VALIDATE PLAN_ENV
set -u
probe=$(realpath "$1") validate=$(realpath "$2") plan=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
reports=$here/data/calibration/2026-11-27_h100x2_library_run9
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/carry"
ln -s "$validate" "$tmp/carry/xdeep_validate"
real_python=$(command -v python3)
log=$tmp/calls.txt
# As many GPUs as the plan's machine has, read from its folder's name (..._h200x1_library_run16: one;
# default two): run_library.sh counts `nvidia-smi -L`'s lines, and with one GPU it runs the
# single-GPU part only, its two lanes one after the other.
gpus=$(basename "$(dirname "$plan")" | sed -n 's/.*_h[0-9]*x\([0-9]*\)_library_.*/\1/p')
gpus=${gpus:-2}
{
  echo '#!/bin/bash'
  echo 'if [ "$1" = -L ]; then'
  for ((i = 0; i < gpus; i++)); do echo "  echo 'GPU $i: stand-in'"; done
  echo 'else echo stand-in; fi'
} > "$tmp/bin/nvidia-smi"
printf '#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\nexec python3 "$@"\n' > "$tmp/bin/torchrun"
cat > "$tmp/carry/xdeep-probe" <<SH
#!/bin/bash
case "\$1" in
  merge|--help) exec "$probe" "\$@";;
esac
out=\$(echo "\$*" | sed 's/.*--out \([^ ]*\).*/\1/')
case "\$1" in
  compute) cp "$reports/compute.json" "\$out";;
  collectives) cp "$reports/coll_2gpu.json" "\$out";;
esac
SH
# The suite's stand-in: one made-up run per model and micro-batch asked for.
cat > "$tmp/suite.py" <<'PY'
import argparse, json, sys
ap = argparse.ArgumentParser()
for a in ("--mode", "--models", "--micro-batches", "--vision-micro-batches", "--out", "--lane-lock"):
    ap.add_argument(a, default="")
args, _ = ap.parse_known_args()
runs = []
for m in filter(None, args.models.split(",")):
    vision = m.startswith(("timm-", "tv-"))
    mbs = (args.vision_micro_batches if vision and args.vision_micro_batches else args.micro_batches)
    for mb in filter(None, mbs.split(",")):
        runs.append(dict(model=m, mode=args.mode, world_size=1 if args.mode == "single" else 2,
                         micro_batch=int(mb), grad_accum=4 if args.mode == "pp" else 1,
                         tp=2 if args.mode == "tp" else 1, pp=2 if args.mode == "pp" else 1,
                         step_time_median_s=0.1, step_times_s=[0.1], peak_allocated_bytes=10 << 30))
meta = dict(schema="xdeep.memory_validation/1", suite="library_suite.py (dry run)", mode=args.mode,
            gpu="stand-in", gpu_count_used=1 if args.mode == "single" else 2)
json.dump(dict(meta=meta, runs=runs), open(args.out, "w"))
print("suite", args.mode, args.models, "lane-lock" if args.lane_lock else "no-lock",
      file=open(sys.argv[0] + ".log", "a"))
PY
cat > "$tmp/bin/python3" <<SH
#!/bin/bash
out=\$(echo "\$*" | sed -n 's/.*--out \([^ ]*\).*/\1/p')
case "\$*" in
  -c*) echo "stand-in torch"; exit 0;;
  *framework_probe.py*--ranks*) cp "$reports/framework_2ranks.json" "\$out"; exit 0;;
  *framework_probe.py*) cp "$reports/framework.json" "\$out"; exit 0;;
  *library_suite.py*) shift; exec "$real_python" "$tmp/suite.py" "\$@";;
  *) exec "$real_python" "\$@";;
esac
SH
chmod +x "$tmp/bin/"* "$tmp/carry/xdeep-probe"
fail() { echo "held-out plan dry run: $*"; cat "$tmp/out/log.txt" "$tmp/suite.py.log" 2>/dev/null; exit 1; }
settings=$(grep -v '^#' "$plan" | grep '=' | tr '\n' ' ')
[ -n "$settings" ] || fail "no settings in $plan"
# The stand-in suite builds nothing, so check here that the real one knows every planned
# model: a name in its TRANSFORMERS or VISION table, and a transformers kind its build()
# names (read from the source: the build machine has no torch).
planned=$(grep -E '^(LM|VISION|MODELS_[A-Z]+)=' "$plan" | cut -d= -f2- | tr ',' '\n' | grep . | sort -u)
unknown=$("$real_python" - "$here/library_suite.py" $planned <<'PY'
import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
tables, build_strings = {}, set()
for node in tree.body:
    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("TRANSFORMERS", "VISION"):
        tables[node.targets[0].id] = dict(zip((k.value for k in node.value.keys), node.value.values))
    if isinstance(node, ast.FunctionDef) and node.name in ("build", "_build"):  # build() and its body
        build_strings |= {n.value for n in ast.walk(node)
                          if isinstance(n, ast.Constant) and isinstance(n.value, str)}
for name in sys.argv[2:]:
    if name in tables.get("TRANSFORMERS", {}):
        kind = tables["TRANSFORMERS"][name].elts[0].value
        if kind not in build_strings:
            print(f"{name} (kind '{kind}' not built by library_suite.py's build())")
    elif name not in tables.get("VISION", {}):
        print(f"{name} (in neither TRANSFORMERS nor VISION of library_suite.py)")
PY
)
[ -z "$unknown" ] || fail "planned models library_suite.py cannot build: $unknown"
# The suite's config and the workload file describe the same model: every shape key the suite
# passes to a transformers config (or its input side, its CNN recipe) agrees with the file the
# tuner reads, so a typo in either cannot turn the held-out run into a run of another shape.
mismatch=$("$real_python" - "$here/library_suite.py" "$here/workloads" $planned <<'PY'
import ast, re, sys, tomllib
tree = ast.parse(open(sys.argv[1]).read())


def value(node):  # a literal, with the suite's dict(key=literal, ...) calls read as dicts
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict" and not node.args:
        return {k.arg: value(k.value) for k in node.keywords}
    if isinstance(node, ast.Tuple):
        return tuple(value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {value(k): value(v) for k, v in zip(node.keys, node.values)}
    return ast.literal_eval(node)


consts = {}
for node in tree.body:
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        try:
            consts[node.targets[0].id] = value(node.value)
        except ValueError:
            pass
transformers, vision = consts["TRANSFORMERS"], consts["VISION"]
cnns, image_of, seq_of = consts.get("CNNS", set()), consts.get("IMAGE_OF", {}), consts.get("SEQ_OF", {})
# workload key: the config keys that set it (transformers' names, GPT-2's aliases)
keys = {"layers": ("num_hidden_layers", "n_layer"), "hidden": ("hidden_size", "n_embd"),
        "heads": ("num_attention_heads", "n_head"), "kv_heads": ("num_key_value_heads",),
        "ffn": ("intermediate_size", "n_inner", "ffn_dim"), "vocab": ("vocab_size",),
        "tied_embeddings": ("tie_word_embeddings",)}
for name in sys.argv[3:]:
    try:
        w = tomllib.load(open(f"{sys.argv[2]}/{name}.toml", "rb"))["model"]
    except (OSError, KeyError) as e:
        print(f"{name} (no workload file: {e})")
        continue
    if name in transformers:
        kind, kw = transformers[name]
        want = {k: kw[c] for k, cs in keys.items() for c in cs if c in kw}
        if kw.get("multi_query"):
            want["kv_heads"] = 1
        want["seq_len"] = seq_of.get(kind, consts["SEQ"])
        for k, v in want.items():
            if k in w and w[k] != v:
                print(f"{name} ({k}: workload {w[k]}, library_suite.py {v})")
    elif name in vision:
        side = image_of.get(name, consts["IMAGE"])
        if (w.get("family") == "cnn") != (name in cnns):
            print(f"{name} (family {w.get('family')} but {'' if name in cnns else 'not '}in CNNS)")
        if w.get("family") == "cnn" and w.get("image_size", 224) != side:
            print(f"{name} (image_size: workload {w.get('image_size', 224)}, library_suite.py {side})")
        # The patch side in the model's name: timm's "..._patch16_384", torchvision's "vit_b_16".
        patch = re.search(r"(?:patch|_)(\d+)(?:_\d+)?$", vision[name])
        if w.get("family") == "transformer" and patch:
            tokens = (side // int(patch.group(1))) ** 2 + 1
            if w.get("seq_len") != tokens:
                print(f"{name} (seq_len: workload {w.get('seq_len')}, {side} px in patches of "
                      f"{patch.group(1)}: {tokens})")
            if "input_bytes_per_sample" in w and w["input_bytes_per_sample"] != 3 * side * side * 4 + 8:
                print(f"{name} (input_bytes_per_sample {w['input_bytes_per_sample']}, {side} px: "
                      f"{3 * side * side * 4 + 8})")
PY
) || fail "could not compare library_suite.py with the workload files"
[ -z "$mismatch" ] || fail "library_suite.py and the workload files disagree: $mismatch"
env $settings PATH="$tmp/bin:$PATH" OUT="$tmp/out" XDEEP_CARRY=carry \
  bash -c "cd '$tmp' && bash '$here/run_library.sh'" > /dev/null 2>&1
[ -s "$tmp/out/results.tgz" ] || fail "no results.tgz"
# The device returns at most 8 files from $OUT (the call's own wrapper adds a few): the run leaves
# its log and one archive, nothing else (run 13's H100 call, another job's files beside its own,
# came back without its results.tgz).
left=$(cd "$tmp/out" && find . -mindepth 1 | sed 's|^\./||' | sort | tr '\n' ' ')
[ "$left" = "log.txt results.tgz " ] || fail "\$OUT holds '$left', not only log.txt and results.tgz"
mkdir "$tmp/res" && tar -C "$tmp/res" -xzf "$tmp/out/results.tgz" || fail "unreadable results.tgz"
[ -s "$tmp/res/profile.json" ] || fail "no merged profile"
grep -q "STEP TIME   MAPE" "$tmp/res/compare.txt" || fail "no predictions: $(head -5 "$tmp/res/compare.txt")"
# Every mode asked for exactly its planned models, and each of them predicted.
get() { grep "^$1=" "$plan" | cut -d= -f2-; }
for m in single ddp fsdp tp pp; do
  case $m in
    single) want="$(get LM),$(get VISION)";;
    *) want=$(get "MODELS_$(tr a-z A-Z <<< "$m")");;
  esac
  [[ ,$(get MODES), == *,$m,* ]] || continue
  asked=$(grep "^suite $m " "$tmp/suite.py.log" | cut -d' ' -f3 | tr ',' '\n' | sort -u | grep .)
  [ "$asked" = "$(tr ',' '\n' <<< "$want" | sort -u | grep .)" ] || fail "$m asked for '$asked', planned '$want'"
  for model in $(tr ',' ' ' <<< "$want"); do
    grep -Eq "^ *$model +$m +x[0-9]+ +mb" "$tmp/res/compare.txt" || fail "no $m prediction for $model"
  done
done
# On one GPU the run says so and runs its lanes in turn (no two-GPU mode, no two-rank probe).
if [ "$gpus" -lt 2 ]; then
  grep -q "one GPU: the single-GPU part of the plan only" "$tmp/out/log.txt" || fail "the one-GPU path did not run"
fi
# Side by side (two GPUs) the single-GPU lanes share a lane lock, so that neither times a step
# beside the other's build; in turn (one GPU) and in the two-GPU modes nothing is locked.
if [[ ,$(get MODES), == *,single,* ]]; then
  locked=$(grep -c "^suite single .* lane-lock$" "$tmp/suite.py.log")
  want=0
  [ "$gpus" -ge 2 ] && want=2
  [ "$locked" = "$want" ] || fail "$locked single-GPU lane(s) with a lane lock on $gpus GPU(s), not $want"
fi
grep -v "^suite single " "$tmp/suite.py.log" | grep -q " lane-lock$" && fail "a two-GPU mode was given a lane lock"
echo "held-out plan dry run: ok ($(basename "$(dirname "$plan")"), $gpus GPU(s))"
