//! QOS from a `sacctmgr show qos -P` (or `-p`) dump.
//!
//! The header line names the columns; `Name` is required, `Priority` (default 0), `UsageFactor`
//! (default 1.0) and `Flags` (a comma list; `NoDecay` matters here) are read when present, and other
//! columns are ignored. An empty field takes the default. The normalized priority is Slurm's
//! `_set_qos_norm_priority()`: priority over the largest priority of any QOS, 0 when that is 0.

use std::collections::HashMap;
use std::path::Path;

use super::read_text;
use fairshare_base::error::{Error, Result};

/// One QOS.
#[derive(Clone, Debug, PartialEq)]
pub struct Qos {
    /// `Name`.
    pub name: String,
    /// `Priority`.
    pub priority: u32,
    /// `UsageFactor`: scales the usage a job of this QOS is charged (below 0: ignored by Slurm).
    pub usage_factor: f64,
    /// `Flags`, as written.
    pub flags: Vec<String>,
    /// The `NoDecay` flag: usage of this QOS is not decayed.
    pub no_decay: bool,
    /// `priority` over the largest QOS priority (0 when every priority is 0).
    pub norm_priority: f64,
}

/// The QOS of a site, looked up by name (case-insensitively, as Slurm's QOS names are).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QosTable {
    qos: Vec<Qos>,
    by_name: HashMap<String, usize>,
}

impl QosTable {
    /// The QOS named `name`.
    pub fn get(&self, name: &str) -> Option<&Qos> {
        self.by_name.get(&name.to_ascii_lowercase()).map(|&i| &self.qos[i])
    }

    /// Every QOS, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &Qos> {
        self.qos.iter()
    }

    /// The number of QOS.
    pub fn len(&self) -> usize {
        self.qos.len()
    }

    /// Whether there is no QOS.
    pub fn is_empty(&self) -> bool {
        self.qos.is_empty()
    }

    /// The largest priority (Slurm's `g_qos_max_priority`).
    pub fn max_priority(&self) -> u32 {
        self.qos.iter().map(|q| q.priority).max().unwrap_or(0)
    }
}

/// Reads a `sacctmgr show qos -P` dump.
///
/// # Errors
/// A file that cannot be read, or any problem [`parse`] reports.
pub fn read(path: &Path) -> Result<QosTable> {
    parse(path, &read_text(path)?)
}

