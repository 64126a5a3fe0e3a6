"""PyTorch's CPU random generator, bit for bit: its mt19937 engine and its transforms.

`torch.manual_seed(s)` followed by the same random calls gives the same numbers under
`import torchic as torch` as under PyTorch's CPU build (checked against torch 2.13 by
tests/unit/test_torch_rng.py). What PyTorch does, and so what this module does:

- Engine: the standard 32-bit Mersenne Twister (init_genrand seeding from the low 32
  bits of the seed). `random()` is one 32-bit output, `random64()` two: (first << 32) |
  second. NumPy's MT19937 bit generator runs the same recurrence in C, so the engine is
  NumPy's MT19937 with the seeded state written into it (our seeding, its twist).
- float uniform [from, to): the low 24 bits of one random() times 2^-24, then
  fma(x, to - from, from) in float32 (the AVX2 build fuses it); a result equal to `to`
  becomes `from`. double uniform: the low 53 bits of random64() times 2^-53, then
  fma(x, to - from, from) in double.
- normal of a float64 tensor: as the float32 block kernel's plan (>= 16 contiguous
  elements: double uniforms, Box-Muller on blocks of 16, the tail recomputed) in double
  with libm's log / cos / sin; fewer elements: the per-element double Box-Muller below.
- normal, float32 tensor of >= 16 elements, contiguous: uniforms for the whole tensor
  first, then Box-Muller on blocks of 16 (u1 = 1 - data[0:8], u2 = data[8:16];
  data[0:8] = r cos, data[8:16] = r sin), then, when 16 does not divide n, 16 fresh
  uniforms for the last 16 elements, recomputed. The float32 math is PyTorch's AVX2 kernel
  (avx_mathfun's Cephes log256_ps / sincos256_ps, with the multiply-adds GCC contracts
  into FMAs), emulated op for op in float32 NumPy with an exact FMA. PyTorch takes this
  kernel on every x86 machine with AVX2 (its AVX-512 dispatch also uses it); a CPU without
  AVX2 runs a libm float kernel instead, whose last bits differ.
- normal, fewer than 16 elements (or not contiguous): per element, double Box-Muller from
  two double uniforms u1, u2: r = sqrt(-2 log1p(-u2)), theta = 2 pi u1; it returns
  r cos(theta) and caches r sin(theta) in the generator for the next scalar normal (the
  block kernel neither reads nor clears the cache; manual_seed clears it).
- exponential: -1/lambda * log1p(-u), u a double uniform (libm's log1p, via math).
- randint(low, high): random() % (high - low) + low when the range is below 2^28,
  random64() % range otherwise.
- randperm(n): Fisher-Yates, for i in 0..n-2 swap r[i] with r[i + random() % (n - i)].
- multinomial without replacement, or one sample: q = exponential(1) per weight, then the
  top-k (argmax for one) of weights / q. With replacement and more than one sample: a
  float32 running-sum CDF normalized by its last value, one double uniform per sample,
  the first bucket whose CDF is >= u.

Transcendentals in double (log1p, sin, cos) are the platform libm's, through `math`, as
PyTorch's are; the float32 AVX2 path uses no libm at all.
"""

import functools
import math
import numbers
import os
from fractions import Fraction
from typing import Any

import numpy as np

from .devices import check_device

DEFAULT_SEED = 67280421310721     # PyTorch's default_rng_seed_val
_N = 624
_STATE_BYTES = 5056                # sizeof(CPUGeneratorImplState): torch.get_rng_state()
_LEGACY_STATE_BYTES = 5048         # sizeof(CPUGeneratorImplStateLegacy)
_STATE_LAYOUT = np.dtype([("seed", "<u8"), ("left", "<i4"), ("seeded", "<i4"),
                          ("next", "<u8"), ("state", "<u8", (_N,)), ("normal_x", "<f8"),
                          ("normal_y", "<f8"), ("normal_rho", "<f8"),
                          ("normal_is_valid", "<i4"), ("pad", "<i4"),
                          ("next_float_normal", "<f4"), ("float_normal_valid", "u1"),
                          ("pad2", "u1", (3,))])
