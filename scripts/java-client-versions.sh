#!/usr/bin/env bash
# The request versions Java's kafka-clients releases can send, from each release's own message
# specs (the *Request.json files in its jar, or a directory of them): per api the spec's
# validVersions, less the latest when the spec marks it latestVersionUnstable (Java does not send
# unstable versions unless told to). Only apis a broker listener serves. Prints the Rust rows
# that cli/src/clients.rs holds between its "generated" markers.
#
#   scripts/java-client-versions.sh RELEASE=PATH ...
#   e.g. 3.6.2=target/kafka-clients/kafka-clients-3.6.2.jar 3.9.0=../shared/message-specs/kafka-3.9.0
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 RELEASE=JAR_OR_DIR ..." >&2; exit 2; }
python3 - "$@" <<'PY'
import json, os, re, sys, zipfile

def specs(path):
    """(name, text) of every *Request.json of a jar or a directory."""
    if path.endswith(".jar"):
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                if n.startswith("common/message/") and n.endswith("Request.json"):
                    yield n, z.read(n).decode()
    else:
        for n in sorted(os.listdir(path)):
            if n.endswith("Request.json"):
                with open(os.path.join(path, n)) as f:
                    yield n, f.read()

for arg in sys.argv[1:]:
    release, path = arg.split("=", 1)
    rows = []
    for name, text in specs(path):
        # The spec files carry // comments (the license header, notes on versions).
        spec = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
        if spec.get("type") != "request" or "broker" not in spec.get("listeners", []):
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", spec["validVersions"])
        if not m:
            continue
        lo = int(m.group(1)); hi = int(m.group(2) or m.group(1))
        if spec.get("latestVersionUnstable"):
            hi -= 1
        if hi >= lo:
            rows.append((spec["apiKey"], lo, hi))
    rows.sort()
    print(f'    // kafka-clients {release}: {os.path.basename(path.rstrip("/"))}')
    print(f'    ("java", "{release}", &[' + ", ".join(f"({k}, {lo}, {hi})" for k, lo, hi in rows) + "]),")
PY
