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
//! QOS. A part of a charge keeps the sums of the associations it touched only (a row group of a
//! long history reaches a fraction of a large tree), exact like the usage sums, so parts merge to
//! the same bits in any grouping.

use super::exact_sum::ExactSum;
use crate::config::Tres;

/// Per-TRES sums of the associations one part of a charge touched.
#[derive(Clone, Debug)]
pub struct TresSums {
    /// The cluster's TRES, in Slurm's order.
    names: Vec<Tres>,
    /// Whether usage is kept (else only the names are, for sshare to print zeros).
    kept: bool,
    /// The place of `billing` in `names`.
    billing: Option<usize>,
    /// Row of the tree input → its slot ([`NO_SLOT`] for none yet), grown as rows come.
    slot_of: Vec<u32>,
    /// Slot → row of the tree input.
    rows: Vec<u32>,
    /// Decayed TRES-seconds per slot and TRES, row-major.
    usage: Vec<ExactSum>,
    /// Remaining TRES-seconds of running jobs per slot and TRES.
    run_secs: Vec<u64>,
    /// Charges [`TresSums::defer`]red: their rows, and per row one charge and one run time per
    /// TRES. Empty whenever the sums are read.
    deferred_rows: Vec<u32>,
    deferred_usage: Vec<f64>,
    deferred_run_secs: Vec<u64>,
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
            names,
            kept: true,
            slot_of: Vec::new(),
            rows: Vec::new(),
            usage: Vec::new(),
            run_secs: Vec::new(),
            deferred_rows: Vec::new(),
            deferred_usage: Vec::new(),
            deferred_run_secs: Vec::new(),
        }
    }

    /// Makes room for the sums of `rows` rows without touching the memory (the pages come when
    /// first written): a charge that reaches every row of a large tree then never copies them to
    /// grow.
    pub(crate) fn reserve_rows(&mut self, rows: usize) {
        let k = self.names.len();
        self.slot_of.resize(rows.max(self.slot_of.len()), NO_SLOT);
        self.rows.reserve(rows.saturating_sub(self.rows.len()));
        self.usage.reserve((rows * k).saturating_sub(self.usage.len()));
        self.run_secs.reserve((rows * k).saturating_sub(self.run_secs.len()));
    }

    /// [`TresSums::charge`], added later (by [`TresSums::flush`], or by the charge that fills the
    /// block), so that the misses of a block's random rows overlap. The sums must be flushed
    /// before they are read.
    ///
    /// # Errors
    /// As [`TresSums::charge`], at once: nothing of the job is kept then.
    pub(crate) fn defer(
        &mut self,
        row: u32,
        seconds: f64,
        run_secs: u64,
        counts: &[u64],
        billing: u64,
    ) -> Result<(), f64> {
        debug_assert_eq!(counts.len(), self.names.len(), "one count per TRES");
        if seconds == 0.0 && run_secs == 0 {
            return Ok(());
        }
        let mark = self.deferred_usage.len();
        for (i, (&count, tres)) in counts.iter().zip(&self.names).enumerate() {
            let count = if Some(i) == self.billing { billing } else { count };
            let (charge, secs) = if count == 0 || *tres == Tres::ENERGY {
                (0.0, 0)
            } else {
                (seconds * count as f64, run_secs.saturating_mul(count))
            };
            if !ExactSum::holds(charge) {
                self.deferred_usage.truncate(mark);
                self.deferred_run_secs.truncate(mark);
                return Err(charge);
            }
            self.deferred_usage.push(charge);
            self.deferred_run_secs.push(secs);
        }
        self.deferred_rows.push(row);
        if self.deferred_rows.len() == DEFER_BLOCK {
            self.flush();
        }
        Ok(())
    }

    /// Adds the deferred charges: the slots of their rows first, then the sums, each prefetched a
    /// few charges ahead.
    pub(crate) fn flush(&mut self) {
        let k = self.names.len();
        let rows = std::mem::take(&mut self.deferred_rows);
        let slots: Vec<usize> = rows
            .iter()
            .enumerate()
            .map(|(j, &row)| {
                if let Some(&ahead) = rows.get(j + AHEAD)
                    && let Some(slot) = self.slot_of.get(ahead as usize)
                {
                    super::pair_index::prefetch(slot);
                }
                self.slot(row)
            })
            .collect();
        for (j, &slot) in slots.iter().enumerate() {
            if let Some(&ahead) = slots.get(j + AHEAD) {
                for line in (0..k).step_by(2) {
                    super::pair_index::prefetch(&self.usage[ahead * k + line]);
                }
                super::pair_index::prefetch(&self.run_secs[ahead * k]);
            }
            for i in 0..k {
                let (charge, secs) = (self.deferred_usage[j * k + i], self.deferred_run_secs[j * k + i]);
                let added = self.usage[slot * k + i].add(charge);
                debug_assert!(added.is_ok(), "checked by defer");
                self.run_secs[slot * k + i] = self.run_secs[slot * k + i].saturating_add(secs);
            }
        }
        self.deferred_rows = rows;
        self.deferred_rows.clear();
        self.deferred_usage.clear();
        self.deferred_run_secs.clear();
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

    /// The slot of `row`, made on first use.
    fn slot(&mut self, row: u32) -> usize {
        let r = row as usize;
        if r >= self.slot_of.len() {
            let grown = (r + 1).max(2 * self.slot_of.len());
            self.slot_of.resize(grown, NO_SLOT);
        }
        if self.slot_of[r] == NO_SLOT {
            let k = self.names.len();
            self.slot_of[r] = self.rows.len() as u32;
            self.rows.push(row);
            self.usage.resize(self.usage.len() + k, ExactSum::default());
            self.run_secs.resize(self.run_secs.len() + k, 0);
        }
        self.slot_of[r] as usize
    }

    /// Each touched row with its sums, by row.
    fn by_row(&self) -> Vec<(u32, &[ExactSum], &[u64])> {
        let k = self.names.len();
        let mut rows: Vec<_> = (self.rows.iter().enumerate())
            .map(|(slot, &row)| (row, &self.usage[slot * k..][..k], &self.run_secs[slot * k..][..k]))
            .collect();
        rows.sort_unstable_by_key(|r| r.0);
        rows
    }

    /// Charges one job to `row`: `seconds` of decayed run time (its QOS factor included) and
    /// `run_secs` left in its time limit, times each of `counts` (one per name, the `billing`
    /// count replaced by `billing`; energy's is not charged, as in Slurm).
    ///
    /// # Errors
    /// The first product the exact sums cannot hold, for the caller to name the record.
    pub fn charge(&mut self, row: u32, seconds: f64, run_secs: u64, counts: &[u64], billing: u64) -> Result<(), f64> {
        debug_assert_eq!(counts.len(), self.names.len(), "one count per TRES");
        if seconds == 0.0 && run_secs == 0 {
            return Ok(());
        }
        let k = self.names.len();
        let base = self.slot(row) * k;
        for (i, (&count, tres)) in counts.iter().zip(&self.names).enumerate() {
            let count = if Some(i) == self.billing { billing } else { count };
            if count == 0 || *tres == Tres::ENERGY {
                continue;
            }
            let charge = seconds * count as f64;
            self.usage[base + i].add(charge).map_err(|_| charge)?;
            self.run_secs[base + i] = self.run_secs[base + i].saturating_add(run_secs.saturating_mul(count));
        }
        Ok(())
    }

    /// Adds another part's sums over the same TRES.
    ///
    /// # Panics
    /// If the parts sum different TRES.
    pub fn add(&mut self, other: &TresSums) {
        assert_eq!((&self.names, self.kept), (&other.names, other.kept), "parts of one charge sum the same TRES");
        debug_assert!(self.deferred_rows.is_empty() && other.deferred_rows.is_empty(), "flushed before they are read");
        let k = self.names.len();
        for (slot, &row) in other.rows.iter().enumerate() {
            let base = self.slot(row) * k;
            for i in 0..k {
                self.usage[base + i].merge(&other.usage[slot * k + i]);
                self.run_secs[base + i] = self.run_secs[base + i].saturating_add(other.run_secs[slot * k + i]);
            }
        }
    }

    /// The sums of every row of a tree input of `rows` records, row-major (zero where untouched).
    pub fn dense(&self, rows: usize) -> (Vec<ExactSum>, Vec<u64>) {
        debug_assert!(self.deferred_rows.is_empty(), "flushed before they are read");
        let k = self.names.len();
        let mut usage = vec![ExactSum::default(); rows * k];
        let mut run_secs = vec![0; rows * k];
        for (slot, &row) in self.rows.iter().enumerate() {
            let (to, from) = (row as usize * k, slot * k);
            usage[to..to + k].copy_from_slice(&self.usage[from..from + k]);
            run_secs[to..to + k].copy_from_slice(&self.run_secs[from..from + k]);
        }
        (usage, run_secs)
    }

    /// Sums given densely ([`TresSums::dense`]'s layout), keeping the rows with any value.
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
        for (row, (u, r)) in usage.chunks(k).zip(run_secs.chunks(k)).enumerate() {
            if u.iter().any(|s| *s != ExactSum::default()) || r.iter().any(|&s| s != 0) {
                let base = sums.slot(row as u32) * k;
                sums.usage[base..base + k].copy_from_slice(u);
                sums.run_secs[base..base + k].copy_from_slice(r);
            }
        }
        sums
    }
}

/// No slot for a row yet.
const NO_SLOT: u32 = u32::MAX;

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

    /// Deferred charges, flushed block by block with their rows' slots prefetched, sum to what
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
            later.defer(row, seconds, run_secs, &counts, billing).unwrap();
        }
        assert_eq!(later.defer(1, f64::INFINITY, 0, &vec![1; k], 1), Err(f64::INFINITY));
        later.flush();
        assert_eq!(later.dense(300), now.dense(300));
        assert_eq!(later, now);
    }

    #[test]
    fn usage_factors_truncate_as_slurm_does() {
        assert_eq!(scaled_secs(100, 0.333), 33);
        assert_eq!(scaled_secs(100, -1.0), 100);
        assert_eq!(scaled_secs(100, 0.0), 0);
    }
}
