//! The scoring stage: a pending queue scored against the fair-share with Slurm's multifactor
//! formula or flux-accounting's, whole or streamed into Parquet a slice at a time.

use std::ops::Range;
use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;

use super::tree_source::TreeSource;
use super::{Observer, Site};
use crate::config::{QosTable, SlurmConf};
use crate::io::TreeFormat;
use crate::jobs::{ParquetRowGroups, PendingFormat, PendingJobs, TreeNames};
use crate::output::parquet::{jobs_batch, jobs_metadata};
use crate::pass::{Algorithm, FairShare, Params};
use crate::priority::flux::score_flux;
use crate::priority::{Scores, SlurmPriority, Weights};
use crate::tree::AssocTree;
use fairshare_base::write::parquet::ParquetSink;
use fairshare_base::{Error, Result};

/// A pending queue's file.
#[derive(Debug, Clone)]
pub struct PendingSource {
    /// The file (CSV, Parquet or `squeue --json`).
    pub path: PathBuf,
    /// Its format (`None`: detected).
    pub format: Option<PendingFormat>,
}

/// A scored pending queue.
#[derive(Debug)]
pub struct Queue {
    /// The jobs.
    pub jobs: PendingJobs,
    /// The weights of the formula.
    pub weights: Weights,
    /// One row per (job, partition, QOS).
    pub scores: Scores,
    /// `PriorityWeightTRES` as sprio prints it.
    pub tres_weight_text: String,
    /// `slurm` or `flux`.
    pub formula: &'static str,
    /// The fair-share algorithm the factors came from.
    pub algorithm: Algorithm,
    /// The evaluation time.
    pub now: i64,
}

impl Queue {
    /// Scores `pending` with Slurm's multifactor plugin; jobs without an association are
    /// scored with fair-share 0, as Slurm does, and named to `observer` in one warning.
    ///
    /// # Errors
    /// The queue cannot be read.
    pub fn slurm(
        conf: &SlurmConf,
        qos: Option<&QosTable>,
        now: i64,
        tree: &AssocTree,
        fs: &FairShare,
        pending: &PendingSource,
        observer: &dyn Observer,
    ) -> Result<Self> {
        let prio = SlurmPriority::new(conf, qos, now);
        let names = std::sync::Arc::new(TreeNames::new(tree));
        let jobs = PendingJobs::read_with(&pending.path, pending.format, &prio.weights.tres_keys(), &names)?;
        observer.step(&format!("scoring {} pending jobs", jobs.len()));
        let mut scores = Scores::default();
        let unknown = prio.prepare_with(&jobs, tree, fs, Some(&names))?.score_jobs(0..jobs.len(), &mut scores);
        observer.step_done();
        UnknownJobs::of(&jobs, &unknown).warn(observer);
        let tres_weight_text = prio.weights.tres.iter().map(|(t, w)| format!("{t}={w}")).collect::<Vec<_>>().join(",");
        Ok(Queue {
            weights: prio.weights.clone(),
            jobs,
            scores,
            tres_weight_text,
            formula: "slurm",
            algorithm: fs.params.algorithm,
            now,
        })
    }

    /// Scores `pending` with flux-accounting's formula against the flux fair-share of `tree`,
    /// with the priority tables of the database when the tree is one.
    ///
    /// # Errors
    /// The tree or the queue cannot be read.
    pub fn flux(
        tree: &TreeSource,
        params: Params,
        pending: &PendingSource,
        now: i64,
        observer: &dyn Observer,
    ) -> Result<Self> {
        let mut tree = tree.clone();
        // Detected once: the priority tables come from the same database as the tree.
        if let (Some(p), None) = (&tree.path, tree.format) {
            tree.format = Some(TreeFormat::detect(p)?);
        }
        let params = Params { algorithm: Algorithm::Flux, ..params };
        let assoc = tree.load()?;
        let fs = crate::pass::compute(&assoc, &params)?;
        let tables = match (&tree.path, tree.format) {
            (Some(p), Some(TreeFormat::FluxDb)) => crate::io::flux_db::priority::read_priority_tables(p)?,
            _ => Default::default(),
        };
        let jobs = PendingJobs::read(&pending.path, pending.format, &[])?;
        let (scores, unknown) = score_flux(&jobs, &assoc, &fs, &tables);
        UnknownJobs::of(&jobs, &unknown).warn(observer);
        let weights = Weights {
            age: 0.0,
            assoc: tables.weights.bank.into(),
            fairshare: tables.weights.fairshare.into(),
            job_size: 0.0,
            partition: 0.0,
            qos: tables.weights.queue.into(),
            tres: Vec::new(),
        };
        Ok(Queue {
            jobs,
            weights,
            scores,
            tres_weight_text: String::new(),
            formula: "flux",
            algorithm: Algorithm::Flux,
            now,
        })
    }
}

