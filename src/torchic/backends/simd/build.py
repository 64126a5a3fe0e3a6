"""Build the Rust kernels and put the library inside the package.

    python -m torchic.backends.simd.build          # release build, in place
    python -m torchic.backends.simd.build --check  # say whether cargo is there

``pip install`` (``-e`` too) builds the same library through setuptools-rust
(setup.py); this is the quick rebuild of a checkout after a Rust edit. The crate
lives in ``kernels/`` at the repository root; the library is copied next to this
file as ``_kernels.so`` (``_kernels.dll`` on Windows).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
LIB_NAME = "_kernels.dll" if sys.platform == "win32" else "_kernels.so"


def crate_dir(root=None):
    """The kernels/ crate: next to src/ in a checkout (or under `root`)."""
    if root is not None:
        return Path(root) / "kernels"
    return PACKAGE_DIR.parents[3] / "kernels"


def cargo_artifact(crate):
    target = Path(os.environ.get("CARGO_TARGET_DIR", crate / "target")) / "release"
    if sys.platform == "win32":
        return target / "torchic_kernels.dll"
    if sys.platform == "darwin":
        return target / "libtorchic_kernels.dylib"
    return target / "libtorchic_kernels.so"


def have_cargo():
    return shutil.which("cargo") is not None


def build(crate=None, dest_dirs=(PACKAGE_DIR,), quiet=False):
    """cargo build --release, then copy the library into each of dest_dirs.

    Returns the list of paths written. Raises RuntimeError if cargo is missing
    or the build fails.
    """
    crate = Path(crate) if crate is not None else crate_dir()
    if not (crate / "Cargo.toml").is_file():
        if crate == crate_dir():
            from torchic.backends.simd.native import HOW_TO_GET_IT_INSTALLED, platform_wheel_name
            raise RuntimeError(
                "this torchic is installed (not a source checkout), so the Rust crate to build "
                f"is not here (looked for {crate / 'Cargo.toml'}); "
                + HOW_TO_GET_IT_INSTALLED.format(wheel=platform_wheel_name()).split("; ", 1)[1])
        raise RuntimeError(f"no Rust crate at {crate}")
    if not have_cargo():
        raise RuntimeError("cargo not found: install a Rust toolchain (https://rustup.rs)")
    cmd = ["cargo", "build", "--release", "--lib", "--manifest-path", str(crate / "Cargo.toml")]
    if quiet:
        cmd.append("--quiet")
    subprocess.run(cmd, check=True)
    artifact = cargo_artifact(crate)
    written = []
    for d in dest_dirs:
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        target = d / LIB_NAME
        tmp = d / (LIB_NAME + ".tmp")
        shutil.copyfile(artifact, tmp)
        os.replace(tmp, target)  # atomic: a running process keeps its old mapping
        (d / "_kernels.build-error.txt").unlink(missing_ok=True)   # setup.py's note, now stale
        written.append(target)
    return written


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        print("cargo:", shutil.which("cargo") or "missing")
        return 0
    try:
        for p in build():
            print(f"built {p}")
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
