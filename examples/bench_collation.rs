//! What ordering names by ICU root collation (feruca) costs against plain byte order,
//! on the sort `glob` does for old files: `cargo run --release --example bench_collation`.
//! Prints the time of each sort of N paths and the ratio, measured in the same run.

use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50_000);
    let mut paths: Vec<String> = (0..n)
        .map(|i| {
            let x = fastrand::u32(..);
            format!(
                "/work/project/src/Module_{}/sub-{}/File{}_{}.rs",
                x % 97,
                x % 13,
                i,
                x % 7
            )
        })
        .collect();
    fastrand::shuffle(&mut paths);
    let mut bytes = paths.clone();
    let started = Instant::now();
    bytes.sort();
    let byte_time = started.elapsed();
    let mut icu = paths.clone();
    let started = Instant::now();
    icu.sort_by(|a, b| troupe::engine::text::locale_cmp(a, b));
    let icu_time = started.elapsed();
    println!(
        "{{\"paths\": {n}, \"byte_order_ms\": {:.1}, \"icu_root_ms\": {:.1}, \"ratio\": {:.1}}}",
        byte_time.as_secs_f64() * 1000.0,
        icu_time.as_secs_f64() * 1000.0,
        icu_time.as_secs_f64() / byte_time.as_secs_f64().max(1e-9)
    );
}
