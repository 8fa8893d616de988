//! Trackable resources (TRES): counts, weights and the billing formula.
//!
//! - Count strings as `sacct`'s `AllocTRES` and a pending job's `tres_req` write them:
//!   `cpu=16,mem=64G,node=1,gres/gpu=2` ([`parse_tres_counts`]). Memory is counted in MB.
//! - Weight strings, `TRESBillingWeights` and `PriorityWeightTRES`: `type[/name]=value[unit]`
//!   ([`parse_tres_weights`], `slurm_get_tres_weight_array()` in `slurm_protocol_api.c`).
//! - [`billable`]: `assoc_mgr_tres_weighted()` and `calc_job_billable_tres()`.
//!
//! TRES names are matched case-insensitively, as Slurm's `assoc_mgr_find_tres_pos()` does, and are
//! kept in lower case (`Mem` and `GRES/gpu` are `mem` and `gres/gpu`).

use std::fmt;

use super::flags::PriorityFlags;

/// The type of a TRES. The order is Slurm's TRES array order: the eight built-in TRES by id, then the
/// named ones (whose ids are site-specific; they are ordered by type, then name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TresKind {
    /// `cpu` (id 1).
    Cpu,
    /// `mem`, in MB (id 2).
    Mem,
    /// `energy`, in joules (id 3).
    Energy,
    /// `node` (id 4).
    Node,
    /// `billing` (id 5).
    Billing,
    /// `fs/disk` (id 6).
    FsDisk,
    /// `vmem` (id 7).
    Vmem,
    /// `pages` (id 8).
    Pages,
    /// `gres/NAME` (and `gres/NAME:TYPE`).
    Gres,
    /// `license/NAME`.
    License,
    /// `bb/NAME`, in MB.
    Bb,
}

impl TresKind {
    /// The type as Slurm spells it (`fs` for `fs/disk`).
    pub fn type_name(self) -> &'static str {
        match self {
            TresKind::Cpu => "cpu",
            TresKind::Mem => "mem",
            TresKind::Energy => "energy",
            TresKind::Node => "node",
            TresKind::Billing => "billing",
            TresKind::FsDisk => "fs",
            TresKind::Vmem => "vmem",
            TresKind::Pages => "pages",
            TresKind::Gres => "gres",
            TresKind::License => "license",
            TresKind::Bb => "bb",
        }
    }

    /// Slurm's base unit index for the type (`slurmdb_get_tres_base_unit()`): MB (2) for `mem` and
    /// `bb`, none (0) for the others.
    fn base_unit(self) -> u32 {
        match self {
            TresKind::Mem | TresKind::Bb => 2,
            _ => 0,
        }
    }
}

/// One TRES: a type and, for `gres`, `license` and `bb`, a name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tres {
    kind: TresKind,
    name: String,
}

impl Tres {
    /// `cpu`.
    pub const CPU: Tres = Tres::builtin(TresKind::Cpu);
    /// `mem` (MB).
    pub const MEM: Tres = Tres::builtin(TresKind::Mem);
    /// `energy`.
    pub const ENERGY: Tres = Tres::builtin(TresKind::Energy);
    /// `node`.
    pub const NODE: Tres = Tres::builtin(TresKind::Node);
    /// `billing`.
    pub const BILLING: Tres = Tres::builtin(TresKind::Billing);
    /// `fs/disk`.
    pub const FS_DISK: Tres = Tres::builtin(TresKind::FsDisk);
    /// `vmem`.
    pub const VMEM: Tres = Tres::builtin(TresKind::Vmem);
    /// `pages`.
    pub const PAGES: Tres = Tres::builtin(TresKind::Pages);

    const fn builtin(kind: TresKind) -> Tres {
        Tres { kind, name: String::new() }
    }

    /// `gres/NAME` (`NAME` may carry a type: `gpu:a100`).
    pub fn gres(name: &str) -> Tres {
        Tres { kind: TresKind::Gres, name: name.to_ascii_lowercase() }
    }

