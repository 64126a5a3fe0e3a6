"""Loading the compiled kernels (``_kernels.so``) with ctypes.

Two handles on the same library: ``cdll`` calls release the GIL (used for
anything that may block: waiting on the stream), ``pydll`` calls keep it
(used for the per-op push, which takes well under a microsecond in Rust:
not dropping and re-taking the GIL saves ~0.1-0.3 us per op and keeps the
op order of one Python thread trivially intact).
"""

import ctypes
import json
import os
import sys
from pathlib import Path

# where setup.py (setuptools-rust) and build.py put the library; setup.py writes BUILD_ERROR
# beside it, saying why, when the install could not build it
PACKAGE_DIR = Path(__file__).resolve().parent
LIB_NAME = "_kernels.dll" if sys.platform == "win32" else "_kernels.so"
BUILD_ERROR = "_kernels.build-error.txt"

HOW_TO_GET_IT = ("how to get it: install a Rust toolchain (https://rustup.rs) and reinstall "
                 "with pip install -e . (or run python -m torchic.backends.simd.build)")
# an installed torchic (a wheel, pure when it was built without cargo) has no crate beside it:
# the platform wheel holds the kernels; a build from source with cargo compiles them
HOW_TO_GET_IT_INSTALLED = (
    "how to get it: this torchic was installed without them (a wheel built where cargo was "
    "missing is pure: py3-none-any); install the platform wheel that holds them, "
    "pip install --force-reinstall --no-deps {wheel}, which `pip wheel --no-deps .` makes in "
    "a clone of torchic's source when cargo is on the PATH (https://rustup.rs); or, with cargo "
    "on the PATH, reinstall from source: pip install --force-reinstall --no-deps <the clone or "
    "the sdist> (or --no-binary torchic torchic from an index that has the sdist)")


def platform_wheel_name():
    """The file name of the wheel with the kernels for this machine (setup.py's tag)."""
    import sysconfig

    from torchic import __version__
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"torchic-{__version__}-py3-none-{plat}.whl"


def in_checkout():
    """True when this package runs from a source checkout (kernels/ next to src/)."""
    return (PACKAGE_DIR.parents[3] / "kernels" / "Cargo.toml").is_file()


def how_to_get_it():
    if in_checkout():
        return HOW_TO_GET_IT
    return HOW_TO_GET_IT_INSTALLED.format(wheel=platform_wheel_name())


def library_path():
    return Path(os.environ.get("TORCHIC_SIMD_LIB") or PACKAGE_DIR / LIB_NAME)


class Native:
    """The library's C ABI with argument / return types declared."""

    def __init__(self, path):
        self.path = str(path)
        self.cdll = ctypes.CDLL(self.path)
        self.pydll = ctypes.PyDLL(self.path)
        c_void_p, c_int64, c_char_p = ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p
        sig = {
            "tk_isa": ([], c_char_p),
            "tk_op_name": ([c_int64], c_char_p),
            "tk_op_fuses": ([c_int64], ctypes.c_int32),
            "tk_op_writes": ([c_int64], c_int64),
            "tk_new": ([c_int64], c_void_p),
            "tk_free": ([c_void_p], None),
            "tk_add_arena": ([c_void_p, ctypes.c_uint64, ctypes.c_uint64], c_int64),
            "tk_push": ([c_void_p, c_char_p, c_int64, c_int64], c_int64),
            "tk_write": ([c_void_p, c_char_p, c_int64, c_void_p, c_int64], c_int64),
            "tk_push_error": ([c_void_p, c_char_p, c_int64], c_int64),
            "tk_wait": ([c_void_p, c_int64], ctypes.c_int32),
            "tk_done": ([c_void_p], c_int64),
            "tk_take_error": ([c_void_p, c_char_p, c_int64], ctypes.c_int32),
            "tk_prepare": ([c_void_p, c_char_p, c_int64, c_char_p, c_int64], c_int64),
            "tk_push_program": ([c_void_p, c_int64, c_char_p, c_int64], c_int64),
            "tk_release_program": ([c_void_p, c_int64], None),
        }
        for lib in (self.cdll, self.pydll):
            for name, (args, res) in sig.items():
                fn = getattr(lib, name)
                fn.argtypes = args
                fn.restype = res
        # blocking calls release the GIL; the rest keep it
        self.wait = self.cdll.tk_wait
        self.free = self.cdll.tk_free
        # (a push may run its batch on the calling thread: Stream::push_or_inline)
        self.push = self.cdll.tk_push
        self.write = self.cdll.tk_write
        self.push_error = self.pydll.tk_push_error
        self.new = self.pydll.tk_new
        self.add_arena = self.pydll.tk_add_arena
        self.done = self.pydll.tk_done
        self.take_error = self.pydll.tk_take_error
        self.prepare = self.pydll.tk_prepare
        self.push_program = self.pydll.tk_push_program
        self.release_program = self.pydll.tk_release_program

    def op_fuses(self, code):
        """1 when the op of this code fuses as an elementwise stage (kernels/src/fuse.rs)."""
        return self.pydll.tk_op_fuses(code)

    def op_writes(self, code):
        """The inputs the op of this code writes in place: a bit mask (bit k: input k)."""
        return self.pydll.tk_op_writes(code)

    def isa(self):
        return self.pydll.tk_isa().decode()

    def matmul_tuning(self):
        """The matmul blocking the kernels derived from this CPU's caches, and those caches
        (kernels/src/matmul.rs `describe_json`); {} from a library built before it."""
        fn = getattr(self.pydll, "tk_describe", None)
        if fn is None:
            return {}
        fn.restype = ctypes.c_char_p
        return json.loads(fn().decode())

    def op_names(self):
        names, i = [], 0
        while True:
            n = self.pydll.tk_op_name(i)
            if n is None:
                return names
            names.append(n.decode())
            i += 1


_native = None
_error = None


def load():
    """The loaded library, or None (then ``load_error()`` says why)."""
    global _native, _error
    if _native is None and _error is None:
        path = library_path()
        if not path.is_file():
            note = path.with_name(BUILD_ERROR)
            why = note.read_text(encoding="utf-8").strip() if note.is_file() else ""
            _error = (f"the compiled kernels are missing ({path})" + (f": {why}" if why else "")
                      + f"; {how_to_get_it()}")
        else:
            try:
                _native = Native(path)
            except OSError as exc:
                _error = f"cannot load {path}: {exc}; {how_to_get_it()}"
    return _native


def load_error():
    load()
    return _error
