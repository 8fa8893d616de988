//! Forecasts: an association's fair-share factor over the coming days under an assumption about
//! everyone's future usage, the instant it first reaches a target, and how much it can still
//! consume before it falls below a floor.
//!
//! Decay makes the future cheap. The job records are charged once, with the jobs running now
//! ended at the decay thread's next pass (at now under the exact decay); once their last charges
//! are behind, every association's usage only decays, by one factor common to all (the history's
//! carry, [`fairshare_engine::usage::history`]). The assumed usage is one job per association billed a
//! constant rate from that pass on, whose usage at any instant is the decay model's closed form
//! for a job billed 1 per second, times the rate. So the usage of every association at any
//! instant is `carry · U(settled) + rate · unit(t)`, and each instant costs one fair-share pass,
//! whatever the length of the history: the same pass every other command runs, so Fair Tree's
//! ranks move as other users' usage decays.
//!
//! Fair-share is relative: with no new usage anywhere (`Assume::Idle`), every association's usage
//! decays at the same rate and the factors hold, up to a `PriorityUsageResetPeriod` boundary. A
//! factor recovers because others use the machine, which `Assume::Steady` models.

pub mod render;

use fairshare_base::named::{Choice, Named};
use fairshare_base::read::time::TIME_RANGE;
use fairshare_base::{Error, Result};
use fairshare_engine::pass::{Algorithm, FairShare, Params};
use fairshare_engine::pipeline::{Observer, Site, UsageConfig};
use fairshare_engine::tree::{AssocTree, TreeInput};
use fairshare_engine::usage::charge::{ChargeContext, DecayModel, share_among_copies, user_copies};
use fairshare_engine::usage::history::{Instants, charge_history_with};

/// What a forecast assumes everyone does from now on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assume {
    /// No new usage anywhere: the jobs running now end at the decay thread's next pass (at now
    /// under the exact decay), and nothing starts.
    Idle,
    /// Every association goes on at its rate of the last window: the billing-seconds (with the
    /// QOS usage factor) its jobs ran in the window, per second, as one job from the next pass on.
    Steady,
}

/// The names the command line and the outputs use.
impl Named for Assume {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(Assume::Idle, "idle", "No new usage anywhere: the jobs running now end at the next decay pass"),
        Choice::new(Assume::Steady, "steady", "Everyone goes on at their rate of the last --window"),
    ];
}

/// What to forecast, and under which assumption.
#[derive(Clone, Debug, PartialEq)]
pub struct ForecastOptions {
    /// Everyone's future usage.
    pub assume: Assume,
    /// The window whose rates [`Assume::Steady`] continues, seconds (default: one half-life,
    /// or 7 days without decay).
    pub window: Option<i64>,
    /// How far ahead, seconds (default: four half-lives, or 28 days without decay).
    pub horizon: Option<i64>,
    /// Intervals of the trajectory: it has `steps + 1` instants from now to the horizon.
    pub steps: u32,
    /// The factor whose first reaching is sought.
    pub target: f64,
    /// The factor the budget keeps the association at or above.
    pub floor: f64,
    /// The period the budget is consumed over, evenly, seconds (default 7 days).
    pub budget_over: Option<i64>,
    /// The partition whose CPU billing converts the budget into CPU-hours (default: slurm.conf's
    /// default partition).
    pub partition: Option<String>,
}

impl Default for ForecastOptions {
    fn default() -> Self {
        ForecastOptions {
            assume: Assume::Idle,
            window: None,
            horizon: None,
            steps: 48,
            target: 0.5,
            floor: 0.5,
            budget_over: None,
            partition: None,
        }
    }
}

/// One instant of a trajectory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForecastPoint {
    /// Epoch seconds.
    pub at: i64,
    /// The association's fair-share factor.
    pub fs_factor: f64,
    /// 1 + the number of user associations with a higher factor (ties share a rank).
    pub rank: u32,
    /// The association's decayed usage, billing-seconds.
    pub raw_usage: f64,
}

/// How much an association can still consume.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    /// Billing-seconds it can consume evenly over the period and end it at or above the floor.
    Amount(f64),
    /// Its factor ends the period below the floor even if it consumes nothing.
    Below,
    /// No amount takes it below the floor: its factor has a lower bound above it.
    Unlimited,
}

