"""No committed script or README names a path of one machine (a checkout under
/work/, a home under /root/): they must work from any clone. Run records under
*/data/ (logs, JSON) keep the commands as they ran and are not checked.
Usage: check_machine_paths.py SOURCE_DIR"""
import os
import re
import sys

source = os.path.realpath(sys.argv[1])
# A path of its own: not "$work/root/..." (a variable's subfolder), not "a/work/b".
machine_path = re.compile(r"(?<![\w$}./])/(?:work|root)/[\w.+-]")
suffixes = (".sh", ".py", ".lua", ".cmake", ".toml", ".conf", ".service")
failures = []
checked = 0
for folder, dirs, files in os.walk(source):
    rel = os.path.relpath(folder, source)
    # Build trees and VCS metadata are not committed files.
    dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d != "__pycache__"]
    for name in files:
        is_readme = name == "README.md"
        is_script = name.endswith(suffixes) or name == "CMakeLists.txt"
        if not (is_readme or (is_script and "/data/" not in f"/{rel}/")):
            continue
        path = os.path.join(folder, name)
        checked += 1
        with open(path, errors="replace") as f:
            for number, line in enumerate(f, 1):
                for hit in machine_path.findall(line):
                    failures.append(f"{os.path.relpath(path, source)}:{number}: names {hit}... "
                                    "(a path of one machine; use one relative to the checkout)")
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print(f"check_machine_paths: {checked} scripts and READMEs ok")
