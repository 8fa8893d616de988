//! Slurm's per-TRES bookkeeping while charging, kept only with `AccountingStorageEnforce=limits`
//! as slurmctld keeps it (`_handle_assoc_tres_run_secs()`):
//!
//! - `usage_tres_raw`: every TRES but energy is charged the job's decayed seconds (with its QOS
//!   `UsageFactor`) times its count; the `billing` count is the job's billable TRES, truncated.
//!   sshare prints it as `GrpTRESRaw`, in minutes.
//! - `grp_used_tres_run_secs`: a job adds its time limit (`× UsageFactor`, truncated) times each
//!   count when it starts, and every decay pass takes back the slice it charged, up to the limit's
//!   end; what a running job has left after the last pass is sshare's `TRESRunMins`, in minutes.
//!
//! A QOS's `NoDecay` flag changes only that QOS's own usage: associations decay whatever the job's
//! QOS. A part of a charge keeps its sums per row of the tree, as the usage sums, and exact like
//! them, so parts merge to the same bits in any grouping.

use super::exact_sum::ExactSum;
use crate::config::Tres;
use fairshare_base::memory::{huge_capacity, prefetch};

/// Per-TRES sums of one part of a charge, per row of the tree input.
///
/// An association's sums sit together in one block at its row, and only for the TRES charged so
/// far: under `limits` every job adds to all of them at a random association, so a job costs
/// the few cache lines of one block instead of a line per sum (and, the blocks being on huge
/// pages, no miss in the TLB); the TRES no job of the site counts (often `fs/disk`, `vmem`,
/// `pages`; `energy` always) take no room. The run seconds have blocks of their own, made when
/// a first job has some: only a job running after the last pass has any (none of a history of
/// finished jobs, or without time limits), and beside the usage they made every block a cache
/// line longer (200 bytes on four lines for five TRES, 160 on three without).
#[derive(Clone, Debug)]
pub struct TresSums {
    /// The cluster's TRES, in Slurm's order.
    names: Vec<Tres>,
    /// Whether usage is kept (else only the names are, for sshare to print zeros).
    kept: bool,
    /// The place of `billing` in `names`.
    billing: Option<usize>,
    /// The rows of the tree input the blocks cover, grown as rows come.
    rows: usize,
    /// The rows the blocks will cover once made ([`TresSums::expect_rows`]).
    expected: usize,
    /// The places in `names` of the TRES charged so far, in their order within a block.
    charged: Vec<usize>,
    /// Place in `names` → place in a block ([`NOT_CHARGED`] for a TRES not charged yet).
    place: Vec<u32>,
    /// Per row, the decayed TRES-seconds of each charged TRES (zero for a row no job reached).
    blocks: Vec<ExactSum>,
    /// The remaining TRES-seconds of running jobs in the same layout, or empty while no job
    /// had any.
    run_blocks: Vec<u64>,
    /// The jobs' counts [`TresSums::defer`] charges by id ([`TresSums::add_counts`]), one per
    /// name each, energy's and billing's zero.
    counts: Vec<u64>,
    /// Per id of counts: its largest count, and the widening it was last checked against.
    count_facts: Vec<CountFacts>,
    /// How many times the blocks were widened (a TRES first charged).
    widenings: u32,
    /// Charges [`TresSums::defer`]red, in order: one record each, its products taken when
    /// they are added. Empty whenever the sums are read.
    deferred: Vec<Deferred>,
}

/// What [`TresSums::defer`] knows of one job's counts without going over them again.
#[derive(Clone, Copy, Debug)]
struct CountFacts {
    /// The largest count (billing's aside): if it times the seconds is summable, so is every count.
    max: u64,
    /// [`TresSums::widenings`] when every TRES the counts count was found charged; `u32::MAX`: never.
    checked: u32,
}

/// A deferred charge: a job's seconds and run seconds, to be multiplied by its counts.
#[derive(Clone, Copy, Debug)]
struct Deferred {
    row: u32,
    /// The id of the job's counts.
    counts: u32,
    seconds: f64,
    run_secs: u64,
    /// The job's billing count.
    billing: u64,
}

/// Deferred charges gathered before [`TresSums::flush`] adds them.
const DEFER_BLOCK: usize = 512;