/// A forecast of one association.
#[derive(Clone, Debug, PartialEq)]
pub struct Forecast {
    /// `USER@ACCOUNT`.
    pub association: String,
    /// The pass.
    pub algorithm: Algorithm,
    /// The first instant (the site's now).
    pub now: i64,
    /// What it assumes.
    pub assume: Assume,
    /// The window of the steady rates, seconds.
    pub window: i64,
    /// How far ahead, seconds.
    pub horizon: i64,
    /// The association's assumed billing per second (0 when idle).
    pub rate: f64,
    /// Everyone's assumed billing per second.
    pub total_rate: f64,
    /// The user associations ranked.
    pub users: u32,
    /// The factor sought.
    pub target: f64,
    /// The first instant its factor is at or above the target, to the second (to the pass
    /// under Slurm's decay, whose state changes only at passes); `None`: not within the horizon.
    pub reached_at: Option<i64>,
    /// The factor at `steps + 1` instants from now to the horizon.
    pub trajectory: Vec<ForecastPoint>,
    /// The floor of the budget.
    pub floor: f64,
    /// The period of the budget, seconds.
    pub budget_over: i64,
    /// The budget.
    pub budget: Budget,
    /// The partition of the CPU-hours, and its billing per CPU-second (`None`: no CPU-hours).
    pub cpu_billing: Option<(String, f64)>,
}

impl Forecast {
    /// The budget in CPU-hours at the partition's billing per CPU.
    pub fn budget_cpu_hours(&self) -> Option<f64> {
        match (self.budget, &self.cpu_billing) {
            (Budget::Amount(x), Some((_, per_cpu))) if *per_cpu > 0.0 => Some(x / per_cpu / 3600.0),
            _ => None,
        }
    }
}

/// An extra job on one association: billed `rate` per second from the assumed jobs' start to `end`.
#[derive(Clone, Copy, Debug)]
struct Extra {
    record: usize,
    rate: f64,
    end: i64,
}

/// Everyone's usage from now on, ready to evaluate at any instant.
struct Future<'a> {
    usage: &'a UsageConfig,
    params: Params,
    /// The tree as read; usage is replaced at each instant.
    tree: AssocTree,
    /// The tree row of each input record.
    tree_rows: Vec<usize>,
    /// Copies of a flux association, as tree rows (copy, first).
    copies: Vec<(usize, usize)>,
    /// The records' usage (input order) at now and at each pass until `settled`, ascending,
    /// with the usage at the start of the last pass (classic under Slurm's decay).
    early: Vec<(i64, Vec<f64>, Option<Vec<f64>>)>,
    /// From here on the records' usage only decays.
    settled: i64,
    /// Where the assumed jobs start: the next pass (now under the exact decay).
    start: i64,
    /// Assumed billing per second, input order.
    rates: Vec<f64>,
}

