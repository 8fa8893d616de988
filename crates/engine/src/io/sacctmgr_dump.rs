//! `sacctmgr-dump`: the hierarchy file of `sacctmgr dump CLUSTER file=...` (what `sacctmgr load` reads).
//!
//! Each line is `Kind - 'name'` followed by `:Key=Value` options:
//! - `Cluster - 'c'`: its options belong to the root account (`root` is implicit);
//! - `Parent - 'a'`: the account the following `Account` and `User` lines go under (root until the
//!   first `Parent` line); `a` must be root or declared earlier by an `Account` line;
//! - `Account - 'a'`: an account under the current parent;
//! - `User - 'u'`: the association (u, current parent), per partition with `Partition='p'`.
//!
//! Options are split on `:` outside quotes (`'` or `"`), keys are case-insensitive. Only
//! `Fairshare=` (or `Shares=`; a count or `parent`, default 1 as in Slurm), `Priority=` and, on
//! users, `Partition=` matter; limits, QOS, descriptions and the like are accepted and ignored.
//! `#` outside quotes starts a comment. Dumps carry no usage, so every usage is 0. Ids follow the
//! line order (root is 1).

use std::collections::HashMap;
use std::path::Path;

use crate::tree::{AssocRecord, Shares, TreeInput};
use fairshare_base::error::{Error, Result};
use fairshare_base::read::source::read_to_string;

/// Largest share count or priority: Slurm keeps both in 32 bits and reserves `u32::MAX` as its
/// "clear this value" flag.
const MAX_VALUE: u64 = u32::MAX as u64 - 1;

/// Name of the implicit root account.
const ROOT: &str = "root";

/// Reads a `sacctmgr dump` file.
///
/// # Errors
/// The file cannot be read or is not UTF-8, or as [`parse`].
pub fn read(path: &Path) -> Result<TreeInput> {
    parse(path, &read_to_string(path)?)
}

