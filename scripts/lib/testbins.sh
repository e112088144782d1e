# Sourced by the scripts that run some of the workspace's tests against real brokers
# (broker-sweep.sh, client-tests.sh, proxy-tests.sh): the test binaries exactly as
# `cargo test --workspace` builds them, run directly.
#
# Why not `cargo test -p X --test Y`: a narrower selection resolves features differently (dev-
# dependencies of other members, host units shared with target units) and compiles kwire and
# every test again, minutes each time. Run directly, the binaries can also run side by side:
# cargo runs one binary after another, and a broker test binary mostly waits.
#
#   test_bins_build LOG [ARGS...]    builds (nothing, after a workspace build) and lists them;
#                                    ARGS narrow the build (`--test releases`) where the
#                                    workspace's kwire was since built with other specs
#   test_bin SPEC                    the executable of SPEC, `package:target` (kwire-client:admin),
#                                    or of an example cargo test built, `kwire:example/bench_counts`
#   test_bins_run JOBS LOG SPEC... [-- ARGS...]
#                                    runs each SPEC with ARGS from its package's folder, as cargo
#                                    does, JOBS at a time; LOG gets every output in SPEC order;
#                                    fails if any failed

test_bins_list=target/test-bins.tsv
# The settings CI builds with (.ci/run): no debug info, no incremental state. Another setting
# would compile the whole workspace again, beside the first build (tens of GB).
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-0} CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

test_bins_build() {
  local log=$1
  shift
  # A narrowed build lists its binaries apart, not in place of the workspace's list that
  # another script may be reading.
  if [ $# -gt 0 ]; then test_bins_list=target/test-bins-narrowed.tsv; else test_bins_list=target/test-bins.tsv; fi
  mkdir -p target
  # Each artifact's package is found by its manifest (package ids are opaque).
  if ! nice -n 10 cargo test --workspace "$@" --no-run --message-format=json 2>"$log" >"$test_bins_list.json"; then
    return 1
  fi
  cargo metadata --no-deps --format-version 1 2>>"$log" | ARTIFACTS="$test_bins_list.json" python3 -c '
import json, os, sys
packages = {p["manifest_path"]: p["name"] for p in json.load(sys.stdin)["packages"]}
with open(os.environ["ARTIFACTS"]) as artifacts:
    for line in artifacts:
        try:
            a = json.loads(line)
        except ValueError:
            continue
        if a.get("reason") != "compiler-artifact" or not a.get("executable"):
            continue
        package = packages.get(a["manifest_path"], "?")
        # Test binaries as package:target; the examples cargo test builds as package:example/name.
        if a["profile"]["test"]:
            print(package + ":" + a["target"]["name"], os.path.dirname(a["manifest_path"]), a["executable"], sep="\t")
        elif "example" in a["target"]["kind"]:
            print(package + ":example/" + a["target"]["name"], os.path.dirname(a["manifest_path"]), a["executable"], sep="\t")
' >"$test_bins_list"
}

test_bin() {
  awk -F'\t' -v spec="$1" '$1 == spec { print $3; found = 1; exit } END { exit !found }' "$test_bins_list"
}

# One binary: its package's folder and executable, or nothing.
test_bin_at() {
  awk -F'\t' -v spec="$1" '$1 == spec { print $2 "\t" $3; found = 1; exit } END { exit !found }' "$test_bins_list"
}

test_bins_run() {
  local jobs=$1 log=$2 spec
  shift 2
  local specs=() args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do specs+=("$1"); shift; done
  [ $# -eq 0 ] || { shift; args=("$@"); }
  local dir=$log.d
  rm -rf "$dir"
  mkdir -p "$dir"
  # The slowest binaries of an earlier run first, so that the last to finish are short ones.
  local durations=${test_bins_durations:-}
  local ordered=("${specs[@]}")
  if [ -n "$durations" ] && [ -s "$durations" ]; then
    mapfile -t ordered < <(printf '%s\n' "${specs[@]}" | awk 'NR == FNR { t[$2] = $1; next } { print (($0 in t) ? t[$0] : 1e9) "\t" FNR "\t" $0 }' "$durations" - | sort -t$'\t' -k1,1gr -k2,2n | cut -f3)
  fi
  local n=0
  for spec in "${ordered[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    n=$((n + 1))
    (
      out=$dir/${spec//[:\/]/_}
      if ! at=$(test_bin_at "$spec"); then
        echo "no test binary $spec in the workspace build" >"$out.log"
        echo 127 >"$out.rc"
        exit
      fi
      t0=$SECONDS
      set +e
      (cd "${at%%$'\t'*}" && exec timeout "${limit:-900}" nice -n 10 "${at#*$'\t'}" "${args[@]}") >"$out.log" 2>&1
      echo $? >"$out.rc"
      echo "$((SECONDS - t0)) $spec" >"$out.secs"
    ) &
  done
  wait
  local rc=0 out
  : >"$log"
  for spec in "${specs[@]}"; do
    out=$dir/${spec//[:\/]/_}
    echo "     Running $spec ($(cat "$out.secs" 2>/dev/null | cut -d' ' -f1)s)" >>"$log"
    cat "$out.log" >>"$log"
    [ "$(cat "$out.rc")" = 0 ] || rc=1
  done
  if [ -n "$durations" ]; then
    # This run's times replace those of the same binaries; the others' stay.
    { cat "$dir"/*.secs "$durations" 2>/dev/null; } | awk '!seen[$2]++' >"$durations.new" && mv "$durations.new" "$durations"
  fi
  return $rc
}

# test_bin_exec SPEC ARGS...: one binary, in the foreground, from its package's folder.
test_bin_exec() {
  local at
  at=$(test_bin_at "$1") || { echo "no test binary $1 in the workspace build" >&2; return 127; }
  shift
  (cd "${at%%$'\t'*}" && exec "${at#*$'\t'}" "$@")
}
