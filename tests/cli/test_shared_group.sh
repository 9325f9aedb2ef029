#!/usr/bin/env bash
# A cache shared by a group (KJIT_SHARED_CACHE=1, issue 39): an administrator makes a setgid folder
# for group 4242 (mode 2770); two users of that group (uids 1001 and 1002, umask 022) use one cache
# in it. The second gets the first's kernel as a disk hit and compiles a new one that the first then
# gets; everything kjit made is the group's (read and write, folders setgid) and nobody else's.
# Before: the first user's kjit made cache/ 2700 (and programs/ 2700, compile.lock and usage.log
# 0600), and the second got "the cache folder … cannot be opened as a folder: Permission denied".
# Runs as root (to act as the two users, with setpriv); exits 77 otherwise.
# Usage: test_shared_group.sh KJIT
set -u
kjit=$1
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "SKIP: needs root and setpriv to run as two users of one group"
  exit 77
fi
# shellcheck source=checks.sh
. "$(dirname "$0")/checks.sh"
unset KJIT_CACHE_DIR
chmod 755 "$work"
if ! setpriv --reuid 1001 --regid 1001 --groups 4242 "$kjit" --version >/dev/null 2>&1; then
  echo "SKIP: $kjit can't be run by another user (a build folder others can't read)"
  exit 77
fi
mkdir "$work/team"
chgrp 4242 "$work/team"
chmod 2770 "$work/team"
for i in 1 2; do
  printf 'extern "C" __global__ void k%s(float* x) { x[threadIdx.x] *= %s; }\n' "$i" "$i" >"$work/k$i.cu"
done
chmod 644 "$work"/k*.cu
for uid in 1001 1002; do
  mkdir "$work/out$uid"
  chown "$uid" "$work/out$uid"
done

as_user() {  # as_user UID ARGS...: kjit as that user of group 4242, on the team's cache ("UID" in an
            # argument: the user's number; $cache_dir: another cache folder)
  local uid=$1
  shift
  setpriv --reuid "$uid" --regid "$uid" --groups 4242 \
    sh -c 'umask 022; HOME=/nonexistent KJIT_SHARED_CACHE=1 KJIT_CACHE_DIR="$0" exec "$@"' \
    "${cache_dir:-$work/team/cache}" "$kjit" "${@//UID/$uid}"
}
key_of() { sed -n "s/^$1 \([0-9a-f]\{64\}\)$/\1/p" "$work/out"; }

check "the first user compiles k1" exit_code 0 as_user 1001 compile "$work/k1.cu" --arch sm_90 -o "$work/outUID"
key1=$(key_of compiled)
check "… and stores it ($key1)" test -n "$key1"
check "the second user" exit_code 0 as_user 1002 compile "$work/k1.cu" --arch sm_90 -o "$work/outUID"
check "… gets it as a hit ($(head -1 "$work/out"))" test "$(key_of "cache hit")" = "$key1"
check "… without a warning" test ! -s "$work/err"
check "the second user compiles k2" exit_code 0 as_user 1002 compile "$work/k2.cu" --arch sm_90 -o "$work/outUID"
key2=$(key_of compiled)
check "… and stores it ($key2)" test -n "$key2"
check "… without a warning" test ! -s "$work/err"
check "the first user" exit_code 0 as_user 1001 compile "$work/k2.cu" --arch sm_90 -o "$work/outUID"
check "… gets it as a hit ($(head -1 "$work/out"))" test "$(key_of "cache hit")" = "$key2"
check "both entries are mirrored" test -d "$work/team/cache/programs/$key1" -a -d "$work/team/cache/programs/$key2"
check "… and in the index" test "$(grep -c -e "^$key1" -e "^$key2" "$work/team/cache/programs/index.txt")" = 2
check "every use is logged (4 lines)" test "$(wc -l <"$work/team/cache/usage.log")" = 4
not_shared=$(find "$work/team/cache" \( -perm /o=rwx -o ! -perm -g=rw -o ! -group 4242 \) -printf '%M %u:%g %P\n')
check "everything kjit made is the group's, read and write, and no one else's: ${not_shared:-yes}" test -z "$not_shared"
not_setgid=$(find "$work/team/cache" -type d ! -perm -2070 -printf '%M %P\n')
check "… its folders setgid: ${not_setgid:-yes}" test -z "$not_setgid"
check "the first user verifies the store" exit_code 0 as_user 1001 verify
check "the second user rebuilds the mirror (the first's folders too)" exit_code 0 as_user 1002 mirror --rebuild
check "… without a warning" test ! -s "$work/err"
check "… and both entries are there" test -d "$work/team/cache/programs/$key1" -a -d "$work/team/cache/programs/$key2"
check "the second user clears the cache" exit_code 0 as_user 1002 clear
check "… the first user's entry too" test "$(as_user 1001 list | grep -c sm_90)" = 0
check "… and its mirrored folder" test ! -e "$work/team/cache/programs/$key1"

# A group folder that is not setgid (review): the cache folder kjit makes in it takes the folder's
# group (not the maker's own primary group, 1001) and is made setgid, so the other member is served.
mkdir "$work/team2"
chgrp 4242 "$work/team2"
chmod 0770 "$work/team2"
cache_dir=$work/team2/cache check "in a group folder that is not setgid, the first user compiles" \
  exit_code 0 as_user 1001 compile "$work/k1.cu" --arch sm_90 -o "$work/outUID"
check "… the cache folder it made is the group's and setgid ($(stat -c '%A %g' "$work/team2/cache"))" \
  test "$(stat -c '%g' "$work/team2/cache")" = 4242 -a -g "$work/team2/cache"
cache_dir=$work/team2/cache check "… and the second user" exit_code 0 as_user 1002 compile "$work/k1.cu" --arch sm_90 -o "$work/outUID"
check "… gets it as a hit" grep -q "^cache hit " "$work/out"
# A cache folder an administrator made group-writable but not setgid, not the user's own: refused,
# saying what to do (before: each member's files went to its own group, and the next was locked out).
mkdir -p "$work/team3/cache"
chgrp -R 4242 "$work/team3"
chmod 0770 "$work/team3" "$work/team3/cache"
cache_dir=$work/team3/cache check "a shared cache folder that is not setgid, not the user's, is refused" \
  exit_code 1 as_user 1001 compile "$work/k1.cu" --arch sm_90 -o "$work/outUID"
check "… saying chmod g+s" grep -q "not setgid.*chmod g+s" "$work/err"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