impl Site {
    /// The pending queue scored with flux-accounting's formula, if the site has a queue: against
    /// the flux fair-share of the site's tree with its usage as given, and the priority tables of
    /// the database when the tree is one. flux's priorities read nothing else: no job records are
    /// charged, and slurm.conf and the QOS table play no part ([`Site::score`] is Slurm's).
    ///
    /// # Errors
    /// As [`Queue::flux`].
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::pipeline::{Silent, SiteOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let tree = dir.path().join("t.csv");
    /// # std::fs::write(&tree, "0,root,%^+_nouser,1,10\n1,a,%^+_nouser,1,10\n2,a,u1,1,4\n2,a,u2,1,6\n")?;
    /// # let pending = dir.path().join("p.csv");
    /// # std::fs::write(&pending, "job_id,user,account,partition,qos,submit_time,accrue_time,min_nodes,\
    /// #     cpus,time_limit,nice,site_factor,tres_req\n1,u1,a,default,,0,0,1,1,,0,0,\n")?;
    /// let options = SiteOptions {
    ///     tree: Some(tree),
    ///     tree_format: Some(fairshare_engine::io::TreeFormat::FluxCsv),
    ///     pending: Some(pending),
    ///     now: Some("2026-01-08T00:00:00".into()),
    ///     ..SiteOptions::default()
    /// };
    /// let queue = options.resolve()?.score_flux(&Silent)?.expect("a pending queue");
    /// assert_eq!((queue.formula, queue.scores.priority.as_slice()), ("flux", &[100000][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn score_flux(&self, observer: &dyn Observer) -> Result<Option<Queue>> {
        let Some(pending) = &self.pending else { return Ok(None) };
        Queue::flux(&self.tree, self.params, pending, self.now, observer).map(Some)
    }
}

impl Site {
    /// slurm.conf, whose weights Slurm's formula needs.
    ///
    /// # Errors
    /// The site has none.
    pub(crate) fn priority_conf(&self) -> Result<&SlurmConf> {
        self.slurm_conf
            .as_ref()
            .ok_or_else(|| Error::Usage("--pending needs --slurm-conf (the priority weights)".into()))
    }

    /// Slurm's formula with the site's weights, QOS and evaluation time.
    pub(super) fn slurm_priority(&self) -> Result<SlurmPriority<'_>> {
        Ok(SlurmPriority::new(self.priority_conf()?, self.qos.as_ref(), self.now))
    }

    /// The pending queue scored with Slurm's formula against `fs`, streamed into `sink` a slice
    /// of rows at a time ([`score_streamed`]); false when the site has no queue.
    ///
    /// # Errors
    /// No slurm.conf (the weights), or as [`score_streamed`].
    pub fn score_streamed(
        &self,
        tree: &AssocTree,
        fs: &FairShare,
        observer: &dyn Observer,
        sink: &mut (dyn FnMut(RecordBatch) -> Result<()> + Send),
    ) -> Result<bool> {
        let Some(pending) = &self.pending else { return Ok(false) };
        score_streamed(&self.slurm_priority()?, tree, fs, pending, observer, sink).map(|()| true)
    }

    /// One part of a pending queue (`part`, a file in the queue's format, detected unless the
    /// site names it) scored with Slurm's formula against `fs` into the Parquet file `out`, as
    /// [`score_to_parquet`]: a partitioned queue scored a part per task writes the rows the
    /// whole queue would, part by part.
    ///
    /// # Errors
    /// No slurm.conf (the weights: `--pending needs --slurm-conf`), or as [`score_to_parquet`].
    pub fn score_part_to_parquet(
        &self,
        tree: &AssocTree,
        fs: &FairShare,
        part: &Path,
        out: &Path,
        observer: &dyn Observer,
    ) -> Result<()> {
        let pending = PendingSource { path: part.to_path_buf(), format: self.pending.as_ref().and_then(|p| p.format) };
        score_to_parquet(&self.slurm_priority()?, self.now, tree, fs, &pending, out, observer)
    }
}

