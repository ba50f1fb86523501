#!/usr/bin/env bash
# Builds the GPU check's bundle, .gpu-check/ (at most 40 MiB: it travels with the working tree of a
# device call, 64 MiB in all), for a GPU machine without Java or network:
#   .gpu-check/run.sh       the steps (tests, kernels, sample, bench, search, all); see its header
#   .gpu-check/payload.deb  everything they load, as one Debian package that nothing installs: a Java
#                           runtime (jlink), every module's classes and test classes with their jars,
#                           the JUnit console launcher, the sample check, the CuPy peer and, when the tree
#                           has it, benchmarks/peers/gpu_search_bench.py
# Its data is compressed with xz (the class files of uncompressed jars compress about twice as well as
# gzip'd ones), and dpkg-deb unpacks it with its built-in decoder: the machines need neither xz nor Java
# (python3 unpacks it where dpkg-deb is missing).
#
# Usage:
#   scripts/gpu-check.sh                       # build and pack (with nvcc here the sample's kernels ship as fatbins)
#   scripts/gpu-check.sh --run-here [step ...] # then rehearse the steps on this machine (default all), without
#                                              # a GPU: GPU_REQUIRED=0 SAMPLE_BACKEND=cpu
#   scripts/gpu-check/rehearse-bare.sh         # or rehearse them on a bare Debian root (no Java, no xz, no network)
# On the GPU machine, one device call per group of steps, .gpu-check carried along:
#   bash .gpu-check/run.sh tests sample        # reports in $OUT (the device tool's), else .gpu-check/report
#
# The Maven build runs with the gpu-check profile (the modules' test class paths and the console launcher
# copied under target/); every plugin version is pinned, so MAVEN_ARGS="-Dmaven.repo.local=/tmp/empty-repo"
# builds it from an empty local repository with only the package registry reachable. Never runs mvn install.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="$root/.gpu-check"
start=$(date +%s)
modules=(runtime autoconfigure test-support sample-app benchmarks)
limit_mib=40

for tool in mvn dpkg-deb zip unzip; do
	command -v "$tool" > /dev/null || { echo "gpu-check: $tool not found" >&2; exit 2; }
done
stage=$(mktemp -d /tmp/gpu-check-stage.XXXXXX)
trap 'rm -rf "$stage"' EXIT
payload="$stage/gpu-check"
mkdir -p "$payload/lib"
rm -rf "$out" "${modules[@]/%//target/gpu-check-lib}"

profiles=-Pgpu-check
if command -v nvcc > /dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
	profiles=-Pgpu-check,cuda-aot
	echo "gpu-check: building with -Pcuda-aot (nvcc found: the sample app's kernels ship as fatbins)"
else
	echo "gpu-check: building without nvcc (the sample app's kernels compile with NVRTC on the GPU machine)"
fi
# clean: nothing left in target/ from an earlier build (a test class since deleted) goes into the bundle.
# shellcheck disable=SC2086 # MAVEN_ARGS: words for Maven
# No sources or Javadoc jars: nothing on the GPU machine reads them.
mvn -B -ntp -q -DskipTests -Dmaven.source.skip=true -Dmaven.javadoc.skip=true "$profiles" ${MAVEN_ARGS:-} clean package
built=$(date +%s)

# A jar as it goes into the payload: its entries in their order, stored rather than deflated, so that the
# payload's xz sees the class files themselves.
repack() { # jar target [entries to leave out...]
	local jar=$1 target=$2 tmp
	shift 2
	tmp=$(mktemp -d "$stage/jar.XXXXXX")
	# shellcheck disable=SC2068 # the patterns are globs in the unpacked jar
	(cd "$tmp" && unzip -q "$jar" && for pattern in "$@"; do rm -rf -- $pattern; done \
		&& unzip -Z1 "$jar" | while read -r entry; do if [ -e "$entry" ]; then printf '%s\n' "$entry"; fi; done \
		| zip -q -0 -X -@ "$target")
	rm -rf "$tmp"
}

