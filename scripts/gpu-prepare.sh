#!/usr/bin/env bash
# Builds what a GPU machine without a Rust toolchain needs to run accel's CUDA checks, into
# .gpu/ (ignored by git): the differential test binaries (release, stripped), the examples
# and the GPU benchmark, and .gpu/run.sh, which runs them all there. With this project's
# `device` tool: run this here, then `run` with carry [".gpu"] and command `bash .gpu/run.sh`;
# the benchmark results come back under $OUT (gpu.md, gpu.json) to be committed.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu
mkdir -p .gpu/bin

# The test binaries that run sites in every mode (cuda on the GPU when there is one), and
# the corpus's differential test (its 45 programs at test sizes).
{
    cargo test --release --all-features -p accel-runtime \
        --test constructs --test cpu_backend --test cuda_backend --test listings --test api \
        --test devices --test devices_rows --test cuda_inputs --test device_choice \
        --no-run --message-format=json 2>/dev/null
    cargo test --release --features cuda -p accel-corpus --test differential \
        --no-run --message-format=json 2>/dev/null
} |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do
    cp "$exe" ".gpu/bin/test-$name"
done
cargo build --release -p accel-bench --features cuda --bin gpu_suite --bin devices
cargo build --release -p accel-corpus --features cuda --bin corpus
# Random programs (the fuzzer's batches, seeds FUZZ_SEEDS, 40 programs each), built here
# and checked on the CPU; there they run in the cuda mode on the GPU.
for seed in ${FUZZ_SEEDS:-31 32}; do
    cargo run --release -p accel-fuzz -- --seed "$seed" --programs 40 --modes cpu --no-reduce --no-save
    cp "target/debug/accel-fuzz-seed$seed" ".gpu/bin/fuzz-seed$seed"
done
cargo build --release -p accel-examples --features cuda
# Build-time kernels: their PTX is compiled here, so NVRTC must be found: the one on
# LD_LIBRARY_PATH or the system's, else NVIDIA's wheel in target/cuda-tools (as CI installs
# it; installed now when missing). The build must embed PTX: the GPU run's first check is
# that every site of the example runs the embedded kernels.
nvrtc_found() {
    ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && return 0
    local dirs d
    IFS=: read -ra dirs <<< "${LD_LIBRARY_PATH:-}"
    for d in "${dirs[@]}"; do
        [ -n "$d" ] && compgen -G "$d/libnvrtc.so*" >/dev/null && return 0
    done
    return 1
}
if ! nvrtc_found; then
    CUDA_TOOLS="$PWD/target/cuda-tools"
    if [ ! -e "$CUDA_TOOLS/nvidia/cu13/lib/libnvrtc.so.13" ]; then
        python3 -m pip install --quiet --disable-pip-version-check --no-deps \
            --target "$CUDA_TOOLS" "nvidia-cuda-nvrtc==13.0.*"
    fi
    export LD_LIBRARY_PATH="$CUDA_TOOLS/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
cargo build --release -p accel-aot-example
bundle=$(ls -t target/release/build/accel-aot-example-*/out/accel-kernels.json | head -1)
if ! python3 -c 'import json, sys; b = json.load(open(sys.argv[1])); sys.exit(0 if b["compiled"] and b["sites"] and all(s["ptx"] for s in b["sites"]) else 1)' "$bundle"; then
    echo "gpu-prepare: $bundle embeds no PTX (NVRTC was not found at build time)" >&2
    exit 1
fi
for b in gpu_suite devices corpus quickstart aliasing particles ode viterbi nn suite accel-aot-example; do
    cp "target/release/$b" .gpu/bin/