/// How many deferred charges ahead [`TresSums::flush`] prefetches.
const AHEAD: usize = 8;

impl TresSums {
    /// Empty sums over `names`.
    pub fn new(names: Vec<Tres>) -> Self {
        TresSums {
            billing: names.iter().position(|t| *t == Tres::BILLING),
            place: vec![NOT_CHARGED; names.len()],
            names,
            kept: true,
            rows: 0,
            expected: 0,
            charged: Vec::new(),
            blocks: Vec::new(),
            run_blocks: Vec::new(),
            counts: Vec::new(),
            count_facts: Vec::new(),
            widenings: 0,
            deferred: Vec::new(),
        }
    }

    /// Makes the blocks cover `rows` rows at once (a charge's blocks grow to the rows it was
    /// told to expect, [`TresSums::expect_rows`]).
    fn reserve_rows(&mut self, rows: usize) {
        if rows > self.rows {
            let m = self.charged.len();
            if self.blocks.capacity() < rows * m {
                let mut blocks = huge_capacity(rows * m);
                blocks.extend_from_slice(&self.blocks);
                self.blocks = blocks;
            }
            self.blocks.resize(rows * m, ExactSum::default());
            if !self.run_blocks.is_empty() {
                self.run_blocks.resize(rows * m, 0);
            }
            self.rows = rows;
        }
    }

    /// Makes the blocks cover `rows` rows when they are first made, at the first charge added
    /// ([`TresSums::flush`]): a charge that reaches every row of a large tree never copies them
    /// to grow, and the TRES of the jobs deferred until then are in their first layout. Made
    /// at the first job, the blocks were made again, wider, at the first job to count a TRES the
    /// first did not (a GPU): 128 MB of zeros copied per part at 10^6 associations, into fresh
    /// pages, 3% of the `perf` samples of a nightly run.
    pub(crate) fn expect_rows(&mut self, rows: usize) {
        self.expected = rows;
    }

    /// The run seconds' blocks, made when a first job has some.
    fn run_blocks(&mut self) -> &mut [u64] {
        if self.run_blocks.is_empty() {
            self.run_blocks = vec![0; self.rows * self.charged.len()];
        }
        &mut self.run_blocks
    }

    /// The count charged for TRES `i` of a job of `counts` billed `billing`: energy is never
    /// charged, and `billing`'s count is the job's billable TRES.
    fn count(&self, i: usize, counts: &[u64], billing: u64) -> u64 {
        if Some(i) == self.billing {
            billing
        } else if self.names[i] == Tres::ENERGY {
            0
        } else {
            counts[i]
        }
    }

    /// Makes room in every block for the TRES of `counts` not charged yet (if any), deferred
    /// charges added first. Each TRES is added once per part, so the copy is rare.
    fn make_room(&mut self, counts: &[u64], billing: u64) {
        let new: Vec<usize> = (0..self.names.len())
            .filter(|&i| self.place[i] == NOT_CHARGED && self.count(i, counts, billing) != 0)
            .collect();
        if !new.is_empty() {
            self.charge_tres(&new);
        }
    }

    /// Adds `new` to the TRES charged, moving every block to the wider layout. Deferred charges
    /// stay deferred: they keep their counts' id and are laid out when they are added, so a
    /// widening before the first flush has no block to move.
    fn charge_tres(&mut self, new: &[usize]) {
        let (old, m) = (self.charged.len(), self.charged.len() + new.len());
        let (rows, added) = (self.rows, new.len());
        self.blocks = widened(huge_capacity(rows * m), &self.blocks, rows, old, added);
        if !self.run_blocks.is_empty() {
            self.run_blocks = widened(Vec::with_capacity(rows * m), &self.run_blocks, rows, old, added);
        }
        for &i in new {
            self.place[i] = self.charged.len() as u32;
            self.charged.push(i);
        }
        self.widenings += 1;
    }

    /// The place of `row`'s block, grown to (at least doubling the rows covered).
    fn block(&mut self, row: u32) -> usize {
        let r = row as usize;
        if r >= self.rows {
            self.reserve_rows((r + 1).max(2 * self.rows).max(self.expected));
        }
        r * self.charged.len()
    }