impl Future<'_> {
    fn model_at(&self, t: i64) -> DecayModel {
        self.usage.model_at(self.params.algorithm, t)
    }

    /// The usage per tree row at `t` (≥ now), and at the start of its last pass when classic
    /// reads it.
    fn usage_at(&self, t: i64, extra: Option<Extra>) -> (Vec<f64>, Option<Vec<f64>>) {
        let (mut usage, mut pass_start) = if t < self.settled {
            // Between passes Slurm's state holds; every pass until `settled` is kept.
            let k = self.early.partition_point(|e| e.0 <= t).max(1) - 1;
            let (_, u, s) = &self.early[k];
            (u.clone(), s.clone())
        } else {
            let (at, u, s) = self.early.last().expect("now is kept");
            let carry = if t == *at { 1.0 } else { Instants::new(vec![*at, t], |x| self.model_at(x)).carry(1) };
            let decayed = |v: &Vec<f64>| v.iter().map(|x| x * carry).collect::<Vec<f64>>();
            (decayed(u), s.as_ref().map(decayed))
        };
        let model = self.model_at(t);
        let pass_start_of = |end: Option<i64>| match model {
            DecayModel::Slurm(d) => d.job_usage_at_last_pass_start(self.start, end, 1.0),
            DecayModel::Exact(_) => 0.0,
        };
        let (unit, unit_start) = (model.job_usage(self.start, None, 1.0), pass_start_of(None));
        let mut add = |record: usize, rate: f64, unit: f64, unit_start: f64| {
            if rate > 0.0 {
                usage[record] += rate * unit;
                if let Some(s) = &mut pass_start {
                    s[record] += rate * unit_start;
                }
            }
        };
        for (record, &rate) in self.rates.iter().enumerate() {
            add(record, rate, unit, unit_start);
        }
        if let Some(e) = extra {
            add(e.record, e.rate, model.job_usage(self.start, Some(e.end), 1.0), pass_start_of(Some(e.end)));
        }
        let by_row = |v: Vec<f64>| {
            let mut rows = vec![0.0; self.tree.len()];
            for (&row, u) in self.tree_rows.iter().zip(v) {
                rows[row] = u;
            }
            share_among_copies(&self.copies, &mut rows, |a, b| *a += b);
            rows
        };
        (by_row(usage), pass_start.map(by_row))
    }

    /// The tree with its usage at `t` and its fair-share.
    fn fair_share_at(&self, t: i64, extra: Option<Extra>) -> Result<(AssocTree, FairShare)> {
        let (usage, pass_start) = self.usage_at(t, extra);
        let tree = self.tree.with_user_usage(&usage);
        let fs = match pass_start {
            Some(s) => fairshare_engine::pass::compute_after_pass(&tree, &self.tree.with_user_usage(&s), &self.params)?,
            None => fairshare_engine::pass::compute(&tree, &self.params)?,
        };
        Ok((tree, fs))
    }

    /// The point of tree row `row` at `t`.
    fn point(&self, row: usize, t: i64, extra: Option<Extra>) -> Result<ForecastPoint> {
        let (tree, fs) = self.fair_share_at(t, extra)?;
        let own = fs.fs_factor[row];
        let above = (0..tree.len()).filter(|&r| tree.is_user(r) && fs.fs_factor[r] > own).count();
        Ok(ForecastPoint { at: t, fs_factor: own, rank: above as u32 + 1, raw_usage: tree.raw_usage()[row] })
    }
}

/// The user association `who` names (`USER` with one association, or `USER@ACCOUNT`).
fn user_row(tree: &AssocTree, who: &str) -> Result<usize> {
    let rows = crate::explain::find_rows(tree, who).map_err(Error::Usage)?;
    let users: Vec<usize> = rows.into_iter().filter(|&r| tree.is_user(r)).collect();
    match users[..] {
        [row] => Ok(row),
        [] => Err(Error::Usage(format!("{who:?} is an account: a forecast is of a user association (USER@ACCOUNT)"))),
        _ => {
            let names: Vec<String> = users.iter().map(|&r| association_name(tree, r)).collect();
            Err(Error::Usage(format!(
                "{who:?} has several associations ({}): name one as USER@ACCOUNT",
                names.join(", ")
            )))
        }
    }
}

/// `USER@ACCOUNT`, with `(PARTITION)` for a partition's association.
fn association_name(tree: &AssocTree, row: usize) -> String {
    let mut name = format!("{}@{}", tree.user_name(row).unwrap_or_default(), tree.account(row));
    if let Some(p) = tree.partition(row) {
        name.push_str(&format!(" ({p})"));
    }
    name
}

