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

# The test binaries that run sites in every mode (cuda on the GPU when there is one).
cargo test --release --all-features -p accel-runtime \
    --test constructs --test cpu_backend --test cuda_backend --test listings --test api \
    --test devices \
    --no-run --message-format=json 2>/dev/null |
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
for b in gpu_suite devices quickstart aliasing particles ode viterbi nn suite accel-aot-example; do
    cp "target/release/$b" .gpu/bin/
done
strip .gpu/bin/* 2>/dev/null || true
# Compressed, they fit the device tool's carry limit (64 MiB).
tar czf .gpu/bin.tgz -C .gpu bin
rm -rf .gpu/bin

cat > .gpu/run.sh <<'RUN'
#!/usr/bin/env bash
# Runs on the GPU machine (see scripts/gpu-prepare.sh). NVRTC: the machine's own.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=/tmp/accel-gpu/bin
rm -rf /tmp/accel-gpu && mkdir -p /tmp/accel-gpu && tar xzf .gpu/bin.tgz -C /tmp/accel-gpu
out="${OUT:-.gpu/out}"
mkdir -p "$out"
# Embedded kernels first, before NVRTC's folder joins the library path: every site's log
# line should say "PTX from the embedded bundle".
echo "== accel-aot-example"
ACCEL_MODE=cuda ACCEL_LOG=1 "$bin/accel-aot-example" 2>"$out/aot.log" | tee -a "$out/examples.log"
grep "cuda: compiled" "$out/aot.log" || true
lib=$(find / -name 'libnvrtc.so.1[23]*' -not -path '*/proc/*' 2>/dev/null | head -1)
[ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
status=0
for t in "$bin"/test-*; do
    echo "== $t"
    "$t" --test-threads=4 2>&1 | tail -25 | tee -a "$out/tests.log" || status=1
done
for e in "quickstart" "aliasing" "particles" "ode" "viterbi" "nn"; do
    echo "== $e"
    ACCEL_LOG=1 "$bin/$e" 2>"$out/$e.log" | tee -a "$out/examples.log" || status=1
    grep -c "cuda: ran" "$out/$e.log" || true
done
"$bin/gpu_suite" --out "$out" || status=1
# One site on the GPU(s) and the CPU together (devices.md).
"$bin/devices" --out "$out" || status=1
"$bin/suite" --no-peers --out "$out" || status=1
exit $status
RUN
chmod +x .gpu/run.sh
du -sh .gpu
