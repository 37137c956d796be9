//! An ordered parallel map: batches produced on the calling thread are processed on worker
//! threads and handed back to the calling thread in their original order.
//!
//! This is how structured imports, validate and the reports use both cores while reading,
//! hashing and writing stay sequential (and the output deterministic). Memory stays
//! bounded: at most a few batches per worker are in flight. Owns no I/O; callers produce
//! and consume. [`run_ordered`] (in `pool`) is the same contract run by one thread per core,
//! where the sink runs on whichever thread is free: how JSON Lines imports run.

mod pool;

pub use pool::run_ordered;

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// How many batches may wait per worker unless the caller says otherwise; enough to keep
/// workers busy, small enough to keep memory flat.
const IN_FLIGHT_PER_WORKER: usize = 2;

/// How much [`push_ordered`] lets out at once (batches handed to the workers and not yet
/// to the sink, counted per worker), or [`run_ordered`] (batches produced and not yet taken
/// by the sink, counted per thread).
#[derive(Debug, Clone, Copy)]
pub struct InFlight<In> {
    batches: usize,
    bytes: usize,
    weigh: fn(&In) -> usize,
}

impl<In> InFlight<In> {
    /// At most `per_worker` batches per worker (at least one), however large.
    pub fn batches(per_worker: usize) -> Self {
        Self {
            batches: per_worker.max(1),
            bytes: usize::MAX,
            weigh: |_| 0,
        }
    }

    /// And at most `per_worker` bytes per worker, as `weigh` counts a batch's. In
    /// [`push_ordered`] a batch larger than that still goes, alone; [`run_ordered`]
    /// produces a batch while those out weigh less than the bound, so one batch may pass it.
    pub fn bytes(self, per_worker: usize, weigh: fn(&In) -> usize) -> Self {
        Self {
            bytes: per_worker,
            weigh,
            ..self
        }
    }
}

/// The number of worker threads to use: the machine's parallelism, at least 1, at most 8.
pub fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8))
}

/// Runs `work` on every batch from `produce` across `workers` threads and calls `sink` with
/// the results in production order. `produce` returns `Ok(None)` at the end. The first
/// error from `produce` or `sink` stops everything and is returned.
pub fn map_ordered<In, Out, E, P, W, S>(
    workers: usize,
    mut produce: P,
    work: W,
    sink: S,
) -> Result<(), E>
where
    In: Send,
    Out: Send,
    P: FnMut() -> Result<Option<In>, E>,
    W: Fn(In) -> Out + Sync,
    S: FnMut(Out) -> Result<(), E>,
{
    push_ordered(
        workers,
        InFlight::batches(IN_FLIGHT_PER_WORKER),
        work,
        sink,
        |push| {
            while let Some(input) = produce()? {
                if !push(input) {
                    break;
                }
            }
            Ok(())
        },
    )
}

