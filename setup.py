"""Build glue for the `simd` backend's Rust kernels (the metadata lives in pyproject.toml).

setuptools-rust (a build requirement, from PyPI) runs `cargo rustc --release` on the crate in
kernels/, a plain cdylib with no Python bindings, and copies the library into the package as
torchic/backends/simd/_kernels.so (into src/ for `pip install -e .`). Python loads it with
ctypes, so a wheel that holds it is tagged py3-none-<platform>: one wheel per platform, any
CPython (`pip wheel .` with cargo on the PATH makes it; tests/packaging/test_wheel.py installs
it in a fresh venv). A wheel built without the library (no cargo, a failed build,
TORCHIC_SKIP_KERNELS=1) is a pure py3-none-any wheel: the workers and webgpu backends only.

The extension is optional: without cargo, or when the build fails, the install still succeeds.
pip shows a build's output only on failure or with -v, so the reason is also written next to
where the library would be (_kernels.build-error.txt) and the simd backend's "unavailable"
message quotes it. TORCHIC_REQUIRE_KERNELS=1 makes a missing cargo or a failed build fail the
install instead (CI sets it); TORCHIC_SKIP_KERNELS=1 skips the build on purpose.
"""

import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.errors import PlatformError
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools_rust import Binding, RustExtension, build_rust

LIB_NAME = "_kernels.dll" if os.name == "nt" else "_kernels.so"   # what native.py loads
BUILD_ERROR = "_kernels.build-error.txt"                          # what native.py quotes


class BuildKernels(build_rust):
    def get_dylib_ext_path(self, ext, target_fname):
        # a fixed name instead of _kernels.cpython-3XY-<platform>.so: not a CPython module
        return str(Path(super().get_dylib_ext_path(ext, target_fname)).with_name(LIB_NAME))

    def run(self):
        for ext in self.extensions:
            note = Path(self.get_dylib_ext_path(ext, ext.name)).with_name(BUILD_ERROR)
            note.unlink(missing_ok=True)
            if shutil.which(self.cargo) is None:   # $CARGO, or cargo on PATH
                if not ext.optional:
                    raise PlatformError("cargo not found on PATH (TORCHIC_REQUIRE_KERNELS=1): "
                                        "install a Rust toolchain (https://rustup.rs)")
                self._failed(note, "cargo was not found on PATH when this torchic was built")
                continue
            try:
                self.run_for_extension(ext)
            except Exception as exc:   # e.g. `cargo rustc ...` failed with code 101
                if not ext.optional:
                    raise
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                self._failed(note, f"building the Rust crate failed when this torchic was built "
                                   f"({first}; `pip install -v` shows cargo's output)")

    def _failed(self, note, reason):
        if not self.inplace:   # a library left in build/ by an earlier build is not this one
            note.with_name(LIB_NAME).unlink(missing_ok=True)
        self.warn(f"the simd backend's kernels were not built: {reason}; torchic installs "
                  f"without them (the workers and webgpu backends do not need them)")
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(reason + "\n", encoding="utf-8")


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        # called once the package is installed into bdist_dir: the tag says what is in it.
        # The library is loaded with ctypes: it depends on the platform, not on CPython's ABI;
        # without it the wheel is pure (install_lib put the files at the wheel's root either way)
        built = any(Path(self.bdist_dir).rglob(LIB_NAME)) if self.bdist_dir else False
        self.root_is_pure = not built
        _, _, plat = super().get_tag()
        return "py3", "none", plat if built else "any"


skip = os.environ.get("TORCHIC_SKIP_KERNELS") == "1"
setup(
    rust_extensions=[] if skip else [
        RustExtension("torchic.backends.simd._kernels", path="kernels/Cargo.toml",
                      binding=Binding.NoBinding, debug=False,
                      optional=os.environ.get("TORCHIC_REQUIRE_KERNELS") != "1")],
    cmdclass={"build_rust": BuildKernels, "bdist_wheel": PlatformWheel},
)
