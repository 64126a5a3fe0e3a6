"""torchic's random numbers are PyTorch's CPU generator's, bit for bit (generator.py).

The first tests need no torch: mt19937's reference outputs and PyTorch's numbers for fixed
seeds, written here, so CI without torch still checks the engine and every transform. The
rest compare against the installed torch over many sizes, seeds and mixed call sequences
on one generator (float32 compared by their bits).
"""

import inspect
import math
import warnings

import numpy as np
import pytest

import torchic
from torchic import generator as G


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == np.float32 or b.dtype == np.float32:
        a, b = a.astype(np.float32).view(np.uint32), b.astype(np.float32).view(np.uint32)
    return a.shape == b.shape and np.array_equal(a, b)


f32 = lambda *v: np.array(v, dtype=np.float32)        # noqa: E731


# -- without torch -----------------------------------------------------------------------------

def test_mt19937_reference_outputs():
    # std::mt19937 with its default seed 5489: the 1st outputs and the 10000th (C++11's check)
    g = torchic.Generator().manual_seed(5489)
    draws = g.random(10000)
    assert draws[:3].tolist() == [3499211612, 581869302, 3890346734]
    assert int(draws[-1]) == 4123659995
    assert G.seeded_state(5489)[:2].tolist() == [5489, 1301868182]


def test_seed_is_kept_mod_2_64_and_engine_uses_its_low_32_bits():
    g = torchic.Generator()
    assert g.initial_seed() == 67280421310721            # PyTorch's default seed
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    a = g.random(4)
    assert bits_equal(a, torchic.Generator().manual_seed(0xFFFFFFFF).random(4))
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2 ** 64)
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)
    assert torchic.manual_seed(1.5) is torchic.default_generator     # int(seed), as torch
    assert torchic.initial_seed() == 1


def test_pytorch_numbers_for_seed_42(backend):
    torchic.manual_seed(42)
    np.testing.assert_array_equal(torchic.randn(3, 4).numpy(), f32(
        0.33669037, 0.1288094, 0.23446237, 0.23033303, -1.1228564, -0.18632829,
        2.2082014, -0.63799703, 0.46165723, 0.26735088, 0.53490466, 0.8093572).reshape(3, 4))
    np.testing.assert_array_equal(torchic.rand(5).numpy(), f32(
        0.10531491, 0.26949483, 0.35881263, 0.19936377, 0.54719156))
    assert torchic.randint(0, 10, (6,)).tolist() == [9, 2, 0, 5, 9, 3]
    np.testing.assert_array_equal(torchic.randn(2).numpy(), f32(-0.71495473, 0.12802215))
    assert torchic.randperm(8).tolist() == [2, 1, 0, 5, 7, 3, 4, 6]


def test_pytorch_numbers_for_makemore_seed(backend):
    g = torchic.Generator().manual_seed(2147483647)
    p = torchic.rand(27, generator=g)
    assert torchic.multinomial(p, 10, True, generator=g).tolist() == \
        [22, 16, 10, 18, 19, 1, 16, 20, 15, 24]
    assert torchic.multinomial(p, 1, True, generator=g).item() == 6
    assert torchic.multinomial(p, 5, False, generator=g).tolist() == [10, 17, 7, 22, 3]


def test_pytorch_linear_init_for_seed_123(backend):
    torchic.manual_seed(123)
    w = torchic.nn.Linear(3, 2).weight.detach().numpy()
    np.testing.assert_array_equal(w, f32(-0.23542964, 0.019124476, -0.28674594,
                                         0.21772662, -0.4919342, 0.42322308).reshape(2, 3))


def test_fma32_is_exactly_rounded():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(20000).astype(np.float32) for _ in range(3))
    got = G.fma32(a, b, c)
    from fractions import Fraction
    for i in range(0, 20000, 97):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        want = np.float32(float(exact))        # double rounding is safe away from ties...
        lo, hi = np.nextafter(want, np.float32(-np.inf)), np.nextafter(want, np.float32(np.inf))
        best = min((want, lo, hi), key=lambda v: abs(Fraction(float(v)) - exact))
        assert got[i] == best
    # ...and the case where the float64 sum lands on a float32 halfway point: a * b + c is
    # 1 + 3 * 2^-24 - 2^-70, which float64 rounds to the halfway point 1 + 3 * 2^-24, and
    # that rounds (to even) up, while the exact value rounds down to 1 + 2^-23
    a, b, c = f32(2 ** -24 * (1 + 2 ** -23)), f32(1 - 2 ** -23), f32(1 + 2 ** -23)
    assert (a.astype(np.float64) * b + c).astype(np.float32)[0] == np.float32(1 + 2 ** -22)
    assert G.fma32(a, b, c)[0] == np.float32(1 + 2 ** -23)