/// Forecasts the fair-share factor of `who` (`USER` or `USER@ACCOUNT`) in `site`.
///
/// # Errors
/// A site without job records or charged through flux-accounting's bins, an association not
/// found or named ambiguously, options out of range, reading or charging the records.
///
/// # Example
/// ```no_run
/// use fairshare_analyses::forecast::{Assume, ForecastOptions, forecast};
/// use fairshare_engine::pipeline::{Silent, SiteOptions};
///
/// let mut options = SiteOptions::default();
/// options.under_site_file(std::path::Path::new("examples/seed-site/site.toml"))?;
/// let site = options.resolve()?;
/// let f = forecast(&site, "dana@huttenhower_lab", &ForecastOptions { assume: Assume::Steady, ..Default::default() }, &Silent)?;
/// println!("{:?}", f.reached_at);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn forecast(site: &Site, who: &str, options: &ForecastOptions, observer: &dyn Observer) -> Result<Forecast> {
    let (usage, window, horizon) = checked(site, options)?;
    let budget_over = options.budget_over.unwrap_or(7 * 86_400);
    if budget_over <= 0 {
        return Err(Error::Usage("--budget-over must be a positive duration".into()));
    }
    let input = site.tree_input()?;
    let tree = AssocTree::build(input.clone())?;
    let row = user_row(&tree, who)?;
    let future = charge_future(site, usage, input, tree, options.assume, window, observer)?;
    let now = usage.now;

    let mut trajectory = Vec::with_capacity(options.steps as usize + 1);
    for_each_instant(now, horizon, options.steps, observer, |t| {
        trajectory.push(future.point(row, t, None)?);
        Ok(())
    })?;
    let reached_at = first_reached(&future, row, &trajectory, options.target)?;
    let record = future.tree_rows.iter().position(|&r| r == row).expect("every tree row has its record");
    let budget = budget(&future, row, record, options.floor, budget_over)?;
    let cpu_billing = cpu_billing(site, options.partition.as_deref())?;
    Ok(Forecast {
        association: association_name(&future.tree, row),
        algorithm: site.params.algorithm,
        now,
        assume: options.assume,
        window,
        horizon,
        rate: future.rates[record],
        total_rate: future.rates.iter().sum(),
        users: future.tree.user_count() as u32,
        target: options.target,
        reached_at,
        trajectory,
        floor: options.floor,
        budget_over,
        budget,
        cpu_billing,
    })
}

/// Every user association's factor and rank at the instants of a trajectory: what one
/// [`forecast`] gives for one association, for all of them at once (one pass per instant; no
/// bisection and no budget).
#[derive(Debug)]
pub struct Trajectories {
    /// The tree (its usage as of now).
    pub tree: AssocTree,
    /// The instants, from now to the horizon.
    pub times: Vec<i64>,
    /// The factor of every row at each instant (accounts: unset, as in [`FairShare::fs_factor`]).
    pub fs_factor: Vec<Vec<f64>>,
    /// The rank of every user row at each instant (1 + the users with a higher factor; 0 for
    /// accounts).
    pub rank: Vec<Vec<u32>>,
}

impl Trajectories {
    /// The first instant row's factor is at or above `target`, to the trajectory's step.
    pub fn reached_at(&self, row: usize, target: f64) -> Option<i64> {
        self.fs_factor.iter().position(|fs| fs[row] >= target).map(|k| self.times[k])
    }
}

/// Every user association's trajectory under `options` (its `target`, `floor` and budget are
/// not used): one pass per instant, so a report can show everyone's recovery.
///
/// # Errors
/// As [`forecast`].
pub fn trajectories(site: &Site, options: &ForecastOptions, observer: &dyn Observer) -> Result<Trajectories> {
    let (usage, window, horizon) = checked(site, options)?;
    let input = site.tree_input()?;
    let tree = AssocTree::build(input.clone())?;
    let future = charge_future(site, usage, input, tree, options.assume, window, observer)?;
    let (mut times, mut fs_factor, mut rank) = (Vec::new(), Vec::new(), Vec::new());
    for_each_instant(usage.now, horizon, options.steps, observer, |t| {
        let (tree, fs) = future.fair_share_at(t, None)?;
        rank.push(ranks(&tree, &fs.fs_factor));
        times.push(t);
        fs_factor.push(fs.fs_factor);
        Ok(())
    })?;
    Ok(Trajectories { tree: future.tree, times, fs_factor, rank })
}

/// 1 + the number of users with a higher factor, for every user row (0 for accounts).
fn ranks(tree: &AssocTree, fs: &[f64]) -> Vec<u32> {
    let mut users: Vec<usize> = (0..tree.len()).filter(|&r| tree.is_user(r)).collect();
    users.sort_by(|&a, &b| fs[b].total_cmp(&fs[a]));
    let mut rank = vec![0; tree.len()];
    for (k, &r) in users.iter().enumerate() {
        // Ties take the rank of the first of them.
        rank[r] = if k > 0 && fs[users[k - 1]] == fs[r] { rank[users[k - 1]] } else { k as u32 + 1 };
    }
    rank
}