/// Parses a `sacctmgr show qos -P` dump (`path` names it in errors).
///
/// # Errors
/// No header, no `Name` column, a row with fewer fields than the columns read, an empty or repeated
/// name, a priority that is not a 32-bit unsigned integer, or a usage factor that is not a number;
/// each with its line.
///
/// # Example
/// ```
/// use std::path::Path;
/// let text = "Name|Priority|UsageFactor|Flags\nnormal|0|1.000000|\nhigh|100|2.000000|DenyOnLimit,NoDecay\n";
/// let qos = fairshare_engine::config::qos::parse(Path::new("qos.txt"), text)?;
/// let high = qos.get("High").unwrap();
/// assert_eq!((high.priority, high.usage_factor, high.no_decay, high.norm_priority), (100, 2.0, true, 1.0));
/// assert_eq!(qos.get("normal").unwrap().norm_priority, 0.0);
/// # Ok::<(), fairshare_base::Error>(())
/// ```
pub fn parse(path: &Path, text: &str) -> Result<QosTable> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i as u64 + 1, l)).filter(|(_, l)| !l.trim().is_empty());
    let Some((header_line, header)) = lines.next() else {
        return Err(Error::input(path, None, "empty file: expected a `sacctmgr show qos -P` dump with its header"));
    };
    let columns: Vec<String> = header.split('|').map(|c| c.trim().to_ascii_lowercase()).collect();
    let column = |name: &str| columns.iter().position(|c| c == name);
    let name_col = column("name").ok_or_else(|| {
        Error::input(path, header_line, "no Name column: expected the header of `sacctmgr show qos -P`")
    })?;
    let (priority_col, factor_col, flags_col) = (column("priority"), column("usagefactor"), column("flags"));
    let width = [Some(name_col), priority_col, factor_col, flags_col].into_iter().flatten().max().unwrap_or(0) + 1;

    let mut table = QosTable::default();
    for (line, row) in lines {
        let err = |m: String| Error::input(path, line, m);
        let fields: Vec<&str> = row.split('|').map(str::trim).collect();
        if fields.len() < width {
            return Err(err(format!("expected at least {width} fields, found {}", fields.len())));
        }
        let field = |col: Option<usize>| col.map_or("", |c| fields[c]);
        let name = fields[name_col];
        if name.is_empty() {
            return Err(err("empty QOS name".into()));
        }
        let priority = match field(priority_col) {
            "" => 0,
            p => p.parse::<u32>().map_err(|_| err(format!("Priority {p:?} is not an unsigned 32-bit integer")))?,
        };
        let usage_factor = match field(factor_col) {
            "" => 1.0,
            f => f
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| err(format!("UsageFactor {f:?} is not a finite number")))?,
        };
        let flags: Vec<String> =
            field(flags_col).split(',').map(str::trim).filter(|f| !f.is_empty()).map(str::to_string).collect();
        let no_decay = flags.iter().any(|f| f.eq_ignore_ascii_case("NoDecay"));
        if table.by_name.insert(name.to_ascii_lowercase(), table.qos.len()).is_some() {
            return Err(err(format!("QOS {name:?} is listed twice")));
        }
        table.qos.push(Qos { name: name.to_string(), priority, usage_factor, flags, no_decay, norm_priority: 0.0 });
    }
    let max = table.max_priority();
    if max > 0 {
        for q in &mut table.qos {
            q.norm_priority = f64::from(q.priority) / f64::from(max);
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qos(text: &str) -> Result<QosTable> {
        parse(Path::new("qos.txt"), text)
    }

    #[test]
    fn a_real_dump_with_extra_columns_and_trailing_bars() {
        let text = "Name|Priority|GraceTime|Preempt|PreemptExemptTime|PreemptMode|Flags|UsageThres|UsageFactor|GrpTRES|\n\
                    normal|10|00:00:00|||cluster|||1.000000||\n\
                    requeue|0|00:00:00|||requeue|NoDecay,DenyOnLimit||0.500000||\n\
                    \n\
                    urgent|40|00:00:00|normal||cluster|||||\n";
        let t = qos(text).unwrap();
        assert_eq!((t.len(), t.max_priority()), (3, 40));
        let r = t.get("REQUEUE").unwrap();
        assert_eq!((r.priority, r.usage_factor, r.no_decay, r.norm_priority), (0, 0.5, true, 0.0));
        assert_eq!(r.flags, ["NoDecay", "DenyOnLimit"]);
        assert_eq!(t.get("normal").unwrap().norm_priority, 0.25);
        let u = t.get("urgent").unwrap();
        assert_eq!((u.usage_factor, u.norm_priority, u.no_decay), (1.0, 1.0, false));
        assert_eq!(t.iter().map(|q| q.name.as_str()).collect::<Vec<_>>(), ["normal", "requeue", "urgent"]);
        assert!(t.get("missing").is_none());
    }

    #[test]
    fn only_a_name_column_is_required() {
        let t = qos("Name\nnormal\n").unwrap();
        let n = t.get("normal").unwrap();
        assert_eq!((n.priority, n.usage_factor, n.norm_priority), (0, 1.0, 0.0));
    }

    #[test]
    fn errors_name_the_line() {
        let e = |text: &str| qos(text).unwrap_err().to_string();
        assert_eq!(e(""), "qos.txt: empty file: expected a `sacctmgr show qos -P` dump with its header");
        assert!(e("Priority|Flags\n").starts_with("qos.txt:1: no Name column"));
        assert!(e("Name|Priority\na|1\nb|x\n").starts_with("qos.txt:3: Priority \"x\""));
        assert!(e("Name|Priority\na|-1\n").starts_with("qos.txt:2:"));
        assert!(e("Name|UsageFactor\na|fast\n").starts_with("qos.txt:2: UsageFactor"));
        assert!(e("Name|Priority\na\n").starts_with("qos.txt:2: expected at least 2 fields"));
        assert!(e("Name|Priority\na|1\nA|2\n").starts_with("qos.txt:3: QOS \"A\" is listed twice"));
        assert!(e("Name|Priority\n|1\n").starts_with("qos.txt:2: empty QOS name"));
    }
}
