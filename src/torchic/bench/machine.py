"""What machine a benchmark ran on: CPU, caches, memory, GPU, versions, BLAS kernel, env.

Numbers are only comparable with the machine next to them, so every results
file carries this record. Everything here is best-effort: a field that cannot
be read is left out (or says why), it never stops the benchmark.
"""

import contextlib
import io
import os
import platform
import subprocess
import sys

from ..backends.webgpu.device import import_wgpu

# CPU flags worth printing in a one-line summary (the JSON keeps the full list)
KEY_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
             "avx512_bf16", "avx512_fp16", "amx_tile", "asimd", "sve")

ENV_PREFIXES = ("OPENBLAS_", "OMP_", "MKL_", "GOTO", "BLIS_", "TORCHIC_", "VK_", "WGPU_",
                "CUDA_VISIBLE_DEVICES")


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def cpu_info():
    info = {"arch": platform.machine(), "logical_cores": os.cpu_count()}
    try:
        info["usable_cores"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        info["usable_cores"] = os.cpu_count()
    text = _read("/proc/cpuinfo")
    fields = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields.setdefault(k.strip(), v.strip())
    model = fields.get("model name") or fields.get("Model") or fields.get("Hardware")
    info["model"] = model or platform.processor() or "unknown"
    for key, name in (("vendor_id", "vendor"), ("cpu family", "family"), ("model", "model_id"),
                      ("cpu MHz", "mhz")):
        if key in fields:
            info[name] = fields[key]
    flags = (fields.get("flags") or fields.get("Features") or "").split()
    info["flags"] = flags
    info["key_flags"] = [f for f in KEY_FLAGS if f in flags]
    if "hypervisor" in flags:
        info["virtualized"] = True
    caches = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(base)):
            if not entry.startswith("index"):
                continue
            level = _read(f"{base}/{entry}/level").strip()
            kind = _read(f"{base}/{entry}/type").strip()
            size = _read(f"{base}/{entry}/size").strip()
            if kind == "Instruction":
                continue
            caches[f"L{level}{'d' if kind == 'Data' else ''}"] = size
    except OSError:
        pass
    if caches:
        info["caches_per_core_cpu0"] = caches
    return info


def memory_info():
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return {"total_gib": round(int(line.split()[1]) / 2**20, 1)}
    return {}


def blas_info():
    """The BLAS NumPy uses, as threadpoolctl sees it (the kernel name says which code ran)."""
    out = {}
    try:
        import threadpoolctl
        out["threadpoolctl"] = threadpoolctl.__version__
        out["libraries"] = threadpoolctl.threadpool_info()
    except ImportError:
        out["threadpoolctl"] = None
        out["note"] = ("threadpoolctl is not installed: the BLAS kernel and thread count "
                       "could not be read or limited (pip install threadpoolctl)")
    try:
        import numpy as np
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            np.show_runtime()
        out["numpy_show_runtime"] = buf.getvalue().strip()
    except Exception as exc:  # noqa: BLE001  (older NumPy, or show_runtime failing)
        out["numpy_show_runtime"] = f"unavailable: {exc}"
    try:
        import numpy as np
        cfg = np.show_config(mode="dicts")
        out["numpy_build_blas"] = cfg.get("Build Dependencies", {}).get("blas", {})
    except Exception:  # noqa: BLE001
        pass
    return out


def blas_summary(blas):
    libs = [lib for lib in blas.get("libraries", []) if lib.get("user_api") == "blas"]
    if not libs:
        return blas.get("note", "unknown")
    return "; ".join(f"{lib.get('internal_api')} {lib.get('version')} "
                     f"(kernel {lib.get('architecture', '?')}, {lib.get('num_threads')} threads, "
                     f"{lib.get('threading_layer', '?')})" for lib in libs)


def env_info():
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}


def versions():
    v = {"python": platform.python_version(), "implementation": platform.python_implementation(),
         "platform": platform.platform()}
    import numpy as np
    v["numpy"] = np.__version__
    import torchic
    v["torchic"] = torchic.__version__
    commit = git_commit(os.path.dirname(torchic.__file__))
    if commit:
        v["torchic_git"] = commit
    for mod in ("torch", "tinygrad", "wgpu", "threadpoolctl", "matplotlib"):
        m = sys.modules.get(mod)
        if m is not None:
            v[mod] = getattr(m, "__version__", None) or _dist_version(mod)
    return v


