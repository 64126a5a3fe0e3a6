use std::time::Instant;
use torchic_kernels::*;
fn main() {
    unsafe {
        let ctx = tk_new(1);
        let mut arena = vec![0u8; 1 << 20];
        tk_add_arena(ctx, arena.as_mut_ptr() as u64, arena.len() as u64);
        let mut rec: Vec<i64> = vec![24, 1, 0, 0, 0, 1.0f64.to_bits() as i64, 0, 0, 256, 0, 0, 1, 1, 1];
        let mut v = vec![];
        for _ in 0..2000 {
            let t = Instant::now();
            let q = tk_push(ctx, rec.as_mut_ptr() as *const u8, 14);
            let t1 = t.elapsed();
            tk_wait(ctx, q);
            v.push((t1.as_nanos(), t.elapsed().as_nanos()));
        }
        v.sort_by_key(|x| x.1);
        println!("median push {} ns, push+wait {} ns", v[1000].0, v[1000].1);
        tk_free(ctx);
    }
}
