#!/usr/bin/env bash
# The GPU acceptance check of meshplan-calibrate (issue 7), for a machine with NVIDIA GPUs:
# builds, runs the quick calibration on every local GPU with the CUDA backend, and prints the
# figures the issue asks for: BF16 GEMM 8192^3 as a fraction of the dense peak (goal >= 0.75),
# HBM copy as a fraction of the datasheet (goal >= 0.80), and the NCCL fits.
# Usage: calibrate/gpu_quick_check.sh [OUT_DIR]   (default: build/gpu-check)
# MESHPLAN_GPU_BUILD=DIR uses the binaries already built in DIR (DIR/calibrate/meshplan-calibrate,
# DIR/planner/meshplan) instead of running tools/setup: for a machine that cannot install packages.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/gpu-check}"
mkdir -p "$out"
build="${MESHPLAN_GPU_BUILD:-}"
if [ -z "$build" ]; then
  "$root/tools/setup"
  build="$root/build"
fi
gpus="$(nvidia-smi -L | wc -l)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "gpu_quick_check: $gpus GPU(s); quick calibration with --backend cuda" >&2
mpirun --oversubscribe -np "$gpus" "$build/calibrate/meshplan-calibrate" --backend cuda \
  --quick --watchdog-s 120 --out "$out/gpu-profile.json" 2> "$out/calibrate.log"
tail -n 40 "$out/calibrate.log" >&2
python3 - "$out/gpu-profile.json" "$root/configs/gpus" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
records = json.load(open(sys.argv[1] + ".records.json"))
gpu = json.load(open(f"{sys.argv[2]}/{profile['gpu']}.json"))
peak = gpu["peak_flops_per_s"]["bf16"]
hbm = gpu["hbm_bandwidth_bytes_per_s"]
print(f"device: {records['provenance']['device']['name']} (preset {profile['gpu']}), "
      f"{records['provenance']['ranks']} rank(s), versions {records['provenance']['versions']}")
for r in records["records"]["gemm"]:
    if (r["m"], r["n"], r["k"]) == (8192, 8192, 8192):
        print(f"BF16 GEMM 8192^3: {r['flops_per_s']/1e12:.1f} TFLOP/s = {r['flops_per_s']/peak:.3f} "
              f"of {peak/1e12:.1f} dense (goal >= 0.75), verified {r['verified']}")
copy = [r for r in records["records"]["memory"] if r["kernel"] == "copy"]
best = max(copy, key=lambda r: r["bytes_per_s"])
print(f"HBM copy: best {best['bytes_per_s']/1e9:.0f} GB/s = {best['bytes_per_s']/hbm:.3f} of the "
      f"datasheet (goal >= 0.80); profile hbm_efficiency {profile['hbm_efficiency']:.3f}")
print(f"GEMM fit: peak_efficiency {profile['gemm']['peak_efficiency']:.3f}, "
      f"half_efficiency_flops {profile['gemm']['half_efficiency_flops']:.3g}")
for f in profile["collectives"]:
    print(f"NCCL {f['collective']:15s} {f['tier']:9s} n={f['group_size']:<3d} "
          f"alpha {f['alpha_s']*1e6:7.2f} us  busbw {f['busbw_bytes_per_s']/1e9:7.1f} GB/s")
wrong = [r for r in records["records"]["collectives"] if not r["verified"]]
print(f"collective records: {len(records['records']['collectives'])}, failed checks: {len(wrong)}")
PY
# The measured profile on the first cluster preset of the same GPU (dgx-h200 for an H200).
gpu="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["gpu"])' "$out/gpu-profile.json")"
cluster="$(grep -l "\"gpu\": \"$gpu\"" "$root"/configs/clusters/*.json | head -n 1)"
"$build/planner/meshplan" estimate --model llama3-8b --cluster "${cluster:-dgx-h100}" \
  --profile "$out/gpu-profile.json" | head -n 12
