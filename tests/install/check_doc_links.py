"""Every Markdown link in the README and docs/ (and the folders' READMEs)
leads to a file inside the repository: no link outside it, no dangling path.
Usage: check_doc_links.py SOURCE_DIR"""
import glob
import os
import re
import sys

source = os.path.realpath(sys.argv[1])
pages = [os.path.join(source, "README.md")] + glob.glob(os.path.join(source, "docs", "*.md")) + \
    glob.glob(os.path.join(source, "*", "README.md"))
failures = []
for page in pages:
    text = open(page).read()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+://", target) or target.startswith("#"):
            continue
        path = os.path.realpath(os.path.join(os.path.dirname(page), target.split("#")[0]))
        where = os.path.relpath(page, source)
        if not path.startswith(source + os.sep) and path != source:
            failures.append(f"{where}: {target} leads outside the repository")
        elif not os.path.exists(path):
            failures.append(f"{where}: {target} does not exist")
    for outside in re.findall(r"`(\.\./[^`]+|/work/[^`]+)`", text):
        failures.append(f"{os.path.relpath(page, source)}: names {outside}, outside the repository")
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print(f"check_doc_links: {len(pages)} pages ok")