/// Parses `sacctmgr dump` text (`path` names it in errors).
///
/// # Errors
/// With its line: an unknown line kind, a line without a name, an unterminated quote, an option
/// that is not `Key=Value`, a misplaced or second `Cluster` line, a `Parent` naming an account not
/// declared before, an account declared twice, the same (user, account, partition) twice, or a
/// `Fairshare`/`Priority` value that is not a whole number in 0..=4294967294 (or `parent` for
/// `Fairshare`). A file with no Cluster, Parent, Account or User line at all.
pub fn parse(path: &Path, text: &str) -> Result<TreeInput> {
    // Root first, so a Cluster line can still set its options; its line is the first real line.
    let mut records = vec![AssocRecord::account(1, None, ROOT, Shares::Value(1), 1)];
    // Account name -> record index; root is declared implicitly.
    let mut accounts: HashMap<String, usize> = HashMap::from([(ROOT.to_string(), 0)]);
    // (user, account, partition) -> line, to report the first of a duplicate.
    let mut users: HashMap<(String, String, Option<String>), u64> = HashMap::new();
    let mut parent = 0usize;
    let mut cluster_line: Option<u64> = None;
    let mut seen_any = false;

    for (i, raw) in text.lines().enumerate() {
        let line_no = i as u64 + 1;
        let err = |m: String| Error::input(path, line_no, m);
        let raw = if i == 0 { raw.trim_start_matches('\u{feff}') } else { raw };
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        let entry = parse_line(line).map_err(err)?;
        let is_first = !seen_any;
        if is_first {
            records[0].line = line_no;
            seen_any = true;
        }
        match entry.kind {
            Kind::Cluster => {
                if let Some(first) = cluster_line {
                    return Err(err(format!("a second Cluster line (the first is on line {first})")));
                }
                if !is_first {
                    return Err(err("the Cluster line must come before every Parent, Account and User line".into()));
                }
                cluster_line = Some(line_no);
                let opts = entry.options().map_err(err)?;
                if opts.shares == Some(Shares::Parent) {
                    return Err(err("Fairshare=parent on the Cluster line: the root has no parent".into()));
                }
                let root = &mut records[0];
                root.shares = opts.shares.unwrap_or(root.shares);
                root.priority = opts.priority;
                root.grp_tres_mins = opts.grp_tres_mins;
            }
            Kind::Parent => {
                parent = *accounts.get(&entry.name).ok_or_else(|| {
                    err(format!(
                        "Parent - '{}' names an account not declared before: add `Account - '{}'` under its \
                         parent earlier in the file",
                        entry.name, entry.name
                    ))
                })?;
            }
            Kind::Account => {
                if let Some(&first) = accounts.get(&entry.name) {
                    let why = if first == 0 {
                        "account 'root' is the implicit root and cannot be declared".to_string()
                    } else {
                        format!("account '{}' declared twice (first on line {})", entry.name, records[first].line)
                    };
                    return Err(err(why));
                }
                let opts = entry.options().map_err(err)?;
                accounts.insert(entry.name.clone(), records.len());
                let parent_id = records[parent].id;
                let shares = opts.shares.unwrap_or(Shares::Value(1));
                let id = records.len() as u64 + 1;
                records.push(AssocRecord {
                    priority: opts.priority,
                    grp_tres_mins: opts.grp_tres_mins,
                    ..AssocRecord::account(id, Some(parent_id), entry.name, shares, line_no)
                });
            }
            Kind::User => {
                let opts = entry.options().map_err(err)?;
                let account = records[parent].account.clone();
                let key = (entry.name.clone(), account.clone(), opts.partition.clone());
                if let Some(first) = users.insert(key, line_no) {
                    let part = opts.partition.as_deref().map(|p| format!(" partition '{p}'")).unwrap_or_default();
                    return Err(err(format!(
                        "user '{}' in account '{account}'{part} declared twice (first on line {first})",
                        entry.name
                    )));
                }
                let parent_id = records[parent].id;
                records.push(AssocRecord {
                    id: records.len() as u64 + 1,
                    parent_id: Some(parent_id),
                    account,
                    user: Some(entry.name),
                    partition: opts.partition,
                    shares: opts.shares.unwrap_or(Shares::Value(1)),
                    usage: 0.0,
                    priority: opts.priority,
                    grp_tres_mins: opts.grp_tres_mins,
                    line: line_no,
                });
            }
        }
    }
    if !seen_any {
        return Err(Error::input(
            path,
            None,
            "no Cluster, Parent, Account or User line: expected a `sacctmgr dump` file",
        ));
    }
    Ok(TreeInput::slurm(path, records))
}

/// The kind of a dump line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Cluster,
    Parent,
    Account,
    User,
}

/// One non-comment line: its kind, unquoted name and raw (unquoted) option fields.
#[derive(Debug)]
struct Entry {
    kind: Kind,
    name: String,
    fields: Vec<String>,
}

/// The options that matter to fair share.
#[derive(Debug, Default)]
struct Options {
    shares: Option<Shares>,
    priority: Option<u32>,
    partition: Option<String>,
    /// `GrpTRESMins` (or an older dump's `GrpCPUMins`, as `cpu=`).
    grp_tres_mins: Option<String>,
}

impl Entry {
    /// Picks the fair-share options out of the fields; the last of a repeated key wins, as when
    /// `sacctmgr` applies them in order.
    fn options(&self) -> Result<Options, String> {
        let mut o = Options::default();
        for field in &self.fields {
            let field = field.trim();
            if field.is_empty() {
                continue; // `::` or a trailing `:`
            }
            let Some((key, value)) = field.split_once('=') else {
                return Err(format!("option {field:?} is not Key=Value"));
            };
            let key = key.trim();
            let value = value.trim();
            match key.to_ascii_lowercase().as_str() {
                "fairshare" | "shares" => {
                    o.shares = Some(if value.eq_ignore_ascii_case("parent") {
                        Shares::Parent
                    } else {
                        Shares::Value(parse_count(key, value, " or parent")?)
                    });
                }
                "priority" => o.priority = Some(parse_count(key, value, "")? as u32),
                "grptresmins" => o.grp_tres_mins = Some(value.to_string()).filter(|v| !v.is_empty()),
                "grpcpumins" => o.grp_tres_mins = Some(format!("cpu={value}")).filter(|_| !value.is_empty()),
                // Accounts have no partition; only user associations are per partition.
                "partition" if self.kind == Kind::User => {
                    o.partition = Some(value.to_string()).filter(|p| !p.is_empty());
                }
                _ => {}
            }
        }
        Ok(o)
    }
}

