#!/bin/bash
# Run on the lent NVIDIA machine, from the project's root (issue 12), after
# scripts/gpu/fetch.sh filled .gpu-kit/ here and it travelled:
#   bash scripts/gpu/run.sh [STAGE...]      stages: setup build suite conformance gemm train
#                                           graph precision models trainers startup mma (default: all, in that order)
#                                           glance (not in the default: one run of each training
#                                           measurement, when device time is short), blocks (not
#                                           in the default: the matrix-unit engine's block swept)
# Each stage appends to <stage>.log under $OUT (the device tool's folder, which returns at
# most 8 files) or ./gpu-out, and stops at its own time limit, so that a hung stage cannot
# eat the others' time.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
. scripts/gpu/env.sh > "$out/setup.log" 2>&1 || { cat "$out/setup.log"; exit 1; }
export CLG_DEVICE=${CLG_DEVICE:-nvidia}
export CLG_CACHE_DIR=${CLG_CACHE_DIR:-$PWD/build-gpu/clg-cache}
# The Python that has NumPy (and PyTorch) there is not /usr/bin/python3, the tests' default.
export CLG_TEST_PYTHON=${CLG_TEST_PYTHON:-$(command -v python3)} CLG_BENCH_PYTHON=${CLG_BENCH_PYTHON:-$(command -v python3)}
b=build-gpu
jobs=$(nproc)

stage_setup() {
  # test_data_fashion reads the dataset from its default place (Debian's package) too.
  [ -e /usr/share/datasets/fashion-mnist ] || { mkdir -p /usr/share/datasets &&
    ln -s "$PWD/.gpu-kit/fashion-mnist" /usr/share/datasets/fashion-mnist; }
  nvidia-smi; clinfo -l; clinfo | grep -E 'Platform Version|Device Name|Driver Version|Device Version|Max compute|Local memory size|Max work group|Preferred vector width.*float|Global memory size'
  gcc --version | head -1; cmake --version | head -1
}
stage_build() {
  cmake -S . -B $b -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLGRAD_WERROR=ON || { cat $b/CMakeFiles/CMakeError.log; return 1; }
  cmake --build $b -j"$jobs" && $b/tools/clgrad devices --params
}
# Left out there, for what the GPU machine lacks (CI runs them all): test_dist_pocl_rusticl
# (POCL and rusticl), tb_venv and the tests needing its fixture (PyPI: no network),
# deb_packages (lintian), cli_train (its eval --confusion-png runs gnuplot).
stage_suite() { (cd $b && ctest --output-on-failure -j8 -LE oclgrind --timeout 300 \
  -E 'test_dist_pocl_rusticl|tb_venv|cli_tensorboard|cli_dist|deb_packages|cli_train'); }
