//! Where the crate's parallelism is decided: how work is cut into tasks, and when tasks go to rayon.
//!
//! Kernels (a row's S and U, a group's sort, a job's factors) are plain functions of their input
//! and never touch threads; the passes hand them to the helpers here. Work is cut into tasks of at
//! least [`CHUNK`] items (rows, group members, job rows). A single task runs on the calling thread:
//! on the 2-core machines this engine is sized for, handing a task to the pool and waiting for it
//! costs more than a few thousand rows of any kernel, so small inputs, and the many small levels
//! of a tree, stay sequential.
//!
//! Results do not depend on the thread count: tasks are cut from the input alone (never from the
//! number of threads), each task writes only its own rows, per-task results come back in task
//! order, and no floating-point value is combined across tasks. The one exception is
//! [`pull_parts`], whose callers merge exact sums: which thread takes which part changes from run
//! to run, and their results do not.
//!
//! The rule for the rest of the workspace: a loop over rows, members or jobs is cut into tasks
//! here, never by calling rayon itself. Orchestration may call rayon directly for work that comes
//! in whole, independent pieces whose results are kept in their own order: two stages side by
//! side (`rayon::join`), one result per file, row group or page (`par_iter` collected in order).
//! Such a split is the input's, not the pool's, so it gives the same bits for any thread count.
//! The pool itself is sized once, by the front end (the command's `--threads`, the Python
//! package's `threads=`).

use std::ops::Range;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rayon::prelude::*;

pub mod runs;

use runs::owner_runs;

/// Items per task. A task of 16 Ki items runs for tens to hundreds of microseconds, far above
/// rayon's few microseconds of overhead per task, and a pass over 10^6 rows still has some 60
/// tasks to balance over the cores.
pub const CHUNK: usize = 16 * 1024;

/// `f(i)` for every row `i < n`, in tasks of at least [`CHUNK`] rows (sequential for one), written
/// straight into the new column (a zeroed column filled afterwards costs a memset per pass on
/// reused memory). Each row is its own value, so how rayon splits the rows cannot change it.
pub fn column<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    let mut v = Vec::new();
    extend_column(&mut v, n, f);
    v
}

/// [`column()`] appended to `v`, in its spare capacity when it has room (so memory reserved with
/// care, such as a table on huge pages, is the memory filled, and its pages are first touched on
/// every core).
pub fn extend_column<T: Send>(v: &mut Vec<T>, n: usize, f: impl Fn(usize) -> T + Sync + Send) {
    if n <= CHUNK {
        v.extend((0..n).map(f));
    } else {
        v.par_extend((0..n).into_par_iter().with_min_len(CHUNK).map(f));
    }
}

/// The two halves of `f(i)` for every row `i < n` in one pass, each into its own column, as
/// [`column()`]. (Nesting it for four columns measured slower than [`fill_rows`].)
pub fn unzip<A: Send, B: Send>(n: usize, f: impl Fn(usize) -> (A, B) + Sync + Send) -> (Vec<A>, Vec<B>) {
    if n <= CHUNK { (0..n).map(f).unzip() } else { (0..n).into_par_iter().with_min_len(CHUNK).map(f).unzip() }
}

/// Runs `f` over `0..n` in tasks of [`CHUNK`] rows, writing its `K` values for row `i` to
/// `outs[k][i]`: one pass for several columns.
///
/// # Panics
/// If the outputs differ in length.
pub fn fill_rows<const K: usize>(outs: [&mut [f64]; K], f: impl Fn(usize) -> [f64; K] + Sync) {
    let n = outs.first().map_or(0, |o| o.len());
    assert!(outs.iter().all(|o| o.len() == n), "one length for every output");
    let mut iters = outs.map(|o| o.chunks_mut(CHUNK));
    let mut tasks: Vec<(usize, [&mut [f64]; K])> = (0..n.div_ceil(CHUNK))
        .map(|c| (c * CHUNK, std::array::from_fn(|k| iters[k].next().expect("outputs have one length"))))
        .collect();
    for_each_task(&mut tasks, |(first, chunk)| {
        // The task's slices as a local array: the hot loop then keeps them in registers.
        let mut chunk: [&mut [f64]; K] = std::array::from_fn(|k| std::mem::take(&mut chunk[k]));
        let len = chunk.first().map_or(0, |o| o.len());
        for i in 0..len {
            for (o, v) in chunk.iter_mut().zip(f(*first + i)) {
                o[i] = v;
            }
        }
    });
}

