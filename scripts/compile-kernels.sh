#!/usr/bin/env bash
# Compiles CUDA C kernels ahead of time: every <name>.cu under SRC_DIR becomes <name>.fatbin under
# OUT_DIR (same relative path), holding machine code for each architecture in ARCHS and PTX for the
# newest one (so that GPUs newer than the list still load it, through the driver's JIT). The CUDA
# backend loads such a fatbin found beside <name>.cu on the class path instead of compiling the
# source, so the application needs neither nvcc nor NVRTC where it runs.
#
# Usage: scripts/compile-kernels.sh SRC_DIR OUT_DIR [ARCHS]
#   ARCHS   space-separated compute capabilities, default $CUDA_AOT_ARCHS or "75 80 86 89 90 100 120";
#           those this nvcc does not know are left out with a note
#   NVCC    the nvcc to use (default: nvcc on PATH, then /usr/local/cuda/bin/nvcc)
# Run by the Maven profile cuda-aot (mvn -Pcuda-aot package) for each module's
# src/main/resources/gpu/kernels; needs nvcc and a host compiler it supports at build time only.
set -euo pipefail

src=${1:?usage: compile-kernels.sh SRC_DIR OUT_DIR [ARCHS]}
out=${2:?usage: compile-kernels.sh SRC_DIR OUT_DIR [ARCHS]}
archs=${3:-${CUDA_AOT_ARCHS:-75 80 86 89 90 100 120}}

if [ ! -d "$src" ]; then
	exit 0 # this module has no kernels
fi
nvcc=${NVCC:-$(command -v nvcc || true)}
[ -n "$nvcc" ] || nvcc=/usr/local/cuda/bin/nvcc
if [ ! -x "$nvcc" ]; then
	echo "compile-kernels: nvcc not found (set NVCC or put it on PATH); the cuda-aot profile needs it" >&2
	exit 1
fi

known=$("$nvcc" --list-gpu-code 2>/dev/null || true)
gencode=()
newest=
for arch in $archs; do
	if [ -n "$known" ] && ! grep -qw "sm_$arch" <<<"$known"; then
		echo "compile-kernels: $nvcc does not know sm_$arch; left out"
		continue
	fi
	gencode+=("-gencode=arch=compute_$arch,code=sm_$arch")
	newest=$arch
done
[ -n "$newest" ] || { echo "compile-kernels: none of the architectures '$archs' is known to $nvcc" >&2; exit 1; }
gencode+=("-gencode=arch=compute_$newest,code=compute_$newest")

count=0
while IFS= read -r -d '' cu; do
	rel=${cu#"$src"/}
	target="$out/${rel%.cu}.fatbin"
	if [ -f "$target" ] && [ "$target" -nt "$cu" ]; then
		continue
	fi
	mkdir -p "$(dirname "$target")"
	"$nvcc" -fatbin "${gencode[@]}" -o "$target.tmp" "$cu"
	mv "$target.tmp" "$target"
	count=$((count + 1))
done < <(find "$src" -name '*.cu' -print0 | sort -z)
echo "compile-kernels: $count kernel(s) compiled to fatbins in $out (sm_${archs// /, sm_} as known; PTX compute_$newest)"