    /// Whether a job of `counts` counts a TRES not charged yet (see [`TresSums::make_room`]).
    ///
    /// # Errors
    /// The first product of `counts` the exact sums cannot hold, in `names`' order.
    fn check(&self, seconds: f64, counts: &[u64], billing: u64) -> Result<bool, f64> {
        let mut widens = false;
        for i in 0..self.names.len() {
            let count = self.count(i, counts, billing);
            if count != 0 {
                let charge = seconds * count as f64;
                if !ExactSum::holds(charge) {
                    return Err(charge);
                }
                widens |= self.place[i] == NOT_CHARGED;
            }
        }
        Ok(widens)
    }

    /// The charge and run time of a charged TRES `i`: the job's seconds and run seconds times
    /// its count (a zero count is none, whatever the seconds).
    fn charge_of(&self, i: usize, seconds: f64, run_secs: u64, counts: &[u64], billing: u64) -> (f64, u64) {
        match self.count(i, counts, billing) {
            0 => (0.0, 0),
            count => (seconds * count as f64, run_secs.saturating_mul(count)),
        }
    }

    /// Keeps a job's `counts` (one per name) for [`TresSums::defer`]; the id to defer them by.
    pub(crate) fn add_counts(&mut self, counts: &[u64]) -> u32 {
        debug_assert_eq!(counts.len(), self.names.len(), "one count per TRES");
        let id = self.count_facts.len() as u32;
        let billing = self.billing;
        self.counts.extend(counts.iter().enumerate().map(|(i, &c)| {
            match Some(i) == billing || self.names[i] == Tres::ENERGY {
                true => 0,
                false => c,
            }
        }));
        let max = self.counts[id as usize * self.names.len()..].iter().copied().max().unwrap_or(0);
        self.count_facts.push(CountFacts { max, checked: u32::MAX });
        id
    }

    /// How many counts [`TresSums::add_counts`] has kept.
    pub(crate) fn counts_kept(&self) -> usize {
        self.count_facts.len()
    }

    /// Forgets the counts kept (their ids are given again), the charges deferred added first.
    pub(crate) fn forget_counts(&mut self) {
        self.flush();
        self.counts.clear();
        self.count_facts.clear();
    }

    /// [`TresSums::charge`] with the counts of id `counts` ([`TresSums::add_counts`]), added later
    /// (by [`TresSums::flush`], or by the charge that fills the block), so that the misses of a
    /// block's random rows overlap; the products are taken then. The sums must be flushed before
    /// they are read.
    ///
    /// # Errors
    /// As [`TresSums::charge`], at once: nothing of the job is kept then.
    pub(crate) fn defer(
        &mut self,
        row: u32,
        seconds: f64,
        run_secs: u64,
        counts: u32,
        billing: u64,
    ) -> Result<(), f64> {
        if seconds == 0.0 && run_secs == 0 {
            return Ok(());
        }
        let facts = self.count_facts[counts as usize];
        // Every product is at most the largest count's, and summable when that one is.
        if !ExactSum::holds(seconds * facts.max.max(billing) as f64) {
            let k = self.names.len();
            self.check(seconds, &self.counts[counts as usize * k..][..k], billing)?;
        }
        let billing_new = billing != 0 && self.billing.is_some_and(|b| self.place[b] == NOT_CHARGED);
        if facts.checked != self.widenings || billing_new {
            let k = self.names.len();
            let counts_of = self.counts[counts as usize * k..][..k].to_vec();
            self.make_room(&counts_of, billing);
            self.count_facts[counts as usize].checked = self.widenings;
        }
        self.deferred.push(Deferred { row, counts, seconds, run_secs, billing });
        if self.deferred.len() == DEFER_BLOCK {
            self.flush();
        }
        Ok(())
    }

