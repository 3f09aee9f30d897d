#!/usr/bin/env bash
# Run by check_deb.sh inside `unshare --mount --pid`: builds a fresh root,
# installs the package with dpkg (its postinst runs there), starts xdeepd as
# the unit does and asks it `xdeep status`.
# Usage: deb_fresh_root.sh DEB ROOT VERSION
set -euo pipefail
deb=$1 root=$2 version=$3
fail() { echo "deb_fresh_root: $*" >&2; exit 1; }
in_root() { chroot "$root" "$@"; }

mkdir -p "$root"/{usr,etc,var/lib,var/log,var/cache,tmp,run,proc,dev} "$root.usr-upper" "$root.usr-work"
chmod 1777 "$root/tmp"
mount -t overlay overlay -o "lowerdir=/usr,upperdir=$root.usr-upper,workdir=$root.usr-work" "$root/usr"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"

# /etc as a fresh Debian 12 has it, for what dpkg, useradd and the dynamic
# linker read: base-passwd's users and groups, no one else.
cp /usr/share/base-passwd/passwd.master "$root/etc/passwd"
cp /usr/share/base-passwd/group.master "$root/etc/group"
cut -d: -f1 "$root/etc/passwd" | sed 's/$/:*:19000:0:99999:7:::/' > "$root/etc/shadow"
cut -d: -f1 "$root/etc/group" | sed 's/$/:*::/' > "$root/etc/gshadow"
chmod 0640 "$root/etc/shadow" "$root/etc/gshadow"
cp -a /etc/login.defs /etc/nsswitch.conf /etc/ld.so.conf /etc/ld.so.conf.d /etc/ld.so.cache \
      /etc/alternatives /etc/dpkg "$root/etc/"
cp -a /var/lib/dpkg "$root/var/lib/"
rm -f "$root"/var/lib/dpkg/info/xdeep.*
# The host's file-mode overrides name its own users and groups.
: > "$root/var/lib/dpkg/statoverride"
if in_root getent passwd xdeep > /dev/null; then fail "the fresh root has an xdeep user"; fi
[[ ! -e $root/etc/xdeep ]] || fail "the fresh root has /etc/xdeep"

cp "$deb" "$root/tmp/xdeep.deb"
in_root dpkg -i /tmp/xdeep.deb > "$root.dpkg.log" 2>&1 || { cat "$root.dpkg.log" >&2; fail "dpkg -i failed"; }
in_root dpkg-query -W -f '${Status} ${Version}\n' xdeep | grep -q "install ok installed $version" ||
  fail "dpkg does not list xdeep $version as installed"

# What postinst made.
entry=$(in_root getent passwd xdeep) || fail "postinst made no xdeep user"
uid=$(cut -d: -f3 <<< "$entry")
(( uid < 1000 )) || fail "xdeep is not a system user (uid $uid)"
[[ $(cut -d: -f7 <<< "$entry") == /usr/sbin/nologin ]] || fail "xdeep can log in: $entry"
check_mode() {  # PATH OWNER MODE
  local got
  got=$(in_root stat -c '%U %a' "$1")
  [[ $got == "$2 $3" ]] || fail "$1 is '$got', expected '$2 $3'"
}
check_mode /etc/xdeep xdeep 700
check_mode /etc/xdeep/xdeepd.toml xdeep 600
check_mode /var/lib/xdeep xdeep 700
check_mode /var/log/xdeep xdeep 750
check_mode /var/spool/xdeep/jobcomp xdeep 770
in_root /usr/sbin/xdeepd --check-config --config /etc/xdeep/xdeepd.toml > /dev/null ||
  fail "the configuration postinst installed is not valid"

# Start xdeepd as xdeepd.service does: its ExecStart, as User=, with the
# RuntimeDirectory systemd would make.
unit=/usr/lib/systemd/system/xdeepd.service
exec_start=$(sed -n 's/^ExecStart=//p' "$root$unit")
user=$(sed -n 's/^User=//p' "$root$unit")
install -d -m 0755 "$root/run/xdeep"
in_root chown "$user:$user" /run/xdeep
in_root setpriv --reuid="$user" --regid="$user" --init-groups --no-new-privs \
  sh -c "umask 0077; exec $exec_start" > "$root.xdeepd.log" 2>&1 &
daemon=$!
answer=""
for _ in $(seq 1 300); do
  # The CLI's default address: the one the example configuration listens on.
  if answer=$(in_root /usr/bin/xdeep status --json 2> /dev/null); then break; fi
  kill -0 "$daemon" 2> /dev/null || { cat "$root.xdeepd.log" >&2; fail "xdeepd exited"; }
  sleep 0.1
done
[[ -n $answer ]] || { cat "$root.xdeepd.log" >&2; fail "xdeepd never answered xdeep status"; }
python3 - "$answer" "$version" << 'PY' || fail "xdeep status: $answer"
import json, sys
doc = json.loads(sys.argv[1])
assert doc["daemon_version"] == sys.argv[2] and not doc["version_skew"], doc
assert doc["store_schema"] >= 2 and doc["ledger_schema"] >= 3, doc
PY
db_owner=$(in_root sh -c 'stat -c "%U %a" /var/lib/xdeep/*.db' | sort -u)
[[ $db_owner == "xdeep 600" ]] || fail "the databases are '$db_owner', expected 'xdeep 600'"
kill "$daemon"
wait "$daemon" || true

# An upgrade (postinst again) keeps the admin's configuration; purge removes it.
echo "# edited by the admin" >> "$root/etc/xdeep/xdeepd.toml"
in_root /var/lib/dpkg/info/xdeep.postinst configure "$version" > /dev/null
grep -q "edited by the admin" "$root/etc/xdeep/xdeepd.toml" || fail "postinst replaced the configuration"
in_root dpkg --purge xdeep > "$root.dpkg.log" 2>&1 || { cat "$root.dpkg.log" >&2; fail "dpkg --purge failed"; }
[[ ! -e $root/etc/xdeep && ! -e $root/usr/sbin/xdeepd ]] || fail "purge left /etc/xdeep or xdeepd"
echo "deb_fresh_root: dpkg -i, postinst, xdeepd $version answered as user $user (uid $uid), purge: ok"