/// Cuts work over many small groups into tasks: runs of consecutive `owners` holding at least
/// [`CHUNK`] items each, owner `x` holding items `first_item(x)..first_item(x + 1)` (see
/// [`owner_runs`]). Each run comes with its number of items.
pub fn task_runs(owners: Range<usize>, first_item: impl Fn(usize) -> usize) -> Vec<(Range<usize>, usize)> {
    owner_runs(owners, CHUNK, first_item)
}

/// The text of every item of `items`, in order, as the texts of tasks of [`CHUNK`] items
/// formatted in parallel: `format` appends an item's text to a buffer.
pub fn texts<T: Sync>(items: &[T], format: impl Fn(&T, &mut String) + Sync) -> Vec<String> {
    let text = |task: &[T]| {
        let mut text = String::new();
        let Some((first, rest)) = task.split_first() else { return text };
        format(first, &mut text);
        // Sized from the first item, so the buffer is not copied as it doubles its way up.
        text.reserve((text.len() + text.len() / 8) * rest.len());
        rest.iter().for_each(|item| format(item, &mut text));
        text
    };
    if items.len() <= CHUNK { vec![text(items)] } else { items.par_chunks(CHUNK).map(text).collect() }
}

/// Writes the text of every item of `items` to `out`, in order ([`texts`]), a wave of a task per
/// thread at a time, each wave written while the next is formatted, so that the text of at most
/// two waves is held: formatting, not writing, is the cost of a large table (10^7 sprio rows are
/// 1.5 GB of text).
///
/// # Errors
/// The first error of `out`; nothing after it is written.
pub fn write_text<T: Sync>(
    items: &[T],
    format: impl Fn(&T, &mut String) + Sync + Send,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    if items.len() <= CHUNK {
        return texts(items, format).iter().try_for_each(|t| out.write_all(t.as_bytes()));
    }
    // Each wave is written while the next is formatted: the copy into the page cache (1.4 s for
    // 1.5 GB here) runs beside the formatting instead of after it.
    let write =
        |texts: Vec<String>, out: &mut dyn std::io::Write| texts.iter().try_for_each(|t| out.write_all(t.as_bytes()));
    // `out` stays on this thread (a locked stdout cannot move); the formatting is spawned.
    let mut formatted = Vec::new();
    for wave in items.chunks(CHUNK * rayon::current_num_threads().max(1)) {
        let mut next = Vec::new();
        rayon::in_place_scope(|s| {
            s.spawn(|_| next = texts(wave, &format));
            write(std::mem::take(&mut formatted), &mut *out)
        })?;
        formatted = next;
    }
    write(formatted, out)
}

/// `f` on every task: in order on this thread when there is one, else across rayon.
pub fn for_each_task<T: Send>(tasks: &mut [T], f: impl Fn(&mut T) + Sync + Send) {
    map_tasks_with(tasks, || (), |(), t| f(t));
}

/// [`for_each_task`] with a scratch value per worker, made by `init` (buffers reused across the
/// tasks a worker runs).
pub fn for_each_task_with<T: Send, S>(
    tasks: &mut [T],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &mut T) + Sync + Send,
) {
    map_tasks_with(tasks, init, f);
}

/// `f` of every task, as [`for_each_task`] runs them, in task order.
pub fn map_tasks<T: Send, R: Send>(tasks: &mut [T], f: impl Fn(&mut T) -> R + Sync + Send) -> Vec<R> {
    map_tasks_with(tasks, || (), |(), t| f(t))
}

/// The one driver behind the task helpers.
fn map_tasks_with<T: Send, S, R: Send>(
    tasks: &mut [T],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &mut T) -> R + Sync + Send,
) -> Vec<R> {
    if tasks.len() <= 1 {
        let mut scratch = init();
        tasks.iter_mut().map(|t| f(&mut scratch, t)).collect()
    } else {
        tasks.par_iter_mut().map_init(init, f).collect()
    }
}