def test_state_round_trip_keeps_the_cached_normal(backend):
    g = torchic.Generator().manual_seed(7)
    torchic.randn(3, generator=g)                 # leaves a cached second normal
    state = g.get_state()
    assert state.dtype == np.uint8 and state.shape == (5056,)
    a = torchic.randn(5, generator=g).numpy()
    g2 = torchic.Generator().set_state(state)
    assert bits_equal(torchic.randn(5, generator=g2).numpy(), a)
    with pytest.raises(RuntimeError, match="RNG state size"):
        g.set_state(state[:100])


def test_generator_checks_its_device():
    assert torchic.Generator(device="cpu").device == "cpu"
    with pytest.raises(RuntimeError):
        torchic.Generator(device="cuda")


def test_random_creation_takes_device(backend):
    for make in [lambda d: torchic.randn(2, device=d), lambda d: torchic.rand(2, device=d),
                 lambda d: torchic.randint(0, 3, (2,), device=d),
                 lambda d: torchic.randperm(3, device=d),
                 lambda d: torchic.randn_like(torchic.zeros(2), device=d)]:
        assert make("cpu").shape == make(None).shape == make(torchic.device("cpu")).shape
        with pytest.raises(RuntimeError, match="'cuda' is not available"):
            make("cuda")


def test_randn_of_a_million_is_vectorized():
    # a correctness check of the large path (no timing assertion): the mean and spread
    z = torchic.Generator().manual_seed(1).normal_float(10 ** 6)
    assert abs(z.mean()) < 5e-3 and abs(z.std() - 1) < 5e-3


# -- against torch -----------------------------------------------------------------------------

torch = None


@pytest.fixture
def pt():
    global torch
    torch = pytest.importorskip("torch")
    return torch


SIZES = [0, 1, 2, 3, 15, 16, 17, 31, 100, 1000, 10007]
SEEDS = [0, 1, 42, 2147483647, 2 ** 40 + 3]


@pytest.mark.parametrize("seed", SEEDS)
def test_engine_draws_match(pt, seed):
    g = pt.Generator().manual_seed(seed)
    mine = torchic.Generator().manual_seed(seed)
    for n in SIZES:
        assert bits_equal(mine.uniform_float(n), pt.rand(n, generator=g).numpy())
        assert bits_equal(mine.normal_float(n), pt.randn(n, generator=g).numpy()), n
    assert bits_equal(mine.get_state(), g.get_state().numpy())


@pytest.mark.parametrize("seed", SEEDS)
def test_mixed_call_sequence_matches(pt, backend, seed):
    pt.manual_seed(seed)
    torchic.manual_seed(seed)
    calls = [
        ("randn", lambda m: m.randn(5, 7)), ("randint", lambda m: m.randint(0, 27, (32,))),
        ("rand", lambda m: m.rand(3)), ("randn1", lambda m: m.randn(1)),
        ("randn13", lambda m: m.randn(13)), ("randint big", lambda m: m.randint(-5, 2 ** 29,
                                                                                (9,))),
        ("randperm", lambda m: m.randperm(50)), ("randn big", lambda m: m.randn(4, 250)),
        ("randint high", lambda m: m.randint(7, (4, 2))), ("rand big", lambda m: m.rand(2, 33)),
        ("randn_like T", lambda m: m.randn_like(m.zeros(5, 7).T)),
        ("rand_like T", lambda m: m.rand_like(m.zeros(4, 3).T)),
        ("randn 3", lambda m: m.randn(3)),
    ]
    for name, call in calls:
        want, got = call(pt).numpy(), call(torchic).numpy()
        assert bits_equal(got, want), name
    assert bits_equal(torchic.get_rng_state(), pt.get_rng_state().numpy())