    /// Adds the deferred charges, the blocks prefetched a few charges ahead.
    pub(crate) fn flush(&mut self) {
        let (k, m) = (self.names.len(), self.charged.len());
        let deferred = std::mem::take(&mut self.deferred);
        if let Some(last) = deferred.iter().map(|d| d.row).max() {
            self.block(last);
        }
        if deferred.iter().any(|d| d.run_secs != 0) {
            self.run_blocks();
        }
        let billing = self.billing.map_or(NOT_CHARGED as usize, |b| self.place[b] as usize);
        for (j, d) in deferred.iter().enumerate() {
            if let Some(ahead) = deferred.get(j + AHEAD) {
                prefetch_lines(&self.blocks[ahead.row as usize * m..][..m]);
            }
            let counts = &self.counts[d.counts as usize * k..][..k];
            let count = |place: usize, i: usize| if place == billing { d.billing } else { counts[i] };
            let block = &mut self.blocks[d.row as usize * m..][..m];
            for (place, (sum, &i)) in block.iter_mut().zip(&self.charged).enumerate() {
                // A zero count is no charge, whatever the seconds (as `charge_of`).
                let count = count(place, i);
                if count != 0 {
                    let added = sum.add(d.seconds * count as f64);
                    debug_assert!(added.is_ok(), "checked by defer");
                }
            }
            if d.run_secs != 0 {
                let block = &mut self.run_blocks[d.row as usize * m..][..m];
                for (place, (sum, &i)) in block.iter_mut().zip(&self.charged).enumerate() {
                    *sum = sum.saturating_add(d.run_secs.saturating_mul(count(place, i)));
                }
            }
        }
        self.deferred = deferred;
        self.deferred.clear();
    }

    /// The TRES of a cluster that keeps no per-TRES usage (no `AccountingStorageEnforce=limits`).
    pub fn untracked(names: Vec<Tres>) -> Self {
        TresSums { kept: false, ..TresSums::new(names) }
    }

    /// Whether usage is kept.
    pub fn is_kept(&self) -> bool {
        self.kept
    }

    /// The TRES summed, in Slurm's order.
    pub fn names(&self) -> &[Tres] {
        &self.names
    }

    /// The sums of `row` in `names`' order, zero for the TRES not charged: written into `usage`
    /// and `run_secs`, one per name.
    fn write_row(&self, row: usize, usage: &mut [ExactSum], run_secs: &mut [u64]) {
        let m = self.charged.len();
        for (sum, &i) in self.blocks[row * m..][..m].iter().zip(&self.charged) {
            usage[i] = *sum;
        }
        if !self.run_blocks.is_empty() {
            for (secs, &i) in self.run_blocks[row * m..][..m].iter().zip(&self.charged) {
                run_secs[i] = *secs;
            }
        }
    }

    /// Whether any job charged `row`.
    fn row_charged(&self, row: usize) -> bool {
        let m = self.charged.len();
        self.blocks[row * m..][..m].iter().any(|s| *s != ExactSum::default())
            || self.run_blocks.get(row * m..(row + 1) * m).is_some_and(|r| r.iter().any(|&s| s != 0))
    }

    /// Each row with a sum, with its sums in `names`' order.
    fn by_row(&self) -> Vec<(usize, Vec<ExactSum>, Vec<u64>)> {
        let k = self.names.len();
        (0..self.rows)
            .filter(|&row| self.row_charged(row))
            .map(|row| {
                let (mut usage, mut run_secs) = (vec![ExactSum::default(); k], vec![0; k]);
                self.write_row(row, &mut usage, &mut run_secs);
                (row, usage, run_secs)
            })
            .collect()
    }

    /// Charges one job to `row`: `seconds` of decayed run time (its QOS factor included) and
    /// `run_secs` left in its time limit, times each of `counts` (one per name, the `billing`
    /// count replaced by `billing`; energy's is not charged, as in Slurm).
    ///
    /// # Errors
    /// The first product the exact sums cannot hold, for the caller to name the record; nothing
    /// of the job is kept then.
    pub fn charge(&mut self, row: u32, seconds: f64, run_secs: u64, counts: &[u64], billing: u64) -> Result<(), f64> {
        debug_assert_eq!(counts.len(), self.names.len(), "one count per TRES");
        if seconds == 0.0 && run_secs == 0 {
            return Ok(());
        }
        if self.check(seconds, counts, billing)? {
            self.make_room(counts, billing);
        }
        let base = self.block(row);
        for j in 0..self.charged.len() {
            let (charge, secs) = self.charge_of(self.charged[j], seconds, run_secs, counts, billing);
            let added = self.blocks[base + j].add(charge);
            debug_assert!(added.is_ok(), "checked above");
            if secs != 0 {
                let sum = &mut self.run_blocks()[base + j];
                *sum = sum.saturating_add(secs);
            }
        }
        Ok(())
    }

