#!/bin/sh
# Compile-check the matrix-unit GEMM for Intel GPUs without one (issue 35):
# cl_kernels/gemm_mma.cl with mma = xmx (dpas through cl_intel_subgroup_matrix_multiply_accumulate)
# in every variant src/gemm/mma.c builds (its three blocks, float16 and bfloat16, float32
# or 16-bit C), by Intel's offline compiler for DG2 (acm-g10: sub-groups of 8) and Ponte
# Vecchio (pvc: sub-groups of 16), then disassembled: fails on a compile error, on
# registers spilled, or where the code holds no dpas instruction.
#   sh scripts/gpu/xmx-check.sh
# Needs ocloc (OCLOC, or on PATH): Debian's intel-opencl-icd has it. Where it is not
# installed, the script unpacks that package into a temporary folder (apt-get download;
# its libraries libigc1 and libigdfcl1 installed: apt-get install libigc1 libigdfcl1),
# so that no Intel OpenCL driver is registered on a machine without the GPU.
set -eu
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ocloc=${OCLOC:-$(command -v ocloc || true)}
if [ -z "$ocloc" ]; then
  (cd "$tmp" && apt-get download -q intel-opencl-icd >/dev/null 2>&1) ||
    { echo "xmx-check: no ocloc, and apt-get download intel-opencl-icd failed" >&2; exit 1; }
  dpkg -x "$tmp"/intel-opencl-icd_*.deb "$tmp/icd"
  ocloc=$tmp/icd/usr/bin/ocloc
  lib=$tmp/icd/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# ocloc disassembles through IGA, which it opens as libiga64.so (libigc1 has libiga64.so.1).
iga=$(ldconfig -p | sed -n 's/.*libiga64\.so\.1 .*=> //p' | head -1)
if [ -n "$iga" ]; then
  mkdir -p "$tmp/iga" && ln -s "$iga" "$tmp/iga/libiga64.so"
  export LD_LIBRARY_PATH="$tmp/iga${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
"$ocloc" --help >/dev/null 2>&1 ||
  { echo "xmx-check: $ocloc does not run (apt-get install libigc1 libigdfcl1)" >&2; exit 1; }
{ cat cl_kernels/common.cl; echo '#line 1 "gemm_mma.cl"'; cat cl_kernels/gemm_mma.cl; } > "$tmp/k.cl"
fail=0
# check DEVICE LANES BLOCK: every variant of one block (WMxWNxFMxFNxTKxS) for one target.
# The runtime defines cl_intel_subgroup_matrix_multiply_accumulate where the device has
# it; ocloc (Debian's, 22.43) does not for any target, so it is defined here.
check() {
  device=$1 lanes=$2 cfg=$3
  IFS=x; set -- $cfg; unset IFS
  for type in CLG_F16_STORE CLG_BF16_STORE; do
    for cf32 in 0 1; do
      what="$device $type CF32=$cf32 sub-groups $1x$2 of $lanes, fragments $3x$4, tk $5, stages $6"
      rm -rf "$tmp/out" && mkdir "$tmp/out"
      if ! "$ocloc" compile -file "$tmp/k.cl" -device "$device" -out_dir "$tmp/out" -output k -options \
          "-Dcl_intel_subgroup_matrix_multiply_accumulate=1 -DT=float -D$type -DCF32=$cf32 -DWARPS_M=$1 -DWARPS_N=$2 -DFM=$3 -DFN=$4 -DTK=$5 -DSTAGES=$6 -DMMA=3 -DSG=$lanes" \
          > "$tmp/log" 2>&1; then
        echo "FAIL $what: ocloc"; cat "$tmp/log"; fail=1; continue
      fi
      spill=$(grep -Eo "spilled around [0-9]+" "$tmp/log" | head -1 || true)
      "$ocloc" disasm -file "$tmp"/out/k*.bin -device "$device" -dump "$tmp/out/dis" > "$tmp/dlog" 2>&1 || true
      dpas=$(cat "$tmp"/out/dis/*.asm 2>/dev/null | grep -c "dpas" || true)
      echo "$what: $dpas dpas, ${spill:-no spills}"
      [ -z "$spill" ] || { echo "FAIL $what: spills"; fail=1; }
      [ "$dpas" -gt 0 ] || { echo "FAIL $what: no dpas in the code (disassembly: $(tail -1 "$tmp/dlog"))"; fail=1; }
    done
  done
}
# The blocks of src/gemm/mma.c: the table's default for the width, then the smaller two.
for cfg in ${XMX_CHECK_BLOCKS_8:-4x4x2x2x32x2 2x2x2x2x32x2 1x1x2x2x32x2}; do check acm-g10 8 "$cfg"; done
for cfg in ${XMX_CHECK_BLOCKS_16:-4x4x4x2x32x2 2x2x2x2x32x2 1x1x2x2x32x2}; do check pvc 16 "$cfg"; done
exit $fail
