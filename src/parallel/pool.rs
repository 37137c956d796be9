//! An ordered pipeline run by as many threads as cores, the caller's among them, each
//! taking whichever step is due: the caller produces batches, any thread works on them,
//! and any one thread at a time hands the results, in production order, to the sink.
//!
//! This is how a JSON Lines import uses the machine (reading and hashing, parsing, writing
//! the records file). With one thread per step, five threads shared two cores: the
//! scheduler preempted the reading or the writing thread to run a woken one, and left it
//! waiting on the busy core while the other went idle, 13 % of both cores in all
//! (BENCHMARKS.md, "One thread per core"). Here no more threads compute than there are
//! cores, and a thread waits only when no step is due. Owns no I/O; callers produce and
//! consume.

use std::collections::{BTreeMap, VecDeque};
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use super::InFlight;

/// Runs `work` on every batch from `produce` on `threads` threads (the calling thread is
/// one of them and the only one that calls `produce`) and calls `sink` with the results in
/// production order, on whichever thread is free, never on two at once. `produce` returns
/// `Ok(None)` at the end. No more batches are produced and not yet taken by the sink than
/// `in_flight` allows per thread. The first error from `produce` or `sink` stops
/// everything and is returned; a panic in `work` or `sink` is raised again on the calling
/// thread.
pub fn run_ordered<In, Out, E, P, W, S>(
    threads: usize,
    in_flight: InFlight<In>,
    mut produce: P,
    work: W,
    sink: S,
) -> Result<(), E>
where
    In: Send,
    Out: Send,
    E: Send,
    P: FnMut() -> Result<Option<In>, E>,
    W: Fn(In) -> Out + Sync,
    S: FnMut(Out) -> Result<(), E> + Send,
{
    let threads = threads.max(1);
    let shared = Shared {
        state: Mutex::new(State {
            pending: VecDeque::new(),
            done: BTreeMap::new(),
            sink: Some(sink),
            produced: 0,
            next: 0,
            sizes: VecDeque::new(),
            bytes: 0,
            ended: false,
            abandoned: false,
            failed: None,
            panic: None,
        }),
        changed: Condvar::new(),
        limit: (threads * in_flight.batches) as u64,
        byte_limit: threads.saturating_mul(in_flight.bytes),
        weigh: in_flight.weigh,
    };
    std::thread::scope(|scope| {
        // However the caller's part ends (a panic in `produce` too), the others stop.
        let _stop = StopOnDrop(&shared);
        for _ in 1..threads {
            // A thread the system will not make (a process limit) leaves the run to those
            // there are: the caller alone can do every step.
            let helper = || shared.run(&work, None);
            if std::thread::Builder::new()
                .spawn_scoped(scope, helper)
                .is_err()
            {
                break;
            }
        }
        shared.run(&work, Some(&mut produce));
    });
    let mut state = shared
        .state
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(payload) = state.panic.take() {
        panic::resume_unwind(payload);
    }
    state.failed.map_or(Ok(()), Err)
}

struct Shared<In, Out, E, S> {
    state: Mutex<State<In, Out, E, S>>,
    changed: Condvar,
    limit: u64,
    byte_limit: usize,
    weigh: fn(&In) -> usize,
}

/// Batches produced and not yet worked on, results not yet taken, the sink when no thread
/// holds it, and how the run stands.
struct State<In, Out, E, S> {
    pending: VecDeque<(u64, In)>,
    done: BTreeMap<u64, Out>,
    sink: Option<S>,
    /// Batches produced; the next one is numbered this.
    produced: u64,
    /// The batch the sink takes next.
    next: u64,
    /// The sizes of the batches produced and not yet taken, from `next` on, and their sum.
    sizes: VecDeque<usize>,
    bytes: usize,
    /// `produce` said there is no more.
    ended: bool,
    /// The calling thread's part ended before the run did (it panicked).
    abandoned: bool,
    failed: Option<E>,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

impl<In, Out, E, S> State<In, Out, E, S> {
    fn stopped(&self) -> bool {
        self.abandoned || self.failed.is_some() || self.panic.is_some()
    }