    /// Adds another part's sums over the same TRES.
    ///
    /// # Panics
    /// If the parts sum different TRES.
    pub fn add(&mut self, other: &TresSums) {
        assert_eq!((&self.names, self.kept), (&other.names, other.kept), "parts of one charge sum the same TRES");
        debug_assert!(self.deferred.is_empty() && other.deferred.is_empty(), "flushed before they are read");
        let new: Vec<usize> = other.charged.iter().copied().filter(|&i| self.place[i] == NOT_CHARGED).collect();
        if !new.is_empty() {
            self.charge_tres(&new);
        }
        let places: Vec<usize> = other.charged.iter().map(|&i| self.place[i] as usize).collect();
        let (m, other_m) = (self.charged.len(), other.charged.len());
        self.reserve_rows(other.rows);
        for row in 0..other.rows {
            for (from, &to) in other.blocks[row * other_m..][..other_m].iter().zip(&places) {
                self.blocks[row * m + to].merge(from);
            }
        }
        if !other.run_blocks.is_empty() {
            let run_blocks = self.run_blocks();
            for row in 0..other.rows {
                for (from, &to) in other.run_blocks[row * other_m..][..other_m].iter().zip(&places) {
                    let sum = &mut run_blocks[row * m + to];
                    *sum = sum.saturating_add(*from);
                }
            }
        }
    }

    /// The sums of every row of a tree input of `rows` records, row-major (zero where untouched).
    pub fn dense(&self, rows: usize) -> (Vec<ExactSum>, Vec<u64>) {
        debug_assert!(self.deferred.is_empty(), "flushed before they are read");
        let k = self.names.len();
        let mut usage = vec![ExactSum::default(); rows * k];
        let mut run_secs = vec![0; rows * k];
        for row in 0..self.rows.min(rows) {
            let to = row * k;
            self.write_row(row, &mut usage[to..to + k], &mut run_secs[to..to + k]);
        }
        (usage, run_secs)
    }

    /// Sums given densely ([`TresSums::dense`]'s layout).
    ///
    /// # Panics
    /// If the columns are not `rows × names` long.
    pub fn from_dense(names: Vec<Tres>, usage: &[ExactSum], run_secs: &[u64]) -> Self {
        let k = names.len();
        assert_eq!(usage.len(), run_secs.len(), "one usage and one run time per row and TRES");
        let mut sums = TresSums::new(names);
        if k == 0 {
            return sums;
        }
        let any = |i: usize| (i..usage.len()).step_by(k).any(|x| usage[x] != ExactSum::default() || run_secs[x] != 0);
        let charged: Vec<usize> = (0..k).filter(|&i| any(i)).collect();
        sums.charge_tres(&charged);
        sums.reserve_rows(usage.len() / k);
        let m = charged.len();
        for (row, u) in usage.chunks(k).enumerate() {
            for (j, &i) in charged.iter().enumerate() {
                sums.blocks[row * m + j] = u[i];
            }
        }
        if run_secs.iter().any(|&s| s != 0) {
            let run_blocks = sums.run_blocks();
            for (row, r) in run_secs.chunks(k).enumerate() {
                for (j, &i) in charged.iter().enumerate() {
                    run_blocks[row * m + j] = r[i];
                }
            }
        }
        sums
    }
}

/// The `rows` blocks of `old` values of `blocks`, appended to `into` with `added` zeros after
/// each.
fn widened<T: Copy + Default>(mut into: Vec<T>, blocks: &[T], rows: usize, old: usize, added: usize) -> Vec<T> {
    for row in 0..rows {
        into.extend_from_slice(&blocks[row * old..][..old]);
        into.extend(std::iter::repeat_n(T::default(), added));
    }
    into
}

/// Prefetches the cache lines of `block`.
fn prefetch_lines(block: &[ExactSum]) {
    let (start, end) = (block.as_ptr() as usize, block.as_ptr() as usize + size_of_val(block));
    for line in (start & !63..end).step_by(64) {
        prefetch(line as *const u8);
    }
}

/// No place in a block for a TRES not charged yet.
const NOT_CHARGED: u32 = u32::MAX;

