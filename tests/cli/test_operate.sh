#!/usr/bin/env bash
# End-to-end tests of the commands that operate a cache: list, show, cat, stats, verify, prune,
# clear, mirror, config, doctor, export, import, help; their errors and exit codes.
# Usage: test_operate.sh KJIT SOURCE_ROOT
set -u
kjit=$1
root=$2
# shellcheck source=checks.sh
. "$(dirname "$0")/checks.sh"
chmod 755 "$work"  # the read-only check runs as another user
unset KJIT_BUNDLE NO_COLOR

lines() { wc -l <"$1" | tr -d ' '; }

# --- read-only commands on a missing folder create nothing ---
for command in "list" "list --json" "stats" "stats --json" "verify" "config" "doctor" "prune --orphans" "clear" \
               "mirror --rebuild"; do
  # shellcheck disable=SC2086
  check "$command on a missing folder" exit_code 0 "$kjit" $command
  check "$command created no folder" test ! -e "$KJIT_CACHE_DIR"
done
check "export from a missing folder fails" exit_code 1 "$kjit" export "$work/none.kjitpack"
check "export from a missing folder created nothing" test ! -e "$KJIT_CACHE_DIR"
check "show on a missing folder" exit_code 1 "$kjit" show abc
# A cache folder that exists with no store in it yet (made by hand, restored empty by a CI cache):
# an empty cache, as a missing folder is. Each read-only command made store/ there and warned, and
# verify and doctor called it damaged (exit 1).
empty_dir=$work/empty_dir
mkdir -m 700 "$empty_dir"
for command in "list" "stats" "verify" "doctor" "cache stats" "script list"; do
  # shellcheck disable=SC2086
  check "$command on a folder without a store" exit_code 0 env KJIT_CACHE_DIR="$empty_dir" "$kjit" $command
  check "$command says nothing is wrong" sh -c "! grep -q 'mdb_env_open\|could not be opened' '$work/err' '$work/out'"
  check "$command made nothing there" test -z "$(ls -A "$empty_dir")"
done
check "list --json on a missing folder" exit_code 0 "$kjit" list --json
check "it is an empty array" grep -qx '\[\]' "$work/out"

# --- compile -o creates its folder (the README example) ---
check "compile -o into a new folder" exit_code 0 "$kjit" compile "$root/examples/scale.cu" --arch sm_80 \
  --name-expr 'scale<float>' -o "$work/out_new/nested"
check "-o folder created" test -s "$work/out_new/nested/scale.ptx"
check "-o with a trailing slash" exit_code 0 "$kjit" compile "$root/examples/scale.cu" --arch sm_80 \
  --name-expr 'scale<float>' -o "$work/out_slash/"
check "paths print without a double slash" grep -q "^$work/out_slash/scale.ptx (" "$work/out"

# --- a cache with three archs and a compile error ---
printf '// PLANTED_MARKER_4711\n__global__ void marked(int* p) { *p = 1; }\n' >"$work/marked.cu"
for arch in sm_80 sm_90 compute_90; do
  check "warm saxpy $arch" exit_code 0 "$kjit" compile "$root/examples/saxpy.cu" --arch "$arch" -o "$work/o"
done
# The marker as an option: NVRTC's options are stored plain (texts are zstd-compressed).
check "warm marked" exit_code 0 "$kjit" compile "$work/marked.cu" --arch compute_90 -DPLANTED_MARKER_4711 -o "$work/o"
marked=$(sed -n 's/^compiled //p' "$work/out")
printf '__global__ void k(int* p) { *p = oops; }\n' >"$work/bad.cu"
check "a compile error is remembered" exit_code 1 "$kjit" compile "$work/bad.cu" --arch sm_90 -o "$work/o"

# --- list ---
check "list" exit_code 0 "$kjit" list
check "list shows 6 entries" test "$(lines "$work/out")" = 6
check "list marks the compile error" grep -q "bad.cu .*(compile error)" "$work/out"
check "list --name" exit_code 0 "$kjit" list --name saxpy.cu
check "list --name filters" test "$(lines "$work/out")" = 3
check "list --name --arch" exit_code 0 "$kjit" list --name saxpy.cu --arch sm_90
check "list --name --arch filters" test "$(lines "$work/out")" = 1
check "list --json" exit_code 0 "$kjit" list --json
check "list --json parses" python3 -c "import json,sys; d=json.load(open('$work/out')); assert len(d)==6 and all(len(e['key'])==64 for e in d)"
check "list --bogus is a usage error" exit_code 2 "$kjit" list --bogus
sm90=$("$kjit" list --name saxpy.cu --arch sm_90 --json | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['key'])")
compute90=$("$kjit" list --name saxpy.cu --arch compute_90 --json | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['key'])")