/// Parses a share count or priority in 0..=[`MAX_VALUE`]; `alt` names any other accepted spelling.
fn parse_count(key: &str, value: &str, alt: &str) -> Result<u64, String> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let expected = format!("expected a whole number in 0..={MAX_VALUE}{alt}");
    if value.strip_prefix('-').is_some_and(digits) {
        return Err(format!("{key}={value} is negative: {expected}"));
    }
    if !digits(value) {
        return Err(format!("{key}={value:?} is not a number: {expected}"));
    }
    match value.parse::<u64>() {
        Ok(n) if n <= MAX_VALUE => Ok(n),
        _ => Err(format!("{key}={value} is too large: {expected}")),
    }
}

/// `line` up to the first `#` outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '#') => return &line[..i],
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

/// Splits a trimmed, comment-free line into its kind, name and option fields.
fn parse_line(line: &str) -> Result<Entry, String> {
    let (head, rest) = line.split_once('-').unwrap_or((line, ""));
    let word = head.trim();
    let kind = match word.to_ascii_lowercase().as_str() {
        "cluster" => Kind::Cluster,
        "parent" => Kind::Parent,
        "account" => Kind::Account,
        "user" => Kind::User,
        _ => {
            let shown = if word.is_empty() { line } else { word };
            return Err(format!("unknown line kind {shown:?}: expected Cluster, Parent, Account or User"));
        }
    };
    if !line.contains('-') {
        return Err(format!("expected `{word} - 'name'`"));
    }
    let mut fields = split_fields(rest)?;
    let name = fields.remove(0).trim().to_string();
    if name.is_empty() {
        return Err(format!("missing quoted name: expected `{word} - 'name'`"));
    }
    if kind == Kind::Parent && fields.iter().any(|f| !f.trim().is_empty()) {
        return Err("a Parent line takes no options".into());
    }
    Ok(Entry { kind, name, fields })
}

