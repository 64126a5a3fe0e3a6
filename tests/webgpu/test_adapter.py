"""Adapter discovery, selection and the 'no adapter' / 'no wgpu' messages."""

import builtins

import pytest

import torchic
from torchic.backends.webgpu import WebGPUBackend, device, list_adapters


def test_list_adapters_reports_limits_and_features(webgpu_available):
    adapters = list_adapters()
    assert adapters, "an adapter is available, so list_adapters must list it"
    first = adapters[0]
    for key in ("name", "backend_type", "adapter_type", "limits", "features", "selected"):
        assert key in first
    assert first["limits"]["max-storage-buffer-binding-size"] > 0
    assert sum(a["selected"] for a in adapters) == 1


def test_default_prefers_native_api_over_opengl(webgpu_available):
    ranked = list_adapters()
    kinds = [a["backend_type"].lower() for a in ranked]
    if "opengl" in kinds and any(k in ("vulkan", "metal", "d3d12") for k in kinds):
        assert kinds.index("opengl") > min(kinds.index(k) for k in kinds if k != "opengl")


def test_select_by_backend_type_and_name(webgpu_available):
    best = list_adapters()[0]
    rt = torchic.init("webgpu", adapter=best["backend_type"])
    try:
        assert rt.backend.describe()["backend_type"] == best["backend_type"]
    finally:
        torchic.shutdown()
    word = best["name"].split()[0]
    rt = torchic.init("webgpu", adapter=word.upper())     # case-insensitive substring
    try:
        assert word.lower() in rt.backend.describe()["adapter"].lower()
    finally:
        torchic.shutdown()


def test_lavapipe_alias(webgpu_available):
    if not any("llvmpipe" in a["name"] for a in list_adapters()):
        pytest.skip("no lavapipe adapter here")
    rt = torchic.init("webgpu", adapter="lavapipe")
    try:
        assert "llvmpipe" in rt.backend.describe()["adapter"]
    finally:
        torchic.shutdown()


def test_env_var_override(webgpu_available, monkeypatch):
    monkeypatch.setenv(device.ENV_ADAPTER, "no-such-adapter-xyz")
    ok, why = WebGPUBackend.available()
    assert not ok and "no-such-adapter-xyz" in why and "found:" in why
    with pytest.raises(torchic.BackendUnavailableError, match="no-such-adapter-xyz"):
        torchic.init("webgpu")
    monkeypatch.setenv(device.ENV_ADAPTER, list_adapters()[0]["backend_type"])
    rt = torchic.init("webgpu")
    torchic.shutdown()
    assert rt.closed


def test_unknown_option_is_rejected(webgpu_available):
    with pytest.raises(TypeError, match="unknown options"):
        torchic.init("webgpu", bogus=1)


def test_no_adapter_names_the_driver_package(monkeypatch):
    monkeypatch.setattr(device, "_enumerate", lambda: [])
    ok, why = device.availability()
    assert not ok and "mesa-vulkan-drivers" in why


def test_missing_wgpu_says_how_to_install(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "wgpu" or name.startswith("wgpu."):
            raise ImportError("No module named 'wgpu'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    ok, why = device.availability()
    assert not ok and "pip install" in why
    assert list_adapters() == []
