//! float64 scalar math for the f64 paths of the float ops (typed.rs): std's functions
//! (correctly rounded or within 1 ULP) and the C library's erf / erfc, which std does not
//! expose (glibc's are within 1 ULP).

use std::f64::consts::{PI, SQRT_2};

extern "C" {
    fn erfc(x: f64) -> f64;
}

/// the complementary error function (the C library's)
pub fn erfc64(x: f64) -> f64 {
    // SAFETY: erfc is a pure function of one double (C99 <math.h>)
    unsafe { erfc(x) }
}

pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// the normal cdf, accurate in both tails: erfc(-x / sqrt 2) / 2
pub fn phi_cdf(x: f64) -> f64 {
    0.5 * erfc64(-x / SQRT_2)
}

/// x Phi(x)
pub fn gelu(x: f64) -> f64 {
    x * phi_cdf(x)
}

/// g (Phi(x) + x phi(x))
pub fn gelu_grad(x: f64, g: f64) -> f64 {
    let pdf = (-0.5 * x * x).exp() / (2.0 * PI).sqrt();
    g * (phi_cdf(x) + x * pdf)
}

const K: f64 = 0.797_884_560_802_865_4; // sqrt(2 / pi)
const C: f64 = 0.044715;

/// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), as x / (1 + exp(-2u)) (the
/// same value without 1 + tanh's cancellation for negative x)
pub fn gelu_tanh(x: f64) -> f64 {
    x / (1.0 + (-2.0 * K * (x + C * x * x * x)).exp())
}

/// g d/dx gelu_tanh(x)
pub fn gelu_tanh_grad(x: f64, g: f64) -> f64 {
    let t = (K * (x + C * x * x * x)).tanh();
    g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * K * (1.0 + 3.0 * C * x * x))
}
