#!/usr/bin/env bash
# `cpack -G DEB` builds a package whose control file names the shared
# libraries it needs, whose files land under /usr with a systemd unit, and
# whose postinst, run by dpkg in a fresh root, leaves a daemon that answers.
# Usage: check_deb.sh BUILD_DIR PROJECT_VERSION
set -euo pipefail
build=$1 version=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check_deb: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/out" > "$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log" >&2; exit 1; }
deb=$(ls "$work"/out/xdeep_"$version"_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libgrpc++ libmunge2 libsqlite3-0 libsystemd0 munge slurm-client; do
  [[ $depends == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
dpkg-deb -e "$deb" "$work/control"
for script in postinst prerm postrm; do
  [[ -x $work/control/$script ]] || fail "the package has no executable $script"
done
dpkg-deb -x "$deb" "$work/unpacked"
for f in usr/bin/xdeep usr/sbin/xdeepd usr/lib/slurm/xdeep_spank.so \
         usr/lib/slurm/xdeep_spank_client.so usr/lib/slurm/xdeep-step-report \
         usr/lib/systemd/system/xdeepd.service usr/share/man/man1/xdeep.1 \
         usr/share/doc/xdeep/examples/xdeepd.toml usr/share/doc/xdeep/examples/logrotate.d/xdeep; do
  [[ -e $work/unpacked/$f ]] || fail "the package lacks /$f"
done
unit=$work/unpacked/usr/lib/systemd/system/xdeepd.service
for line in "Type=notify" "User=xdeep" "ExecStart=/usr/sbin/xdeepd --config /etc/xdeep/xdeepd.toml" \
            "NoNewPrivileges=yes" "ProtectSystem=strict" "CapabilityBoundingSet=" \
            "ExecReload=/bin/kill -HUP \$MAINPID"; do
  grep -qxF "$line" "$unit" || fail "the unit lacks '$line'"
done
out=$("$work/unpacked/usr/bin/xdeep" --version)
[[ $out == "xdeep $version" ]] || fail "unpacked xdeep says '$out'"

# dpkg -i in a fresh root: a private mount namespace (and pid namespace, so
# the daemon ends with it) where / holds this machine's Debian 12 /usr under
# an overlay, Debian's base /etc (no xdeep user, no /etc/xdeep) and dpkg's
# database of what that /usr holds.
cp "$deb" "$work/xdeep.deb"
unshare --mount --pid --fork --propagation private \
  bash "$here/deb_fresh_root.sh" "$work/xdeep.deb" "$work/root" "$version" ||
  fail "installing into a fresh root failed (above)"
echo "check_deb: ok ($(basename "$deb"), $(du -h "$deb" | cut -f1))"