done
strip .gpu/bin/* 2>/dev/null || true
# Compressed with xz, they fit the device tool's carry limit (64 MiB with the working tree).
tar cf - -C .gpu bin | xz -T2 -6 > .gpu/bin.txz
rm -rf .gpu/bin

cat > .gpu/run.sh <<'RUN'
#!/usr/bin/env bash
# Runs on the GPU machine (see scripts/gpu-prepare.sh). NVRTC: the machine's own. The
# device tool brings back at most 8 files from $OUT, so everything printed goes to
# $OUT/run.log as it happens, and every step's own files (logs, benchmark results) are
# packed into $OUT/results.tgz after each step: a run stopped at its limit still returns
# what the steps before it wrote. Each step has a time limit of its own.
set -uo pipefail
cd "$(dirname "$0")/.."
root=/tmp/accel-gpu
bin=$root/bin
rm -rf $root && mkdir -p $root/out
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .gpu/bin.txz $root
OUT="${OUT:-$PWD/.gpu/out}"
mkdir -p "$OUT"
out=$root/out
exec > >(tee -a "$OUT/run.log") 2>&1
status=0
# Every step ends by the deadline (RUN_BUDGET seconds from now, default 400: the device
# tool's calls have a limit, and what a killed call printed last is lost).
deadline=$(( $(date +%s) + ${RUN_BUDGET:-400} ))
step() { # step NAME SECONDS COMMAND...: runs COMMAND with a limit, logs its outcome, packs results
    local name=$1 limit=$2 start rc left
    shift 2
    left=$(( deadline - $(date +%s) - 5 ))
    if [ $left -lt 10 ]; then
        echo "== $name: not run (the run's deadline)"
        status=1
        return
    fi
    [ $limit -gt $left ] && limit=$left
    echo "== $name ($(date +%T), limit ${limit}s)"
    start=$(date +%s)
    timeout --kill-after=5 "$limit" "$@"
    rc=$?
    echo "== $name: exit $rc after $(( $(date +%s) - start ))s"
    [ $rc -eq 0 ] || status=1
    tar czf "$OUT/results.tgz.tmp" -C $out . && mv "$OUT/results.tgz.tmp" "$OUT/results.tgz"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# Embedded kernels first, before NVRTC's folder joins the library path: every site's log
# line should say "PTX from the embedded bundle".
step accel-aot-example 30 bash -c "ACCEL_MODE=cuda ACCEL_LOG=1 '$bin/accel-aot-example' 2>'$out/aot.log'; rc=\$?; grep 'cuda: compiled' '$out/aot.log'; exit \$rc"
lib=$(find / -name 'libnvrtc.so.1[23]*' -not -path '/proc/*' 2>/dev/null | head -1)
[ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "NVRTC: ${lib:-not found}"
# The differential tests: every site in debug, cpu and cuda mode, cuda on the GPU.
for t in "$bin"/test-*; do
    n=$(basename "$t")
    step "$n" 90 bash -c "'$t' --test-threads=8 >'$out/$n.log' 2>&1; rc=\$?; grep -E '^test result|FAILED|panicked|SKIPPED' '$out/$n.log' | head -40; exit \$rc"
done
for e in quickstart aliasing particles ode viterbi nn; do
    step "$e" 30 bash -c "ACCEL_LOG=1 '$bin/$e' 2>'$out/$e.log'; rc=\$?; echo \"sites run by cuda: \$(grep -c 'cuda: ran' '$out/$e.log')\"; exit \$rc"
done
# Random programs: each compared in the cuda mode (on the GPU) with debug mode.
for f in "$bin"/fuzz-seed*; do
    n=$(basename "$f")
    step "$n" 60 bash -c "'$f' --modes cuda --only \$(seq -s, 0 39) --jobs 8 >'$out/$n.log' 2>&1; rc=\$?; grep -c '^P [0-9]* ok' '$out/$n.log'; grep -v '^P [0-9]* ok' '$out/$n.log' | head -30; exit \$rc"
done
step gpu_suite 60 "$bin/gpu_suite" --out "$out"
# One site on the GPU and the CPU together (devices.md).
step devices 90 "$bin/devices" --out "$out"
# Where a split's time goes: a trace of Mandelbrot on the GPU and the CPU (opens in Perfetto).
step devices-trace 60 env ACCEL_TRACE="$out/devices-trace.json" "$bin/devices" --only mandelbrot
# Two lanes of the GPU (one part's copies while another computes): the split tests on
# real streams, then the same measurement (lanes2/devices.md) and a trace of Black-Scholes.
step test-devices-lanes2 90 bash -c "ACCEL_CUDA_LANES=2 '$bin/test-devices' --test-threads=8 >'$out/test-devices-lanes2.log' 2>&1; rc=\$?; grep -E '^test result|FAILED|panicked|SKIPPED' '$out/test-devices-lanes2.log' | head -40; exit \$rc"
mkdir -p "$out/lanes2"
step devices-lanes2 90 env ACCEL_CUDA_LANES=2 "$bin/devices" --out "$out/lanes2"
step devices-lanes2-trace 60 env ACCEL_CUDA_LANES=2 ACCEL_TRACE="$out/lanes2/devices-trace.json" "$bin/devices" --only black-scholes
# Inputs kept on the GPU between calls, off and on, on the programs that call a site
# from a loop with a large input (the A/B the corpus run alone cannot show).
step keep-inputs-off 60 env ACCEL_CUDA_KEEP_INPUTS=0 "$bin/corpus" --quick --mode cuda --only cholesky,gramschmidt,fluid
step keep-inputs-on 60 "$bin/corpus" --quick --mode cuda --only cholesky,gramschmidt,fluid
# The default mode's choice of device per site (the GPU or the CPU, whichever ran a
# site's first calls faster) on programs the GPU wins and programs it loses in cuda mode.
step corpus-default 90 "$bin/corpus" --quick --mode default --only mandelbrot,n-body,canny,gemm,dot,byte-count,mvt,radix-sort,durbin,cholesky
# The corpus with its accel forms on the GPU, against rayon on this machine's cores.
step corpus-cuda 150 "$bin/corpus" --quick --mode cuda --out "$out"
step suite 90 "$bin/suite" --no-peers --out "$out"
exit $status
RUN
chmod +x .gpu/run.sh
du -sh .gpu