/// Splits on `:` outside quotes and drops the quotes, so `'a:b'` stays one field `a:b`.
fn split_fields(text: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (None, ':') => fields.push(std::mem::take(&mut current)),
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => current.push(c),
        }
    }
    if let Some(q) = quote {
        return Err(format!("unterminated quote {q}"));
    }
    fields.push(current);
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{AccountUsage, SiblingOrder};
    use fairshare_base::named::Named;

    const EXAMPLE: &str = "\
# comments
Cluster - 'mycluster':Fairshare=1:QOS='normal'
Parent - 'root'
User - 'root':DefaultAccount='root':AdminLevel='Administrator':Fairshare=1
Account - 'physics':Description='physics':Organization='sci':Fairshare=40
Account - 'chem':Description='chem':Organization='sci':Fairshare=parent
Parent - 'physics'
User - 'alice':DefaultAccount='physics':Fairshare=10:Partition='gpu':Priority=5
User - 'bob':Fairshare=parent
Account - 'theory':Fairshare=2
Parent - 'theory'
User - 'carol':Fairshare=1
";

    fn parse_str(text: &str) -> Result<TreeInput> {
        parse(Path::new("site.cfg"), text)
    }

    /// The error message of parsing `text`, which must fail.
    fn error(text: &str) -> String {
        parse_str(text).expect_err("the input is invalid").to_string()
    }

    /// `(id, parent_id, account, user, partition, shares, priority, line)` of every record.
    type Row<'a> = (u64, Option<u64>, &'a str, Option<&'a str>, Option<&'a str>, Shares, Option<u32>, u64);

    #[test]
    fn example_parses_to_its_records() {
        let input = parse_str(EXAMPLE).unwrap();
        assert_eq!(input.sibling_order, SiblingOrder::Lineage);
        assert_eq!(input.account_usage, AccountUsage::SumOfUsers);
        let got: Vec<Row> = input
            .records
            .iter()
            .map(|r| {
                assert_eq!(r.usage, 0.0);
                (
                    r.id,
                    r.parent_id,
                    r.account.as_str(),
                    r.user.as_deref(),
                    r.partition.as_deref(),
                    r.shares,
                    r.priority,
                    r.line,
                )
            })
            .collect();
        let v = Shares::Value;
        let want: Vec<Row> = vec![
            (1, None, "root", None, None, v(1), None, 2),
            (2, Some(1), "root", Some("root"), None, v(1), None, 4),
            (3, Some(1), "physics", None, None, v(40), None, 5),
            (4, Some(1), "chem", None, None, Shares::Parent, None, 6),
            (5, Some(3), "physics", Some("alice"), Some("gpu"), v(10), Some(5), 8),
            (6, Some(3), "physics", Some("bob"), None, Shares::Parent, None, 9),
            (7, Some(3), "theory", None, None, v(2), None, 10),
            (8, Some(7), "theory", Some("carol"), None, v(1), None, 12),
        ];
        assert_eq!(got, want);
        let tree = crate::tree::AssocTree::build(input).unwrap();
        assert_eq!(tree.len(), 8);
        assert_eq!(tree.user_count(), 4);
    }

    #[test]
    fn defaults_without_cluster_line_and_cluster_options() {
        // No Cluster and no Parent line: root is the parent; absent Fairshare is 1.
        let input = parse_str("Account - 'a'\nUser - 'u'\n").unwrap();
        let r = &input.records;
        assert_eq!((r[1].account.as_str(), r[1].parent_id, r[1].shares), ("a", Some(1), Shares::Value(1)));
        assert_eq!((r[2].account.as_str(), r[2].user.as_deref(), r[2].parent_id), ("root", Some("u"), Some(1)));
        let input = parse_str("Cluster - 'c':Shares=7:Priority=3\nUser - 'u'\n").unwrap();
        assert_eq!((input.records[0].shares, input.records[0].priority), (Shares::Value(7), Some(3)));
    }

    #[test]
    fn quoted_values_case_and_comments() {
        let text = "\
\u{feff}Cluster - \"c\" # trailing comment
  parent - 'root'
account - 'a b':Description='x: y # not a comment':FAIRSHARE='12':GrpTRES='cpu=4,mem=1G':MaxJobs=:
USER - 'u':partition='debug':PRIORITY=0:Fairshare=PARENT
User - 'u':Partition='gpu':Description=\"it's\"
User - 'u'
User - 'w':Partition=''
";
        let input = parse_str(text).unwrap();
        let r = &input.records;
        assert_eq!((r[1].account.as_str(), r[1].shares), ("a b", Shares::Value(12)));
        assert_eq!((r[2].partition.as_deref(), r[2].priority, r[2].shares), (Some("debug"), Some(0), Shares::Parent));
        assert_eq!(r[3].partition.as_deref(), Some("gpu"));
        assert_eq!(r[4].partition, None);
        assert_eq!(r[5].partition, None);
        assert_eq!(split_fields("'a:b':K='x:y'").unwrap(), ["a:b", "K=x:y"]);
        assert_eq!(strip_comment("User - 'a#b' # c"), "User - 'a#b' ");
    }

    #[test]
    fn values_up_to_u32_max_minus_one() {
        let input = parse_str("Account - 'a':Fairshare=4294967294:Priority=4294967294\n").unwrap();
        assert_eq!(input.records[1].shares, Shares::Value(4_294_967_294));
        assert_eq!(input.records[1].priority, Some(4_294_967_294));
    }

    #[test]
    fn errors_name_file_line_and_problem() {
        let cases: [(&str, &str); 20] = [
            ("", "site.cfg: no Cluster, Parent, Account or User line"),
            ("# only\n\n  # comments\n", "site.cfg: no Cluster, Parent, Account or User line"),
            ("Cluster - 'c'\nQOS - 'normal'\n", "site.cfg:2: unknown line kind \"QOS\""),
            ("Cluster - 'c'\nnonsense\n", "site.cfg:2: unknown line kind \"nonsense\""),
            ("Cluster\n", "site.cfg:1: expected `Cluster - 'name'`"),
            ("Account - \n", "site.cfg:1: missing quoted name"),
            ("User - '':Fairshare=1\n", "site.cfg:1: missing quoted name"),
            ("Account - 'a:Fairshare=1\n", "site.cfg:1: unterminated quote '"),
            ("Account - 'a':Fairshare\n", "site.cfg:1: option \"Fairshare\" is not Key=Value"),
            ("Parent - 'root'\nParent - 'physics'\n", "site.cfg:2: Parent - 'physics' names an account not declared"),
            ("Account - 'a'\nAccount - 'a'\n", "site.cfg:2: account 'a' declared twice (first on line 1)"),
            ("Account - 'root'\n", "site.cfg:1: account 'root' is the implicit root"),
            ("User - 'u'\nUser - 'u':Fairshare=2\n", "site.cfg:2: user 'u' in account 'root' declared twice"),
            (
                "User - 'u':Partition='p'\nUser - 'u':Partition='p'\n",
                "site.cfg:2: user 'u' in account 'root' partition 'p' declared twice (first on line 1)",
            ),
            ("User - 'u':Fairshare=-3\n", "site.cfg:1: Fairshare=-3 is negative"),
            ("User - 'u':Fairshare=lots\n", "site.cfg:1: Fairshare=\"lots\" is not a number"),
            ("User - 'u':Shares=4294967295\n", "site.cfg:1: Shares=4294967295 is too large"),
            ("User - 'u':Priority=parent\n", "site.cfg:1: Priority=\"parent\" is not a number"),
            ("Parent - 'root'\nCluster - 'c'\n", "site.cfg:2: the Cluster line must come before"),
            ("Cluster - 'c'\nCluster - 'd'\n", "site.cfg:2: a second Cluster line (the first is on line 1)"),
        ];
        for (text, want) in cases {
            let got = error(text);
            assert!(got.starts_with(want), "{text:?}: got {got:?}, want {want:?}");
        }
        assert!(error("Cluster - 'c':Fairshare=parent\n").contains("the root has no parent"));
        assert!(error("Account - 'a'\nParent - 'a':Fairshare=1\n").contains("2: a Parent line takes no options"));
        assert!(error("User - 'u':Priority=-1\n").contains("Priority=-1 is negative"));
        assert!(error("User - 'u':Priority=99999999999999999999999\n").contains("is too large"));
    }

    #[test]
    fn site_fixture_is_detected_and_read() {
        use crate::io::{TreeFormat, read_tree_input};
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sacctmgr/site.cfg");
        assert_eq!(TreeFormat::detect(&path).unwrap(), TreeFormat::SacctmgrDump);
        assert_eq!(TreeFormat::SacctmgrDump.name(), "sacctmgr-dump");
        let input = read_tree_input(&path, None).unwrap();
        assert_eq!(input.records.len(), 23);
        assert_eq!(input.records[0].line, 4); // the Cluster line, after the comments
        let tree = crate::tree::AssocTree::build(input).unwrap();
        assert_eq!((tree.user_count(), tree.levels()), (15, 5));
        assert!(read(Path::new("/nonexistent/site.cfg")).is_err());
    }

    #[test]
    fn same_user_in_two_accounts_or_partitions_is_fine() {
        let text = "Account - 'a'\nAccount - 'b'\nParent - 'a'\nUser - 'u'\nUser - 'u':Partition='gpu'\n\
                    Parent - 'b'\nUser - 'u'\n";
        let input = parse_str(text).unwrap();
        assert_eq!(input.records.len(), 6);
        assert_eq!(crate::tree::AssocTree::build(input).unwrap().user_count(), 3);
    }
}
