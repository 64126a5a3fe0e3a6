use std::time::Instant;
use torchic_kernels::runtime::*;
struct Nop;
impl Task for Nop { fn name(&self) -> &'static str { "nop" } fn run(&self, _: &Pool) -> KResult { Ok(()) } }
fn main() {
    let s: Stream<Nop> = Stream::new(1);
    let mut v = vec![];
    for _ in 0..2000 {
        let t = Instant::now();
        let q = s.push(Nop);
        let t1 = t.elapsed();
        s.wait(q);
        v.push((t1.as_nanos(), t.elapsed().as_nanos()));
    }
    v.sort_by_key(|x| x.1);
    println!("median push {} ns, push+wait {} ns", v[1000].0, v[1000].1);
    let t = Instant::now(); for _ in 0..1000000 { std::hint::black_box(Instant::now()); } println!("Instant::now {} ns", t.elapsed().as_nanos() / 1000000);
}
