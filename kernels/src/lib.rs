//! torchic_kernels: the native half of torchic's `simd` backend.
//!
//! What is here
//! ------------
//! * `arch/`: one `Simd` implementation per instruction set (AVX-512F,
//!   AVX2+FMA, NEON, scalar), picked once at run time; every kernel is written
//!   once over that trait.
//! * kernels: `elementwise`, `reduce`, `matmul`, `math` (exp/log/tanh/sigmoid),
//!   `softmax` (+ cross-entropy), `gather` (+ scatter-add), `copy` (+ fill),
//!   `norm` (layer norm, GELU, causal softmax), `dropout` (threefry masks),
//!   `adam` (the fused Adam / AdamW update).
//! * `ops`: the op table, one row per primitive op of ops.py (name, contract
//!   kind, kernel). Python maps op names to codes by asking for the names.
//! * `record`: the op record (framing, decoding, validation against the
//!   contract kind of the op's row) and running a batch of them.
//! * `abi`: the C ABI Python calls (`tk_*`).
//! * `runtime`: the op stream (a coordinator thread running ops in issue
//!   order) and the worker pool it splits large ops over.
//!
//! Python packs each op into one flat run of i64 (cached `struct.pack`
//! pieces, layout in record.rs) and pushes several records at once with one
//! `tk_push`, which only checks the framing (where each record starts and
//! ends) and queues the batch. The coordinator decodes and validates each
//! record just before it runs it; an invalid record is not run and its error
//! is reported at the next read like a kernel error. So no kernel can ever
//! touch memory outside the blocks it was given. Kernels that read integer
//! values (targets, indices) check them against their bound and fail with an
//! error that surfaces at the next read. Host writes come through `tk_write`,
//! which copies the source data into the queue at the call.

// every `unsafe` block and `unsafe impl` says why it is sound: a `// SAFETY:` comment
// (.ci/run runs clippy with -D warnings)
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod abi;
pub mod adam;
pub mod arch;
pub mod copy;
pub mod cpuinfo;
pub mod dgemm;
pub mod dropout;
pub mod elem;
pub mod elementwise;
pub mod fuse;
pub mod gather;
pub mod lstm;
pub mod math;
pub mod math64;
pub mod matmul;
pub mod norm;
pub mod ops;
pub mod pool;
pub mod record;
pub mod reduce;
pub mod rows64;
pub mod runtime;
pub mod select;
pub mod softmax;
pub mod typed;
pub mod view;