/// Jobs per slice of a streamed score: about one Parquet row group of rows.
const JOBS_PER_SLICE: usize = 1 << 19;

/// Scores `pending` with Slurm's formula into the Parquet file `out`, streamed
/// ([`score_streamed`]), so neither the queue nor its scores are ever all in memory.
///
/// # Errors
/// The queue cannot be read, or `out` cannot be written.
pub fn score_to_parquet(
    prio: &SlurmPriority,
    now: i64,
    tree: &AssocTree,
    fs: &FairShare,
    pending: &PendingSource,
    out: &Path,
    observer: &dyn Observer,
) -> Result<()> {
    let meta = jobs_metadata("slurm", fs.params.algorithm, now);
    let mut file: Option<ParquetSink> = None;
    // The first slice also opens the file with its schema and encodings.
    score_streamed(prio, tree, fs, pending, observer, &mut |batch| match &mut file {
        Some(s) => s.write(&batch),
        None => file.insert(ParquetSink::create(out, &batch, meta.clone())?).write(&batch),
    })?;
    match file {
        Some(s) => s.finish(),
        None => Err(Error::Usage("the queue gave no batch to write".into())),
    }
}

/// Scores `pending` with Slurm's formula, streamed, handing `sink` the rows ([`jobs_batch`]) a
/// slice of jobs at a time, in queue order: a Parquet queue is read a row group at a time
/// (other formats whole), the next while this one is scored, and sliced row group by row group,
/// so the slices depend on the file alone; each slice is scored while `sink` takes the previous
/// one. Jobs are scored independently of each other, so the slices hold the rows the whole
/// queue would. Between slices, `observer` may interrupt.
///
/// # Errors
/// The queue cannot be read, `sink` fails, or the observer interrupts.
pub fn score_streamed(
    prio: &SlurmPriority,
    tree: &AssocTree,
    fs: &FairShare,
    pending: &PendingSource,
    observer: &dyn Observer,
    sink: &mut (dyn FnMut(RecordBatch) -> Result<()> + Send),
) -> Result<()> {
    score_slices(prio, tree, fs, pending, observer, &|scores, jobs, _| jobs_batch(scores, jobs, &prio.weights), sink)
}

