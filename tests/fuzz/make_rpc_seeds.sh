#!/usr/bin/env bash
# Writes corpus/rpc_requests/: one seed per RPC, from the text-format requests
# below, encoded by protoc; the first byte picks the method (fuzz_rpc_requests.cc).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
proto=$here/../../proto
out=$here/corpus/rpc_requests
mkdir -p "$out"
seed() {  # seed <method byte> <request message> <file name> <text-format request>
  { printf "\\x$1"; printf '%s' "$4" |
      protoc --encode="xdeep.v1.$2" -I "$proto" "$proto/xdeep/v1/tuning.proto"; } > "$out/$3"
}
seed 00 TuneRequest tune_preset 'mode: TUNE_MODE_ADVISE workload { preset: "gpt-125m" } partition: "gpu" objective: OBJECTIVE_TIME'
seed 00 TuneRequest tune_toml "workload { toml: \"[model]\\npreset = \\\"resnet50\\\"\\n[training]\\nsamples = 1e6\\n\" source_name: \"w.toml\" } bounds { nodes: 2 gpus_per_node: 4 } budget: 10 strategies: \"dp\""
seed 00 TuneRequest tune_allocation 'workload { preset: "gpt-125m" } allocation { job_id: 7 nodes: 2 gpus_per_node: 8 nodelist: "n[1-2]" } objective: OBJECTIVE_COST_UNDER_DEADLINE deadline_s: 86400 cost_tolerance_pct: 10'
seed 01 BindRequest bind 'decision_id: "0123456789abcdef0123456789abcdef" job_id: 42'
seed 02 ReportRequest report 'decision_id: "0123456789abcdef0123456789abcdef" job_id: 42 exit_code: 0 elapsed_s: 60 step_times_s: [0.5, 0.52, 0.49] final: true'
seed 02 ReportRequest report_failed 'decision_id: "x" launch_failed: true final: true'
seed 03 BudgetRequest budget 'user: "alice"'
seed 04 ListDecisionsRequest list 'user: "*" limit: 5'
seed 05 AdmitRequest admit 'token: "abc" job_uid: 1000 partition: "gpu" nodes: 2 array: "0-9%2" tres_per_node: "gres/gpu:4"'
seed 06 RunProbesRequest run_probes 'partition: "gpu" collectives: true nodes: 2 gpus_per_node: 8'
seed 07 ReloadPolicyRequest reload ''
seed 08 ForgetRunsRequest forget 'decision_id: "0123"'
# Method 09: raw bytes to the admission socket, one frame (client/admit_wire.h):
# status byte 0, big-endian length, AdmitRequest.
admit_frame() {  # admit_frame <file name> <text-format AdmitRequest>
  local payload
  payload=$(mktemp)
  printf '%s' "$2" | protoc --encode=xdeep.v1.AdmitRequest -I "$proto" "$proto/xdeep/v1/tuning.proto" > "$payload"
  local n
  n=$(stat -c %s "$payload")
  { printf '\x09\x00'; printf "$(printf '\\x%02x' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)))"; cat "$payload"; } > "$out/$1"
  rm -f "$payload"
}
admit_frame admit_socket 'token: "abc" job_uid: 1000 partition: "gpu" nodes: 2 tres_per_node: "gres/gpu:4"'
printf '\x09\x00\x00\x01\x00\x01' > "$out/admit_socket_oversize"   # a 64 KiB + 1 frame, refused unread
printf '\x09\x00\x00\x00\x00\x40abc' > "$out/admit_socket_short"   # says 64 bytes, sends 3
# Method 10: raw bytes to the client socket (client/socket_daemon_client.h):
# request kind (1 Tune, 2 Report), big-endian length, then a big-endian
# timeout in ms and the request.
client_frame() {  # client_frame <file name> <kind byte> <message> <text-format request>
  local payload
  payload=$(mktemp)
  { printf '\x00\x00\x0b\xb8'; printf '%s' "$4" |
      protoc --encode="xdeep.v1.$3" -I "$proto" "$proto/xdeep/v1/tuning.proto"; } > "$payload"
  local n
  n=$(stat -c %s "$payload")
  { printf "\\x0a\\x$2"; printf "$(printf '\\x%02x' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)))"; cat "$payload"; } > "$out/$1"
  rm -f "$payload"
}
client_frame client_socket_tune 01 TuneRequest 'mode: TUNE_MODE_ADVISE workload { preset: "gpt-125m" } partition: "gpu"'
client_frame client_socket_report 02 ReportRequest 'decision_id: "x" launch_failed: true final: true'
printf '\x0a\x07\x00\x00\x00\x04\x00\x00\x0b\xb8' > "$out/client_socket_unknown_kind"