for module in "${modules[@]}"; do
	mkdir -p "$payload/$module"
	cp -r "$module/target/classes" "$payload/$module/classes"
	[ -d "$module/target/test-classes" ] && cp -r "$module/target/test-classes" "$payload/$module/test-classes"
	# Each module's class path: its own classes first, then its dependencies, one shared lib/ for all.
	: > "$payload/$module/classpath"
	for jar in "$module"/target/gpu-check-lib/*.jar; do
		name=$(basename "$jar")
		case "$name" in gpu-compute-*) continue ;; esac # sibling modules: their classes directories instead
		# Native jars of other platforms (Netty's QUIC codec comes in five, for the WebFlux tests): the machines
		# are linux-x86_64, and nothing loads the others.
		case "$name" in *-osx-*.jar | *-windows-*.jar | *-linux-aarch_64.jar | *-linux-aarch64.jar) continue ;; esac
		if [ ! -f "$payload/lib/$name" ]; then
			case "$name" in
			# JCuda's natives: the driver and NVRTC bindings; nothing here loads nvPTXCompiler or the runtime API.
			jcuda-natives-*) repack "$root/$jar" "$payload/lib/$name" 'lib/libJNvPTXCompiler-*' 'lib/libJCudaRuntime-*' ;;
			# JNA: the natives of linux-x86-64 only, the machines' platform.
			jna-[0-9]*) repack "$root/$jar" "$payload/lib/$name" $(unzip -Z1 "$jar" \
				| grep -E '^com/sun/jna/[^/]+/(lib)?jnidispatch' | grep -v '^com/sun/jna/linux-x86-64/') ;;
			*) repack "$root/$jar" "$payload/lib/$name" ;;
			esac
		fi
		echo "lib/$name" >> "$payload/$module/classpath"
	done
done
# Sibling modules as directories: autoconfigure needs runtime's classes, test support and the sample
# app need runtime's and autoconfigure's, the benchmarks runtime's.
printf 'runtime/classes\n' > "$payload/autoconfigure/siblings"
printf 'runtime/classes\nautoconfigure/classes\n' > "$payload/test-support/siblings"
printf 'runtime/classes\nautoconfigure/classes\n' > "$payload/sample-app/siblings"
printf 'runtime/classes\n' > "$payload/benchmarks/siblings"
: > "$payload/runtime/siblings"
repack "$root/benchmarks/target/gpu-check-junit/junit-platform-console-standalone.jar" "$payload/junit-console.jar"

# The Java runtime: the modules the steps load (the Vector API for the CPU backend's SIMD scoring), uncompressed (xz compresses the payload as a whole better
# than jlink's per-resource zip), the JVM's symbol table stripped.
jdk=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
"$jdk/bin/jlink" --add-modules java.base,java.logging,java.management,java.naming,java.desktop,java.sql,java.xml,java.net.http,java.instrument,java.security.jgss,jdk.unsupported,jdk.management,jdk.crypto.ec,jdk.zipfs,jdk.incubator.vector \
	--strip-debug --no-man-pages --no-header-files --compress=0 --output "$payload/jre"
if command -v strip > /dev/null; then
	strip --strip-unneeded "$payload/jre/lib/server/libjvm.so"
fi

cp scripts/gpu-check/sample_check.py benchmarks/peers/cupy_peer.py "$payload/"
search=
if [ -f benchmarks/peers/gpu_search_bench.py ]; then
	cp benchmarks/peers/gpu_search_bench.py "$payload/"
	search=", gpu_search_bench.py"
fi
commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)
git diff --quiet HEAD 2> /dev/null || commit="$commit+changes"
echo "commit $commit, built $(date -u +%Y-%m-%dT%H:%M:%SZ), $("$payload/jre/bin/java" -version 2>&1 | head -1)" > "$payload/BUNDLE"

mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" << EOF
Package: gpu-compute-gpu-check
Version: 0.1.0
Architecture: amd64
Maintainer: gpu-compute <gpu-compute@invalid>
Description: the GPU check's payload (scripts/gpu-check.sh); unpacked by run.sh, not for installing
EOF
mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz -z9 --build "$stage" "$out/payload.deb" > /dev/null
cp scripts/gpu-check/run.sh "$out/run.sh"
chmod +x "$out/run.sh"

size=$(du -sm "$out" | cut -f1)
bytes=$(du -sb "$out" | cut -f1)
echo "gpu-check: built in $((built - start)) s, packed .gpu-check/ in $(($(date +%s) - built)) s: $bytes bytes (${size} MiB; payload unpacked $(du -sm "$payload" | cut -f1) MiB: jre $(du -sm "$payload/jre" | cut -f1), $(ls "$payload/lib" | wc -l) jars $(du -sm "$payload/lib" | cut -f1), classes $(du -smc "$payload"/*/classes "$payload"/*/test-classes | tail -1 | cut -f1)$search; $commit)"
if [ "$bytes" -gt $((limit_mib * 1024 * 1024)) ]; then
	echo "gpu-check: the bundle is over $limit_mib MiB" >&2
	exit 1
fi
echo "gpu-check: on the GPU machine: bash .gpu-check/run.sh [tests|kernels|sample|bench|search|all ...] (reports in \$OUT, else .gpu-check/report)"

if [ "${1:-}" = "--run-here" ]; then
	shift
	GPU_REQUIRED=${GPU_REQUIRED:-0} CUDA_COMPILER_REQUIRED=${CUDA_COMPILER_REQUIRED:-0} NVRTC_REQUIRED=${NVRTC_REQUIRED:-0} \
		SAMPLE_BACKEND=${SAMPLE_BACKEND:-cpu} bash "$out/run.sh" "$@"
fi
