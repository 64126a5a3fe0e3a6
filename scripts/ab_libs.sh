#!/bin/sh
# Interleaved A/B of two builds of the simd kernels (TORCHIC_SIMD_LIB), one process per
# (round, library): scripts/ab_step.py's step timings at 1 and 2 threads, round after round.
#   sh scripts/ab_libs.sh lenet OLD.so NEW.so ROUNDS STEPS [extra ab_step args]
model=$1; a=$2; b=$3; rounds=${4:-3}; steps=${5:-20}; shift 5
i=0
while [ $i -lt "$rounds" ]; do
  for lib in "$a" "$b"; do
    echo "== round $i lib $lib load $(cut -d' ' -f1 /proc/loadavg)"
    TORCHIC_SIMD_LIB=$lib PYTHONPATH=$PWD/src python scripts/ab_step.py "$model" --rounds 1 \
      --steps "$steps" "$@" | grep '^| simd\|^| torch'
  done
  i=$((i + 1))
done