/// The site's usage stage and the window and horizon, checked.
fn checked<'a>(site: &'a Site, options: &ForecastOptions) -> Result<(&'a UsageConfig, i64, i64)> {
    let usage = site.usage.as_ref().ok_or_else(|| {
        Error::Usage(
            "a forecast needs job records (--jobs, or a site file's `jobs`): it carries their usage forward".into(),
        )
    })?;
    if usage.decay.is_flux() {
        return Err(Error::Usage(
            "a forecast follows Slurm's decay thread or the exact decay; flux-accounting's usage bins cannot be \
             carried forward: give --decay slurm or --decay exact"
                .into(),
        ));
    }
    check_factor(options.target, "--target")?;
    check_factor(options.floor, "--floor")?;
    if options.steps == 0 {
        return Err(Error::Usage("--steps must be at least 1".into()));
    }
    let half_life = i64::from(usage.half_life);
    let or_days = |given: Option<i64>, half_lives: i64, days: i64, flag: &str| -> Result<i64> {
        let v = given.unwrap_or(if half_life > 0 { half_lives * half_life } else { days * 86_400 });
        if v <= 0 {
            return Err(Error::Usage(format!("{flag} must be a positive duration")));
        }
        Ok(v)
    };
    let window = or_days(options.window, 1, 7, "--window")?;
    let horizon = or_days(options.horizon, 4, 28, "--horizon")?;
    // Every instant a forecast prints is a time the readers would take: none past year 9999.
    let last = usage.now.checked_add(horizon).filter(|t| TIME_RANGE.contains(t));
    if last.is_none() {
        return Err(Error::Usage(format!(
            "--horizon of {horizon} s from --now {} ends past 9999-12-31T23:59:59 UTC: give a shorter one",
            usage.now
        )));
    }
    Ok((usage, window, horizon))
}

/// Calls `each` at the `steps + 1` instants from `now` to `now + horizon`, telling `observer`.
fn for_each_instant(
    now: i64,
    horizon: i64,
    steps: u32,
    observer: &dyn Observer,
    mut each: impl FnMut(i64) -> Result<()>,
) -> Result<()> {
    let total = u64::from(steps) + 1;
    for k in 0..=i64::from(steps) {
        observer.progress("forecasting", k as u64, total, "instants");
        if observer.interrupted() {
            return Err(Error::Interrupted("forecasting"));
        }
        // In 128 bits: a horizon of centuries cut into billions of steps overflows 64.
        each(now + (i128::from(horizon) * i128::from(k) / i128::from(steps)) as i64)?;
    }
    observer.progress("forecasting", total, total, "instants");
    Ok(())
}

fn check_factor(v: f64, flag: &str) -> Result<()> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(Error::Usage(format!("{flag} {v}: a fair-share factor is between 0 and 1")))
    }
}

/// Charges the site's records once into a [`Future`]: the jobs running now end at the next pass,
/// later jobs are left out, and each association's rate over `window` is read on the way.
fn charge_future<'a>(
    site: &Site,
    usage: &'a UsageConfig,
    input: TreeInput,
    tree: AssocTree,
    assume: Assume,
    window: i64,
    observer: &dyn Observer,
) -> Result<Future<'a>> {
    let params = site.params;
    let now = usage.now;
    let model_at = |t: i64| usage.model_at(params.algorithm, t);
    // The assumed jobs start at the next pass, where the running ones end: Slurm's state at now
    // is the one after the last pass, which a job running past now does not change.
    let (start, period) = match model_at(now) {
        DecayModel::Slurm(d) => {
            let c = i64::from(d.calc_period.max(1));
            (d.first_pass + (now - d.first_pass + c - 1).div_euclid(c) * c, c)
        }
        DecayModel::Exact(_) => (now, 0),
    };
    let settled = Instants::new(vec![now], model_at).settled(start);
    let mut times = vec![now];
    if period > 0 {
        times.extend((1..).map(|k| start + (k - 1) * period).take_while(|&t| t <= settled).filter(|&t| t > now));
    }
    let ctx = ChargeContext::new(&input, site.slurm_conf.as_ref(), site.qos.as_ref(), model_at(now));
    let mut window_usage = vec![0.0; input.records.len()];
    let from = now - window;
    let history = charge_history_with(&usage.jobs, usage.format, &ctx, Instants::new(times, model_at), |job| {
        if job.start > now {
            return false;
        }
        let ran_to = job.end.map_or(now, |e| e.min(now));
        let in_window = (ran_to - job.start.max(from)).max(0);
        window_usage[job.row as usize] += job.bill * in_window as f64;
        if job.end.is_none_or(|e| e > now) {
            job.end = Some(start);
        }
        true
    })?;
    usage.check_charged(&history.report)?;
    usage.tell(&history.report, observer);
    let mut early = Vec::new();
    history.for_each_instant(|i, u, s| {
        early.push((history.instants().times()[i], u.to_vec(), s.map(<[f64]>::to_vec)));
        Ok(())
    })?;
    let rates = match assume {
        Assume::Idle => vec![0.0; window_usage.len()],
        Assume::Steady => window_usage.iter().map(|u| u / window as f64).collect(),
    };
    let tree_rows = tree_rows(&input, &tree);
    let copies = user_copies(&input).into_iter().map(|(copy, first)| (tree_rows[copy], tree_rows[first])).collect();
    Ok(Future { usage, params, tree, tree_rows, copies, early, settled, start, rates })
}

