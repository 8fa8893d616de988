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
//! order, and no floating-point value is combined across tasks.

use std::ops::Range;

use rayon::prelude::*;

use crate::tree::runs::owner_runs;

/// Items per task. A task of 16 Ki items runs for tens to hundreds of microseconds, far above
/// rayon's few microseconds of overhead per task, and a pass over 10^6 rows still has some 60
/// tasks to balance over the cores.
const CHUNK: usize = 16 * 1024;

/// `f(i)` for every row `i < n`, in tasks of at least [`CHUNK`] rows (sequential for one), written
/// straight into the new column (a zeroed column filled afterwards costs a memset per pass on
/// reused memory). Each row is its own value, so how rayon splits the rows cannot change it.
pub(crate) fn column<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if n <= CHUNK { (0..n).map(f).collect() } else { (0..n).into_par_iter().with_min_len(CHUNK).map(f).collect() }
}

/// The two halves of `f(i)` for every row `i < n` in one pass, each into its own column, as
/// [`column()`]. (Nesting it for four columns measured slower than [`fill_rows`].)
pub(crate) fn unzip<A: Send, B: Send>(n: usize, f: impl Fn(usize) -> (A, B) + Sync + Send) -> (Vec<A>, Vec<B>) {
    if n <= CHUNK { (0..n).map(f).unzip() } else { (0..n).into_par_iter().with_min_len(CHUNK).map(f).unzip() }
}

/// Runs `f` over `0..n` in tasks of [`CHUNK`] rows, writing its `K` values for row `i` to
/// `outs[k][i]`: one pass for several columns.
///
/// # Panics
/// If the outputs differ in length.
pub(crate) fn fill_rows<const K: usize>(outs: [&mut [f64]; K], f: impl Fn(usize) -> [f64; K] + Sync) {
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
pub(crate) fn task_runs(owners: Range<usize>, first_item: impl Fn(usize) -> usize) -> Vec<(Range<usize>, usize)> {
    owner_runs(owners, CHUNK, first_item)
}

/// The text of every item of `items`, in order, as the texts of tasks of [`CHUNK`] items
/// formatted in parallel: `format` appends an item's text to a buffer.
pub(crate) fn texts<T: Sync>(items: &[T], format: impl Fn(&T, &mut String) + Sync) -> Vec<String> {
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
pub(crate) fn write_text<T: Sync>(
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
pub(crate) fn for_each_task<T: Send>(tasks: &mut [T], f: impl Fn(&mut T) + Sync + Send) {
    map_tasks_with(tasks, || (), |(), t| f(t));
}

/// [`for_each_task`] with a scratch value per worker, made by `init` (buffers reused across the
/// tasks a worker runs).
pub(crate) fn for_each_task_with<T: Send, S>(
    tasks: &mut [T],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &mut T) + Sync + Send,
) {
    map_tasks_with(tasks, init, f);
}

/// `f` of every task, as [`for_each_task`] runs them, in task order.
pub(crate) fn map_tasks<T: Send, R: Send>(tasks: &mut [T], f: impl Fn(&mut T) -> R + Sync + Send) -> Vec<R> {
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
}