def _dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001
        return "?"


def git_commit(path):
    try:
        head = subprocess.run(["git", "-C", path, "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def webgpu_adapter():
    """The adapter wgpu would pick (high-performance), or None / a reason."""
    try:
        wgpu = import_wgpu()       # (its instance made quietly: see device.py)
    except ImportError:
        return None
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        info = dict(adapter.info)
        return {k: info.get(k) for k in ("device", "vendor", "adapter_type", "backend_type",
                                         "description", "architecture") if k in info}
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}


def is_cpu_adapter(adapter):
    """True for software adapters (lavapipe / llvmpipe / SwiftShader): no GPU targets there."""
    if not adapter or "error" in adapter:
        return True
    text = " ".join(str(v) for v in adapter.values()).lower()
    return "cpu" in str(adapter.get("adapter_type", "")).lower() or any(
        s in text for s in ("llvmpipe", "lavapipe", "swiftshader", "software"))


def loadavg():
    """1-minute load average (None where unknown): > ~0.5 on an idle bench means noise."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def backend_platforms(names):
    """{backend: its describe_platform()} for the named torchic backends that are available."""
    out = {}
    try:
        from torchic import dispatcher
        for name in names:
            cls = dispatcher.backend_class(name)
            if cls.available()[0]:
                out[name] = cls.describe_platform()
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def collect(want_webgpu=False, backends=(), quick=False):
    """The machine record. quick: only what is cheap to read (the serve page's header): CPU
    without its flag list, memory, versions, env; else also BLAS, load, PyTorch, the WebGPU
    adapter (want_webgpu) and the describe_platform() of the given torchic backends."""
    load = loadavg()    # (first: reading the rest must not count as load)
    m = {"cpu": cpu_info(), "memory": memory_info(), "versions": versions(), "env": env_info()}
    if quick:
        del m["cpu"]["flags"]
        return m
    m["blas"] = blas_info()
    m["loadavg_1min_at_start"] = load
    torch = sys.modules.get("torch")
    if torch is not None:
        t = {"threads_default": torch.get_num_threads(), "cuda": torch.cuda.is_available()}
        try:
            t["mkl"] = bool(torch.backends.mkl.is_available())
            t["mkldnn"] = bool(torch.backends.mkldnn.is_available())
        except Exception:  # noqa: BLE001
            pass
        if t["cuda"]:
            t["cuda_device"] = torch.cuda.get_device_name(0)
            t["cuda_version"] = torch.version.cuda
        m["torch"] = t
    if want_webgpu:
        m["webgpu_adapter"] = webgpu_adapter()
    if backends:
        m["platforms"] = backend_platforms(backends)
    return m


VERSION_KEYS = ("python", "numpy", "torch", "torchic", "torchic_git", "tinygrad", "wgpu")


def hardware(m):
    """The machine in a few phrases (CPU, caches, memory, GPUs, torchic's backends): the
    one wording of the bench's terminal header and of the report's "Machine" line."""
    cpu = m["cpu"]
    parts = [f"{cpu.get('model')}, {cpu.get('usable_cores')} cores ({cpu.get('arch')}"
             f"{', virtualized' if cpu.get('virtualized') else ''}), flags "
             f"{' '.join(cpu.get('key_flags', []))}"]
    if cpu.get("caches_per_core_cpu0"):
        parts.append("caches " + ", ".join(f"{k} {s}" for k, s in
                                           cpu["caches_per_core_cpu0"].items()))
    if m.get("memory"):
        parts.append(f"{m['memory'].get('total_gib')} GiB RAM")
    if m.get("torch", {}).get("cuda"):
        parts.append(f"GPU {m['torch'].get('cuda_device')}")
    a = m.get("webgpu_adapter")
    if a:
        parts.append(f"WebGPU adapter {a['error']}" if a.get("error") else
                     f"WebGPU adapter {a.get('device')} ({a.get('adapter_type')}, "
                     f"{a.get('backend_type')})")
    for name, p in (m.get("platforms") or {}).items():
        parts.append(f"torchic {name}: " + (str(p) if name == "error" else p.get("kernels", "?") +
                     "".join(f", {k} {v}" for k, v in p.items() if k != "kernels" and
                             isinstance(v, (int, str)) and len(str(v)) <= 24)))
        if name != "error" and p.get("matmul"):
            parts.append(f"torchic {name} matmul: " + matmul_tuning_text(p["matmul"]))
    return parts


def _bytes(n):
    return f"{n >> 20}M" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n >> 10}K"


def matmul_tuning_text(t):
    """simd's matmul blocking and the cache figures it was derived from, in one phrase."""
    def cache(c):
        shared = f" / {c['shared_by']} CPUs" if c["shared_by"] > 1 else ""
        return f"{_bytes(c['size'])} {c['ways']}-way{shared}"
    l3 = f"L3 {cache(t['l3'])}" if t.get("l3") else "no L3"
    kc_min = f", >= {t['kc_min']}" if "kc_min" in t else ""
    return (f"{t['isa']} tile {t['mr']}x{t['nr']}, KC {t['kc']} (L1d {cache(t['l1d'])}{kc_min}), "
            f"NCB {t['ncb']} (L2 {cache(t['l2'])}), MCA {t['mca']} ({l3}), direct loop when "
            f"operands <= {_bytes(t['small_bytes'])}, split when >= {t['par_min_macs']} "
            f"MACs per thread, in parts of >= {t.get('min_part', '?')} rows "
            f"(caches from {t['cache_source']})")


def versions_text(m):
    v = m["versions"]
    return ", ".join(f"{k} {v[k]}" for k in VERSION_KEYS if k in v)


def env_text(m, fmt="{}={}", sep=" "):
    env = m.get("env") or {}
    return sep.join(fmt.format(k, v) for k, v in env.items()) or \
        "no OPENBLAS_* / OMP_* / MKL_* / TORCHIC_* variables set"


# OpenBLAS variables that change which kernel / blocking the NumPy reference runs. Some machines
# set them (OPENBLAS_CORETYPE=Haswell on an AVX-512 CPU halves NumPy's matmul); OpenBLAS reads them
# once, when NumPy loads it, so `bench` runs itself again without them (cli.py) and notes here
# what they were.
OPENBLAS_TUNING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# set by that re-run: "NAME=value,NAME=value" of the variables it removed
OPENBLAS_UNSET_MARK = "TORCHIC_BENCH_UNSET_OPENBLAS"


def without_openblas_tuning(environ):
    """(environment for the re-run, the variables removed) or (None, {}) when none is set."""
    removed = {k: environ[k] for k in OPENBLAS_TUNING if k in environ}
    if not removed or OPENBLAS_UNSET_MARK in environ:
        return None, {}
    env = {k: v for k, v in environ.items() if k not in removed}
    env[OPENBLAS_UNSET_MARK] = ",".join(f"{k}={v}" for k, v in removed.items())
    return env, removed


def openblas_env_text(m):
    env = m.get("env") or {}
    removed = dict(part.split("=", 1) for part in env.get(OPENBLAS_UNSET_MARK, "").split(",") if part)
    return ", ".join(f"{k}={env[k]}" if k in env else
                     f"{k}={removed[k]} in the environment, unset for this run" if k in removed else
                     f"{k} unset" for k in OPENBLAS_TUNING)


def summary_lines(m):
    """The terminal header of a bench run."""
    lines = [("machine " if i == 0 else " " * 8) + part for i, part in enumerate(hardware(m))]
    lines.append("versions " + versions_text(m))
    lines.append("BLAS    " + blas_summary(m["blas"]) + "; " + openblas_env_text(m))
    if m.get("loadavg_1min_at_start") is not None:
        lines.append(f"load    {m['loadavg_1min_at_start']:.2f} (1-minute load average at start)")
    lines.append("env     " + env_text(m))
    return lines
