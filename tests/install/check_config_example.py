"""etc/xdeepd.toml, the example admins copy, is valid for the daemon (also
with its commented-out keys switched on) and explains every key it sets:
each key has a comment on its line, or its name appears in a comment of the
file. Usage: check_config_example.py XDEEPD SOURCE_DIR"""
import re
import subprocess
import sys
import tempfile

xdeepd, source = sys.argv[1], sys.argv[2]
path = f"{source}/etc/xdeepd.toml"
text = open(path).read()
comments = " ".join(re.findall(r"#(.*)", text))
failures = []
for number, line in enumerate(text.splitlines(), 1):
    m = re.match(r"^([a-z_]+)\s*=", line)
    if m and "#" not in line and not re.search(rf"\b{m.group(1)}\b", comments):
        failures.append(f"{path}:{number}: '{m.group(1)}' is not explained by any comment")

# Keys shown commented out ("# key = value") must be valid once switched on;
# probe_reports stays off: --check-config reads the reports it names.
switched = re.sub(r"^# ((?!probe_reports)[a-z_]+ = )", r"\1", text, flags=re.M)
for config in (text, switched):
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write(config)
        f.flush()
        r = subprocess.run([xdeepd, "--check-config", "--config", f.name], capture_output=True,
                           text=True)
        if r.returncode != 0:
            failures.append(f"xdeepd --check-config: {r.stderr.strip()}")
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("check_config_example: ok")