/// [`map_ordered`] for a producer that pushes (a reader that calls a visitor per item):
/// `drive` hands each batch to the function it is given, which says `false` once `sink`
/// has failed (the batch is dropped, nothing more reaches the sink: stop pushing). The
/// sink's error is returned first, then `drive`'s; otherwise the results still waiting
/// when `drive` returns are handed to `sink` before this returns `drive`'s result. No more
/// is out at once than `in_flight` allows.
pub fn push_ordered<In, Out, E, T, W, S, D>(
    workers: usize,
    in_flight: InFlight<In>,
    work: W,
    mut sink: S,
    drive: D,
) -> Result<T, E>
where
    In: Send,
    Out: Send,
    W: Fn(In) -> Out + Sync,
    S: FnMut(Out) -> Result<(), E>,
    D: FnOnce(&mut dyn FnMut(In) -> bool) -> Result<T, E>,
{
    let workers = workers.max(1);
    let limit = (workers * in_flight.batches) as u64;
    let byte_limit = workers.saturating_mul(in_flight.bytes);
    std::thread::scope(|scope| {
        let (job_tx, job_rx) = mpsc::channel::<(u64, In)>();
        let (done_tx, done_rx) = mpsc::channel::<(u64, std::thread::Result<Out>)>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        for _ in 0..workers {
            let job_rx = Arc::clone(&job_rx);
            let done_tx = done_tx.clone();
            let work = &work;
            scope.spawn(move || {
                loop {
                    let job = match job_rx.lock() {
                        Ok(receiver) => receiver.recv(),
                        Err(_) => return,
                    };
                    let Ok((index, input)) = job else { return };
                    // A panic is carried back to the calling thread, which re-raises it.
                    let output = panic::catch_unwind(AssertUnwindSafe(|| work(input)));
                    if done_tx.send((index, output)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);

        let mut flow = Flow {
            sent: 0,
            next: 0,
            waiting: BTreeMap::new(),
            done: done_rx,
            failed: None,
            sizes: VecDeque::new(),
            bytes: 0,
        };
        let driven = drive(&mut |input| {
            let size = (in_flight.weigh)(&input);
            while flow.failed.is_none()
                && flow.sent > flow.next
                && (flow.sent - flow.next >= limit || flow.bytes.saturating_add(size) > byte_limit)
            {
                flow.receive(&mut sink);
            }
            if flow.failed.is_some() {
                return false;
            }
            job_tx
                .send((flow.sent, input))
                .expect("the workers wait for jobs until the sender is dropped");
            flow.sent += 1;
            flow.sizes.push_back(size);
            flow.bytes += size;
            true
        });
        drop(job_tx);
        if let Some(error) = flow.failed.take() {
            return Err(error);
        }
        let driven = driven?;
        while flow.next < flow.sent {
            flow.receive(&mut sink);
            if let Some(error) = flow.failed.take() {
                return Err(error);
            }
        }
        Ok(driven)
    })
}

/// The calling thread's side of [`push_ordered`]: how many batches went out, which one the
/// sink takes next, the results that came back before their turn, the sink's error once it
/// failed, and the sizes of the batches out (from the next one on) and their sum.
struct Flow<Out, E> {
    sent: u64,
    next: u64,
    waiting: BTreeMap<u64, Out>,
    done: mpsc::Receiver<(u64, std::thread::Result<Out>)>,
    failed: Option<E>,
    sizes: VecDeque<usize>,
    bytes: usize,
}

impl<Out, E> Flow<Out, E> {
    /// Waits for one result and hands every result whose turn has come to `sink`, until
    /// the sink fails.
    fn receive(&mut self, sink: &mut impl FnMut(Out) -> Result<(), E>) {
        let (index, output) = self
            .done
            .recv()
            .expect("every job sent comes back while a worker lives");
        match output {
            Ok(output) => self.waiting.insert(index, output),
            Err(payload) => panic::resume_unwind(payload),
        };
        while self.failed.is_none()
            && let Some(output) = self.waiting.remove(&self.next)
        {
            self.next += 1;
            self.bytes -= self.sizes.pop_front().expect("a size per batch out");
            self.failed = sink(output).err();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order_whatever_the_workers_do() {
        for workers in [1, 2, 5] {
            let mut next = 0u64;
            let mut seen = Vec::new();
            let result: Result<(), ()> = map_ordered(
                workers,
                || {
                    next += 1;
                    Ok((next <= 200).then_some(next))
                },
                |n| {
                    // Uneven work, so later batches often finish first.
                    std::thread::sleep(std::time::Duration::from_micros((n % 7) * 50));
                    n * 2
                },
                |n| {
                    seen.push(n);
                    Ok(())
                },
            );
            assert_eq!(result, Ok(()));
            assert_eq!(seen, (1..=200).map(|n| n * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_first_error_stops_the_run() {
        let mut produced = 0;
        let result = map_ordered(
            2,
            || {
                produced += 1;
                if produced == 50 {
                    Err("read failed")
                } else {
                    Ok(Some(produced))
                }
            },
            |n| n,
            |n| if n == 10 { Err("sink failed") } else { Ok(()) },
        );
        assert_eq!(result, Err("sink failed"));
        assert!(produced < 50, "production stops soon after a sink error");
        let result: Result<(), &str> =
            map_ordered(2, || Err("read failed"), |n: u32| n, |_| Ok(()));
        assert_eq!(result, Err("read failed"));
    }

    #[test]
    fn after_a_failed_sink_nothing_more_is_taken_and_its_error_comes_first() {
        let mut taken = Vec::new();
        let mut refused = 0;
        let result: Result<(), &str> = push_ordered(
            2,
            InFlight::batches(IN_FLIGHT_PER_WORKER),
            |n: u32| n,
            |n| {
                taken.push(n);
                if n == 10 { Err("sink failed") } else { Ok(()) }
            },
            |push| {
                for n in 0..100 {
                    if !push(n) {
                        refused += 1;
                    }
                }
                Err("driver failed")
            },
        );
        assert_eq!(result, Err("sink failed"));
        assert_eq!(taken, (0..=10).collect::<Vec<_>>());
        assert!(refused > 0, "pushes after the failure are refused");

        // A failure while the last results are taken, after the driver returned: four
        // batches are two workers' limit, so none is taken while they are pushed.
        let mut taken = Vec::new();
        let result: Result<&str, &str> = push_ordered(
            2,
            InFlight::batches(IN_FLIGHT_PER_WORKER),
            |n: u32| n,
            |n| {
                taken.push(n);
                if n == 2 { Err("sink failed") } else { Ok(()) }
            },
            |push| {
                (0..4).for_each(|n| assert!(push(n)));
                Ok("read")
            },
        );
        assert_eq!(result, Err("sink failed"));
        assert_eq!(taken, [0, 1, 2]);
    }

    #[test]
    fn what_the_driver_returns_comes_back_after_every_result_is_taken() {
        let mut taken = Vec::new();
        let result: Result<&str, &str> = push_ordered(
            3,
            InFlight::batches(IN_FLIGHT_PER_WORKER),
            |n: u32| n * 10,
            |n| {
                taken.push(n);
                Ok(())
            },
            |push| {
                (0..50).for_each(|n| assert!(push(n)));
                Ok("read")
            },
        );
        assert_eq!(result, Ok("read"));
        assert_eq!(taken, (0..50).map(|n| n * 10).collect::<Vec<_>>());
    }

    #[test]
    fn no_more_batches_are_out_at_once_than_the_caller_allows() {
        // Counted up as each batch is pushed, down as its result is taken: the most ever
        // out is workers × per_worker, and that many are reached.
        for (workers, per_worker) in [(2, 1), (2, 6), (3, 2)] {
            let out = std::cell::Cell::new(0usize);
            let mut most = 0;
            let result: Result<(), ()> = push_ordered(
                workers,
                InFlight::batches(per_worker),
                |n: u32| {
                    std::thread::sleep(std::time::Duration::from_micros(u64::from(n % 3) * 200));
                    n
                },
                |_| {
                    out.set(out.get() - 1);
                    Ok(())
                },
                |push| {
                    for n in 0..200 {
                        out.set(out.get() + 1);
                        assert!(push(n));
                        most = most.max(out.get());
                    }
                    Ok(())
                },
            );
            assert_eq!(result, Ok(()));
            assert_eq!(most, workers * per_worker, "{workers} × {per_worker}");
        }
    }

    /// Batch `n` weighs 1 to 5 bytes, and every 50th 100.
    pub(super) fn weigh(n: &u32) -> usize {
        if n % 50 == 49 {
            100
        } else {
            (n % 5 + 1) as usize
        }
    }

    #[test]
    fn no_more_bytes_are_out_at_once_than_the_caller_allows_but_a_large_batch_goes_alone() {
        // Batches of 1 to 5 bytes and, every 50th, one of 100; two workers of 6 bytes each.
        let out = std::cell::Cell::new(0usize);
        let (mut most, mut large_beside) = (0, Vec::new());
        let result: Result<(), ()> = push_ordered(
            2,
            InFlight::batches(100).bytes(6, weigh),
            |n: u32| {
                std::thread::sleep(std::time::Duration::from_micros(u64::from(n % 3) * 200));
                n
            },
            |n| {
                out.set(out.get() - weigh(&n));
                Ok(())
            },
            |push| {
                for n in 0..200 {
                    out.set(out.get() + weigh(&n));
                    assert!(push(n));
                    match weigh(&n) {
                        100 => large_beside.push(out.get() - 100),
                        _ => most = most.max(out.get()),
                    }
                }
                Ok(())
            },
        );
        assert_eq!(result, Ok(()));
        assert!((8..=12).contains(&most), "{most}");
        assert_eq!(
            large_beside,
            [0, 0, 0, 0],
            "a large batch waits for every other"
        );
    }

    #[test]
    #[should_panic(expected = "worker panic")]
    fn a_panicking_worker_panics_the_caller_instead_of_hanging() {
        let mut n = 0;
        let _: Result<(), ()> = map_ordered(
            2,
            || {
                n += 1;
                Ok((n < 100).then_some(n))
            },
            |n| if n == 3 { panic!("worker panic") } else { n },
            |_| Ok(()),
        );
    }
}
