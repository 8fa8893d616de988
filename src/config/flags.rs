//! `PriorityFlags`, parsed as `src/common/read_config.c` parses it.

/// The `PriorityFlags` bits that change a computation.
///
/// Slurm matches each flag as a case-insensitive *substring* of the whole value, so unknown words
/// are ignored and separators do not matter. The default (no `PriorityFlags` line) is Fair Tree.
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
    /// Parses a `PriorityFlags` value. It cannot fail: like Slurm, words that name no flag are ignored.
    ///
    /// # Example
    /// ```
    /// use fairshare::config::PriorityFlags;
    /// let f = PriorityFlags::parse("max_tres_gres,DEPTH_OBLIVIOUS");
    /// assert!(f.max_tres_gres && !f.max_tres && f.depth_oblivious && !f.fair_tree);
    /// ```
    pub fn parse(text: &str) -> Self {
        let upper = text.to_ascii_uppercase();
        let has = |flag: &str| upper.contains(flag);
        let no_normal_all = has("NO_NORMAL_ALL");
        // "MAX_TRES" is a substring of "MAX_TRES_GRES": the longer flag is tested first and wins.
        let max_tres_gres = has("MAX_TRES_GRES");
        let depth_oblivious = has("DEPTH_OBLIVIOUS");
        PriorityFlags {
            accrue_always: has("ACCRUE_ALWAYS"),
            small_relative_to_time: has("SMALL_RELATIVE_TO_TIME"),
            calculate_running: has("CALCULATE_RUNNING"),
            depth_oblivious,
            fair_tree: !depth_oblivious && !has("NO_FAIR_TREE"),
            incr_only: has("INCR_ONLY"),
            max_tres: !max_tres_gres && has("MAX_TRES"),
            max_tres_gres,
            no_normal_assoc: no_normal_all || has("NO_NORMAL_ASSOC"),
            no_normal_part: no_normal_all || has("NO_NORMAL_PART"),
            no_normal_qos: no_normal_all || has("NO_NORMAL_QOS"),
            no_normal_tres: no_normal_all || has("NO_NORMAL_TRES"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_fair_tree_only() {
        let d = PriorityFlags::default();
        assert!(d.fair_tree);
        assert_eq!(PriorityFlags::parse(""), d);
        assert_eq!(PriorityFlags::parse("SOMETHING_ELSE"), d);
    }

    #[test]
    fn fair_tree_is_cleared_by_either_flag() {
        assert!(!PriorityFlags::parse("NO_FAIR_TREE").fair_tree);
        let d = PriorityFlags::parse("depth_oblivious");
        assert!(d.depth_oblivious && !d.fair_tree);
        assert!(PriorityFlags::parse("FAIR_TREE").fair_tree);
    }

    #[test]
    fn max_tres_gres_wins_over_max_tres() {
        let both = PriorityFlags::parse("MAX_TRES,MAX_TRES_GRES");
        assert!(both.max_tres_gres && !both.max_tres);
        let one = PriorityFlags::parse("Max_TRES");
        assert!(one.max_tres && !one.max_tres_gres);
    }

    #[test]
    fn substrings_and_no_normal_all() {
        let f = PriorityFlags::parse("NO_NORMAL_ALL ACCRUE_ALWAYS;small_relative_to_time,CALCULATE_RUNNING,INCR_ONLY");
        assert!(f.no_normal_assoc && f.no_normal_part && f.no_normal_qos && f.no_normal_tres);
        assert!(f.accrue_always && f.small_relative_to_time && f.calculate_running && f.incr_only);
        let q = PriorityFlags::parse("NO_NORMAL_QOS");
        assert!(q.no_normal_qos && !q.no_normal_part && !q.no_normal_assoc && !q.no_normal_tres);
    }
}
