# Sourced by the device scripts (bench/validate, bench/kokkos, bench/profiler) once
# $OUT exists: what they print, and the text files they leave for the repository,
# name files relative to the repository root and `$OUT` for the call's output
# folder, never by one machine's absolute paths (where the checkout or $OUT lies there),
# so their logs and JSON are committed as they came back (docs.machine_paths
# checks the committed data).
#   relative_log "$OUT/log.txt"  # this shell's output, rewritten, also into the file
#   trap 'relative_paths_in "$OUT"' EXIT  # text files under $OUT rewritten, even on a cut-off run
xdeep_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# A path as a sed pattern (| is the delimiter below).
xdeep_pattern() { printf '%s' "$1" | sed 's/[][\\.*^$|/]/\\&/g'; }
# The output folder first (it may lie inside the checkout), each as given and
# with its links resolved; a relative $OUT is printed as it is.
xdeep_path_edits=()
for xdeep_dir in "$OUT" "$(cd "$OUT" 2>/dev/null && pwd -P)"; do
  # Only the whole name: /tmp/out, not /tmp/outer.
  if [[ $xdeep_dir == /?* ]]; then
    xdeep_path_edits+=(-e "s|$(xdeep_pattern "${xdeep_dir%/}")\([^[:alnum:]_.+-]\)|\$OUT\1|g"
                       -e "s|$(xdeep_pattern "${xdeep_dir%/}")\$|\$OUT|")
  fi
done
for xdeep_dir in "$xdeep_repo" "$(cd "$xdeep_repo" && pwd -P)"; do
  xdeep_path_edits+=(-e "s|$(xdeep_pattern "$xdeep_dir")/||g")
done
unset xdeep_dir
relative_paths() { sed -u "${xdeep_path_edits[@]}"; }
# log.txt is left alone: it is being written through relative_paths already.
relative_paths_in() {
  find "$1" -type f \( -name '*.json' -o -name '*.txt' -o -name '*.csv' -o -name '*.log' \
    -o -name '*.xml' \) ! -name log.txt -exec sed -i "${xdeep_path_edits[@]}" {} +
}
relative_log() { exec > >(relative_paths | tee "$1") 2>&1; }
