import sys, time
sys.path.insert(0, 'src')
import numpy as np
from numpy.lib.stride_tricks import as_strided
from torchic import dispatcher
from torchic.dispatcher import View, KernelError
from torchic.backends.cpu import numpy_kernels as NK

rt = dispatcher.init('webgpu')
rng = np.random.default_rng(0)
NELEM = 1 << 16

class Buf:
    def __init__(self, dtype, data=None):
        self.dtype = dtype
        self.blk = rt.alloc(NELEM * 4)
        np_dt = np.float32 if dtype == 'f32' else np.int32
        self.host = (rng.standard_normal(NELEM).astype(np.float32) if dtype == 'f32'
                     else rng.integers(0, 5, NELEM).astype(np.int32)) if data is None else data
        rt.write(View(self.blk, 0, (NELEM,), (1,), dtype), self.host)
    def view(self, off, shape, strides):
        return View(self.blk, off, tuple(shape), tuple(strides), self.dtype)
    def arr(self, v):
        it = self.host.itemsize
        return as_strided(self.host[v.offset:], v.shape, tuple(s * it for s in v.strides))

def cstr(shape):
    s, acc = [], 1
    for n in reversed(shape):
        s.append(acc); acc *= n
    return tuple(reversed(s))

fails = 0
def check(name, got, want, rtol=2e-5, atol=2e-6):
    global fails
    ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True) and got.shape == want.shape
    if not ok:
        fails += 1
        print('FAIL', name, got.shape, want.shape, np.max(np.abs(got - want)) if got.shape == want.shape else '')
    return ok

def run_op(op, out_shape, out_dtype, ins, params, out_strides=None, out_off=3):
    """ins: list of (Buf, view). Returns (got, want)."""
    ob = Buf(out_dtype)
    ov = ob.view(out_off, out_shape, out_strides or cstr(out_shape))
    want_host = ob.host.copy()
    want = as_strided(want_host[ov.offset:], ov.shape, tuple(s * 4 for s in ov.strides))
    with np.errstate(all='ignore'):
        NK.KERNELS[op](want, tuple(b.arr(v) for b, v in ins), params)
    rt.run(op, ov, tuple(v for _, v in ins), params)
    got = rt.read(ov)
    return got, np.array(want)

F = Buf('f32'); G = Buf('f32'); H = Buf('f32'); I = Buf('i32')
Fpos = Buf('f32', np.abs(rng.standard_normal(NELEM).astype(np.float32)) + 0.1)

layouts = [
    ((7, 5), [(1, (5, 1)), (2, (5, 1))]),            # contiguous
    ((8, 12), [(0, (12, 1)), (4, (12, 1))]),          # vec4 aligned
    ((7, 5), [(1, (1, 7)), (2, (0, 1))]),             # transposed, broadcast row
    ((3, 4, 5), [(0, (40, 10, 2)), (5, (0, 5, 1))]),  # strided
    ((2, 1, 3, 2, 2, 3, 2, 2), [(0, (288, 144, 48, 24, 12, 4, 2, 1)), (1, (0,)*8)]),
]
for op in NK.KERNELS:
    if op in ('neg','exp','log','relu','tanh','sigmoid','sqrt','abs'):
        for shape, ((o1, s1), _) in layouts:
            src = Fpos if op in ('log', 'sqrt') else F
            got, want = run_op(op, shape, 'f32', [(src, src.view(o1, shape, s1))], {})
            check(f'{op}{shape}{s1}', got, want)
    elif op in ('add','sub','mul','div','pow','maximum','minimum','eq','ne','lt','le','gt','ge'):
        for shape, ((o1, s1), (o2, s2)) in layouts:
            a = Fpos if op == 'pow' else F
            got, want = run_op(op, shape, 'f32', [(a, a.view(o1, shape, s1)), (G, G.view(o2, shape, s2))], {})
            check(f'{op}{shape}{s1}{s2}', got, want, rtol=1e-4 if op=='pow' else 2e-5)
        if op in ('eq', 'lt', 'ge'):
            got, want = run_op(op, (6, 5), 'f32', [(I, I.view(0, (6, 5), (5, 1))), (I, I.view(7, (6, 5), (1, 6)))], {})
            check(f'{op} i32', got, want)