    /// `license/NAME`.
    pub fn license(name: &str) -> Tres {
        Tres { kind: TresKind::License, name: name.to_ascii_lowercase() }
    }

    /// Parses a TRES name such as `cpu`, `Mem`, `fs/disk` or `GRES/gpu:a100`.
    ///
    /// # Errors
    /// A type Slurm does not track, a name on a built-in TRES, or a missing name on `gres`,
    /// `license` or `bb`.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::config::Tres;
    /// assert_eq!(Tres::parse("GRES/gpu").unwrap(), Tres::gres("gpu"));
    /// assert_eq!(Tres::parse("Mem").unwrap(), Tres::MEM);
    /// assert!(Tres::parse("gpu").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Tres, String> {
        let lower = text.to_ascii_lowercase();
        let (ty, name) = match lower.split_once('/') {
            Some((ty, name)) => (ty, Some(name)),
            None => (lower.as_str(), None),
        };
        let kind = match (ty, name) {
            ("cpu", None) => TresKind::Cpu,
            ("mem", None) => TresKind::Mem,
            ("energy", None) => TresKind::Energy,
            ("node", None) => TresKind::Node,
            ("billing", None) => TresKind::Billing,
            ("fs", Some("disk")) => TresKind::FsDisk,
            ("vmem", None) => TresKind::Vmem,
            ("pages", None) => TresKind::Pages,
            ("gres", Some(n)) if !n.is_empty() => TresKind::Gres,
            ("license", Some(n)) if !n.is_empty() => TresKind::License,
            ("bb", Some(n)) if !n.is_empty() => TresKind::Bb,
            _ => {
                return Err(format!(
                    "{text:?} is not a TRES Slurm tracks (cpu, mem, energy, node, billing, fs/disk, vmem, pages, \
                     gres/NAME, license/NAME, bb/NAME)"
                ));
            }
        };
        let name = if kind == TresKind::FsDisk { String::new() } else { name.unwrap_or_default().to_string() };
        Ok(Tres { kind, name })
    }

    /// The TRES type.
    pub fn kind(&self) -> TresKind {
        self.kind
    }

    /// The name after the `/` for `gres`, `license` and `bb`; empty for the built-in TRES.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for Tres {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TresKind::FsDisk => f.write_str("fs/disk"),
            kind if self.name.is_empty() => f.write_str(kind.type_name()),
            kind => write!(f, "{}/{}", kind.type_name(), self.name),
        }
    }
}

/// The eight TRES slurmctld always tracks, in its TRES order.
pub const BUILTIN_TRES: [Tres; 8] =
    [Tres::CPU, Tres::MEM, Tres::ENERGY, Tres::NODE, Tres::BILLING, Tres::FS_DISK, Tres::VMEM, Tres::PAGES];

/// The TRES a cluster tracks: the eight built-in ones and `listed` (its `AccountingStorageTRES`,
/// the TRES its weights name, ...), once each, in Slurm's TRES order. This is the list sshare's
/// TRES columns print, every TRES in it (`cpu=0,mem=0,...`).
///
/// # Example
/// ```
/// use fairshare_engine::config::{Tres, tres::tracked_tres};
/// let names: Vec<String> =
///     tracked_tres([Tres::license("lic"), Tres::gres("gpu"), Tres::CPU]).iter().map(Tres::to_string).collect();
/// assert_eq!(names.join(","), "cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu,license/lic");
/// ```
pub fn tracked_tres(listed: impl IntoIterator<Item = Tres>) -> Vec<Tres> {
    let mut all: Vec<Tres> = BUILTIN_TRES.into_iter().chain(listed).collect();
    all.sort();
    all.dedup();
    all
}

/// A TRES vector: a value per TRES, kept in Slurm's TRES order; a TRES that is absent is 0.
#[derive(Clone, Debug, PartialEq)]
pub struct TresMap<T> {
    items: Vec<(Tres, T)>,
}

