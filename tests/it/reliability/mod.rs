//! The reliability suite (issue 13; RELIABILITY.md states each promise and its figures).
//! Each test here runs a short loop; `reliability/run.sh` runs the long ones by setting
//! the count variables below (`BABEL_CRASH_KILLS`, `BABEL_MUTATIONS`, ...) and a seed.
//! Every loop prints its seed, so a failure can be replayed with `BABEL_STRESS_SEED`.

mod concurrent;
mod crash_loop;
mod forger;
mod fuzz_regressions;
mod hostile_inputs;
mod mutations;

/// A count from the environment, or the suite's default.
fn count(variable: &str, default: u64) -> u64 {
    std::env::var(variable)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator (xorshift64*), seeded from `BABEL_STRESS_SEED` or the
/// clock; the seed is printed so that a failing run can be replayed.
struct Random(u64);

impl Random {
    fn new(what: &str) -> Self {
        let seed = std::env::var("BABEL_STRESS_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            })
            | 1;
        eprintln!("{what}: BABEL_STRESS_SEED={seed}");
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