@pytest.mark.parametrize("seed", [0, 3, 2147483647])
def test_in_place_fills_match(pt, backend, seed):
    pt.manual_seed(seed)
    torchic.manual_seed(seed)
    a, b = pt.empty(6, 9), torchic.empty(6, 9)
    fills = [
        ("normal_", lambda t: t.normal_(0.3, 0.02)), ("normal_ std", lambda t: t.normal_(-1, 3)),
        ("uniform_", lambda t: t.uniform_(-0.123456789, 0.987654321)),
        ("uniform_ 0 1", lambda t: t.uniform_()), ("exponential_", lambda t: t.exponential_(2.5)),
        ("random_ 0 7", lambda t: t.random_(0, 7)), ("random_ 10", lambda t: t.random_(10)),
        ("random_", lambda t: t.random_()),
        ("normal_ T", lambda t: t.T.normal_()),                  # non-contiguous: scalar path
        ("uniform_ slice", lambda t: t[:, 2:5].uniform_(1, 2)),
    ]
    for name, fill in fills:
        fill(a)
        fill(b)
        assert bits_equal(b.numpy(), a.numpy()), name
    assert bits_equal(torchic.get_rng_state(), pt.get_rng_state().numpy())


@pytest.mark.parametrize("shape", [(27,), (5, 27), (3, 1000), (1,), (4, 2)])
def test_multinomial_matches(pt, backend, shape):
    rng = np.random.default_rng(sum(shape))
    for seed in range(8):
        p = rng.random(shape).astype(np.float32)
        if shape[-1] > 2:
            p[..., 0] = 0
        for num, replacement in [(1, True), (1, False), (2, False), (5, True), (50, True),
                                 (min(shape[-1], 4) - (shape[-1] > 2), False)]:
            if not replacement and num > np.count_nonzero(p, axis=-1).min():
                continue        # torchic refuses it (see creation.multinomial)
            g = pt.Generator().manual_seed(seed)
            mine = torchic.Generator().manual_seed(seed)
            want = pt.multinomial(pt.from_numpy(p), num, replacement, generator=g).numpy()
            got = torchic.multinomial(torchic.tensor(p), num, replacement, generator=mine)
            assert np.array_equal(got.numpy(), want), (seed, num, replacement)
            assert bits_equal(mine.get_state(), g.get_state().numpy())


@pytest.mark.parametrize("seed", [0, 42, 2147483647])
def test_nn_init_matches(pt, backend, seed):
    warnings.simplefilter("ignore")
    inits = [("kaiming_uniform_", {}), ("kaiming_uniform_", {"a": math.sqrt(5)}),
             ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}),
             ("xavier_uniform_", {"gain": 5 / 3}), ("xavier_normal_", {}),
             ("uniform_", {"a": -0.3, "b": 0.7}), ("normal_", {"std": 0.02}),
             ("trunc_normal_", {"std": 0.02}), ("trunc_normal_", {"a": 1.0, "b": 1.5}),
             ("trunc_normal_", {"a": -0.3, "b": 0.3})]
    if "erfinv" in inspect.getsource(pt.nn.init._no_grad_trunc_normal_):
        # torch before 2.13 drew trunc_normal_ by inverse CDF; torchic follows 2.13's sampler
        inits = [(name, kw) for name, kw in inits if name != "trunc_normal_"]
    for shape in [(30, 20), (3, 5), (64, 3, 3)]:
        pt.manual_seed(seed)
        torchic.manual_seed(seed)
        for name, kw in inits:
            want = getattr(pt.nn.init, name)(pt.empty(shape), **kw).numpy()
            got = getattr(torchic.nn.init, name)(torchic.empty(*shape), **kw).numpy()
            assert bits_equal(got, want), (name, kw, shape)


@pytest.mark.parametrize("seed", [0, 42, 1337])
def test_default_module_inits_match(pt, backend, seed):
    pt.manual_seed(seed)
    torchic.manual_seed(seed)
    for make in [lambda m: m.nn.Linear(4, 3), lambda m: m.nn.Linear(100, 37),
                 lambda m: m.nn.Linear(7, 2, bias=False), lambda m: m.nn.Embedding(27, 10),
                 lambda m: m.nn.Embedding(3, 2)]:
        want, got = make(pt), make(torchic)
        for (name, p), (_, q) in zip(want.named_parameters(), got.named_parameters()):
            assert bits_equal(q.detach().numpy(), p.detach().numpy()), name
    assert bits_equal(torchic.get_rng_state(), pt.get_rng_state().numpy())


def test_set_state_from_torch(pt, backend):
    pt.manual_seed(9)
    pt.randn(5)
    state = pt.get_rng_state()
    torchic.set_rng_state(state.numpy())
    assert bits_equal(torchic.randn(40).numpy(), pt.randn(40).numpy())
    assert bits_equal(torchic.randn(3).numpy(), pt.randn(3).numpy())