/// TRES counts (memory and burst buffers in MB).
pub type TresCounts = TresMap<u64>;

/// TRES weights: per CPU, per MB of memory, per GPU, ...
pub type TresWeights = TresMap<f64>;

impl<T> Default for TresMap<T> {
    fn default() -> Self {
        TresMap { items: Vec::new() }
    }
}

impl<T: Copy + Default> TresMap<T> {
    /// An empty vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value for `tres` (0 when absent).
    pub fn get(&self, tres: &Tres) -> T {
        self.items.binary_search_by(|(t, _)| t.cmp(tres)).map_or_else(|_| T::default(), |i| self.items[i].1)
    }

    /// Sets the value for `tres`, replacing an earlier one.
    pub fn set(&mut self, tres: Tres, value: T) {
        match self.items.binary_search_by(|(t, _)| t.cmp(&tres)) {
            Ok(i) => self.items[i].1 = value,
            Err(i) => self.items.insert(i, (tres, value)),
        }
    }

    /// The entries in Slurm's TRES order.
    pub fn iter(&self) -> impl Iterator<Item = (&Tres, T)> + '_ {
        self.items.iter().map(|(t, v)| (t, *v))
    }

    /// The number of TRES present.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no TRES is present.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl TresCounts {
    /// The CPU count.
    pub fn cpu(&self) -> u64 {
        self.get(&Tres::CPU)
    }

    /// Adds `count` to `tres` (saturating, so a bad input cannot wrap a total around).
    pub fn add(&mut self, tres: Tres, count: u64) {
        let sum = self.get(&tres).saturating_add(count);
        self.set(tres, sum);
    }
}

impl FromIterator<(Tres, u64)> for TresCounts {
    /// Collects counts, adding repeated TRES.
    fn from_iter<I: IntoIterator<Item = (Tres, u64)>>(iter: I) -> Self {
        let mut counts = TresCounts::new();
        for (tres, n) in iter {
            counts.add(tres, n);
        }
        counts
    }
}

impl fmt::Display for TresCounts {
    /// `cpu=16,mem=65536,gres/gpu=2`: plain counts (memory in MB), in TRES order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (tres, n)) in self.iter().enumerate() {
            write!(f, "{}{tres}={n}", if i == 0 { "" } else { "," })?;
        }
        Ok(())
    }
}

/// Reads the counts of the TRES in `keep` out of a count string into `out` (0 where absent, the
/// last value where repeated), without building a map: the per-job path of the scorer. `names`
/// are the kept TRES as text (`Tres`'s `Display`), matched case-insensitively.
///
/// # Errors
/// An item without `=`, a TRES Slurm does not track, or a count that is not a number with an
/// optional unit.
///
/// # Example
/// ```
/// use fairshare_engine::config::{Tres, tres::read_kept_counts};
/// let keep = [Tres::MEM, Tres::gres("gpu")];
/// let names: Vec<String> = keep.iter().map(|t| t.to_string()).collect();
/// let mut out = [0; 2];
/// read_kept_counts("cpu=16,Mem=64G,GRES/gpu=2", &keep, &names, &mut out).unwrap();
/// assert_eq!(out, [65536, 2]);
/// ```
pub fn read_kept_counts(text: &str, keep: &[Tres], names: &[String], out: &mut [u64]) -> Result<(), String> {
    out.fill(0);
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = item.split_once('=').ok_or_else(|| format!("TRES count {item:?} is not type=count"))?;
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(name.trim())) {
            out[i] = parse_count(keep[i].kind, value.trim()).map_err(|m| format!("TRES count {item:?}: {m}"))?;
        } else {
            // Not kept, but still a TRES Slurm tracks with a well-formed count.
            let kind = tracked_kind(name.trim()).map_or_else(|| Tres::parse(name.trim()).map(|t| t.kind), Ok)?;
            parse_count(kind, value.trim()).map_err(|m| format!("TRES count {item:?}: {m}"))?;
        }
    }
    Ok(())
}

