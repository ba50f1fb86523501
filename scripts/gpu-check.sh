#!/usr/bin/env bash
# The whole GPU check in one command. Builds the project here, packs what a GPU machine without
# Java or network needs into .gpu-check/ (a Java runtime, every module's gpu-tagged tests with their
# class paths, the sample app, the benchmarks, the CuPy peer; at most 60 MiB), and says how to run
# it there. On the GPU machine, .gpu-check/run.sh runs, in under 9 minutes:
#   1. every module's GPU tests (test support's KernelParity checks and the guide's examples included) with GPU_REQUIRED=1 CUDA_COMPILER_REQUIRED=1 (plus the NVRTC binding's
#      tests with NVRTC_REQUIRED=1 and the native-load tests), through the JUnit console launcher;
#   2. kernel load times by route (prebuilt fatbin, NVRTC, disk cache) for the sample app's kernels;
#   3. the sample app with gpu.backend=cuda, a collection searched over HTTP and checked against a
#      brute-force ranking (numpy);
#   4. the CUDA benchmarks (JMH) with their raw JCuda baselines, and the CuPy peer;
# and leaves the reports in one folder: $OUT when set (the device tool), else .gpu-check/report.
#
# Usage:
#   scripts/gpu-check.sh                 # build and pack (nvcc here: the sample app's kernels are prebuilt)
#   scripts/gpu-check.sh --run-here      # then run the GPU part on this machine too (a rehearsal
#                                        # without a GPU: GPU_REQUIRED=0 SAMPLE_BACKEND=cpu)
# Then on the GPU machine, with .gpu-check copied or carried along:
#   bash .gpu-check/run.sh
# Never runs mvn install: the reactor builds and copies what each module needs.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="$root/.gpu-check"
start=$(date +%s)
modules=(runtime autoconfigure test-support sample-app benchmarks)

rm -rf "$out" "${modules[@]/%//target/gpu-check-lib}"
mkdir -p "$out/lib"

profile=()
if command -v nvcc > /dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
	profile=(-Pcuda-aot)
	echo "gpu-check: building with -Pcuda-aot (nvcc found: the sample app's kernels ship as fatbins)"
else
	echo "gpu-check: building without nvcc (the sample app's kernels compile with NVRTC on the GPU machine)"
fi
# One reactor run: package every module (tests skipped here; they run on the GPU machine) and copy each
# module's test-scope dependencies, siblings included as the jars just built. Left out: JUnit (the
# console launcher brings it) and what only the non-GPU tests use (Testcontainers, Mockito).
mvn -B -ntp -q -DskipTests "${profile[@]}" package dependency:copy-dependencies -DincludeScope=test \
	-DexcludeGroupIds=org.junit.platform,org.junit.jupiter,org.opentest4j,org.apiguardian,org.testcontainers,com.github.docker-java,org.mockito,net.bytebuddy,org.rnorth.duct-tape \
	-DexcludeArtifactIds=commons-compress \
	-DoutputDirectory='${project.build.directory}/gpu-check-lib' -Dmdep.overWriteIfNewer=true

for module in "${modules[@]}"; do
	mkdir -p "$out/$module"
	cp -r "$module/target/classes" "$out/$module/classes"
	if [ -d "$module/target/test-classes" ]; then
		cp -r "$module/target/test-classes" "$out/$module/test-classes"
	fi
	# Each module's class path: its own classes first, then its dependencies, one shared lib/ for all.
	: > "$out/$module/classpath"
	for jar in "$module"/target/gpu-check-lib/*.jar; do
		name=$(basename "$jar")
		case "$name" in gpu-compute-*) continue ;; esac # sibling modules: their classes directories instead
		[ -f "$out/lib/$name" ] || cp "$jar" "$out/lib/$name"
		echo "lib/$name" >> "$out/$module/classpath"
	done
done
# Sibling modules as directories: autoconfigure needs runtime's classes, test support, the sample app
# and the benchmarks need runtime's and autoconfigure's.
printf 'runtime/classes\n' > "$out/autoconfigure/siblings"
printf 'runtime/classes\nautoconfigure/classes\n' > "$out/test-support/siblings"
printf 'runtime/classes\nautoconfigure/classes\n' > "$out/sample-app/siblings"
printf 'runtime/classes\n' > "$out/benchmarks/siblings"
: > "$out/runtime/siblings"

# JCuda's natives jar carries the nvPTXCompiler and runtime bindings (25 MB) that nothing here
# loads: a copy with the driver and NVRTC bindings only keeps the bundle small.
natives=$(ls "$out"/lib/jcuda-natives-*.jar)
slim=$(mktemp -d)
(cd "$slim" && unzip -q "$natives" && rm -f lib/libJNvPTXCompiler-* lib/libJCudaRuntime-* && rm "$natives" \
	&& zip -q -r -9 "$natives" .)
rm -rf "$slim"

junit=$(ls ~/.m2/repository/org/junit/platform/junit-platform-console-standalone/*/junit-platform-console-standalone-*.jar \
	2> /dev/null | sort -V | tail -1 || true)
if [ -z "$junit" ]; then
	version=$(ls ~/.m2/repository/org/junit/platform/junit-platform-launcher/ | sort -V | tail -1)
	mvn -B -ntp -q dependency:copy -Dartifact="org.junit.platform:junit-platform-console-standalone:$version" \
		-DoutputDirectory="$out" -Dmdep.stripVersion=true
	junit="$out/junit-platform-console-standalone.jar"
fi
cp "$junit" "$out/junit-console.jar"
[ "$junit" = "$out/junit-platform-console-standalone.jar" ] && rm -f "$junit"

jdk=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
"$jdk/bin/jlink" --add-modules java.base,java.logging,java.management,java.naming,java.desktop,java.sql,java.xml,java.net.http,java.instrument,java.security.jgss,jdk.unsupported,jdk.management,jdk.crypto.ec,jdk.zipfs \
	--strip-debug --no-man-pages --no-header-files --compress=0 --output "$out/jre"
tar -C "$out" -cJf "$out/jre.tar.xz" jre
rm -rf "$out/jre"

cp scripts/gpu-check/run.sh scripts/gpu-check/sample_check.py benchmarks/peers/cupy_peer.py "$out/"
chmod +x "$out/run.sh"

size=$(du -sm "$out" | cut -f1)
echo "gpu-check: packed .gpu-check/ in $(( $(date +%s) - start )) s: ${size} MiB ($(ls "$out/lib" | wc -l) jars, ${modules[*]})"
if [ "$size" -gt 60 ]; then
	echo "gpu-check: warning: over 60 MiB" >&2
fi
echo "gpu-check: on the GPU machine run:  bash .gpu-check/run.sh   (reports in \$OUT, else .gpu-check/report)"

if [ "${1:-}" = "--run-here" ]; then
	GPU_REQUIRED=${GPU_REQUIRED:-0} CUDA_COMPILER_REQUIRED=${CUDA_COMPILER_REQUIRED:-0} NVRTC_REQUIRED=${NVRTC_REQUIRED:-0} \
		SAMPLE_BACKEND=${SAMPLE_BACKEND:-cpu} bash "$out/run.sh"
fi