impl PartialEq for TresSums {
    /// The same TRES and the same sums per row, whatever order the rows were touched in.
    fn eq(&self, other: &Self) -> bool {
        (&self.names, self.kept) == (&other.names, other.kept) && self.by_row() == other.by_row()
    }
}

/// Slurm's `(uint64_t)(seconds * usage_factor)`: a `uint64_t *= double`, truncated (a negative
/// factor is "unset" and leaves the seconds as they are).
pub(crate) fn scaled_secs(seconds: u64, usage_factor: f64) -> u64 {
    if usage_factor < 0.0 { seconds } else { (seconds as f64 * usage_factor) as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<Tres> {
        crate::config::tres::tracked_tres([Tres::gres("gpu")])
    }

    #[test]
    fn charges_every_tres_but_energy_and_merges_in_any_order() {
        let k = names().len();
        let mut counts = vec![0; k];
        counts[0] = 4; // cpu
        counts[2] = 9; // energy: never charged
        counts[k - 1] = 2; // gres/gpu
        let (mut a, mut b) = (TresSums::new(names()), TresSums::new(names()));
        a.charge(3, 1.5, 60, &counts, 6).unwrap();
        b.charge(0, 0.25, 0, &counts, 6).unwrap();
        b.charge(3, 0.5, 30, &counts, 6).unwrap();
        let mut ab = a.clone();
        ab.add(&b);
        let mut ba = b.clone();
        ba.add(&a);
        assert_eq!(ab.dense(5), ba.dense(5));
        let (usage, run) = ab.dense(5);
        assert_eq!(usage[3 * k].to_f64(), 8.0);
        assert_eq!(usage[3 * k + 2].to_f64(), 0.0);
        assert_eq!(usage[3 * k + k - 1].to_f64(), 4.0);
        assert_eq!((run[3 * k], run[3 * k + 2], run[3 * k + k - 1]), (360, 0, 180));
        assert_eq!(usage[k - 1].to_f64(), 0.5);
        assert_eq!(usage[3 * k + 4].to_f64(), 12.0); // billing
        assert_eq!(TresSums::from_dense(names(), &usage, &run).dense(5), (usage, run));
        assert_eq!(ab, ba);
    }

    /// Blocks expected to cover a tree are made at the first flush, in the layout of every TRES
    /// the jobs deferred until then count: none is made, nor copied, as jobs bring new TRES.
    #[test]
    fn blocks_are_made_once_at_the_first_flush() {
        let k = names().len();
        let (mut at_once, mut deferred) = (TresSums::new(names()), TresSums::new(names()));
        deferred.expect_rows(1000);
        let mut cpu = vec![0; k];
        cpu[0] = 4;
        let mut gpu = cpu.clone();
        gpu[k - 1] = 2;
        for (row, counts) in [(5, &cpu), (700, &gpu), (5, &gpu)] {
            at_once.charge(row, 2.5, 0, counts, 1).unwrap();
            let id = deferred.add_counts(counts);
            deferred.defer(row, 2.5, 0, id, 1).unwrap();
            assert_eq!(deferred.blocks.capacity(), 0, "nothing made before the first flush");
        }
        assert_eq!(deferred.widenings, 2, "cpu and billing, then the GPU");
        deferred.flush();
        assert_eq!((deferred.rows, deferred.blocks.len()), (1000, 1000 * deferred.charged.len()));
        assert_eq!(deferred.dense(1000), at_once.dense(1000));
    }

    /// Deferred charges, flushed block by block with their rows prefetched, sum to what
    /// the same charges made at once sum to; one that cannot be summed is refused at once, and
    /// leaves nothing behind.
    #[test]
    fn deferred_charges_sum_as_charges_made_at_once() {
        let k = names().len();
        let (mut now, mut later) = (TresSums::new(names()), TresSums::new(names()));
        later.reserve_rows(300);
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for _ in 0..3 * DEFER_BLOCK + 17 {
            let row = next(300) as u32;
            let counts: Vec<u64> = (0..k).map(|_| next(5)).collect();
            let (seconds, run_secs, billing) = (next(1 << 20) as f64 / 7.0, next(4000), next(64));
            now.charge(row, seconds, run_secs, &counts, billing).unwrap();
            let id = later.add_counts(&counts);
            later.defer(row, seconds, run_secs, id, billing).unwrap();
        }
        let ones = later.add_counts(&vec![1; k]);
        assert_eq!(later.defer(1, f64::INFINITY, 0, ones, 1), Err(f64::INFINITY));
        // The first product out of range, in the names' order, is the one named.
        let mut big = vec![0; k];
        (big[1], big[k - 1]) = (1 << 40, 1 << 50);
        let big = later.add_counts(&big);
        assert_eq!(later.defer(1, 2f64.powi(60), 0, big, 1), Err(2f64.powi(100)));
        later.flush();
        assert_eq!(later.dense(300), now.dense(300));
        assert_eq!(later, now);
    }

    /// A TRES first counted part-way through a part, with charges of the narrower blocks still
    /// deferred, widens every block without losing them; parts that charged different TRES merge
    /// to what one part charged with all of them holds; and the TRES never counted read as zero.
    #[test]
    fn tres_first_counted_part_way_widen_the_blocks() {
        let k = names().len();
        let only = |i: usize, n: u64| -> Vec<u64> {
            let mut c = vec![0; k];
            c[i] = n;
            c
        };
        let (mut one, mut a, mut b) = (TresSums::new(names()), TresSums::new(names()), TresSums::new(names()));
        a.reserve_rows(8);
        let charges = [(2, 1.5, 10, only(0, 4)), (5, 2.0, 0, only(k - 1, 2)), (2, 0.5, 7, only(1, 3))];
        for (row, seconds, run, counts) in &charges {
            one.charge(*row, *seconds, *run, counts, 0).unwrap();
        }
        let (first, second) = (a.add_counts(&charges[0].3), a.add_counts(&charges[1].3));
        a.defer(2, 1.5, 10, first, 0).unwrap();
        a.defer(5, 2.0, 0, second, 0).unwrap();
        // Counts forgotten part-way: their charges are added first, and ids are given again.
        a.forget_counts();
        assert_eq!((a.counts_kept(), a.add_counts(&charges[0].3)), (0, 0));
        a.flush();
        b.charge(2, 0.5, 7, &charges[2].3, 0).unwrap();
        assert_eq!((a.charged.len(), b.charged.len()), (2, 1));
        b.add(&a);
        assert_eq!(b, one);
        let (usage, run) = b.dense(6);
        assert_eq!((usage[2 * k].to_f64(), usage[2 * k + 1].to_f64(), usage[5 * k + k - 1].to_f64()), (6.0, 1.5, 4.0));
        assert_eq!((run[2 * k], run[2 * k + 1], run[2 * k + k - 1]), (40, 21, 0));
        assert!(usage[2 * k + 2..3 * k - 1].iter().all(|s| *s == ExactSum::default()));
        assert_eq!(TresSums::from_dense(names(), &usage, &run), one);
    }

    /// Finished jobs leave no run seconds, and none are kept for them; a part with running jobs
    /// merges its run seconds into one without, in either order.
    #[test]
    fn run_seconds_are_kept_only_once_a_job_has_some() {
        let k = names().len();
        let mut counts = vec![0; k];
        (counts[0], counts[k - 1]) = (4, 2);
        let (mut finished, mut running) = (TresSums::new(names()), TresSums::new(names()));
        let id = finished.add_counts(&counts);
        finished.defer(1, 2.0, 0, id, 3).unwrap();
        finished.flush();
        assert!(finished.run_blocks.is_empty());
        running.charge(2, 1.0, 50, &counts, 3).unwrap();
        let (mut both, mut other) = (finished.clone(), running.clone());
        both.add(&running);
        other.add(&finished);
        assert_eq!(both, other);
        let (usage, run) = both.dense(3);
        assert_eq!((usage[k].to_f64(), usage[2 * k + k - 1].to_f64()), (8.0, 2.0));
        assert_eq!((run[k], run[2 * k], run[2 * k + k - 1], run[2 * k + 4]), (0, 200, 100, 150));
    }

    #[test]
    fn usage_factors_truncate_as_slurm_does() {
        assert_eq!(scaled_secs(100, 0.333), 33);
        assert_eq!(scaled_secs(100, -1.0), 100);
        assert_eq!(scaled_secs(100, 0.0), 0);
    }
}