/// The kind of a TRES name Slurm tracks, without allocating; `None` for any other name.
fn tracked_kind(text: &str) -> Option<TresKind> {
    let (ty, name) = match text.split_once('/') {
        Some((ty, name)) => (ty, Some(name)),
        None => (text, None),
    };
    let is = |w: &str| ty.eq_ignore_ascii_case(w);
    match name {
        None => [
            ("cpu", TresKind::Cpu),
            ("mem", TresKind::Mem),
            ("energy", TresKind::Energy),
            ("node", TresKind::Node),
            ("billing", TresKind::Billing),
            ("vmem", TresKind::Vmem),
            ("pages", TresKind::Pages),
        ]
        .into_iter()
        .find_map(|(w, k)| is(w).then_some(k)),
        Some(n) if is("fs") && n.eq_ignore_ascii_case("disk") => Some(TresKind::FsDisk),
        Some("") => None,
        Some(_) => [("gres", TresKind::Gres), ("license", TresKind::License), ("bb", TresKind::Bb)]
            .into_iter()
            .find_map(|(w, k)| is(w).then_some(k)),
    }
}

/// The index of a unit letter in Slurm's `"\0KMGTP"` (`get_unit_type()`), case-insensitive.
fn unit_index(c: char) -> Option<u32> {
    "KMGTP".find(c.to_ascii_uppercase()).map(|i| i as u32 + 1)
}

/// Parses a TRES count string (`sacct`'s `AllocTRES`, `sprio`'s and `squeue`'s `tres_req`):
/// `type[/name]=count[unit]` items separated by commas.
///
/// A unit letter (K, M, G, T, P; case-insensitive) scales by powers of 1024 from the TRES's base
/// unit: MB for `mem` and `bb` (`mem=64G` is 65536, `mem=512K` is 1), none for the others
/// (`gres/gpu=1K` is 1024). Fractions (`mem=1.5G`) are allowed with a unit and rounded up to whole
/// base units. A TRES given twice keeps its last count. Empty text is an empty vector.
///
/// # Errors
/// An item without `=`, an unknown TRES, or a count that is not a non-negative number with an
/// optional unit.
///
/// # Example
/// ```
/// use fairshare_engine::config::{Tres, tres::parse_tres_counts};
/// let c = parse_tres_counts("cpu=16,Mem=64G,node=1,GRES/gpu=2").unwrap();
/// assert_eq!((c.cpu(), c.get(&Tres::MEM), c.get(&Tres::gres("gpu"))), (16, 65536, 2));
/// ```
pub fn parse_tres_counts(text: &str) -> Result<TresCounts, String> {
    let mut counts = TresCounts::new();
    for item in text.trim().split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = item.split_once('=').ok_or_else(|| format!("TRES count {item:?} is not type=count"))?;
        let tres = Tres::parse(name.trim())?;
        let count = parse_count(tres.kind, value.trim()).map_err(|m| format!("TRES count {item:?}: {m}"))?;
        counts.set(tres, count);
    }
    Ok(counts)
}

/// One count: digits with an optional fraction and unit letter, in the TRES's base unit.
fn parse_count(kind: TresKind, text: &str) -> Result<u64, String> {
    let (number, unit) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            (&text[..i], unit_index(c).ok_or_else(|| format!("unknown unit {c:?} (K, M, G, T or P)"))?)
        }
        _ => (text, kind.base_unit()),
    };
    let well_formed = !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && number.bytes().filter(|&b| b == b'.').count() <= 1
        && number != ".";
    if !well_formed {
        return Err("not a non-negative number with an optional unit".into());
    }
    let shift = 10 * (i64::from(unit) - i64::from(kind.base_unit()));
    // Whole numbers at or above the base unit stay exact integers (shift is at most 50).
    if let (Ok(n), true) = (number.parse::<u64>(), shift >= 0) {
        return n.checked_mul(1 << shift).ok_or_else(too_big);
    }
    if unit == kind.base_unit() && number.contains('.') && kind != TresKind::Mem && kind != TresKind::Bb {
        return Err("a count of this TRES must be a whole number".into());
    }
    let value = (number.parse::<f64>().map_err(|e| e.to_string())? * 2f64.powi(shift as i32)).ceil();
    if value < 18_446_744_073_709_551_616.0 { Ok(value as u64) } else { Err(too_big()) }
}