/// [`score_streamed`] with what each slice becomes chosen by the caller: `slice` makes it from
/// the slice's scores, its wave of jobs and the slice's jobs in that wave (while `sink` takes
/// the previous slice's).
pub(crate) fn score_slices<T: Send>(
    prio: &SlurmPriority,
    tree: &AssocTree,
    fs: &FairShare,
    pending: &PendingSource,
    observer: &dyn Observer,
    slice: &(dyn Fn(Scores, &PendingJobs, Range<usize>) -> Result<T> + Sync),
    sink: &mut (dyn FnMut(T) -> Result<()> + Send),
) -> Result<()> {
    let keep = prio.weights.tres_keys();
    let format = match pending.format {
        Some(f) => f,
        None => PendingFormat::detect(&pending.path)?,
    };
    let mut groups = match format {
        PendingFormat::Parquet => Some(ParquetRowGroups::open(&pending.path, &keep)?),
        PendingFormat::Csv | PendingFormat::SqueueJson => None,
    };
    // Every row group's names start from the tree's, so known names keep one id throughout; the
    // first row group is decoded while they are made (it needs none of them to be decoded).
    let (names, first) = rayon::join(
        || std::sync::Arc::new(TreeNames::new(tree)),
        || groups.as_mut().and_then(ParquetRowGroups::next_decoded),
    );
    let mut groups = groups.map(|g| g.with_names(names.clone()));
    // The queue as one chunk: a text queue, or a Parquet file without row groups (its schema
    // still gets a batch).
    let whole = || PendingJobs::read_with(&pending.path, Some(format), &keep, &names);
    let total = groups.as_ref().map(ParquetRowGroups::rows);
    let first_jobs = || match (first, &groups) {
        (Some(decoded), Some(g)) => decoded.and_then(|d| g.jobs_of(d)),
        _ => whole(),
    };
    // Every row group finds its jobs' associations in one index, made while the first is read.
    let (first, associations) = rayon::join(first_jobs, || prio.associations(tree, fs, &names));
    let mut next_group = || groups.as_mut().and_then(ParquetRowGroups::next_group);
    let mut chunk = Some(first?);
    let mut write = |made: Option<T>| made.map_or(Ok(()), &mut *sink);
    let mut held = None;
    let mut unknown = UnknownJobs::default();
    let mut scored_jobs = 0u64;
    while let Some(jobs) = chunk.take() {
        let mut next = None;
        // The next row group is read on one core while this one is scored and written on the
        // others (and on that one once the read is done); progress and interruption are asked
        // here, on the calling thread (Python runs its signal handlers there only).
        rayon::in_place_scope(|s| -> Result<()> {
            s.spawn(|_| next = next_group());
            let queue = prio.prepare_shared(&jobs, tree, fs, &names, &associations)?;
            let mut start = 0;
            loop {
                let end = (start + JOBS_PER_SLICE).min(jobs.len());
                let (written, scored) = rayon::join(
                    || write(held.take()),
                    || {
                        let mut scores = Scores::default();
                        let rows = queue.score_jobs(start..end, &mut scores);
                        slice(scores, &jobs, start..end).map(|made| (made, rows))
                    },
                );
                written?;
                let (made, rows) = scored?;
                unknown.note(&jobs, &rows);
                held = Some(made);
                scored_jobs += (end - start) as u64;
                let total = total.unwrap_or(jobs.len() as u64).max(scored_jobs);
                observer.progress("scoring the queue", scored_jobs, total, "jobs");
                start = end;
                if start >= jobs.len() {
                    return Ok(());
                }
                if observer.interrupted() {
                    return Err(Error::Interrupted("scoring the queue"));
                }
            }
        })?;
        chunk = next.transpose()?;
    }
    write(held.take())?;
    unknown.warn(observer);
    Ok(())
}

/// Jobs without an association, which are scored with fair-share 0 as Slurm does: counted over
/// the queue, and the first described, to be said once.
#[derive(Debug, Default)]
struct UnknownJobs {
    count: usize,
    first: Option<String>,
}

impl UnknownJobs {
    /// The jobs at `rows` of `jobs`.
    fn of(jobs: &PendingJobs, rows: &[usize]) -> Self {
        let mut u = UnknownJobs::default();
        u.note(jobs, rows);
        u
    }

    /// Notes the jobs at `rows` of `jobs`.
    fn note(&mut self, jobs: &PendingJobs, rows: &[usize]) {
        if let (None, Some(&j)) = (&self.first, rows.first()) {
            self.first = Some(format!(
                "job {} (user {}, account {}, {})",
                jobs.job_id[j],
                jobs.names.name(jobs.user[j]),
                jobs.names.name(jobs.account[j]),
                jobs.location(j)
            ));
        }
        self.count += rows.len();
    }

    fn warn(&self, observer: &dyn Observer) {
        if let Some(first) = &self.first {
            observer
                .warning(&format!("{} job(s) have no association and score fair-share 0, e.g. {first}", self.count));
        }
    }
}