stage_mma() {   # issue 35: NVIDIA's matrix instructions from OpenCL (inline PTX), and the 16-bit GEMM on them
  $b/bench/bench_mma_probe
  $b/tools/clgrad devices --params | grep -E "^mma|Device|device"
  for t in f16 bf16; do
    # auto: the matrix-unit engine where validated; tiled: what 16-bit products ran on before (float32 copies)
    $b/bench/bench_matmul --no-compile --type $t --engine auto,tiled --repeats 5 --shape "4096 4096 4096 0 0" \
      --shape "4096 4096 4096 1 0" --shape "4096 4096 4096 0 1" --shape "1024 1024 1024 0 0" --shape "256 256 256 0 0" \
      --shape "128 512 784 0 1" --shape "128 784 512 0 0" --shape "512 784 128 1 0" --shape "128 10 256 0 1"
    .gpu-kit/bin/sgemm_cublas --repeats 5 --type $t
  done
  CLG_PROFILE=1 $b/bench/bench_matmul --no-compile --type f16 --engine auto --repeats 3 --shape "4096 4096 4096 0 0" | tail -12
}
stage_blocks() {   # issue 35: the matrix-unit engine's block (device table: mma_block), swept at 4096^3
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 250 > "$out/clocks.csv" &
  local smi=$!
  $b/tests/test_gemm 2>&1 | grep -E "mma|checks|FAIL"
  for blk in 2x4x4x4x32x2 2x4x4x4x16x4 2x4x4x4x16x3 2x2x4x4x32x3 4x2x2x4x32x3 2x2x2x4x32x4; do
    echo "== mma_block $blk"
    CLG_PARAMS=mma_block=$blk $b/bench/bench_matmul --no-numpy --no-compile --type f16 --engine auto --repeats 10 \
      --shape "4096 4096 4096 0 0" --shape "4096 4096 4096 0 1" --shape "4096 4096 4096 1 0" --shape "4096 4096 4096 1 1" \
      --shape "1024 1024 1024 0 0" 2>&1 | grep -E "custom|refused|rror"
  done
  .gpu-kit/bin/sgemm_cublas --repeats 10 --type f16 | grep -E "square|\\| fc"
  kill $smi
}
stage_conformance() { $b/tools/clgrad conformance; }
stage_gemm() {
  # auto: each product's shape class's choice (listed after the table)
  $b/bench/bench_matmul --no-numpy --engine auto,tiled,clblast --repeats 5
  $b/bench/bench_matmul --no-numpy --no-compile --engine auto,tiled,clblast --repeats 5 --shape "4096 4096 4096 0 0"
  # the double-buffered tiled kernel (d) against its single-buffered twin, and long k (split-k's classes)
  $b/bench/bench_matmul --no-numpy --no-compile --engine auto,tiled --tiled 64x64x16/4x4/v4/m0 \
    --tiled 64x64x16/4x4/v4/m0d --tiled 128x128x16/8x8/v4/m1 --tiled 128x128x16/8x8/v4/m1d --repeats 5 \
    --shape "4096 4096 4096 0 0" --shape "1024 1024 1024 0 0" --shape "16 144 100352 0 1" --shape "64 576 25088 0 1" \
    --shape "128 128 65536 1 0"
  .gpu-kit/bin/sgemm_cublas --repeats 5
}
stage_train() {
  for m in mlp cnn; do
    echo "== $m: clgrad"; $b/bench/bench_train --model $m --repeats 3
    echo "== $m: cuBLAS/cuDNN"; [ -x .gpu-kit/bin/train_cudnn ] && .gpu-kit/bin/train_cudnn --model $m --repeats 3
    echo "== $m: PyTorch CUDA"; python3 bench/torch_train.py --model $m --repeats 3 --device cuda
    echo "== $m: clgrad profile"; CLG_PROFILE=1 $b/bench/bench_train --model $m --repeats 1 | head -60
  done
  # convolutions without columns (the tiled kernel reading the padded input at row offsets:
  # implicit GEMM, conv_shift) against im2col's columns (the GPU table's default), alternating
  for i in 1 2; do
    for s in off on; do echo "== cnn conv_shift=$s"; CLG_PARAMS=conv_shift=$s $b/bench/bench_train --model cnn --repeats 1; done
  done
  for s in off on; do echo "== bench_conv conv_shift=$s"; CLG_PARAMS=conv_shift=$s $b/bench/bench_conv --no-torch --repeats 3; done
}
stage_graph() {   # issue 16: graph replay against eager, and what would make replays cheaper
  # (graph mode flattens the optimizer: one update launch; --flat does so eagerly, issue 35)
  for m in mlp cnn; do
    for i in 1 2 3; do
      echo "== $m eager"; $b/bench/bench_train --model $m --repeats 1
      echo "== $m eager flat"; $b/bench/bench_train --model $m --repeats 1 --flat
      echo "== $m graph"; $b/bench/bench_train --model $m --repeats 1 --graph
    done
  done
  for f in "" --graph; do echo "== char_lstm $f"; $b/bench/bench_char --steps 20 --repeats 2 $f; done
  # elementwise pairs as one kernel: eager, replayed, replayed without pairs (ms per step)
  echo "== elementwise chain"; $b/bench/bench_elementwise --chain --repeats 3
  $b/bench/bench_command_buffer --device "$CLG_DEVICE" --kernels 40
  $b/bench/bench_command_buffer --device "$CLG_DEVICE" --kernels 4000 --steps 20
  $b/bench/bench_optim_launch --device "$CLG_DEVICE"
}
stage_precision() {   # issue 17: mixed precision against float32 (speed, peak memory, accuracy)
  for m in mlp cnn; do
    for i in 1 2 3; do
      for p in float32 mixed mixed-bf16; do echo "== $m $p"; $b/bench/bench_train --model $m --repeats 1 --precision $p; done
    done
  done
  for p in float32 mixed mixed-bf16; do echo "== fashion_cnn $p"; $b/examples/fashion_cnn --workers 4 --precision $p | tail -2; done
}
stage_models() {   # issue 31: the GPT and the ResNet against PyTorch with CUDA, and where clgrad's time goes
  for m in gpt_tiny gpt resnet; do
    for i in 1 2 3; do
      echo "== $m clgrad"; $b/bench/bench_models --model $m --steps 20 --repeats 1
      echo "== $m PyTorch CUDA"; python3 bench/torch_models.py --model $m --steps 20 --repeats 1 --device cuda
    done
    echo "== $m clgrad profile"; CLG_PROFILE=1 $b/bench/bench_models --model $m --steps 5 --repeats 1 --profile | head -40
  done
  for s in on off on; do   # the ResNet's 3x3 convolutions without columns (conv_shift) and with
    echo "== resnet conv_shift=$s"; CLG_PARAMS=conv_shift=$s $b/bench/bench_models --model resnet --steps 20 --repeats 1
  done
}
stage_glance() {   # one run of each training measurement: a first look when device time is short
  for m in mlp cnn; do
    for p in float32 mixed; do echo "== $m $p"; $b/bench/bench_train --model $m --repeats 1 --precision $p; done
  done
  echo "== cnn conv_shift=on"; CLG_PARAMS=conv_shift=on $b/bench/bench_train --model cnn --repeats 1
  for m in gpt_tiny resnet; do
    echo "== $m clgrad"; $b/bench/bench_models --model $m --steps 20 --repeats 1
    echo "== $m PyTorch CUDA"; python3 bench/torch_models.py --model $m --steps 20 --repeats 1 --device cuda
  done
  echo "== resnet clgrad profile"; CLG_PROFILE=1 $b/bench/bench_models --model resnet --steps 5 --repeats 1 --profile | head -30
}
stage_trainers() {
  $b/examples/fashion_mlp --epochs 5 --workers 4
  $b/examples/fashion_cnn --workers 4
}
stage_startup() {   # cold: empty clgrad cache (the NVIDIA driver's own cache moved aside too)
  for m in mlp cnn; do
    for i in 1 2; do
      rm -rf "$CLG_CACHE_DIR.cold"   # and the drivers' own caches, new each time
      export CUDA_CACHE_PATH=/tmp/cuda-cache-cold-$m-$i POCL_CACHE_DIR=/tmp/pocl-cache-cold-$m-$i
      s=$(date +%s.%N); CLG_CACHE_DIR=$CLG_CACHE_DIR.cold $b/bench/bench_train --model $m --startup >/dev/null
      c=$(date +%s.%N); CLG_CACHE_DIR=$CLG_CACHE_DIR.cold $b/bench/bench_train --model $m --startup >/dev/null
      w=$(date +%s.%N); awk -v m=$m -v s=$s -v c=$c -v w=$w 'BEGIN { printf "%s start-up: cold %.2f s, warm %.2f s\n", m, c - s, w - c }'
    done
  done
  # Whether the driver compiles programs side by side (build_threads = 1: one at a time,
  # as before session 24), and where one cold start's time goes: each program's build
  # (host time, overlapping where built ahead), the builds ahead, the tuner's line.
  for m in mlp cnn; do
    rm -rf "$CLG_CACHE_DIR.cold"
    export CUDA_CACHE_PATH=/tmp/cuda-cache-serial-$m POCL_CACHE_DIR=/tmp/pocl-cache-serial-$m
    s=$(date +%s.%N); CLG_PARAMS=build_threads=1 CLG_CACHE_DIR=$CLG_CACHE_DIR.cold $b/bench/bench_train --model $m --startup >/dev/null
    c=$(date +%s.%N); awk -v m=$m -v s=$s -v c=$c 'BEGIN { printf "%s start-up, programs built one at a time: cold %.2f s\n", m, c - s }'
    rm -rf "$CLG_CACHE_DIR.cold"
    export CUDA_CACHE_PATH=/tmp/cuda-cache-prof-$m POCL_CACHE_DIR=/tmp/pocl-cache-prof-$m
    echo "$m: one cold start with CLG_PROFILE=1"
    CLG_CACHE_DIR=$CLG_CACHE_DIR.cold CLG_PROFILE=1 $b/bench/bench_train --model $m --startup 2>&1 |
      grep -E -A40 "program builds|ahead|GEMM" || true
  done
}

declare -A limit=([setup]=60 [build]=240 [suite]=300 [conformance]=180 [gemm]=240 [train]=300 [graph]=240 [precision]=420
                  [models]=300 [trainers]=420 [startup]=180 [mma]=200 [glance]=180 [blocks]=240)
stages=${*:-setup build suite conformance gemm train graph precision models trainers startup mma}
for s in $stages; do
  echo "=== $s"
  start=$(date +%s)
  export -f stage_$s; export b jobs out
  timeout "${limit[$s]}" bash -c "stage_$s" >> "$out/$s.log" 2>&1
  rc=$?
  echo "=== $s: rc $rc, $(( $(date +%s) - start )) s"
  tail -n 25 "$out/$s.log"
done