/// Runs `work` on every part `next` hands out, on as many threads as the pool has, the calling
/// thread one of them. Each thread takes its next part as soon as it is done with its last one,
/// into a state of its own (made by `init` for its first part), so a slow part holds up only its
/// own thread. The states come back in no particular order, one per thread that took a part:
/// which thread takes which part differs from run to run, so the caller must merge them to the
/// same result in any grouping (as exact sums do). Parts are numbered in the order `next` gives
/// them. `between` runs on the calling thread alone (a caller's signal handlers may only run
/// there), after each part it worked and once at the end; its error stops the work as the
/// error of that part would.
///
/// # Errors
/// The error of the first failing part in that order (`next`'s and `between`'s included), as a
/// sequential run would meet it: no part after a failed one is started, and every part before it
/// finishes.
pub fn pull_parts<T, S: Send, E: Send>(
    next: impl FnMut() -> Result<Option<T>, E> + Send,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, T) -> Result<(), E> + Sync,
    mut between: impl FnMut() -> Result<(), E>,
) -> Result<Vec<S>, E> {
    // The number of the next part, and `next` until it has given its last.
    let source = Mutex::new((0usize, Some(next)));
    let failed: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let fail = |part: usize, e: E| {
        let mut failed = lock(&failed);
        if failed.as_ref().is_none_or(|(first, _)| part < *first) {
            *failed = Some((part, e));
        }
    };
    let states = Mutex::new(Vec::new());
    // One thread's parts; `between` after each when it is the calling thread.
    let run = |mut between: Option<&mut dyn FnMut() -> Result<(), E>>| {
        let mut state = None;
        loop {
            let (part, pulled) = {
                let mut source = lock(&source);
                let (number, next) = &mut *source;
                // Parts are handed out in order: every one after a failure comes after it.
                let Some(take) = next.as_mut().filter(|_| lock(&failed).is_none()) else { break };
                let pulled = take();
                if matches!(pulled, Ok(None)) {
                    *next = None;
                }
                *number += 1;
                (*number - 1, pulled)
            };
            let done = match pulled {
                Ok(Some(t)) => work(state.get_or_insert_with(&init), t).and_then(|()| match between.as_mut() {
                    Some(between) => between(),
                    None => Ok(()),
                }),
                Ok(None) => break,
                Err(e) => Err(e),
            };
            if let Err(e) = done {
                fail(part, e);
                break;
            }
        }
        lock(&states).extend(state);
    };
    rayon::in_place_scope(|s| {
        for _ in 1..rayon::current_num_threads() {
            s.spawn(|_| run(None));
        }
        run(Some(&mut between));
    });
    let failed = failed.into_inner().unwrap_or_else(PoisonError::into_inner);
    match failed {
        Some((_, e)) => Err(e),
        None => between().map(|()| states.into_inner().unwrap_or_else(PoisonError::into_inner)),
    }
}

