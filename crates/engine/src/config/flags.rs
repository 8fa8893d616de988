//! `PriorityFlags`: the flags `src/common/read_config.c` knows, read as a list of words.
//!
//! slurmctld looks for each flag as a case-insensitive substring of the whole value, so a typo
//! (`NO_FAIR_TRE`) is ignored without a word and the file silently selects another algorithm.
//! Here a word that names no flag is an error instead: a file means what its writer meant or is
//! refused.

/// Every flag accepted: those slurm.conf(5) documents, and `FAIR_TREE`, which selected Fair Tree
/// before Slurm 19.05 made it the default (old files still carry it).
pub const KNOWN: [&str; 14] = [
    "ACCRUE_ALWAYS",
    "CALCULATE_RUNNING",
    "DEPTH_OBLIVIOUS",
    "FAIR_TREE",
    "INCR_ONLY",
    "MAX_TRES",
    "MAX_TRES_GRES",
    "NO_FAIR_TREE",
    "NO_NORMAL_ALL",
    "NO_NORMAL_ASSOC",
    "NO_NORMAL_PART",
    "NO_NORMAL_QOS",
    "NO_NORMAL_TRES",
    "SMALL_RELATIVE_TO_TIME",
];

/// slurm.conf's `PriorityFlags`, one field per flag the engine honours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriorityFlags {
    /// `ACCRUE_ALWAYS`: age accrues from submit time whatever the job's eligibility.
    pub accrue_always: bool,
    /// `SMALL_RELATIVE_TO_TIME`: the job-size factor is divided by the time limit.
    pub small_relative_to_time: bool,
    /// `CALCULATE_RUNNING`: running and suspended jobs are re-prioritized too.
    pub calculate_running: bool,
    /// `DEPTH_OBLIVIOUS`: the classic depth-oblivious effective usage.
    pub depth_oblivious: bool,
    /// Fair Tree; set by default, cleared by `NO_FAIR_TREE` or `DEPTH_OBLIVIOUS`.
    pub fair_tree: bool,
    /// `INCR_ONLY`: a recomputed priority only replaces a smaller one.
    pub incr_only: bool,
    /// `MAX_TRES`: billing is the maximum of the node TRES plus the sum of the others.
    pub max_tres: bool,
    /// `MAX_TRES_GRES`: like `MAX_TRES`, with the GRES terms summed instead of maxed.
    pub max_tres_gres: bool,
    /// `NO_NORMAL_ASSOC` (or `NO_NORMAL_ALL`).
    pub no_normal_assoc: bool,
    /// `NO_NORMAL_PART` (or `NO_NORMAL_ALL`).
    pub no_normal_part: bool,
    /// `NO_NORMAL_QOS` (or `NO_NORMAL_ALL`).
    pub no_normal_qos: bool,
    /// `NO_NORMAL_TRES` (or `NO_NORMAL_ALL`).
    pub no_normal_tres: bool,
}

impl Default for PriorityFlags {
    /// No `PriorityFlags` line: only Fair Tree.
    fn default() -> Self {
        PriorityFlags {
            accrue_always: false,
            small_relative_to_time: false,
            calculate_running: false,
            depth_oblivious: false,
            fair_tree: true,
            incr_only: false,
            max_tres: false,
            max_tres_gres: false,
            no_normal_assoc: false,
            no_normal_part: false,
            no_normal_qos: false,
            no_normal_tres: false,
        }
    }
}

