"""Adapter discovery and device creation for the `webgpu` backend.

wgpu (wgpu-native) can see several adapters on one machine: a discrete GPU
through Vulkan / Metal / D3D12, the same GPU through OpenGL, and Mesa's
lavapipe (a Vulkan implementation on the CPU). We rank them ourselves rather
than trusting ``request_adapter`` alone, because its OpenGL adapters can run
only a subset of what compute needs:

    native API (Vulkan, Metal, D3D12) before OpenGL,
    discrete GPU > integrated GPU > virtual > CPU (high-performance first).

The choice can be overridden with ``torchic.init("webgpu", adapter=...)`` or the
environment variable ``TORCHIC_WEBGPU_ADAPTER``: a case-insensitive substring of
the adapter's name / vendor / description, a backend type ("vulkan", "metal",
"d3d12", "opengl"), or an adapter type ("discrete", "integrated", "cpu").
"""

import os

from ...dispatcher import env_choice

ENV_ADAPTER = "TORCHIC_WEBGPU_ADAPTER"

DRIVER_HINT = ("install a Vulkan driver; on Debian/Ubuntu without a GPU, Mesa's CPU "
               "driver lavapipe works: `apt-get install mesa-vulkan-drivers`")

_BACKEND_RANK = {"vulkan": 0, "metal": 0, "d3d12": 0, "opengl": 2, "gl": 2}
_TYPE_RANK = {"discretegpu": 0, "discrete-gpu": 0, "integratedgpu": 1,
              "integrated-gpu": 1, "virtualgpu": 2, "cpu": 3}

# limits the backend needs raised above WebGPU's defaults (when the adapter has them)
WANTED_LIMITS = (
    "max-storage-buffer-binding-size", "max-buffer-size",
    "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x", "max-storage-buffers-per-shader-stage",
    "max-compute-workgroups-per-dimension",
)
WANTED_FEATURES = ("timestamp-query",)
# float16 tensors stored natively (2 bytes an element, wgsl.storage_table) where the adapter
# has WGSL's `shader-f16`; TORCHIC_WEBGPU_F16=0 keeps them in f32 words (tests of that path)
F16_FEATURE = "shader-f16"
ENV_F16 = "TORCHIC_WEBGPU_F16"


# Mesa's Vulkan drivers install an implicit layer, device-select, that looks for a Wayland
# display when a Vulkan instance is made; on a headless machine libwayland then prints
# "error: XDG_RUNTIME_DIR is invalid or not set in the environment." to stderr for every
# probe (every enumeration and adapter request after it: `info`, the bench, each bench
# run on the page). torchic ranks adapters itself (above), so it makes wgpu's instance
# once, before its first use, with Mesa's switch NODEVICE_SELECT=1 set only while the
# instance is made. (The instance is per process: one other code made first is kept.)
_instance_made = False


def _make_instance():
    global _instance_made
    if _instance_made:
        return
    _instance_made = True
    saved = os.environ.get("NODEVICE_SELECT")
    os.environ["NODEVICE_SELECT"] = "1"
    try:
        from wgpu.backends.wgpu_native.extras import set_instance_extras
        set_instance_extras()      # wgpu's default instance, made now
    except Exception:  # noqa: BLE001  an instance made already, or another wgpu-py
        pass
    finally:
        if saved is None:
            del os.environ["NODEVICE_SELECT"]
        else:
            os.environ["NODEVICE_SELECT"] = saved


def import_wgpu():
    """Import wgpu (its instance made quietly, see above) or raise ImportError with an
    install hint."""
    try:
        import wgpu  # noqa: F401
    except ImportError as exc:
        raise ImportError("the `wgpu` package is not installed: `pip install 'torchic[webgpu]'` "
                          f"(or `pip install wgpu`): {exc}") from exc
    _make_instance()
    return wgpu


def _info(adapter):
    info = adapter.info
    return {
        "name": info.get("device", "") or info.get("description", ""),
        "vendor": info.get("vendor", ""),
        "description": info.get("description", ""),
        "backend_type": str(info.get("backend_type", "")),
        "adapter_type": str(info.get("adapter_type", "")),
    }