/// Locks `m`, through a panic of an earlier holder: the crate's locked values stay whole.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` in a pool of `threads` threads.
    fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
    }

    #[test]
    fn rows_are_filled_alike_on_any_number_of_threads() {
        for n in [0, 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5] {
            let run = || {
                let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
                fill_rows([&mut a, &mut b], |i| [i as f64, (i as f64).sqrt()]);
                (a, b, column(n, |i| i * 3), unzip(n, |i| (i, i + 1)))
            };
            let (a, b, c, (d, e)) = on_threads(1, run);
            assert!(a.iter().enumerate().all(|(i, &v)| v == i as f64), "{n} rows");
            assert!(b.iter().enumerate().all(|(i, &v)| v == (i as f64).sqrt()), "{n} rows");
            assert_eq!(c, (0..n).map(|i| i * 3).collect::<Vec<_>>());
            assert_eq!((d.len(), e.len()), (n, n));
            assert_eq!(on_threads(2, run), on_threads(1, run));
        }
    }

    #[test]
    fn task_results_come_back_in_task_order() {
        let first = |x: usize| x * 1000;
        let mut runs = task_runs(0..200, first);
        assert!(runs.len() > 1 && runs.iter().all(|(owners, _)| !owners.is_empty()));
        let starts = on_threads(2, || map_tasks(&mut runs, |(owners, items)| (owners.start, *items)));
        assert_eq!(starts.iter().map(|s| s.1).sum::<usize>(), 200 * 1000);
        assert!(starts.windows(2).all(|w| w[0].0 < w[1].0));
        let mut seen = vec![0u32; 3];
        for_each_task_with(&mut seen, Vec::<u8>::new, |scratch, s| {
            scratch.push(1);
            *s = 1;
        });
        assert_eq!(seen, [1, 1, 1]);
    }

    #[test]
    fn pulled_parts_are_each_worked_once_and_the_first_failure_in_order_wins() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        use std::time::{Duration, Instant};

        // Waits (at most a while: on one thread the other part never comes) for `flag`.
        let wait_for = |flag: &AtomicBool| {
            let start = Instant::now();
            while !flag.load(SeqCst) && start.elapsed() < Duration::from_millis(200) {
                std::thread::yield_now();
            }
        };
        // Parts 0..n; reading `bad_read` fails. Parts 1 and 2 fail when `fail_1_2`: part 1 once
        // part 2 is under way, then part 2 once part 1 has failed (a later failure met last),
        // and part 0 when `fail_0`, once part 1's reading has failed (an earlier one met last).
        let run = |threads: usize, n: usize, bad_read: Option<usize>, fail_1_2: bool, fail_0: bool| {
            let (started_2, failed_1, read_failed) =
                (AtomicBool::new(false), AtomicBool::new(false), AtomicBool::new(false));
            let mut i = 0;
            let next = || -> Result<Option<usize>, String> {
                assert!(i <= n, "asked again after the last part");
                i += 1;
                match i - 1 {
                    p if Some(p) == bad_read => {
                        read_failed.store(true, SeqCst);
                        Err(format!("read {p}"))
                    }
                    p if p == n => Ok(None),
                    p => Ok(Some(p)),
                }
            };
            let work = |seen: &mut Vec<usize>, p: usize| {
                match p {
                    0 if fail_0 => wait_for(&read_failed),
                    1 if fail_1_2 => wait_for(&started_2),
                    2 if fail_1_2 => {
                        started_2.store(true, SeqCst);
                        wait_for(&failed_1);
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    _ => {}
                }
                match p {
                    0 if fail_0 => Err("work 0".to_string()),
                    1 | 2 if fail_1_2 => {
                        failed_1.store(true, SeqCst);
                        Err(format!("work {p}"))
                    }
                    _ => {
                        seen.push(p);
                        Ok(())
                    }
                }
            };
            on_threads(threads, || pull_parts(next, Vec::new, work, || Ok(())))
        };
        for threads in [1, 2, 3] {
            let states = run(threads, 40, None, false, false).unwrap();
            assert!(states.len() <= threads, "one state per thread");
            let mut seen: Vec<usize> = states.into_iter().flatten().collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..40).collect::<Vec<_>>(), "{threads} threads");
            assert!(run(threads, 0, None, false, false).unwrap().is_empty(), "no part, no state");
            assert_eq!(run(threads, 40, None, true, false).unwrap_err(), "work 1", "{threads} threads");
            assert_eq!(run(threads, 40, Some(1), false, true).unwrap_err(), "work 0", "{threads} threads");
            assert_eq!(run(threads, 40, Some(5), false, false).unwrap_err(), "read 5", "{threads} threads");
        }
    }

    #[test]
    fn between_parts_runs_on_the_calling_thread_and_its_error_stops_the_work() {
        let parts = || {
            let mut i = 0;
            move || -> Result<Option<usize>, String> {
                i += 1;
                Ok((i <= 20).then_some(i))
            }
        };
        let work = |seen: &mut Vec<usize>, p: usize| {
            seen.push(p);
            Ok(())
        };
        for threads in [1, 2, 3] {
            let (asked, worked) = on_threads(threads, || {
                let caller = std::thread::current().id();
                let mut asked = 0;
                let between = || {
                    assert_eq!(std::thread::current().id(), caller, "asked on the calling thread");
                    asked += 1;
                    Ok(())
                };
                let states = pull_parts(parts(), Vec::new, work, between).unwrap();
                (asked, states.into_iter().flatten().count())
            });
            assert_eq!(worked, 20, "{threads} threads");
            assert!(asked >= 1, "asked at the end at least");
            let stop = on_threads(threads, || pull_parts(parts(), Vec::new, work, || Err("stop".to_string())));
            assert_eq!(stop.unwrap_err(), "stop", "{threads} threads");
        }
    }
}