impl PriorityFlags {
    /// Parses a `PriorityFlags` value: flags separated by commas or white space, in any case, with
    /// Slurm's precedence (`DEPTH_OBLIVIOUS` implies `NO_FAIR_TREE`, `MAX_TRES_GRES` wins over
    /// `MAX_TRES`, `NO_NORMAL_ALL` sets every `NO_NORMAL_*`).
    ///
    /// # Errors
    /// A word that is not one of [`KNOWN`], named with the list of known flags.
    ///
    /// # Example
    /// ```
    /// use fairshare_engine::config::PriorityFlags;
    /// let f = PriorityFlags::parse("max_tres_gres,DEPTH_OBLIVIOUS")?;
    /// assert!(f.max_tres_gres && !f.max_tres && f.depth_oblivious && !f.fair_tree);
    /// assert!(PriorityFlags::parse("NO_FAIR_TRE").is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut f = PriorityFlags::default();
        let (mut max_tres, mut no_fair_tree) = (false, false);
        let mut unknown = Vec::new();
        for word in text.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| !w.is_empty()) {
            match word.to_ascii_uppercase().as_str() {
                "ACCRUE_ALWAYS" => f.accrue_always = true,
                "CALCULATE_RUNNING" => f.calculate_running = true,
                "DEPTH_OBLIVIOUS" => f.depth_oblivious = true,
                // Fair Tree is already the default.
                "FAIR_TREE" => {}
                "INCR_ONLY" => f.incr_only = true,
                "MAX_TRES" => max_tres = true,
                "MAX_TRES_GRES" => f.max_tres_gres = true,
                "NO_FAIR_TREE" => no_fair_tree = true,
                "NO_NORMAL_ALL" => {
                    (f.no_normal_assoc, f.no_normal_part, f.no_normal_qos, f.no_normal_tres) = (true, true, true, true);
                }
                "NO_NORMAL_ASSOC" => f.no_normal_assoc = true,
                "NO_NORMAL_PART" => f.no_normal_part = true,
                "NO_NORMAL_QOS" => f.no_normal_qos = true,
                "NO_NORMAL_TRES" => f.no_normal_tres = true,
                "SMALL_RELATIVE_TO_TIME" => f.small_relative_to_time = true,
                _ => unknown.push(format!("{word:?}")),
            }
        }
        if !unknown.is_empty() {
            let s = if unknown.len() > 1 { "s" } else { "" };
            return Err(format!("unknown flag{s} {} (the flags are {})", unknown.join(", "), KNOWN.join(", ")));
        }
        f.max_tres = max_tres && !f.max_tres_gres;
        f.fair_tree = !f.depth_oblivious && !no_fair_tree;
        Ok(f)
    }

    /// The flags set that change what slurmctld computes but that this engine does not reproduce,
    /// for a warning: `INCR_ONLY` (a job's priority never decreases) needs the priorities
    /// slurmctld computed before.
    pub fn unmodelled(&self) -> Vec<&'static str> {
        [("INCR_ONLY", self.incr_only)].into_iter().filter(|&(_, set)| set).map(|(name, _)| name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> PriorityFlags {
        PriorityFlags::parse(text).unwrap()
    }

    #[test]
    fn default_is_fair_tree_only() {
        let d = PriorityFlags::default();
        assert!(d.fair_tree);
        assert_eq!(parse(""), d);
        assert_eq!(parse(" , "), d);
        assert_eq!(parse("FAIR_TREE"), d);
    }

    #[test]
    fn every_known_flag_parses() {
        for flag in KNOWN {
            assert!(PriorityFlags::parse(flag).is_ok(), "{flag}");
        }
    }

    #[test]
    fn unknown_words_are_errors_naming_them() {
        let e = PriorityFlags::parse("NO_FAIR_TRE").unwrap_err();
        assert!(e.starts_with("unknown flag \"NO_FAIR_TRE\" (the flags are ACCRUE_ALWAYS, "), "{e}");
        assert!(e.ends_with("SMALL_RELATIVE_TO_TIME)"), "{e}");
        // A known flag inside a longer word is no longer taken for that flag.
        let e = PriorityFlags::parse("MAX_TRES,XNO_FAIR_TREE;INCR_ONLY fair").unwrap_err();
        assert!(e.starts_with("unknown flags \"XNO_FAIR_TREE;INCR_ONLY\", \"fair\" (the flags"), "{e}");
        assert!(PriorityFlags::parse("SOMETHING_ELSE").is_err());
    }

    #[test]
    fn fair_tree_is_cleared_by_either_flag() {
        assert!(!parse("NO_FAIR_TREE").fair_tree);
        let d = parse("depth_oblivious");
        assert!(d.depth_oblivious && !d.fair_tree);
    }

    #[test]
    fn max_tres_gres_wins_over_max_tres() {
        let both = parse("MAX_TRES,MAX_TRES_GRES");
        assert!(both.max_tres_gres && !both.max_tres);
        let one = parse("Max_TRES");
        assert!(one.max_tres && !one.max_tres_gres);
    }

    #[test]
    fn separators_and_no_normal_all() {
        let f = parse("NO_NORMAL_ALL ACCRUE_ALWAYS,small_relative_to_time,\tCALCULATE_RUNNING,INCR_ONLY");
        assert!(f.no_normal_assoc && f.no_normal_part && f.no_normal_qos && f.no_normal_tres);
        assert!(f.accrue_always && f.small_relative_to_time && f.calculate_running && f.incr_only);
        let q = parse("NO_NORMAL_QOS");
        assert!(q.no_normal_qos && !q.no_normal_part && !q.no_normal_assoc && !q.no_normal_tres);
    }

    #[test]
    fn incr_only_is_reported_as_unmodelled() {
        assert_eq!(parse("INCR_ONLY,MAX_TRES").unmodelled(), ["INCR_ONLY"]);
        assert!(parse("CALCULATE_RUNNING").unmodelled().is_empty());
    }
}