fn too_big() -> String {
    "count too large".into()
}

/// Parses a TRES weight string (`TRESBillingWeights`, `PriorityWeightTRES`) as
/// `slurm_get_tres_weight_array()` does.
///
/// Items are `type[/name]=value[unit]`, separated by commas. `value` is read by `strtod` (so negative
/// and fractional weights are fine). If a unit letter K/M/G/T/P follows it, the weight is divided by
/// 1024^(unit − base), where the base unit is MB (index 2) for `mem` and `bb` and none (0) for the
/// rest: `Mem=0.25G` is 0.25/1024 per MB, and a unit at or below the base (`mem=1M`, `mem=1K`)
/// leaves the weight unchanged. Only the first character after the number is looked at, as in
/// Slurm. A TRES given twice keeps its last weight.
///
/// # Errors
/// An item without a value, a TRES Slurm does not track, a value `strtod` reports out of range or
/// reads as `inf` or `nan`, or a character after the number that is not a unit letter.
///
/// # Example
/// ```
/// use fairshare_engine::config::{Tres, tres::parse_tres_weights};
/// let w = parse_tres_weights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0").unwrap();
/// assert_eq!(w.get(&Tres::MEM), 0.25 / 1024.0);
/// assert_eq!(w.get(&Tres::gres("gpu")), 2.0);
/// ```
pub fn parse_tres_weights(text: &str) -> Result<TresWeights, String> {
    let mut weights = TresWeights::new();
    // strtok_r(",") skips empty items.
    for item in text.split(',').filter(|s| !s.is_empty()) {
        let invalid = || format!("{item:?} is an invalid TRES weight entry (expected type[/name]=value[unit])");
        let (name, value) = item.split_once('=').ok_or_else(invalid)?;
        if value.is_empty() {
            return Err(invalid());
        }
        let tres = Tres::parse(name).map_err(|m| format!("TRES weight {item:?}: {m}"))?;
        let (mut weight, rest) = strtod(value).map_err(|m| format!("TRES weight {item:?}: {m}"))?;
        if !weight.is_finite() {
            // strtod reads `inf` and `nan`; as a weight they would make every billing and priority
            // infinite or NaN.
            return Err(format!("TRES weight {item:?}: {weight} is not a finite number"));
        }
        if let Some(c) = rest.chars().next() {
            let unit = unit_index(c)
                .ok_or_else(|| format!("TRES weight {item:?}: invalid unit {c:?} (possible units are KMGTP)"))?;
            let divisor = unit_divisor(tres.kind.base_unit(), unit);
            if divisor > 0 {
                weight /= f64::from(divisor);
            }
        }
        weights.set(tres, weight);
    }
    Ok(weights)
}

/// `get_convert_unit_val()`: 1024 per unit step above the base, computed in a C `int` (whose wrap
/// makes `cpu=1T` a no-op and `cpu=1P` a division by 1024, as in Slurm); 0 means "no conversion".
fn unit_divisor(base: u32, unit: u32) -> i32 {
    (base..unit).fold(0i32, |v, _| if v == 0 { 1024 } else { v.wrapping_mul(1024) })
}