# --- show and cat ---
check "show by prefix" exit_code 0 "$kjit" show "${sm90:0:10}"
check "show names the key" grep -q "^key: *$sm90" "$work/out"
check "show names the program and arch" sh -c "grep -q '^program: *.*/saxpy.cu$' '$work/out' && grep -q '^arch: *sm_90' '$work/out'"
check "show gives registers per kernel" grep -q "^kernel: *saxpy: [1-9][0-9]* registers" "$work/out"
# saxpy(float a, const float* x, float* y, int n): the layout the ABI gives those four parameters.
check "show gives the parameter layout" grep -qx "params: *4 (28 B): #0 @0 4 B; #1 @8 8 B; #2 @16 8 B; #3 @24 4 B;" "$work/out"
check "show --json" exit_code 0 "$kjit" show "$sm90" --json
check "show --json parses" python3 -c "import json; d=json.load(open('$work/out')); assert d['arch']=='sm_90' and d['cubin_bytes']>0 \
  and d['kernels'][0]['name']=='saxpy' and d['kernels'][0]['registers']>0 \
  and [(p['offset'], p['size']) for p in d['kernels'][0]['params']]==[(0,4),(8,8),(16,8),(24,4)]"
check "show unknown prefix exits 1" exit_code 1 "$kjit" show 0000000000000000
check "unknown prefix is explained on stderr" grep -q "no cache entry has a key starting with '0000000000000000'" "$work/err"
check "nothing on stdout for an error" test ! -s "$work/out"
check "show a non-hex prefix exits 1" exit_code 1 "$kjit" show xyz
check "show without a key is a usage error" exit_code 2 "$kjit" show
# 17 more entries: by pigeonhole two keys share their first hex digit.
for i in $(seq 1 17); do
  "$kjit" compile "$root/examples/saxpy.cu" --arch compute_90 -D "VARIANT=$i" -o "$work/o" >/dev/null 2>&1