assert _STATE_LAYOUT.itemsize == _STATE_BYTES

_f32 = np.float32
_f64 = np.float64


@functools.lru_cache(maxsize=32)
def seeded_state(seed):
    """mt19937's init_genrand: the 624 state words for `seed` (its low 32 bits), read-only.
    Cached: programs and tests re-seed with the same few seeds (the loop is ~100 us)."""
    words = [seed & 0xFFFFFFFF]
    x = words[0]
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFFFFFF
        words.append(x)
    state = np.array(words, dtype=np.uint32)
    state.flags.writeable = False
    return state


def _check_seed(seed):
    """Generator.manual_seed's argument check: an int in [-2^63, 2^64), kept mod 2^64."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return seed % 2 ** 64


class Generator:
    """PyTorch's torch.Generator for the CPU: mt19937 plus the cached scalar normal.

    Generator() is seeded with PyTorch's default seed; Generator(device="cpu") is
    accepted (torchic runs every tensor as a CPU tensor). torchic extension kept for old
    code: Generator(seed) with an int seeds it.
    """

    def __init__(self, device: Any = None, seed: int | None = None) -> None:
        if isinstance(device, numbers.Integral) and not isinstance(device, bool):
            device, seed = None, device           # Generator(seed): torchic's spelling
        self.device = check_device(device, "Generator(): ")
        self._bits = np.random.MT19937()
        self._engine_state: tuple[Any, int] | None = None
        self.manual_seed(DEFAULT_SEED if seed is None else seed)

    # -- seeding and state --------------------------------------------------------------

    def manual_seed(self, seed: int) -> "Generator":
        """Seed the engine and drop the cached normal; returns the generator."""
        self._seed = _check_seed(seed)
        self._set_engine(seeded_state(self._seed), 624, fresh=True)
        self._normal = None          # next_double_normal_sample
        self._float_normal = None    # next_float_normal_sample (kept for the state only)
        return self

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def seed(self) -> int:
        """Seed from the OS's entropy and return that seed (PyTorch's Generator.seed)."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def _set_engine(self, key, pos, fresh):
        # kept until the engine is next used (_engine): NumPy's state setter takes ~40 us,
        # and code seeds more often than it draws (a test seeds before every call)
        self._engine_state = (key, pos)
        self._fresh = fresh          # seeded, nothing drawn: PyTorch's next_ is then 0

    def _engine(self) -> np.random.MT19937:
        if self._engine_state is not None:
            key, pos = self._engine_state
            self._bits.state = {"bit_generator": "MT19937",
                                "state": {"key": np.asarray(key, dtype=np.uint32), "pos": pos}}
            self._engine_state = None
        return self._bits

    def get_state(self) -> np.ndarray:
        """The state as PyTorch's torch.get_rng_state() bytes (CPUGeneratorImplState).

        torchic tensors hold no uint8, so this is a NumPy uint8 array of 5056 bytes, equal
        to torch's ByteTensor `.numpy()`; set_state takes it back (or torch's own).
        """
        st = self._engine().state["state"]
        pos = int(st["pos"])
        rec = np.zeros((), dtype=_STATE_LAYOUT)
        rec["seed"] = self._seed
        rec["left"] = 1 if pos == _N else _N + 1 - pos
        rec["seeded"] = 1
        rec["next"] = 0 if self._fresh else pos
        rec["state"] = st["key"]
        if self._normal is not None:
            rec["normal_is_valid"], rec["normal_y"] = 1, self._normal
        if self._float_normal is not None:
            rec["float_normal_valid"], rec["next_float_normal"] = 1, self._float_normal
        return np.frombuffer(rec.tobytes(), dtype=np.uint8).copy()

    def set_state(self, new_state: object) -> "Generator":
        """Restore a state from get_state() (torchic's or torch's, either size torch takes)."""
        data = np.asarray(new_state)
        if data.ndim != 1 or data.dtype.kind not in "ui" or (
                data.size and (data.min() < 0 or data.max() > 255)):
            raise TypeError("RNG state must be a torch.ByteTensor (the bytes get_state() "
                            "returns)")
        raw = data.astype(np.uint8).tobytes()
        if len(raw) not in (_STATE_BYTES, _LEGACY_STATE_BYTES):
            raise RuntimeError(f"Expected either a CPUGeneratorImplStateLegacy of size "
                               f"{_LEGACY_STATE_BYTES} or a CPUGeneratorImplState of size "
                               f"{_STATE_BYTES} but found the input RNG state size to be "
                               f"{len(raw)}")
        rec = np.frombuffer(raw.ljust(_STATE_BYTES, b"\0"), dtype=_STATE_LAYOUT)[0]
        left, nxt = int(rec["left"]), int(rec["next"])
        if not (rec["seeded"] and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        normal = None
        if rec["normal_is_valid"]:
            if len(raw) == _STATE_BYTES:
                normal = float(rec["normal_y"])
            else:   # the legacy state kept the uniform and rho, not the sample
                normal = float(rec["normal_rho"]) * math.sin(2.0 * math.pi *
                                                             float(rec["normal_x"]))
        float_normal = None
        if len(raw) == _STATE_BYTES and rec["float_normal_valid"]:
            float_normal = float(rec["next_float_normal"])
        self._seed = int(rec["seed"])
        self._set_engine(rec["state"].astype(np.uint32), _N if left == 1 else nxt,
                         fresh=left == 1 and nxt == 0)
        self._normal, self._float_normal = normal, float_normal
        return self

    # -- raw draws ----------------------------------------------------------------------

    def random(self, n: int) -> np.ndarray:
        """n outputs of random(): uint32."""
        if n <= 0:
            return np.empty(0, dtype=np.uint32)
        self._fresh = False
        return self._engine().random_raw(n).astype(np.uint32)

    def random64(self, n: int) -> np.ndarray:
        """n outputs of random64(): uint64, each from two 32-bit draws (first is high)."""
        r = self.random(2 * n).astype(np.uint64)
        return (r[0::2] << np.uint64(32)) | r[1::2]

    def random_int64(self) -> int:
        """`torch.empty((), dtype=torch.int64).random_(generator=g).item()`: random64's
        low 63 bits (the draw torch.utils.data's samplers seed from)."""
        return int(self.random64(1)[0]) & (2 ** 63 - 1)

    # -- distributions ------------------------------------------------------------------

    def uniform_float(self, n: int, low: float = 0.0, high: float = 1.0) -> np.ndarray:
        """n float32 uniforms in [low, high): uniform_ / rand."""
        lo, hi = _f32(low), _f32(high)
        x = (self.random(n) & 0xFFFFFF).astype(_f32) * _f32(2.0 ** -24)
        if lo == 0 and hi == 1:
            return x
        out = fma32(x, hi - lo, lo)
        out[out == hi] = lo
        return out

    def uniform_double(self, n: int, low: float = 0.0, high: float = 1.0) -> np.ndarray:
        """n double uniforms in [low, high) from the low 53 bits of random64(): x * (high -
        low) + low, fused (uniform_ / rand of a float64 tensor)."""
        x = (self.random64(n) & np.uint64(2 ** 53 - 1)).astype(_f64) * 2.0 ** -53
        if low == 0.0 and high == 1.0:
            return x
        return fma64(x, float(high) - float(low), float(low))

    def normal_float(self, n: int, mean: float = 0.0, std: float = 1.0,
                     contiguous: bool = True) -> np.ndarray:
        """n float32 normals: normal_ / randn, in the tensor's memory order."""
        if n >= 16 and contiguous:
            return _normal_fill(self, n, mean, std)
        return np.array([self._scalar_normal(mean, std) for _ in range(n)], dtype=_f32)

    def normal_double(self, n: int, mean: float = 0.0, std: float = 1.0,
                      contiguous: bool = True) -> np.ndarray:
        """n float64 normals (randn / normal_ of a float64 tensor): PyTorch's normal_fill in
        double from >= 16 contiguous elements (double uniforms, Box-Muller on blocks of 16
        with libm's log / cos / sin, the tail's 16 recomputed), else per element as
        normal_distribution<double>."""
        if not (n >= 16 and contiguous):
            return np.array([self._scalar_normal(mean, std) for _ in range(n)], dtype=_f64)
        out = self.uniform_double(n)
        blocks = [(i, out[i:i + 16]) for i in range(0, n - 15, 16)]
        if n % 16:
            blocks.append((n - 16, self.uniform_double(16)))
        for start, u in blocks:
            u = u.tolist()
            for j in range(8):
                radius = math.sqrt(-2.0 * math.log(1.0 - u[j]))
                theta = 2.0 * math.pi * u[j + 8]
                out[start + j] = radius * math.cos(theta) * std + mean
                out[start + j + 8] = radius * math.sin(theta) * std + mean
        return out

    def normal(self, n: int, mean: float, std: float, contiguous: bool,
               code: str) -> np.ndarray:
        """n normals for a tensor of dtype `code`: float64's kernel for "f64", else float32's
        (a float16 / bfloat16 tensor gets them rounded)."""
        if code == "f64":
            return self.normal_double(n, mean, std, contiguous)
        return self.normal_float(n, mean, std, contiguous)

    def uniform(self, n: int, low: float, high: float, code: str) -> np.ndarray:
        """n uniforms in [low, high) for a tensor of dtype `code` (as `normal`)."""
        if code == "f64":
            return self.uniform_double(n, low, high)
        return self.uniform_float(n, low, high)

    def _scalar_normal(self, mean, std):
        """normal_distribution<double>: one Box-Muller pair per two calls (sin cached)."""
        if self._normal is not None:
            z, self._normal = self._normal, None
        else:
            u1, u2 = self.uniform_double(2).tolist()
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            self._normal = r * math.sin(theta)
            z = r * math.cos(theta)
        return _fma64(z, float(std), float(mean))

    def exponential_float(self, n: int, lambd: float = 1.0) -> np.ndarray:
        """n float32 exponentials: -1/lambda * log1p(-u) in double."""
        scale = -1.0 / float(lambd)
        u = self.uniform_double(n).tolist()
        return np.array([scale * math.log1p(-v) for v in u], dtype=_f32)

    # PyTorch's serial CPU kernels (one double uniform from random64() per element, then
    # at::cauchy / geometric / log_normal / bernoulli's transformation, libm's math)
    def cauchy_double(self, n: int, median: float, sigma: float) -> np.ndarray:
        """n Cauchy draws: median + sigma * tan(pi * (u - 0.5)), in double."""
        return np.array([median + sigma * math.tan(math.pi * (u - 0.5))
                         for u in self.uniform_double(n).tolist()], dtype=_f64)

    def geometric_double(self, n: int, p: float) -> np.ndarray:
        """n geometric draws: ceil(log(u) / log1p(-p)), in double."""
        d = math.log1p(-p)
        return np.array([math.ceil(math.log(u) / d) if u > 0 else math.inf
                         for u in self.uniform_double(n).tolist()], dtype=_f64)

    def log_normal_double(self, n: int, mean: float, std: float) -> np.ndarray:
        """n log-normal draws: exp of normal_distribution<double>(mean, std)."""
        return np.array([math.exp(self._scalar_normal(mean, std)) for _ in range(n)],
                        dtype=_f64)

    def bernoulli(self, p: np.ndarray) -> np.ndarray:
        """One draw per element of p (flat, in order): u < p, u a float32 uniform (24 bits)
        for a float32 p and a double one (53 bits) for a float64 p."""
        u = self.uniform_double(p.size) if p.dtype == _f64 else self.uniform_float(p.size)
        return u < p

    def randint(self, n: int, low: int, high: int) -> np.ndarray:
        """n integers in [low, high) (int64)."""
        span = high - low
        draws = self.random(n) if span < 2 ** 28 else self.random64(n)
        return (draws % np.uint64(span)).astype(np.int64) + low

    def randperm(self, n: int) -> np.ndarray:
        """A permutation of range(n) (int64), PyTorch's Fisher-Yates."""
        perm = list(range(n))
        if n < (2 ** 32 - 1) // 20:
            for i, d in enumerate(self.random(n - 1).tolist()):
                z = i + d % (n - i)
                perm[i], perm[z] = perm[z], perm[i]
        else:   # "inside-out" with 64-bit draws, as PyTorch does for huge n
            for i, d in enumerate(self.random64(n).tolist()):
                z = d % (i + 1)
                perm[i] = perm[z]
                perm[z] = i
        return np.array(perm, dtype=np.int64)

    def multinomial(self, rows: object, num_samples: int, replacement: bool) -> np.ndarray:
        """Category indices (int64, one row of num_samples per row) from float32 weight
        rows (validated by the caller)."""
        rows = np.asarray(rows, dtype=_f32)
        if not replacement or num_samples == 1:
            q = rows / self.exponential_float(rows.size).reshape(rows.shape)
            if num_samples == 1:
                return np.argmax(q, axis=1)[:, None]
            return np.argsort(-q, axis=1, kind="stable")[:, :num_samples]
        out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
        for i, row in enumerate(rows):
            cdf = np.cumsum(row, dtype=_f32)
            cdf = cdf / cdf[-1]
            cdf[-1] = 1
            out[i] = np.searchsorted(cdf.astype(_f64), self.uniform_double(num_samples),
                                     side="left")
        return out


# -- exact arithmetic helpers ---------------------------------------------------------------

def fma32(a, b, c):
    """float32 a * b + c rounded once, as the FMA instruction does.

    a * b of two float32 is exact in float64 and the float64 sum is rounded once; rounding
    that to float32 is then exact unless the sum landed exactly on a float32 halfway point
    (or is tiny), where the float64 rounding may have decided the tie: those few elements
    are redone with the sum's exact error (round to odd)."""
    p = np.asarray(a, dtype=_f64) * np.asarray(b, dtype=_f64)
    c = np.asarray(c, dtype=_f64)
    s = p + c
    out = s.astype(_f32)
    bits = s.view(np.int64)
    risky = ((bits & 0x1FFFFFFF) == 0x10000000) | (np.abs(s) < 2.0 ** -125)
    if risky.any():
        idx = np.nonzero(risky)
        pp, cc, ss = p[idx], np.broadcast_to(c, s.shape)[idx], s[idx]
        bb = ss - pp
        err = (pp - (ss - bb)) + (cc - bb)            # s + err == p + c exactly
        sb = ss.view(np.int64)
        odd = np.where((err != 0) & ((sb & 1) == 0),
                       sb + np.where((err > 0) == (ss > 0), 1, -1), sb)
        out[idx] = odd.view(_f64).astype(_f32)
    return out


def _fma64(a, b, c):
    """double a * b + c rounded once (the scalar normal's val * std + mean, fused)."""
    if b == 1.0 and c == 0.0:
        return a
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def fma64(a, b, c):
    """Arrays of double a * b + c rounded once (uniform_'s x * (to - from) + from, fused),
    vectorized: a * b exactly as p + e (Dekker), p + c exactly as s + t (Knuth), then
    s + (t + e) rounded once; the elements whose rounding the last steps could have decided
    (a remainder within their error of half an ulp) are redone exactly (_fma64)."""
    a = np.asarray(a, _f64)
    b, c = np.broadcast_to(np.asarray(b, _f64), a.shape), np.broadcast_to(np.asarray(c, _f64),
                                                                           a.shape)
    p = a * b
    split = 134217729.0                       # 2^27 + 1
    ah = a * split - (a * split - a)
    bh = b * split - (b * split - b)
    e = ((ah * bh - p) + ah * (b - bh) + (a - ah) * bh) + (a - ah) * (b - bh)
    s = p + c
    z = s - p
    t = (p - (s - z)) + (c - z)
    u = t + e
    v = (t - (u - (u - t))) + (e - (u - t))     # t + e == u + v exactly
    r = s + u
    z = r - s
    w = (s - (r - z)) + (u - z)                 # s + u == r + w exactly
    half = np.spacing(np.abs(r)) / 2
    risky = np.abs(np.abs(w) - half) <= np.abs(v)
    for i in np.flatnonzero(risky):
        r.flat[i] = _fma64(float(a.flat[i]), float(b.flat[i]), float(c.flat[i]))
    return r


# -- the AVX2 normal kernel, emulated --------------------------------------------------------

_C = {k: _f32(v) for k, v in {
    "sqrthf": 0.707106781186547524, "log_q1": -2.12194440e-4, "log_q2": 0.693359375,
    "fopi": 1.27323954473516, "dp1": -0.78515625, "dp2": -2.4187564849853515625e-4,
    "dp3": -3.77489497744594108e-8, "two_pi": 2.0 * math.pi}.items()}
_LOG_P = [_f32(v) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1,
                            -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
                            2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1)]
