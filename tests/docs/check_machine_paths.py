"""No committed script or document (Markdown) names a path of one machine (a checkout under
/work/, a home under /root/): they must work from any clone. Nor does a run
record under */data/ (logs, JSON, tables): the device scripts print paths
relative to the repository root and $OUT for their output folder
(bench/relative_paths.sh), so what they bring back is committed as it came.
Usage: check_machine_paths.py SOURCE_DIR"""
import os
import re
import sys

source = os.path.realpath(sys.argv[1])
# A path of its own: not "$work/root/..." (a variable's subfolder), not "a/work/b".
machine_path = re.compile(r"(?<![\w$}./])/(?:work|root)/[\w.+-]")
suffixes = (".sh", ".py", ".lua", ".cmake", ".toml", ".conf", ".service")
records = (".json", ".txt", ".log", ".csv", ".xml", ".md")
failures = []
checked = 0
for folder, dirs, files in os.walk(source):
    rel = os.path.relpath(folder, source)
    # Build trees and VCS metadata are not committed files.
    dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d != "__pycache__"]
    for name in files:
        is_doc = name.endswith(".md")
        is_script = name.endswith(suffixes) or name == "CMakeLists.txt"
        is_record = "/data/" in f"/{rel}/" and name.endswith(records)
        if not (is_doc or is_script or is_record):
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
print(f"check_machine_paths: {checked} scripts, documents and run records ok")
