#!/bin/sh
# Compile-check the matrix-unit GEMM (cl_kernels/gemm_mma.cl with mma = ptx) for NVIDIA
# without a GPU (issue 35): every variant src/gemm/mma.c builds (three block
# shapes, float16 and bfloat16, float32 or 16-bit C) through clang's OpenCL front end to
# PTX (libclc's NVPTX builtins), then CUDA's ptxas for sm_90, which checks the inline
# PTX and reports registers and spills. Fails on any error or spill.
#   sh scripts/gpu/ptx-check.sh        (needs clang-15, libclc-15, and ptxas from CUDA)
set -eu
cd "$(dirname "$0")/../.."
clang=${CLANG:-clang-15}
ptxas=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
clc=${LIBCLC:-/usr/lib/clc/nvptx64--nvidiacl.bc}
for tool in "$clang" "$ptxas" "$clc"; do
  [ -e "$tool" ] || command -v "$tool" >/dev/null || { echo "ptx-check: $tool not found" >&2; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# compile WHAT SOURCE [-D...]: the OpenCL source to PTX (libclc's NVPTX builtins), then
# ptxas for sm_90 into $tmp/err (its -v report); says FAIL and returns 1 on an error.
compile() {
  what=$1 src=$2; shift 2
  # NVIDIA's compiler takes `asm`; clang's OpenCL mode only the GNU spelling.
  if ! "$clang" -target nvptx64-nvidia-nvcl -cl-std=CL1.2 -O2 -S -Xclang -finclude-default-header \
      -Xclang -mlink-builtin-bitcode -Xclang "$clc" -march=sm_80 -Wno-linker-warnings -Dasm=__asm__ "$@" \
      "$src" -o "$tmp/k.ptx" 2> "$tmp/err"; then
    echo "FAIL $what: clang"; cat "$tmp/err"; return 1
  fi
  if ! "$ptxas" -arch=sm_90 -v "$tmp/k.ptx" -o "$tmp/k.cubin" 2> "$tmp/err"; then
    echo "FAIL $what: ptxas"; cat "$tmp/err"; return 1
  fi
}
{ cat cl_kernels/common.cl; echo '#line 1 "gemm_mma.cl"'; cat cl_kernels/gemm_mma.cl; } > "$tmp/k.cl"
fail=0
# the blocks of src/gemm/mma.c (the table's default and the smaller two) and
# candidates for the table, as the table's mma_block: WMxWNxFMxFNxTKxS
# report WHAT [EXTRA]: registers and spills from $tmp/err; fails on any spill.
report() {
  info=$(grep -E "Used [0-9]+ registers" "$tmp/err" | sed 's/.*Used/used/')
  spill=$(grep -Eo "[0-9]+ bytes spill stores" "$tmp/err" | head -1)
  echo "$1: ${2:+$2, }$info, $spill"
  case "$spill" in 0\ *) ;; *) echo "FAIL $1: spills"; fail=1 ;; esac
}
for cfg in ${PTX_CHECK_BLOCKS:-2x4x4x4x32x2 2x2x2x4x32x3 1x1x2x4x32x3 4x2x2x4x32x3}; do
  IFS=x; set -- $cfg; unset IFS
  for type in CLG_F16_STORE CLG_BF16_STORE; do
    for cf32 in 0 1; do
      what="$type CF32=$cf32 warps $1x$2 fragments $3x$4 tk $5 stages $6"
      compile "$what" "$tmp/k.cl" -DT=float -D$type -DCF32=$cf32 -DWARPS_M=$1 -DWARPS_N=$2 -DFM=$3 -DFN=$4 -DTK=$5 \
        -DSTAGES=$6 -DMMA=1 || { fail=1; continue; }
      report "$what" "$(grep -c "mma.sync" "$tmp/k.ptx" || true) mma.sync"
    done
  done
done
# The tiled float32 kernel (cl_kernels/gemm_tiled.cl) in the GPU configurations of
# src/gemm/tiled.c, plain and with B's rows at offsets (ROWS: convolutions without
# columns), for the same target: compiles, registers, no spills.
{ cat cl_kernels/common.cl; echo '#line 1 "gemm_tiled.cl"'; cat cl_kernels/gemm_tiled.cl; } > "$tmp/t.cl"
for cfg in 64x64x16x4x4x4x0x0x0x1 128x128x16x8x8x4x1x1x0x2 32x32x16x4x4x4x0x0x0x1 64x64x16x4x4x4x0x0x1x1 \
           128x128x16x8x8x4x1x0x1x1; do
  IFS=x; set -- $cfg; unset IFS
  for rows in 0 1; do
    what="gemm_tiled TM $1 TN $2 TK $3 WM $4 WN $5 VW $6 MAP $7 WIDE $8 DBUF $9 ROWS $rows"
    compile "$what" "$tmp/t.cl" -DT=float -DTM=$1 -DTN=$2 -DTK=$3 -DWM=$4 -DWN=$5 -DVW=$6 -DMAP=$7 -DWIDE=$8 \
      -DDBUF=$9 -DLPAD=${10} -DROWS=$rows || { fail=1; continue; }
    report "$what"
  done
done
exit $fail
