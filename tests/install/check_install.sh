#!/usr/bin/env bash
# `cmake --install` into a fresh prefix places every binary, the plugin and its
# client module side by side, the man pages (at the project's version) and the
# site files as examples; the installed tools run and the man pages render.
# Usage: check_install.sh BUILD_DIR PROJECT_VERSION
set -euo pipefail
build=$1 version=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null

missing=0
for f in bin/xdeep sbin/xdeepd bin/xdeep-probe lib/slurm/xdeep_spank.so \
         lib/slurm/xdeep_spank_client.so lib/slurm/xdeep_spank_socket.so \
         lib/slurm/xdeep-step-report lib/xdeep/xdeep-admit \
         lib/xdeep/xdeep-jobcomp.sh share/xdeep/python/pyproject.toml \
         share/xdeep/python/xdeep/__init__.py share/doc/xdeep/decision-file.md \
         share/xdeep/job_submit.lua share/man/man1/xdeep.1 share/man/man8/xdeepd.8 \
         share/man/man5/xdeep.toml.5 share/man/man5/xdeepd.toml.5 \
         share/doc/xdeep/user.md share/doc/xdeep/admin.md share/doc/xdeep/json.md \
         share/doc/xdeep/examples/xdeepd.toml share/doc/xdeep/examples/xdeepd.service \
         share/doc/xdeep/examples/plugstack.conf.d/xdeep.conf share/doc/xdeep/examples/logrotate.d/xdeep \
         lib/systemd/system/xdeepd.service \
         share/doc/xdeep/examples/slurm/job_submit.lua; do
  if [[ ! -e $prefix/$f ]]; then
    echo "check_install: $f was not installed" >&2
    missing=1
  fi
done
[[ -x $prefix/share/doc/xdeep/examples/slurm/xdeep-jobcomp.sh ]] ||
  { echo "check_install: the example jobcomp script lost its execute bit" >&2; missing=1; }
[[ $missing == 0 ]] || exit 1
# The unit starts the xdeepd this install placed.
grep -qxF "ExecStart=$prefix/sbin/xdeepd --config /etc/xdeep/xdeepd.toml" \
  "$prefix/lib/systemd/system/xdeepd.service" ||
  { echo "check_install: the unit does not start $prefix/sbin/xdeepd" >&2; exit 1; }
# systemd's own reading of it: no unknown key, no bad value.
out=$(systemd-analyze verify --man=no "$prefix/lib/systemd/system/xdeepd.service" 2>&1) ||
  { echo "check_install: systemd-analyze verify: $out" >&2; exit 1; }
[[ -z $out ]] || { echo "check_install: systemd-analyze verify: $out" >&2; exit 1; }

for tool in xdeep xdeep-probe; do
  out=$("$prefix/bin/$tool" --version)
  [[ $out == "$tool $version" ]] || { echo "check_install: $tool --version says '$out'" >&2; exit 1; }
done
for tool in lib/xdeep/xdeep-admit lib/slurm/xdeep-step-report; do
  out=$("$prefix/$tool" --version)
  [[ $out == "$(basename "$tool") $version" ]] ||
    { echo "check_install: $tool --version says '$out'" >&2; exit 1; }
done
out=$("$prefix/sbin/xdeepd" --version)
[[ $out == "xdeepd $version" ]] || { echo "check_install: xdeepd --version says '$out'" >&2; exit 1; }

for page in man1/xdeep.1 man8/xdeepd.8 man5/xdeep.toml.5 man5/xdeepd.toml.5; do
  grep -q "\"xdeep $version\"" "$prefix/share/man/$page" ||
    { echo "check_install: $page does not name version $version" >&2; exit 1; }
  warnings=$(groff -man -ww -z "$prefix/share/man/$page" 2>&1)
  [[ -z $warnings ]] || { echo "check_install: $page: $warnings" >&2; exit 1; }
done
echo "check_install: ok ($prefix)"