done
digit=$("$kjit" list --json | python3 -c "
import json, sys, collections
c = collections.Counter(e['key'][0] for e in json.load(sys.stdin))
print(next(d for d, n in c.items() if n > 1))")
check "ambiguous prefix exits 1" exit_code 1 "$kjit" show "$digit"
check "ambiguous prefix is explained" grep -q "key prefix '$digit' is ambiguous" "$work/err"
check "cat --source" exit_code 0 "$kjit" cat "$sm90" --source
check "cat --source is the file" cmp -s "$work/out" "$root/examples/saxpy.cu"
check "cat --ptx" exit_code 0 "$kjit" cat "$sm90" --ptx
check "cat --ptx is PTX" grep -q "\.entry saxpy" "$work/out"
# Output that cannot be written (a full disk) is a failure, not a silent truncation.
check "cat --ptx into a full disk exits 1" exit_code 1 sh -c "exec '$kjit' cat '$sm90' --ptx >/dev/full"
for command in list "show $sm90" stats config doctor version "help list"; do
  check "$command into a full disk exits 1" exit_code 1 sh -c "exec '$kjit' $command >/dev/full"
  # For that reason, not another (doctor exits 1 on a cache or machine it finds at fault).
  check "$command into a full disk says why" grep -q "cannot write the output" "$work/err"
done
check "cat --cubin" exit_code 0 "$kjit" cat "$sm90" --cubin
check "cat --cubin is the mirrored cubin" cmp -s "$work/out" "$KJIT_CACHE_DIR/programs/$sm90/module/kernel.sm_90.cubin"
check "cat --program" exit_code 0 "$kjit" cat "$sm90" --program
cp "$work/out" "$work/program.txt"
check "cat --options" exit_code 0 "$kjit" cat "$sm90" --options
check "program.txt + options.txt hash to the key" sh -c "cat '$work/program.txt' '$work/out' | sha256sum | grep -q '^$sm90 '"
bad_key=$("$kjit" list --name bad.cu --json | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['key'])")
check "cat --log of a compile error" exit_code 0 "$kjit" cat "$bad_key" --log
check "the log names the error" grep -q "oops" "$work/out"
check "cat --cubin of a PTX-only entry exits 1" exit_code 1 "$kjit" cat "$compute90" --cubin
check "cat without a part is a usage error" exit_code 2 "$kjit" cat "$sm90"
check "cat with two parts is a usage error" exit_code 2 "$kjit" cat "$sm90" --ptx --log
check "cat --ptx of a remembered compile error exits 1" exit_code 1 "$kjit" cat "$bad_key" --ptx
check "and says it is a compile error" grep -q "is a remembered compile error: it has no ptx" "$work/err"
check "cat --cubin of a remembered compile error exits 1" exit_code 1 "$kjit" cat "$bad_key" --cubin

# --- stats ---
check "stats" exit_code 0 "$kjit" stats
check "stats counts entries" grep -q "^entries: 23 (1 compile errors, 0 damaged" "$work/out"
check "stats shows bytes by kind" grep -q "^records: .*(cubin .*, PTX .*, source .*, logs .*)" "$work/out"
# 22 compiles: saxpy.cu for compute_90 is the PTX of its sm_90 entry (docs/compile-paths.md)
check "stats counts lookups of every process" grep -q "^lookups: [0-9]* hits .*, 23 misses, 22 compiles, by [0-9]* processes" "$work/out"
check "stats --json" exit_code 0 "$kjit" stats --json
check "stats --json parses" python3 -c "import json; d=json.load(open('$work/out')); assert d['entries']==23 and d['bytes']['cubin']>0 and d['bytes']['mirror']>0"
check "stats --json counts lookups" sh -c "'$kjit' stats --json >'$work/stats.json'"
check "the lookups parse" python3 -c "
import json; d = json.load(open('$work/stats.json'))['lookups']
assert d['misses'] == 23 and d['compiles'] == 22 and d['disk_hits'] >= 1 and d['processes'] >= 24, d"
check "old spelling: cache stats" exit_code 0 "$kjit" cache stats
check "cache stats counts entries" grep -q "^entries: 23" "$work/out"

check "stats --zero" exit_code 0 "$kjit" stats --zero
check "counts zeroed" sh -c "'$kjit' stats | grep -q '^lookups: 0 hits .*, 0 misses'"
check "entries kept" sh -c "'$kjit' stats | grep -q '^entries: 23 '"

# --- config ---
check "config" exit_code 0 "$kjit" config
check "config shows the cache folder from the environment" grep -q "^KJIT_CACHE_DIR *$KJIT_CACHE_DIR *KJIT_CACHE_DIR" "$work/out"
check "config shows defaults" grep -q "^KJIT_MIRROR *1 *default" "$work/out"
# Columns as wide as their longest entry (issue 39: a long variable name or value shifted the
# columns after it on its line).
long_url=redis://a-rather-long-host-name.cluster.example.internal:6379/3
check "config with a long value" exit_code 0 env KJIT_REMOTE_CACHE="$long_url" "$kjit" config
check "… keeps every source column in line" python3 -c "
lines = open('$work/out').read().splitlines()
starts = {l.index('default') if l.split()[-1] == 'default' else l.rindex(l.split()[-1]) for l in lines}
assert len(starts) == 1, starts"
check "config --cache-dir" exit_code 0 "$kjit" config --cache-dir "$work/elsewhere"
check "config says --cache-dir came from the command line" grep -q "^KJIT_CACHE_DIR *$work/elsewhere *command line" "$work/out"
check "config --json" exit_code 0 env KJIT_BUNDLE="$work/a.kjitpack" "$kjit" config --json
check "config --json parses" python3 -c "
import json; d={s['variable']: s for s in json.load(open('$work/out'))}
assert d['KJIT_BUNDLE']['source']=='environment' and d['KJIT_BUNDLE']['value']=='$work/a.kjitpack'"
check "config with a bad value exits 1" exit_code 1 env KJIT_MIRROR=perhaps "$kjit" config
check "the bad variable is named" grep -q "KJIT_MIRROR" "$work/err"
check "config with one bad variable still lists the others" exit_code 1 env KJIT_MIRROR=perhaps KJIT_VERBOSE=1 "$kjit" config
check "the others are listed" grep -q "^KJIT_VERBOSE *1 *KJIT_VERBOSE" "$work/out"
check "the bad one is shown and marked" grep -q "^KJIT_MIRROR *perhaps *KJIT_MIRROR (invalid, ignored)" "$work/out"
check "config --json with a bad variable is valid JSON" exit_code 1 env KJIT_MEMORY_LIMIT=lots "$kjit" config --json
check "marking it invalid" python3 -c "
import json; d={s['variable']: s for s in json.load(open('$work/out'))}
assert d['KJIT_MEMORY_LIMIT']['source']=='invalid' and d['KJIT_MIRROR']['source']=='default'"
check "doctor with a bad variable goes on" exit_code 1 env KJIT_MEMORY_LIMIT=lots "$kjit" doctor
check "it reports the variable as an error" grep -q "^error *setting *KJIT_MEMORY_LIMIT" "$work/out"
check "and checks the rest" grep -q "^ok *store " "$work/out"

# --- export / import / KJIT_BUNDLE ---
check "export saxpy sm_90 only" exit_code 0 "$kjit" export "$work/sm90.kjitpack" --name saxpy.cu --arch sm_90
check "export counts" grep -q "^exported 1 entries" "$work/out"
# explain says what the lookup does with a bundle too (it said miss, exit 3, where the lookup hits
# the bundle).
mkdir -p "$work/explain_bundle"
check "explain with the program only in a bundle says hit" exit_code 0 env KJIT_BUNDLE="$work/sm90.kjitpack" \
  "$kjit" explain "$root/examples/saxpy.cu" --arch sm_90 --cache-dir "$work/explain_bundle"
check "… hit:" grep -q "^hit: " "$work/out"
check "… as compile finds it" exit_code 0 env KJIT_BUNDLE="$work/sm90.kjitpack" "$kjit" compile "$root/examples/saxpy.cu" \
  --arch sm_90 --cache-dir "$work/explain_bundle" -o "$work/explain_bundle_out"
check "… from the bundle" grep -q "^lookup: from bundle" "$work/out"
check "export all" exit_code 0 "$kjit" export "$work/all.kjitpack"
check "export counts all" grep -q "^exported 23 entries" "$work/out"
check "import into an empty cache" exit_code 0 "$kjit" import "$work/all.kjitpack" --cache-dir "$work/imported"
check "import counts" grep -q "^imported 23 entries" "$work/out"
check "imported cache lists the same entries" bash -c "diff <('$kjit' list --json | python3 -c 'import json,sys; print(sorted(e[\"key\"] for e in json.load(sys.stdin)))') \
  <('$kjit' list --json --cache-dir '$work/imported' | python3 -c 'import json,sys; print(sorted(e[\"key\"] for e in json.load(sys.stdin)))')"
check "imported entries hit" exit_code 0 "$kjit" compile "$root/examples/saxpy.cu" --arch sm_80 --cache-dir "$work/imported" -o "$work/o"
check "imported hit reported" grep -q "^cache hit" "$work/out"
check "import again adds nothing" exit_code 0 "$kjit" import "$work/all.kjitpack" --cache-dir "$work/imported"
check "import again counts present" grep -q "^imported 0 entries .*(23 entries already present)" "$work/out"
check "a bundle as a tier" exit_code 0 env KJIT_BUNDLE="$work/sm90.kjitpack" "$kjit" compile "$root/examples/saxpy.cu" \
  --arch sm_90 --cache-dir "$work/tiered" -o "$work/o"
check "a bundle hit is a cache hit" grep -q "^cache hit $sm90" "$work/out"
check "a missing tier bundle is a logged miss" exit_code 0 env KJIT_BUNDLE="$work/missing.kjitpack" "$kjit" compile \
  "$root/examples/saxpy.cu" --arch sm_86 --cache-dir "$work/tiered" -o "$work/o"
check "the missing bundle is named" grep -q "missing.kjitpack" "$work/err"
head -c 1000 "$work/all.kjitpack" >"$work/truncated.kjitpack"
check "import of a truncated bundle exits 1" exit_code 1 "$kjit" import "$work/truncated.kjitpack" --cache-dir "$work/target"
check "truncation is explained" grep -q "truncated" "$work/err"
check "nothing imported from it" sh -c "'$kjit' list --cache-dir '$work/target' | grep -c . | grep -qx 0"
python3 - "$work/all.kjitpack" "$work/corrupt.kjitpack" <<'PY'
import sys
data = bytearray(open(sys.argv[1], 'rb').read())
data[-50] ^= 0x21
open(sys.argv[2], 'wb').write(data)
PY
check "import of a corrupt bundle exits 1" exit_code 1 "$kjit" import "$work/corrupt.kjitpack" --cache-dir "$work/target"
check "corruption is explained" grep -q "damaged: data checksum mismatch" "$work/err"
check "nothing imported from the corrupt one" sh -c "'$kjit' stats --json --cache-dir '$work/target' | grep -q '\"entries\": 0'"
printf 'garbage' >"$work/garbage.kjitpack"
check "import of a non-bundle exits 1" exit_code 1 "$kjit" import "$work/garbage.kjitpack" --cache-dir "$work/target"
check "import without a file is a usage error" exit_code 2 "$kjit" import

# --- verify finds a planted bad record ---
check "verify a clean cache" exit_code 0 "$kjit" verify
check "verify counts" grep -q "^checked 23 entries: 0 damaged" "$work/out"
check "doctor on a healthy cache" exit_code 0 "$kjit" doctor
check "doctor reports the store" grep -q "^ok *store .*23 entries, 0 damaged" "$work/out"
check "doctor reports the filesystem" grep -q "filesystem" "$work/out"
has_colour() { grep -q $'\033\\[' "$1"; }
check "no colour without a terminal" eval '! has_colour "$work/out"'
if script -qec true /dev/null >/dev/null 2>&1; then
  script -qec "$kjit doctor" /dev/null >"$work/tty" 2>&1
  check "colour on a terminal" has_colour "$work/tty"
  NO_COLOR=1 script -qec "$kjit doctor" /dev/null >"$work/tty" 2>&1
  check "no colour on a terminal with NO_COLOR" eval '! has_colour "$work/tty"'
fi
python3 - "$KJIT_CACHE_DIR/store/data.mdb" <<'PY'
import sys
path = sys.argv[1]
data = open(path, 'rb').read()
assert b'PLANTED_MARKER_4711' in data
open(path, 'wb').write(data.replace(b'PLANTED_MARKER_4711', b'PLANTED_MARKER_4712'))
PY
check "verify finds the planted bad record" exit_code 1 "$kjit" verify
check "verify names it" grep -q "^damaged $marked: " "$work/out"
check "verify --json" exit_code 1 "$kjit" verify --json
check "verify --json names it" python3 -c "
import json; d = json.load(open('$work/out')); assert d['checked'] == 23 and [b['key'] for b in d['damaged']] == ['$marked']"
check "doctor --json" exit_code 1 "$kjit" doctor --json
check "doctor --json has a store error" python3 -c "
import json; d = json.load(open('$work/out')); assert any(c['what'] == 'store' and c['status'] == 'error' for c in d)"
check "doctor reports the damage" exit_code 1 "$kjit" doctor
check "mirror --rebuild with a damaged entry exits 1" exit_code 1 "$kjit" mirror --rebuild
check "and says what it left out" grep -q "1 entries were not mirrored" "$work/err"
check "verify --repair" exit_code 0 "$kjit" verify --repair
check "verify --repair moved it aside" grep -q "1 damaged, 1 moved aside" "$work/out"
check "verify after the repair" exit_code 0 "$kjit" verify
check "the repaired cache is clean" grep -q "^checked 22 entries: 0 damaged" "$work/out"

# --- prune ---
check "prune needs a criterion" exit_code 2 "$kjit" prune
check "prune with a bad age" exit_code 2 "$kjit" prune --older-than 3parsecs
check "prune with a bad size is a usage error" exit_code 2 "$kjit" prune --max-size lots
check "prune with a negative size is a usage error" exit_code 2 "$kjit" prune --max-size -1
check "prune --older-than keeps new entries" exit_code 0 "$kjit" prune --older-than 30d
check "prune removed nothing" grep -q "^removed 0 entries older than 30d" "$work/out"
check "prune --orphans" exit_code 0 "$kjit" prune --orphans
check "prune --max-size of the largest size" exit_code 0 "$kjit" prune --max-size 18446744073709551615
check "it says what it removed" grep -q "^removed 0 entries to fit in " "$work/out"
check "prune --max-size" exit_code 0 "$kjit" prune --max-size 400KiB
check "prune reached its size (records and their mirror folders)" python3 -c "
import json, os, subprocess
d = json.loads(subprocess.check_output(['$kjit', 'stats', '--json']))
programs = '$KJIT_CACHE_DIR/programs'
shared = sum(os.stat(p).st_blocks * 512 for p in [programs, programs + '/headers', programs + '/index.txt'] if os.path.exists(p))
assert 0 < d['bytes']['records'] and d['bytes']['records'] + d['bytes']['mirror'] - shared <= 400 * 1024 and d['entries'] < 22, d"
check "pruned entries left the mirror" sh -c "test \$(ls '$KJIT_CACHE_DIR/programs' | grep -cvx -e headers -e index.txt) = \$('$kjit' list | wc -l)"

# --- mirror and clear ---
check "mirror needs an action" exit_code 2 "$kjit" mirror
check "mirror --remove" exit_code 0 "$kjit" mirror --remove
check "mirror removed" test ! -e "$KJIT_CACHE_DIR/programs"
check "mirror --rebuild" exit_code 0 "$kjit" mirror --rebuild
check "mirror rebuilt" sh -c "test \$(ls '$KJIT_CACHE_DIR/programs' | grep -cvx -e headers -e index.txt) = \$('$kjit' list | wc -l)"
check "the mirror's index lists every entry" sh -c "test \$(grep -c '^[0-9a-f]\{64\}  ' '$KJIT_CACHE_DIR/programs/index.txt') = \$('$kjit' list | wc -l)"
check "old spelling: cache rebuild-mirror" exit_code 0 "$kjit" cache rebuild-mirror

# --- a read-only cache folder ---
# The owner can't write the folder or the store (only the LMDB lock file, which readers need).
if [ "$(id -u)" = 0 ]; then
  chown -R 65534:65534 "$work/imported"  # root ignores modes: read as "nobody", the owner
  as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$work")
else
  as_reader=(env)
fi
chmod -R a-w "$work/imported"
chmod u+w "$work/imported/store/lock.mdb"
check "list a read-only cache" exit_code 0 "${as_reader[@]}" "$kjit" list --cache-dir "$work/imported"
check "read-only list shows the entries" test "$(lines "$work/out")" = 23
check "stats says read-only" exit_code 0 "${as_reader[@]}" "$kjit" stats --cache-dir "$work/imported"
check "stats marks it" grep -q "(read-only)" "$work/out"
check "clear on a read-only cache exits 1" exit_code 1 "${as_reader[@]}" "$kjit" clear --cache-dir "$work/imported"
check "read-only is explained" grep -q "read-only" "$work/err"
check "import into a read-only cache exits 1" exit_code 1 "${as_reader[@]}" "$kjit" import "$work/sm90.kjitpack" \
  --cache-dir "$work/imported"
check "prune on a read-only cache exits 1" exit_code 1 "${as_reader[@]}" "$kjit" prune --older-than 0s \
  --cache-dir "$work/imported"
check "verify --repair on a read-only cache exits 1" exit_code 1 "${as_reader[@]}" "$kjit" verify --repair \
  --cache-dir "$work/imported"
check "verify (read only) on a read-only cache" exit_code 0 "${as_reader[@]}" "$kjit" verify --cache-dir "$work/imported"
chmod -R u+w "$work/imported"

check "clear" exit_code 0 "$kjit" clear
check "clear emptied the cache" sh -c "'$kjit' list | grep -c . | grep -qx 0"

# --- help ---
check "help" exit_code 0 "$kjit" help
check "help lists the commands" sh -c "grep -q '^  export FILE' '$work/out' && grep -q '^  doctor' '$work/out'"
for command in list show cat stats verify prune clear mirror config doctor export import; do
  check "help $command" exit_code 0 "$kjit" help "$command"
  check "help $command shows its usage" grep -q "^usage: kjit $command" "$work/out"
done
check "help of an unknown command" exit_code 2 "$kjit" help frobnicate
# Every command, both spellings (version took --help for an argument and exited 2).
for command in compile explain warm script list show cat stats verify prune clear mirror export import config \
  doctor cache version; do
  check "$command --help" exit_code 0 "$kjit" "$command" --help
  check "$command --help shows its usage" grep -q "^usage: kjit $command" "$work/out"
  check "help $command (both spellings)" exit_code 0 "$kjit" help "$command"
done
check "help help" exit_code 0 "$kjit" help help
check "help help lists the commands" grep -q "^usage: kjit <command>" "$work/out"
# A missing argument is named as the usage names it, not by an option nobody can see.
for command in compile explain warm show cat export import cache "script build" "script show"; do
  # shellcheck disable=SC2086 # "script build" is two words
  check "$command without its argument exits 2" exit_code 2 "$kjit" $command
  check "$command without its argument names no hidden option" sh -c "! grep -q \"option '--\" '$work/err'"
  check "$command without its argument prints usage" grep -q "^usage: kjit" "$work/err"
done

# --- found by review: FIFOs never block, exports never replace devices, damage is reported ---
rv=$work/review
mkdir -p "$rv"
check "a cache to review" exit_code 0 env KJIT_CACHE_DIR="$rv/c" "$kjit" compile "$root/examples/saxpy.cu" --arch sm_90 -o "$rv/o"
mkfifo "$rv/fifo.kjitpack"
check "import of a FIFO fails, never blocks" exit_code 1 timeout 20 "$kjit" import "$rv/fifo.kjitpack" --cache-dir "$rv/c"
check "a FIFO as KJIT_BUNDLE is a miss, never blocks" exit_code 0 env KJIT_CACHE_DIR="$rv/c" KJIT_BUNDLE="$rv/fifo.kjitpack" \
  timeout 20 "$kjit" compile "$root/examples/saxpy.cu" --arch sm_90 -o "$rv/o"
check "export onto a FIFO is refused" exit_code 1 "$kjit" export "$rv/fifo.kjitpack" --cache-dir "$rv/c"
check "the FIFO is still a FIFO" test -p "$rv/fifo.kjitpack"
check "export onto a folder is refused" exit_code 1 "$kjit" export "$rv" --cache-dir "$rv/c"
mkdir -p "$rv/fifo_out" && mkfifo "$rv/fifo_out/saxpy.ptx"
check "compile -o onto a FIFO fails, never blocks" exit_code 1 timeout 20 env KJIT_CACHE_DIR="$rv/c" "$kjit" compile \
  "$root/examples/saxpy.cu" --arch sm_90 -o "$rv/fifo_out"
check "the output FIFO is named" grep -q "fifo_out/saxpy.ptx: it exists and is not a regular file" "$work/err"
check "the output FIFO is still a FIFO" test -p "$rv/fifo_out/saxpy.ptx"
rm -f "$rv/c/usage.log" && mkfifo "$rv/c/usage.log"
check "stats with a FIFO usage log never blocks" exit_code 0 timeout 20 env KJIT_CACHE_DIR="$rv/c" "$kjit" stats
rm -f "$rv/c/usage.log"
printf 'kjit-usage 1 1 1 1 1 1 1 nan inf\nkjit-usage 1 -3 1 1 1 1 1 1 1\nkjit-usage 1 1 2 0 0 0 0 5.000 1.000\n' >"$rv/c/usage.log"
check "stats --json with odd usage lines" exit_code 0 env KJIT_CACHE_DIR="$rv/c" "$kjit" stats --json
check "the odd lines are skipped and the JSON is valid" python3 -c "import json; d=json.load(open('$work/out')); d.pop('cache_dir'); s=json.dumps(d); assert 'nan' not in s.lower() and 'inf' not in s.lower() and '18446744073709551' not in s, s"
# JSON is UTF-8 (RFC 8259): a program name or folder that is not UTF-8 (a Latin-1 file name) has
# each bad byte as U+FFFD. Its bytes were copied as they were, which strict parsers refuse.
latin1=$(printf '%s/caf\xe9.cu' "$rv")
cp "$root/examples/saxpy.cu" "$latin1"
check "a compile of a file whose name is not UTF-8" exit_code 0 env KJIT_CACHE_DIR="$rv/c" "$kjit" compile "$latin1" \
  --arch compute_90 -o "$rv/o"
strict_json='import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))'
check "list --json of it" exit_code 0 env KJIT_CACHE_DIR="$rv/c" "$kjit" list --json
check "is UTF-8 JSON" python3 -c "$strict_json" "$work/out"
check "naming the bad byte U+FFFD" grep -q 'caf\\ufffd.cu' "$work/out"
check "stats --json of a folder not UTF-8" exit_code 0 "$kjit" stats --json --cache-dir "$(printf '%s/\xff' "$rv")"
check "is UTF-8 JSON too" python3 -c "$strict_json" "$work/out"
rm -f "$latin1"
# One line per entry: a control character in a program name (a file named with a newline) is shown
# as '?', never as a line break of its own.
two_lines=$(printf '%s/two\nlines.cu' "$rv")
cp "$root/examples/saxpy.cu" "$two_lines"
check "a compile of a file whose name holds a newline" exit_code 0 env KJIT_CACHE_DIR="$rv/c" "$kjit" compile \
  "$two_lines" --arch compute_90 -o "$rv/o"
check "list" exit_code 0 env KJIT_CACHE_DIR="$rv/c" "$kjit" list
check "has one line per entry" test "$(lines "$work/out")" = "$(env KJIT_CACHE_DIR="$rv/c" "$kjit" list --json | \
  python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')"
check "naming it with a '?'" grep -q "two?lines.cu" "$work/out"
rm -f "$two_lines"
# A mirror folder that lost its permissions (chmod 000, 0500) is given them back to be removed:
# each rebuild left it as an undeletable programs/.tmp-* folder (and a pruned entry's folder stayed).
perm=$work/perm
mkdir -p "$perm" && cp "$root/examples/saxpy.cu" "$perm/"
as_owner=(env)
if [ "$(id -u)" = 0 ]; then  # root ignores modes: as "nobody", the owner
  chown -R 65534:65534 "$perm"
  as_owner=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$perm")
fi
check "a cache of this user's" exit_code 0 "${as_owner[@]}" KJIT_CACHE_DIR="$perm/c" "$kjit" compile "$perm/saxpy.cu" \
  --arch sm_90 -o "$perm/o"
perm_key=$(sed -n 's/^compiled //p' "$work/out")
chmod 0500 "$perm/c/programs/$perm_key/module"
chmod 0000 "$perm/c/programs/$perm_key"
check "mirror --rebuild over folders without permissions" exit_code 0 "${as_owner[@]}" KJIT_CACHE_DIR="$perm/c" "$kjit" \
  mirror --rebuild
check "leaves no temp folder" test -z "$(find "$perm/c/programs" -maxdepth 1 -name '.tmp-*')"
check "and the entry's folder whole" test -s "$perm/c/programs/$perm_key/module/kernel.ptx"
chmod 0000 "$perm/c/programs/$perm_key"
check "clear with a folder without permissions" exit_code 0 "${as_owner[@]}" KJIT_CACHE_DIR="$perm/c" "$kjit" clear
check "removes the whole mirror" test ! -e "$perm/c/programs"
cp -a "$rv/c" "$rv/t"
truncate -s 12288 "$rv/t/store/data.mdb"
check "verify reports a truncated store" exit_code 1 env KJIT_CACHE_DIR="$rv/t" "$kjit" verify
check "it says the store is damaged" grep -q "store .*is damaged" "$work/err"
for command in "list" "list --json" "show abc" "cat abc --ptx" "stats" "stats --json" "verify" "export $rv/t.kjitpack" \
  "cache stats" "cache path" "cache orphans" "explain $root/examples/saxpy.cu --arch sm_90"; do
  # shellcheck disable=SC2086
  env KJIT_CACHE_DIR="$rv/t" "$kjit" $command >/dev/null 2>&1
  check "$command leaves a damaged store where it is" test -z "$(find "$rv/t" -maxdepth 1 -name 'store.damaged-*')"
  check "$command leaves its data.mdb as it was" test "$(stat -c %s "$rv/t/store/data.mdb")" = 12288
done
check "export from a damaged store exits 1" exit_code 1 env KJIT_CACHE_DIR="$rv/t" "$kjit" export "$rv/t2.kjitpack"
check "and writes no bundle" test ! -e "$rv/t2.kjitpack"
check "looking at a missing folder never creates it" sh -c "KJIT_CACHE_DIR='$rv/none' '$kjit' cache stats >/dev/null; \
  KJIT_CACHE_DIR='$rv/none' '$kjit' explain '$root/examples/saxpy.cu' --arch sm_90 >/dev/null; test ! -e '$rv/none'"
check "doctor on the damaged store exits 1" exit_code 1 env KJIT_CACHE_DIR="$rv/t" "$kjit" doctor
check "doctor left it where it is" test -z "$(find "$rv/t" -maxdepth 1 -name 'store.damaged-*')"
check "verify --repair replaces it" exit_code 1 env KJIT_CACHE_DIR="$rv/t" "$kjit" verify --repair
check "moved aside by the repair" test -n "$(find "$rv/t" -maxdepth 1 -name 'store.damaged-*')"
cp -a "$rv/c" "$rv/z"
dd if=/dev/zero of="$rv/z/store/data.mdb" bs=4096 seek=4 count=1 conv=notrunc 2>/dev/null
check "verify reports a zeroed page" exit_code 1 env KJIT_CACHE_DIR="$rv/z" "$kjit" verify
check "and leaves it where it is" test -z "$(find "$rv/z" -maxdepth 1 -name 'store.damaged-*')"
check "zeroed bytes still there" sh -c "cmp -s -n 4096 -i 16384:0 '$rv/z/store/data.mdb' /dev/zero"
cp -a "$rv/c" "$rv/t2"
truncate -s 12288 "$rv/t2/store/data.mdb"
check "cache verify reports a store replaced at open" exit_code 1 env KJIT_CACHE_DIR="$rv/t2" "$kjit" cache verify
cp -a "$rv/c" "$rv/d2"
truncate -s 12288 "$rv/d2/store/data.mdb"
check "doctor reports a store replaced at open" exit_code 1 env KJIT_CACHE_DIR="$rv/d2" "$kjit" doctor
check "as an error, never ok" sh -c "grep -q 'store.*damaged' '$work/out' && ! grep -q '^ok *store' '$work/out'"
if [ "$(id -u)" = 0 ]; then
  cp -a "$rv/c" "$rv/ro" && chown -R 65534:65534 "$rv/ro" && chmod a-w "$rv/ro/store" "$rv/ro/store/"*
  check "cache clear on a store nobody can open exits 1" exit_code 1 env KJIT_CACHE_DIR="$rv/ro" \
    setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$work" "$kjit" cache clear
  check "nothing claims it was cleared" sh -c "! grep -q '^cleared' '$work/out'"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