_COS_P = [_f32(v) for v in (2.443315711809948E-005, -1.388731625493765E-003,
                            4.166664568298827E-002)]
_SIN_P = [_f32(v) for v in (-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)]


def _log(x):
    """avx_mathfun's log256_ps for x in (0, 1] (no denormal / non-positive inputs here)."""
    xi = x.view(np.int32)
    e = ((xi >> 23) - 0x7F).astype(_f32) + _f32(1)
    x = ((xi & ~0x7F800000) | 0x3F000000).view(_f32)      # mantissa in [0.5, 1)
    small = x < _C["sqrthf"]
    e = e - small.astype(_f32)
    x = (x - _f32(1)) + np.where(small, x, _f32(0))
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = fma32(y, x, p)
    y = y * x
    y = fma32(y, z, e * _C["log_q1"])       # y * z + e * q1, contracted
    y = fma32(z, _f32(-0.5), y)             # y - z * 0.5
    x = x + y
    return fma32(e, _C["log_q2"], x)


def _sincos(x):
    """avx_mathfun's sincos256_ps for x >= 0."""
    j = (x * _C["fopi"]).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(_f32)
    sin_neg = (j & 4) != 0
    cos_neg = (~(j - 2) & 4) != 0
    use_sin_poly = (j & 2) == 0        # selects which polynomial is the sine
    x = fma32(y, _C["dp1"], x)
    x = fma32(y, _C["dp2"], x)
    x = fma32(y, _C["dp3"], x)
    z = x * x
    yc = fma32(np.full_like(x, _COS_P[0]), z, _COS_P[1])
    yc = fma32(yc, z, _COS_P[2])
    yc = yc * z
    yc = fma32(yc, z, -(z * _f32(0.5))) + _f32(1)
    ys = fma32(np.full_like(x, _SIN_P[0]), z, _SIN_P[1])
    ys = fma32(ys, z, _SIN_P[2])
    ys = fma32(ys * z, x, x)
    s_part = np.where(use_sin_poly, ys, _f32(0))
    c_part = np.where(use_sin_poly, _f32(0), yc)
    sin = c_part + s_part
    cos = (yc - c_part) + (ys - s_part)
    return np.where(sin_neg, -sin, sin), np.where(cos_neg, -cos, cos)


def _box_muller16(u, mean, std):
    """PyTorch's AVX2 normal_fill_16 on blocks (k, 16) of float32 uniforms."""
    radius = np.sqrt(_f32(-2) * _log(_f32(1) - u[:, :8]))
    sin, cos = _sincos(_C["two_pi"] * u[:, 8:])
    m, s = _f32(mean), _f32(std)
    return np.concatenate([fma32(radius * cos, s, m), fma32(radius * sin, s, m)], axis=1)


def _normal_fill(gen, n, mean, std):
    out = gen.uniform_float(n)
    k = n // 16
    out[:16 * k] = _box_muller16(out[:16 * k].reshape(k, 16), mean, std).reshape(-1)
    if n % 16:
        out[n - 16:] = _box_muller16(gen.uniform_float(16).reshape(1, 16), mean,
                                     std).reshape(-1)
    return out