/// `strtod()`: the decimal number (or `inf`/`nan`) at the start of `text` after leading white space,
/// and the text after it; `(0, text)` when there is none. Hexadecimal floats are not read.
///
/// # Errors
/// A number `strtod` would flag with `ERANGE` (overflow, or underflow to zero or a subnormal).
fn strtod(text: &str) -> Result<(f64, &str), String> {
    let s = text.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
    let b = s.as_bytes();
    let signed = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let negative = b.first() == Some(&b'-');
    let word = |w: &str| b.len() >= signed + w.len() && b[signed..signed + w.len()].eq_ignore_ascii_case(w.as_bytes());
    for (w, value) in [("infinity", f64::INFINITY), ("inf", f64::INFINITY), ("nan", f64::NAN)] {
        if word(w) {
            return Ok((if negative { -value } else { value }, &s[signed + w.len()..]));
        }
    }
    let digits_from = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int_digits = digits_from(signed);
    let mut end = signed + int_digits;
    let mut frac_digits = 0;
    if b.get(end) == Some(&b'.') {
        frac_digits = digits_from(end + 1);
        end += 1 + frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return Ok((0.0, text));
    }
    let mantissa_end = end;
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(end + 1), Some(b'+' | b'-')));
        let exp_digits = digits_from(end + 1 + sign);
        if exp_digits > 0 {
            end += 1 + sign + exp_digits;
        }
    }
    // Rust's parser rounds correctly, as glibc's strtod does, and takes the same decimal forms.
    let value: f64 = s[..end].parse().map_err(|_| format!("{:?} is not a number", &s[..end]))?;
    let nonzero = s[signed..mantissa_end].bytes().any(|c| (b'1'..=b'9').contains(&c));
    if value.is_infinite() || (nonzero && value.abs() < f64::MIN_POSITIVE) {
        return Err(format!("{:?} is out of range for a double", &s[..end]));
    }
    Ok((value, &s[end..]))
}

