#!/usr/bin/env bash
# Installs every build, test and runtime dependency from Debian 12 packages.
# Skips apt entirely when everything is already present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev
  libtrilinos-kokkos-dev libeigen3-dev liblapack-dev libpagmo-dev libabsl-dev
  libsystemd-dev  # xdeepd tells systemd it is ready (sd_notify, Type=notify)
  systemd  # tests only: systemd-analyze verify reads the unit
  libsqlite3-dev sqlite3 libtomlplusplus-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libcli11-dev
  gnuplot-nox  # xdeep plan --plot, xdeep history --plot
  groff-base  # tests only: the man pages render without warnings
  slurmctld slurmd slurm-client libslurm-dev munge libmunge-dev
  python3-torch  # tests only: profiler/framework_probe.py's CPU smoke run
  python3-numpy python3-scipy  # bench/validate/gemm_form_study.py (calibration study, no test)
  patch  # scripts/build-kokkos.sh applies scripts/kokkos-patches
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi
