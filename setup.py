"""Build step for the `simd` backend's Rust kernels (metadata lives in pyproject.toml).

`pip install .` and `pip install -e .` run `cargo build --release` on the
crate in kernels/ and put the library into the package as
torchic/backends/simd/_kernels.so. Without cargo the install still succeeds
(with a warning); the simd backend then reports itself unavailable and says
how to get it. Set TORCHIC_SKIP_KERNELS=1 to skip the build on purpose.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent
SIMD_PKG = ("torchic", "backends", "simd")


def _load_build_module():
    # by path: importing torchic here would need numpy in the build environment
    spec = importlib.util.spec_from_file_location(
        "_torchic_simd_build", ROOT / "src" / Path(*SIMD_PKG) / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        if os.environ.get("TORCHIC_SKIP_KERNELS") == "1":
            return
        build = _load_build_module()
        if shutil.which("cargo") is None:
            self.warn("cargo not found: the simd backend's Rust kernels are not built. "
                      "Install a Rust toolchain (https://rustup.rs) and reinstall to enable it.")
            return
        dests = [Path(self.build_lib, *SIMD_PKG)]
        if getattr(self, "editable_mode", False) or not self.build_lib:
            dests = [ROOT / "src" / Path(*SIMD_PKG)]
        try:
            for path in build.build(crate=ROOT / "kernels", dest_dirs=dests):
                print(f"torchic: built simd kernels -> {path}")
        except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
            self.warn(f"building the simd kernels failed ({exc}); the simd backend will be "
                      f"unavailable")


class BinaryDistribution(Distribution):
    """The wheel carries a native library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(
    cmdclass={"build_py": BuildPyWithKernels},
    distclass=BinaryDistribution,
    package_data={"torchic.backends.simd": ["_kernels.so", "_kernels.dll"]},
)

if __name__ == "__main__" and len(sys.argv) == 1:
    print(__doc__)