/// The billable TRES of a job: `calc_job_billable_tres()` with `assoc_mgr_tres_weighted()`.
///
/// Without weights (a partition with no `TRESBillingWeights`) a job is billed its CPU count.
/// Otherwise each TRES but `billing` contributes `count × weight`:
/// - default (SUM): the sum of all terms;
/// - `MAX_TRES`: the largest of the node terms (cpu, mem, node and every `gres/*`) plus the sum of the
///   others (licenses, burst buffers, energy, ...);
/// - `MAX_TRES_GRES`: the largest of cpu, mem and node, plus the sum of the gres terms, plus the sum
///   of the others.
///
/// The terms are accumulated in TRES order, as Slurm does, so the result is bit-for-bit Slurm's for
/// finite weights.
///
/// # Example
/// ```
/// use fairshare_engine::config::{billable, PriorityFlags, tres::{parse_tres_counts, parse_tres_weights}};
/// let w = parse_tres_weights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0").unwrap();
/// let job = parse_tres_counts("cpu=16,mem=61440M,node=1").unwrap();
/// assert_eq!(billable(&job, Some(&w), PriorityFlags::default()), 31.0);
/// assert_eq!(billable(&job, None, PriorityFlags::default()), 16.0);
/// ```
pub fn billable(counts: &TresCounts, weights: Option<&TresWeights>, flags: PriorityFlags) -> f64 {
    let Some(weights) = weights else {
        return counts.cpu() as f64;
    };
    let max_mode = flags.max_tres || flags.max_tres_gres;
    let (mut node, mut gres, mut global) = (0.0f64, 0.0f64, 0.0f64);
    // A TRES with no weight adds count × 0 = 0 to whichever term it would join, so walking the
    // weights alone gives the same sums as Slurm's walk over every TRES.
    for (tres, weight) in weights.iter() {
        if tres.kind == TresKind::Billing {
            continue;
        }
        let value = counts.get(tres) as f64 * weight;
        let is_gres = tres.kind == TresKind::Gres;
        if max_mode && (is_gres || matches!(tres.kind, TresKind::Cpu | TresKind::Mem | TresKind::Node)) {
            if flags.max_tres_gres && is_gres {
                gres += value;
            } else {
                // C's MAX(a, b): `a > b ? a : b`.
                node = if node > value { node } else { value };
            }
        } else {
            global += value;
        }
    }
    if flags.max_tres_gres {
        node += gres;
    }
    node + global
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(text: &str) -> PriorityFlags {
        PriorityFlags::parse(text).unwrap()
    }

    /// Spec §11.7: `TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu=2.0,License/lic=5`.
    #[test]
    fn billing_vectors_of_spec_11_7() {
        let w = parse_tres_weights("CPU=1.0,Mem=0.25G,GRES/gpu=2.0,License/lic=5").unwrap();
        assert_eq!(w.get(&Tres::CPU), 1.0);
        assert_eq!(w.get(&Tres::MEM), 0.000244140625);
        assert_eq!(w.get(&Tres::NODE), 0.0);
        assert_eq!(w.get(&Tres::gres("gpu")), 2.0);
        assert_eq!(w.get(&Tres::license("lic")), 5.0);
        // [cpu, mem MB, node, gpu, lic] -> [SUM, MAX_TRES, MAX_TRES_GRES]
        let rows: [([u64; 5], [f64; 3]); 7] = [
            ([1, 61440, 1, 0, 0], [16.0, 15.0, 15.0]),
            ([16, 1024, 1, 0, 0], [16.25, 16.0, 16.0]),
            ([16, 61440, 1, 0, 0], [31.0, 16.0, 16.0]),
            ([16, 65536, 1, 0, 0], [32.0, 16.0, 16.0]),
            ([4, 8192, 1, 4, 0], [14.0, 8.0, 12.0]),
            ([4, 8192, 1, 4, 2], [24.0, 18.0, 22.0]),
            ([32, 8192, 2, 1, 1], [41.0, 37.0, 39.0]),
        ];
        for ([cpu, mem, node, gpu, lic], [sum, max, max_gres]) in rows {
            let job = parse_tres_counts(&format!("cpu={cpu},mem={mem}M,node={node},gres/gpu={gpu},license/lic={lic}"))
                .unwrap();
            assert_eq!(billable(&job, Some(&w), flags("")), sum, "SUM {job}");
            assert_eq!(billable(&job, Some(&w), flags("MAX_TRES")), max, "MAX_TRES {job}");
            assert_eq!(billable(&job, Some(&w), flags("MAX_TRES_GRES")), max_gres, "MAX_TRES_GRES {job}");
            assert_eq!(billable(&job, Some(&w), flags("MAX_TRES,MAX_TRES_GRES")), max_gres);
        }
        let job = parse_tres_counts("cpu=16").unwrap();
        assert_eq!(billable(&job, None, flags("")), 16.0); // billing_noweights
    }

    #[test]
    fn billing_skips_the_billing_tres_and_sums_the_rest() {
        let w = parse_tres_weights("cpu=2,billing=100,bb/cray=0.5,energy=0.001").unwrap();
        let job = parse_tres_counts("cpu=3,billing=7,bb/cray=4,energy=1000").unwrap();
        assert_eq!(billable(&job, Some(&w), flags("")), 6.0 + 2.0 + 1.0);
        assert_eq!(billable(&job, Some(&w), flags("MAX_TRES")), 6.0 + 2.0 + 1.0);
        // Weights on TRES the job does not have add nothing; negative weights are allowed.
        let neg = parse_tres_weights("cpu=-1,gres/gpu=3").unwrap();
        assert_eq!(billable(&parse_tres_counts("cpu=4").unwrap(), Some(&neg), flags("")), -4.0);
        assert_eq!(billable(&parse_tres_counts("cpu=4").unwrap(), Some(&neg), flags("MAX_TRES")), 0.0);
    }

    #[test]
    fn weight_units_follow_the_base_unit() {
        let w = |s: &str| parse_tres_weights(s).unwrap();
        assert_eq!(w("Mem=0.25G").get(&Tres::MEM), 0.25 / 1024.0);
        assert_eq!(w("mem=1M").get(&Tres::MEM), 1.0);
        assert_eq!(w("mem=1K").get(&Tres::MEM), 1.0);
        assert_eq!(w("mem=2T").get(&Tres::MEM), 2.0 / 1048576.0);
        assert_eq!(w("mem=1P").get(&Tres::MEM), 1.0 / 1073741824.0);
        assert_eq!(w("mem=0.25GB").get(&Tres::MEM), 0.25 / 1024.0); // only the first letter counts
        assert_eq!(w("bb/cray=1g").get(&Tres::parse("bb/cray").unwrap()), 1.0 / 1024.0);
        assert_eq!(w("cpu=1K").get(&Tres::CPU), 1.0 / 1024.0);
        assert_eq!(w("cpu=1M").get(&Tres::CPU), 1.0 / 1048576.0);
        assert_eq!(w("cpu=1T").get(&Tres::CPU), 1.0); // Slurm's int overflow: no conversion
        assert_eq!(w("cpu=1P").get(&Tres::CPU), 1.0 / 1024.0);
        assert_eq!(w("CPU=-0.5,cpu=2e1").get(&Tres::CPU), 20.0); // last wins, strtod exponents
        assert_eq!(w("cpu=.5,,node=5.").get(&Tres::NODE), 5.0);
        assert_eq!(w("cpu=1.5").get(&Tres::CPU), 1.5);
        assert_eq!(w("fs/disk=2").get(&Tres::FS_DISK), 2.0);
    }

    #[test]
    fn bad_weights_are_errors() {
        for bad in ["cpu", "cpu=", "gpu=1", "gres=1", "cpu/x=1", "cpu=1x", "cpu=abc", "cpu=1 ", " cpu=1", "cpu=1e999"] {
            assert!(parse_tres_weights(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_tres_weights("").unwrap().is_empty());
    }

    #[test]
    fn counts_convert_memory_to_mb() {
        let c = parse_tres_counts("cpu=16,mem=64G,node=1,gres/gpu=2,billing=16").unwrap();
        assert_eq!(c.get(&Tres::MEM), 65536);
        assert_eq!(c.get(&Tres::BILLING), 16);
        let m = |s: &str| parse_tres_counts(s).unwrap().get(&Tres::MEM);
        assert_eq!(m("mem=1500"), 1500);
        assert_eq!(m("mem=1500M"), 1500);
        assert_eq!(m("Mem=1.5G"), 1536);
        assert_eq!(m("mem=2T"), 2 * 1048576);
        assert_eq!(m("mem=512K"), 1);
        assert_eq!(m("mem=15.62G"), 15995);
        assert_eq!(parse_tres_counts("GRES/GPU=1k").unwrap().get(&Tres::gres("gpu")), 1024);
        assert_eq!(parse_tres_counts("license/Matlab=3").unwrap().get(&Tres::license("matlab")), 3);
        assert_eq!(parse_tres_counts("gres/gpu:a100=4").unwrap().get(&Tres::gres("gpu:a100")), 4);
        assert!(parse_tres_counts("  ").unwrap().is_empty());
    }

    #[test]
    fn bad_counts_are_errors() {
        for bad in
            ["cpu", "cpu=", "cpu=-1", "cpu=1.5", "cpu=x", "mem=1Z", "gpu=1", "mem=1..5G", "cpu=99999999999999999999"]
        {
            assert!(parse_tres_counts(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_tres_counts("cpu=1P").is_ok());
        assert!(parse_tres_counts("cpu=100000P").is_err());
    }

    #[test]
    fn tres_names_and_order() {
        assert_eq!(Tres::parse("FS/Disk").unwrap().to_string(), "fs/disk");
        assert_eq!(Tres::parse("GRES/gpu:A100").unwrap().to_string(), "gres/gpu:a100");
        assert!(Tres::parse("fs/lustre").is_err());
        assert!(Tres::parse("license/").is_err());
        let c: TresCounts = [(Tres::license("a"), 1), (Tres::gres("gpu"), 2), (Tres::NODE, 1), (Tres::CPU, 4)]
            .into_iter()
            .chain([(Tres::CPU, 4)])
            .collect();
        assert_eq!(c.to_string(), "cpu=8,node=1,gres/gpu=2,license/a=1");
    }
}