    /// Every batch produced has been taken by the sink, and no more will come.
    fn finished(&self) -> bool {
        self.ended && self.next == self.produced
    }
}

/// What a thread does next.
enum Step<In, Out, S> {
    Produce,
    Sink(Out, S),
    Work(u64, In),
    Wait,
    Leave,
}

impl<In, Out, E, S> Shared<In, Out, E, S>
where
    S: FnMut(Out) -> Result<(), E>,
{
    fn state(&self) -> MutexGuard<'_, State<In, Out, E, S>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One thread's part: the calling thread's with `produce`, which it prefers while the
    /// bound allows (the other threads need its batches); every thread then takes the
    /// sink's turn if due, else a batch to work on, else waits.
    fn run(
        &self,
        work: &impl Fn(In) -> Out,
        mut produce: Option<&mut dyn FnMut() -> Result<Option<In>, E>>,
    ) {
        let mut state = self.state();
        loop {
            let step = self.next_step(&mut state, produce.is_some());
            match step {
                Step::Leave => return,
                Step::Wait => {
                    state = self
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Step::Produce => {
                    drop(state);
                    let produced = (produce.as_mut().expect("only the producer produces"))();
                    state = self.state();
                    match produced {
                        Ok(Some(input)) => {
                            let size = (self.weigh)(&input);
                            let index = state.produced;
                            state.sizes.push_back(size);
                            state.bytes += size;
                            state.produced += 1;
                            state.pending.push_back((index, input));
                        }
                        Ok(None) => state.ended = true,
                        Err(error) => {
                            state.failed.get_or_insert(error);
                        }
                    }
                    self.changed.notify_all();
                }
                Step::Work(index, input) => {
                    drop(state);
                    let output = panic::catch_unwind(AssertUnwindSafe(|| work(input)));
                    state = self.state();
                    match output {
                        Ok(output) => {
                            state.done.insert(index, output);
                        }
                        Err(payload) => {
                            state.panic.get_or_insert(payload);
                        }
                    }
                    self.changed.notify_all();
                }
                Step::Sink(output, mut sink) => {
                    drop(state);
                    let taken = panic::catch_unwind(AssertUnwindSafe(|| sink(output)));
                    state = self.state();
                    state.sink = Some(sink);
                    state.next += 1;
                    state.bytes -= state.sizes.pop_front().expect("a size per batch out");
                    match taken {
                        Ok(Ok(())) => {}
                        Ok(Err(error)) => {
                            state.failed.get_or_insert(error);
                        }
                        Err(payload) => {
                            state.panic.get_or_insert(payload);
                        }
                    }
                    self.changed.notify_all();
                }
            }
        }
    }

    fn next_step(&self, state: &mut State<In, Out, E, S>, producer: bool) -> Step<In, Out, S> {
        if state.stopped() || state.finished() {
            return Step::Leave;
        }
        let out = state.produced - state.next;
        let room = out == 0 || (out < self.limit && state.bytes < self.byte_limit);
        if producer && !state.ended && room {
            return Step::Produce;
        }
        if state.sink.is_some()
            && let Some(output) = state.done.remove(&state.next)
        {
            let sink = state.sink.take().expect("the sink is here");
            return Step::Sink(output, sink);
        }
        if let Some((index, input)) = state.pending.pop_front() {
            return Step::Work(index, input);
        }
        Step::Wait
    }
}

/// Stops the other threads when the calling thread's part ends, however it ends.
struct StopOnDrop<'s, In, Out, E, S>(&'s Shared<In, Out, E, S>);

impl<In, Out, E, S> Drop for StopOnDrop<'_, In, Out, E, S> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.finished() {
            state.abandoned = true;
        }
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    /// Batches `0..count`, then the end.
    fn numbers(count: u32) -> impl FnMut() -> Result<Option<u32>, &'static str> {
        let mut next = 0;
        move || {
            next += 1;
            Ok((next <= count).then_some(next - 1))
        }
    }

    fn uneven(n: u32) -> u32 {
        // Later batches often finish first.
        std::thread::sleep(Duration::from_micros(u64::from(n % 7) * 50));
        n * 2
    }

    #[test]
    fn results_reach_the_sink_in_order_whatever_the_threads_do() {
        for threads in [1, 2, 5] {
            let mut seen = Vec::new();
            let result = run_ordered(threads, InFlight::batches(2), numbers(300), uneven, |n| {
                seen.push(n);
                Ok(())
            });
            assert_eq!(result, Ok(()));
            assert_eq!(
                seen,
                (0..300).map(|n| n * 2).collect::<Vec<_>>(),
                "{threads}"
            );
        }
    }

    #[test]
    fn while_the_caller_produces_another_thread_works_and_takes_the_results() {
        let caller = std::thread::current().id();
        let (sunk, wait) = mpsc::channel();
        let mut calls = 0;
        let mut takers = Vec::new();
        let result: Result<(), ()> = run_ordered(
            2,
            InFlight::batches(4),
            || {
                calls += 1;
                match calls {
                    1 => Ok(Some(7)),
                    // The caller stays here until the first result is taken: by the other
                    // thread, which must also have worked on it.
                    2 => {
                        let taken = wait.recv_timeout(Duration::from_secs(10));
                        assert_eq!(taken, Ok(14), "the other thread took the result");
                        Ok(None)
                    }
                    _ => unreachable!("produce is not called after the end"),
                }
            },
            |n: u32| (n * 2, std::thread::current().id()),
            |(n, worker)| {
                takers.push((worker, std::thread::current().id()));
                sunk.send(n).expect("the caller waits");
                Ok(())
            },
        );
        assert_eq!(result, Ok(()));
        assert_eq!(takers.len(), 1);
        assert!(takers[0].0 != caller && takers[0].1 != caller, "{takers:?}");
    }

    #[test]
    fn the_first_error_stops_the_run_and_nothing_more_is_taken() {
        let mut produced = 0;
        let result = run_ordered(
            2,
            InFlight::batches(2),
            || {
                produced += 1;
                if produced == 50 {
                    Err("read failed")
                } else {
                    Ok(Some(produced))
                }
            },
            |n: u32| n,
            |_| Ok(()),
        );
        assert_eq!(result, Err("read failed"));
        assert_eq!(produced, 50, "nothing is produced after a failed read");

        let mut taken = Vec::new();
        let mut produced = 0;
        let result = run_ordered(
            2,
            InFlight::batches(2),
            || {
                produced += 1;
                Ok((produced <= 100).then_some(produced))
            },
            uneven,
            |n| {
                taken.push(n);
                if n == 20 { Err("sink failed") } else { Ok(()) }
            },
        );
        assert_eq!(result, Err("sink failed"));
        assert_eq!(taken, (1..=10).map(|n| n * 2).collect::<Vec<_>>());
        assert!(
            produced < 100,
            "production stops soon after the sink failed"
        );
    }

    #[test]
    fn no_more_batches_are_out_at_once_than_the_caller_allows() {
        // Counted up as each batch is produced, down as its result is taken: the most ever
        // out is threads × per_thread, and that many are reached.
        for (threads, per_thread) in [(1, 3), (2, 1), (2, 6), (3, 2)] {
            let out = AtomicUsize::new(0);
            let most = AtomicUsize::new(0);
            let mut next = 0;
            let result: Result<(), ()> = run_ordered(
                threads,
                InFlight::batches(per_thread),
                || {
                    next += 1;
                    if next > 200 {
                        return Ok(None);
                    }
                    let now = out.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    Ok(Some(next))
                },
                uneven,
                |_| {
                    out.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                },
            );
            assert_eq!(result, Ok(()));
            let most = most.into_inner();
            assert_eq!(most, threads * per_thread, "{threads} × {per_thread}");
        }
    }

    #[test]
    fn no_more_bytes_are_out_than_the_bound_and_one_batch() {
        // Batches of 1 to 5 bytes and, every 50th, one of 100; two threads of 6 bytes: a
        // batch is produced while fewer than 12 bytes are out, so at most 11 and one batch.
        let weigh = crate::parallel::tests::weigh;
        let out = AtomicUsize::new(0);
        let (mut most, mut large_beside) = (0, Vec::new());
        let mut next = 0;
        let result: Result<(), ()> = run_ordered(
            2,
            InFlight::batches(100).bytes(6, weigh),
            || {
                if next == 200 {
                    return Ok(None);
                }
                let n = next;
                next += 1;
                let now = out.fetch_add(weigh(&n), Ordering::SeqCst) + weigh(&n);
                match weigh(&n) {
                    100 => large_beside.push(now - 100),
                    _ => most = most.max(now),
                }
                Ok(Some(n))
            },
            uneven,
            |n| {
                out.fetch_sub(weigh(&(n / 2)), Ordering::SeqCst);
                Ok(())
            },
        );
        assert_eq!(result, Ok(()));
        assert!((8..=16).contains(&most), "{most}");
        assert!(
            large_beside.iter().all(|beside| *beside < 12),
            "{large_beside:?}"
        );
    }

    #[test]
    #[should_panic(expected = "worker panic")]
    fn a_panic_in_work_is_raised_on_the_caller_instead_of_hanging() {
        let _ = run_ordered(
            2,
            InFlight::batches(2),
            numbers(100),
            |n| if n == 3 { panic!("worker panic") } else { n },
            |_| Ok(()),
        );
    }

    #[test]
    #[should_panic(expected = "sink panic")]
    fn a_panic_in_the_sink_is_raised_on_the_caller_instead_of_hanging() {
        let _ = run_ordered(2, InFlight::batches(2), numbers(100), uneven, |n| {
            if n == 6 { panic!("sink panic") } else { Ok(()) }
        });
    }

    #[test]
    #[should_panic(expected = "producer panic")]
    fn a_panic_in_produce_stops_the_other_threads() {
        let mut next = 0;
        let _ = run_ordered(
            3,
            InFlight::batches(2),
            || {
                next += 1;
                if next == 20 {
                    panic!("producer panic");
                }
                Ok::<_, ()>(Some(next))
            },
            uneven,
            |_| Ok(()),
        );
    }

    #[test]
    fn a_batch_produced_wakes_a_waiting_thread() {
        let (sunk, wait) = mpsc::channel();
        let mut calls = 0;
        let result: Result<(), ()> = run_ordered(
            2,
            InFlight::batches(4),
            || {
                calls += 1;
                match calls {
                    1 => {
                        // The other thread is waiting by now, with nothing to do.
                        std::thread::sleep(Duration::from_millis(100));
                        Ok(Some(7))
                    }
                    2 => {
                        let taken = wait.recv_timeout(Duration::from_secs(10));
                        assert_eq!(taken, Ok(14), "the waiting thread was woken for the batch");
                        Ok(None)
                    }
                    _ => unreachable!("produce is not called after the end"),
                }
            },
            |n: u32| n * 2,
            move |n| {
                sunk.send(n).expect("the caller waits");
                Ok(())
            },
        );
        assert_eq!(result, Ok(()));
    }

    /// Produces batch 0, then stays in its second call until the other thread says it has
    /// the batch (the caller then waits for that thread), then ends.
    fn one_batch_then_until(
        other_has_it: mpsc::Receiver<()>,
    ) -> impl FnMut() -> Result<Option<u32>, ()> {
        let mut calls = 0;
        move || {
            calls += 1;
            if calls > 1 {
                other_has_it
                    .recv_timeout(Duration::from_secs(10))
                    .expect("the other thread has the batch");
                return Ok(None);
            }
            Ok(Some(0))
        }
    }

    #[test]
    #[should_panic(expected = "worker panic")]
    fn a_panic_in_work_on_another_thread_wakes_the_waiting_caller() {
        let caller = std::thread::current().id();
        let (started, wait) = mpsc::channel();
        let _ = run_ordered(
            2,
            InFlight::batches(4),
            one_batch_then_until(wait),
            |_: u32| -> u32 {
                assert_ne!(std::thread::current().id(), caller);
                started.send(()).expect("the caller waits");
                // The caller is waiting by now.
                std::thread::sleep(Duration::from_millis(100));
                panic!("worker panic")
            },
            |_| Ok(()),
        );
    }

    #[test]
    #[should_panic(expected = "sink panic")]
    fn a_panic_in_the_sink_on_another_thread_wakes_the_waiting_caller() {
        let (started, wait) = mpsc::channel();
        let _ = run_ordered(
            2,
            InFlight::batches(4),
            one_batch_then_until(wait),
            |n: u32| n,
            move |_| -> Result<(), ()> {
                started.send(()).expect("the caller waits");
                // The caller is waiting by now.
                std::thread::sleep(Duration::from_millis(100));
                panic!("sink panic")
            },
        );
    }
}