# pow negative base
pw = Buf('f32', np.tile(np.array([-2, -2, -0.5, 0, 0, 3, -1, 2], np.float32), NELEM // 8))
ex = Buf('f32', np.tile(np.array([2, 3, 0.5, -1, 0, 0, 5, -2], np.float32), NELEM // 8))
got, want = run_op('pow', (16,), 'f32', [(pw, pw.view(0, (16,), (1,))), (ex, ex.view(0, (16,), (1,)))], {})
check('pow special', got, want); print(got[:8], want[:8])
# where
for shape, ((o1, s1), (o2, s2)) in layouts[:4]:
    cond = Buf('f32', (rng.random(NELEM) > 0.5).astype(np.float32))
    got, want = run_op('where', shape, 'f32', [(cond, cond.view(o1, shape, s1)), (F, F.view(o2, shape, s2)), (G, G.view(o1, shape, s1))], {})
    check(f'where{shape}', got, want)
# fill / copy strided out
got, want = run_op('fill', (4, 3), 'f32', [], {'value': 2.5}, out_strides=(6, 2))
check('fill strided', got, want)
got, want = run_op('fill', (5,), 'i32', [], {'value': 7}, out_strides=(1,))
check('fill i32', got, want)
for (sd, dd) in [('f32','f32'), ('f32','i32'), ('i32','f32'), ('i32', 'i32')]:
    src = Buf(sd, (rng.standard_normal(NELEM) * 10).astype(np.float32) if sd == 'f32' else None)
    got, want = run_op('copy', (4, 6), dd, [(src, src.view(2, (4, 6), (1, 5)))], {}, out_strides=(12, 2))
    check(f'copy {sd}->{dd}', got, want)
# reductions
for op in ('sum', 'max', 'min'):
    for shape, strides, naxes in [((7, 5), (5, 1), 1), ((3, 4, 50), (200, 50, 1), 2), ((6, 300), (1, 6), 1),
                                  ((5, 0), (0, 1), 1), ((4, 3), (3, 1), 2), ((2, 70000 // 2), (1, 2), 1)]:
        src = F if shape[-1] < 1000 else Buf('f32', rng.standard_normal(1 << 16).astype(np.float32))
        if shape == (2, 35000):
            src = Buf('f32'); 
        outs = shape[:len(shape) - naxes]
        got, want = run_op(op, outs, 'f32', [(src, src.view(1, shape, strides))], {'naxes': naxes})
        check(f'{op}{shape}{naxes}', got, want, rtol=1e-4, atol=1e-4)
src = Buf('f32', rng.standard_normal(1 << 16).astype(np.float32))
got, want = run_op('sum', (), 'f32', [(src, src.view(0, ((1 << 16) - 8,), (1,)))], {'naxes': 1})
check('sum big', got, want, rtol=1e-4, atol=1e-3)
for shape, strides in [((7, 5), (5, 1)), ((3, 500), (1, 3)), ((4, 3), (3, 1))]:
    got, want = run_op('argmax', shape[:-1], 'i32', [(F, F.view(1, shape, strides))], {})
    check(f'argmax{shape}', got, want)
# rowwise
T = Buf('i32', rng.integers(0, 27, NELEM).astype(np.int32))
for R, C, strides in [(5, 27, (27, 1)), (4, 300, (300, 1)), (3, 2500, (1, 3)), (6, 1, (1, 1))]:
    for op in ('softmax', 'log_softmax'):
        got, want = run_op(op, (R, C), 'f32', [(F, F.view(2, (R, C), strides))], {})
        check(f'{op}{R,C}', got, want)
    T2 = Buf('i32', rng.integers(0, C, NELEM).astype(np.int32))
    got, want = run_op('cross_entropy', (R,), 'f32', [(F, F.view(2, (R, C), strides)), (T2, T2.view(1, (R,), (2,)))], {})
    check(f'ce{R,C}', got, want, rtol=1e-4)
    got, want = run_op('cross_entropy_grad', (R, C), 'f32', [(F, F.view(2, (R, C), strides)), (T2, T2.view(1, (R,), (2,))), (G, G.view(0, (R,), (1,)))], {})
    check(f'ceg{R,C}', got, want)
# gather / scatter
got, want = run_op('gather_rows', (9, 4), 'f32', [(F, F.view(3, (27, 4), (4, 1))), (T, T.view(0, (9,), (1,)))], {})
check('gather', got, want)
got, want = run_op('gather_rows', (9, 4), 'f32', [(F, F.view(3, (27, 4), (1, 27))), (T, T.view(0, (9,), (3,)))], {})
check('gather T', got, want)
for V, D, R in [(27, 10, 30), (5, 70, 200), (3, 4, 2000)]:
    Ti = Buf('i32', rng.integers(0, V, NELEM).astype(np.int32))
    got, want = run_op('scatter_add_rows', (V, D), 'f32', [(G, G.view(0, (R, D), (D, 1))), (Ti, Ti.view(0, (R,), (1,)))], {})
    check(f'scatter{V,D,R}', got, want, rtol=1e-4, atol=1e-5)
# matmul
for (B, M, K, N), ta, tb in [((1, 5, 7, 3), 0, 0), ((2, 33, 17, 65), 1, 0), ((1, 64, 64, 64), 0, 1), ((3, 20, 30, 40), 1, 1),
                              ((1, 130, 12, 129), 0, 0), ((1, 1, 5, 1), 0, 0), ((2, 7, 0, 3), 0, 0), ((1, 256, 64, 256), 0, 0)]:
    a_str = (M * K, 1, M) if ta else (M * K, K, 1)
    b_str = (K * N, 1, K) if tb else (K * N, N, 1)
    got, want = run_op('matmul', (B, M, N), 'f32', [(F, F.view(4, (B, M, K), a_str)), (G, G.view(8, (B, K, N), b_str))], {})
    check(f'matmul{B,M,K,N,ta,tb}', got, want, rtol=1e-4, atol=1e-4)
# index errors
bad = Buf('i32', np.full(NELEM, 30, np.int32))
ov = Buf('f32').view(0, (3, 4), (4, 1))
rt.run('gather_rows', ov, (F.view(0, (27, 4), (4, 1)), bad.view(0, (3,), (1,))), {})
try:
    rt.read(ov); print('FAIL no error')
    fails += 1
except KernelError as e:
    print('ok error:', e)
print(rt.read(ov).shape, 'recovers')
print('fails', fails, rt.backend.describe())
