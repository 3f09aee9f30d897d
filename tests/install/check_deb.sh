#!/usr/bin/env bash
# `cpack -G DEB` builds a package whose control file names the shared
# libraries it needs, whose files land under /usr, and whose tools run from
# an unpacked tree. Usage: check_deb.sh BUILD_DIR PROJECT_VERSION
set -euo pipefail
build=$1 version=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$build" && cpack -G DEB -B "$work/out" > "$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log" >&2; exit 1; }
deb=$(ls "$work"/out/xdeep_"$version"_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libgrpc++ libmunge2 libsqlite3-0 munge slurm-client; do
  [[ $depends == *"$lib"* ]] || { echo "check_deb: Depends lacks $lib: $depends" >&2; exit 1; }
done
dpkg-deb -x "$deb" "$work/root"
for f in usr/bin/xdeep usr/sbin/xdeepd usr/lib/slurm/xdeep_spank.so \
         usr/lib/slurm/xdeep_spank_client.so usr/lib/slurm/xdeep-step-report \
         usr/share/man/man1/xdeep.1 \
         usr/share/doc/xdeep/examples/xdeepd.toml; do
  [[ -e $work/root/$f ]] || { echo "check_deb: the package lacks /$f" >&2; exit 1; }
done
out=$("$work/root/usr/bin/xdeep" --version)
[[ $out == "xdeep $version" ]] || { echo "check_deb: unpacked xdeep says '$out'" >&2; exit 1; }
out=$("$work/root/usr/sbin/xdeepd" --version)
[[ $out == "xdeepd $version" ]] || { echo "check_deb: unpacked xdeepd says '$out'" >&2; exit 1; }
echo "check_deb: ok ($(basename "$deb"), $(du -h "$deb" | cut -f1))"
