#!/usr/bin/env bash
# Rehearses the GPU check on a bare Debian root, as a GPU machine of the device tool would run it: no
# Java, no xz, no network, python3 with numpy (those machines also have CuPy and PyTorch, which a
# rehearsal does without). Builds a `debootstrap --variant=minbase` bookworm root once (cached in
# /tmp/gpu-check-bare-<checksum of this worktree's path>/root, about 230 MB: outside target/, which the
# bundle's `mvn clean` empties), copies the bundle .gpu-check/ into it (building it with
# scripts/gpu-check.sh when absent), and runs each call with GPU_REQUIRED=0 CUDA_COMPILER_REQUIRED=0
# NVRTC_REQUIRED=0 SAMPLE_BACKEND=cpu, chrooted, in private mount, PID and network namespaces (only
# the loopback interface up). Each call starts as on a bare machine (no payload unpacked, an empty $OUT);
# what it left in $OUT is copied to target/gpu-check-rehearsal/<n>-<steps>/ and its files counted (at most 8).
#
# Usage (as root; needs debootstrap, unshare and chroot; the first run needs a Debian mirror):
#   scripts/gpu-check/rehearse-bare.sh                 # one call per step: tests, kernels, sample, bench, search
#   scripts/gpu-check/rehearse-bare.sh 'tests sample' 'DEADLINE=60 all' 'BENCH_BACKEND=CPU BENCH_CLASSES=Launch bench'
#   scripts/gpu-check/rehearse-bare.sh 'TESTS_TAGS=!gpu DEADLINE=150 tests'   # the CI tests, too long for the
#                                                  # step's time: runs cut, each with its running test and counts
# Each argument is one call: optional VAR=value settings for run.sh, then its steps.
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian), BARE_ROOT (the root's directory),
# REBUILD_ROOT=1 (build the root again).
# Not part of CI (.ci/run): debootstrap needs root and a mirror, and the check it rehearses is a device call's.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
root=${BARE_ROOT:-/tmp/gpu-check-bare-$(echo "$repo" | cksum | cut -d' ' -f1)/root}
results="$repo/target/gpu-check-rehearsal"
# What the GPU machines have beside the driver, as far as the check uses it: python3 with numpy.
packages=python3,python3-numpy

say() { echo "rehearse: $*"; }
die() { echo "rehearse: $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot and namespaces)"
for tool in unshare chroot ip; do
	command -v "$tool" > /dev/null || die "$tool not found"
done

# --- The root: built once, into a temporary directory renamed when complete.
if [ "${REBUILD_ROOT:-0}" = 1 ] || [ "$(cat "$root/.rehearse-packages" 2> /dev/null)" != "$packages" ]; then
	command -v debootstrap > /dev/null || die "debootstrap not found (apt-get install debootstrap)"
	started=$(date +%s)
	mkdir -p "$(dirname "$root")"
	building=$(mktemp -d "$(dirname "$root")/building.XXXXXX")
	say "building a minbase bookworm root with $packages in $building (a few minutes)"
	if ! debootstrap --variant=minbase --include="$packages" bookworm "$building" \
		"${DEBIAN_MIRROR:-http://deb.debian.org/debian}" > "$building.log" 2>&1; then
		tail -n 5 "$building.log" >&2
		die "debootstrap failed (log: $building.log)"
	fi
	rm -rf "$building"/var/cache/apt/archives/*.deb "$building"/var/lib/apt/lists/*
	echo "$packages" > "$building/.rehearse-packages"
	# Nothing is mounted in a root outside the namespaces below, so removing one removes files only.
	rm -rf "$root" "$building.log"
	mv "$building" "$root"
	say "root ready in $(($(date +%s) - started)) s: $(du -sm "$root" | cut -f1) MiB"
fi
# The point of the rehearsal: the bundle must need neither Java nor xz.
for absent in java xz unxz xzcat; do
	if chroot "$root" /bin/sh -c "command -v $absent" > /dev/null 2>&1; then
		die "the root has $absent ($(chroot "$root" /bin/sh -c "command -v $absent")); it must not"
	fi
done
for present in dpkg-deb python3 gzip tar; do
	chroot "$root" /bin/sh -c "command -v $present" > /dev/null || die "the root lacks $present"
done

# --- The bundle, copied in fresh.
if [ ! -f .gpu-check/run.sh ] || [ ! -f .gpu-check/payload.deb ]; then
	say "no bundle in .gpu-check/: building it"
	bash scripts/gpu-check.sh
fi
rm -rf "$root/work"
mkdir -p "$root/work"
cp -r .gpu-check "$root/work/.gpu-check"
say "bundle: $(du -sm .gpu-check | cut -f1) MiB ($(ls .gpu-check | tr '\n' ' '))"

calls=("$@")
[ ${#calls[@]} -gt 0 ] || calls=(tests kernels sample bench search)
rm -rf "$results"
mkdir -p "$results"
status=0
n=0
for call in "${calls[@]}"; do
	n=$((n + 1))
	settings=()
	steps=()
	for word in $call; do
		if [[ "$word" == *=* ]]; then settings+=("$word"); else steps+=("$word"); fi
	done
	name="$n-$(echo "${steps[*]}" | tr ' ' '-')"
	# A bare machine: no payload unpacked by an earlier call, an empty $OUT.
	rm -rf "$root/work/out" "$root"/tmp/gpu-check-*
	mkdir -p "$root/work/out"
	say "---- call $n: ${settings[*]} run.sh ${steps[*]}"
	started=$(date +%s)
	set +e
	# The same working directory as a device call (the repository root with the bundle in it), an
	# environment without this machine's variables, and no network beyond the loopback interface.
	unshare --mount --pid --fork --net --mount-proc="$root/proc" /bin/bash -c 'ip link set lo up && exec "$@"' _ \
		chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 OUT=/work/out GPU_REQUIRED=0 CUDA_COMPILER_REQUIRED=0 NVRTC_REQUIRED=0 SAMPLE_BACKEND=cpu \
		"${settings[@]}" /bin/bash -c 'cd /work && exec bash .gpu-check/run.sh "$@"' _ "${steps[@]}"
	rc=$?
	set -e
	cp -r "$root/work/out" "$results/$name"
	files=$(find "$results/$name" -type f | wc -l)
	say "call $n ended with rc=$rc in $(($(date +%s) - started)) s; \$OUT holds $files files: $(cd "$results/$name" && find . -type f -printf '%P (%s B) ' | sort)"
	if [ "$files" -gt 8 ]; then
		say "call $n: more than 8 files in \$OUT: a device call would not return them all"
		status=1
	fi
	# rc 3: a step was cut or left out for the deadline, which the calls above may ask for on purpose.
	if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
		status=1
	fi
done
say "outputs in $results/; status $status"
exit $status