def _rank(adapter):
    i = _info(adapter)
    return (_BACKEND_RANK.get(i["backend_type"].lower(), 1),
            _TYPE_RANK.get(i["adapter_type"].lower().replace("_", "-"), 2))


def describe_adapter(adapter):
    d = _info(adapter)
    d["limits"] = {k: int(v) for k, v in dict(adapter.limits).items()}
    d["features"] = sorted(str(f) for f in adapter.features)
    return d


def _enumerate():
    wgpu = import_wgpu()
    try:
        adapters = list(wgpu.gpu.enumerate_adapters_sync())
    except Exception:  # pragma: no cover - depends on the platform
        adapters = []
    if not adapters:
        try:
            a = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
            if a is not None:
                adapters = [a]
        except Exception:  # pragma: no cover
            pass
    return adapters


def list_adapters():
    """Every adapter wgpu can see, best first, as dicts with name/backend/type/limits/features.

    The first entry is the one ``init("webgpu")`` picks without an override
    (``"selected": True`` marks the one the current override or env var picks).
    """
    try:
        adapters = sorted(_enumerate(), key=_rank)
    except ImportError:
        return []
    want = os.environ.get(ENV_ADAPTER) or None
    chosen = None
    try:
        chosen = select_adapter(want, adapters)
    except RuntimeError:
        pass
    out = []
    for a in adapters:
        d = describe_adapter(a)
        d["selected"] = a is chosen
        out.append(d)
    return out


# names people use for an adapter that reports itself differently
ALIASES = {"lavapipe": "llvmpipe", "swiftshader": "swiftshader", "nvidia": "nvidia"}


def _matches(adapter, want):
    w = want.lower().strip()
    w = ALIASES.get(w, w)
    i = _info(adapter)
    if w in (i["backend_type"].lower(), i["adapter_type"].lower(),
             i["adapter_type"].lower().replace("gpu", "").strip("-_")):
        return True
    return any(w in i[k].lower() for k in ("name", "vendor", "description"))


def select_adapter(want=None, adapters=None):
    """The adapter to use: the best-ranked one, or the best one matching ``want``."""
    if adapters is None:
        adapters = sorted(_enumerate(), key=_rank)
    if not adapters:
        raise RuntimeError(f"wgpu found no adapter; {DRIVER_HINT}")
    if want:
        matching = [a for a in adapters if _matches(a, want)]
        if not matching:
            found = "; ".join(f"{_info(a)['name']} ({_info(a)['backend_type']}, "
                              f"{_info(a)['adapter_type']})" for a in adapters)
            raise RuntimeError(f"no adapter matches {want!r}; found: {found}")
        return matching[0]
    return adapters[0]


def create_device(adapter):
    """Request a device with the adapter's full storage limits and the optional features."""
    limits = dict(adapter.limits)
    required_limits = {k: limits[k] for k in WANTED_LIMITS if k in limits}
    wanted = WANTED_FEATURES
    if env_choice(ENV_F16, "1", ("0", "1")) == "1":
        wanted += (F16_FEATURE,)
    features = [f for f in wanted if f in adapter.features]
    device = adapter.request_device_sync(required_features=features,
                                         required_limits=required_limits,
                                         label="torchic")
    return device, features


def availability():
    """(True, "") or (False, why) -- what ``WebGPUBackend.available`` reports."""
    try:
        import_wgpu()
    except ImportError as exc:
        return False, str(exc)
    try:
        adapters = sorted(_enumerate(), key=_rank)
    except Exception as exc:  # pragma: no cover
        return False, f"wgpu could not enumerate adapters ({exc}); {DRIVER_HINT}"
    usable = [a for a in adapters if _BACKEND_RANK.get(_info(a)["backend_type"].lower(), 1) < 2]
    if not adapters:
        return False, f"wgpu found no adapter; {DRIVER_HINT}"
    want = os.environ.get(ENV_ADAPTER)
    if want:
        try:
            select_adapter(want, adapters)
        except RuntimeError as exc:
            return False, str(exc)
    elif not usable:
        found = ", ".join(f"{_info(a)['name']} ({_info(a)['backend_type']})" for a in adapters)
        return False, (f"wgpu found only OpenGL adapters ({found}), which cannot run "
                       f"torchic's compute shaders reliably; {DRIVER_HINT}")
    return True, ""