/// The tree row of each record of `input`.
fn tree_rows(input: &TreeInput, tree: &AssocTree) -> Vec<usize> {
    let row_of_id: std::collections::HashMap<u64, usize> =
        tree.ids().iter().enumerate().map(|(row, &id)| (id, row)).collect();
    input.records.iter().map(|r| row_of_id[&r.id]).collect()
}

/// The first instant row's factor is at or above `target`: the trajectory's first such instant,
/// narrowed by bisection to the second since the instant before it.
fn first_reached(future: &Future<'_>, row: usize, trajectory: &[ForecastPoint], target: f64) -> Result<Option<i64>> {
    let Some(k) = trajectory.iter().position(|p| p.fs_factor >= target) else {
        return Ok(None);
    };
    if k == 0 {
        return Ok(Some(trajectory[0].at));
    }
    let (mut lo, mut hi) = (trajectory[k - 1].at, trajectory[k].at);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if future.point(row, mid, None)?.fs_factor >= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Some(hi))
}

/// The billing-seconds `record` (tree row `row`) can consume evenly over `over` seconds from
/// the assumed jobs' start and end the period at or above `floor`.
fn budget(future: &Future<'_>, row: usize, record: usize, floor: f64, over: i64) -> Result<Budget> {
    let end = future.start + over;
    let ok = |amount: f64| -> Result<bool> {
        let extra = Extra { record, rate: amount / over as f64, end };
        Ok(future.point(row, end, Some(extra))?.fs_factor >= floor)
    };
    if !ok(0.0)? {
        return Ok(Budget::Below);
    }
    // Bracket from the tree's whole usage at the end, doubling: a factor with a lower bound above
    // the floor (a lone user's) never leaves it.
    let total: f64 = future.usage_at(end, None).0.iter().sum();
    let mut hi = total.max(1.0);
    let mut lo = 0.0;
    let mut doublings = 0;
    while ok(hi)? {
        lo = hi;
        hi *= 2.0;
        doublings += 1;
        if doublings > 64 {
            return Ok(Budget::Unlimited);
        }
    }
    // To a millionth (budgets are printed to four significant digits), in at most 64 halvings:
    // when every amount but none is too much (its usage would be all the usage), `lo` stays 0.
    for _ in 0..64 {
        if hi - lo <= 1e-6 * hi {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if ok(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Budget::Amount(lo))
}

/// The billing of one CPU-second in `partition` (default: slurm.conf's default partition).
fn cpu_billing(site: &Site, partition: Option<&str>) -> Result<Option<(String, f64)>> {
    // Without slurm.conf every job is billed its CPUs.
    let Some(conf) = &site.slurm_conf else {
        return Ok(Some((partition.unwrap_or_default().to_string(), 1.0)));
    };
    let part = match partition {
        Some(name) => Some(
            conf.partition(name)
                .ok_or_else(|| Error::Usage(format!("--partition {name:?}: slurm.conf has no such partition")))?,
        ),
        None => conf.default_partition(),
    };
    let Some(part) = part else { return Ok(None) };
    let one_cpu = fairshare_engine::config::tres::parse_tres_counts("cpu=1").expect("a valid TRES string");
    let per_cpu =
        fairshare_engine::config::tres::billable(&one_cpu, part.billing_weights.as_ref(), conf.priority_flags);
    Ok(Some((part.name.clone(), per_cpu)))
}
