//! `fairshare shares` text: a [`ShareReport`] as a table, or as the `sacctmgr` commands that set
//! each account's RawShares.

use crate::shares::ShareReport;

/// Writes the report as a table: account, gratis, lab, communal and total CPU TRES (3 decimals) and
/// RawShares, one row per account, then a total row.
pub fn write_table(out: &mut String, r: &ShareReport) {
    let w = r.accounts.iter().map(|a| a.account.len()).max().unwrap_or(0).max("Account".len());
    let row = |out: &mut String, name: &str, g: f64, l: f64, c: f64, t: f64, raw: u64| {
        out.push_str(&format!("{name:<w$} {g:>12.3} {l:>12.3} {c:>12.3} {t:>12.3} {raw:>10}\n"));
    };
    let (d, n) = ("-".repeat(12), "-".repeat(10));
    let rule = format!("{} {d} {d} {d} {d} {n}\n", "-".repeat(w));
    out.push_str(&format!(
        "{:<w$} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
        "Account", "Gratis", "Lab", "Communal", "Total", "RawShares"
    ));
    out.push_str(&rule);
    let mut sum = (0.0, 0.0, 0.0, 0.0, 0u64);
    for a in &r.accounts {
        let raw = u64::from(a.raw_shares);
        row(out, &a.account, a.gratis, a.lab, a.communal, a.total, raw);
        sum = (sum.0 + a.gratis, sum.1 + a.lab, sum.2 + a.communal, sum.3 + a.total, sum.4 + raw);
    }
    out.push_str(&rule);
    row(out, "(total)", sum.0, sum.1, sum.2, sum.3, sum.4);
}

/// Writes one `sacctmgr` command per account, in the report's order (by account name), setting
/// its `fairshare` to its RawShares.
pub fn write_sacctmgr(out: &mut String, r: &ShareReport) {
    for a in &r.accounts {
        let name = shell_word(&a.account);
        out.push_str(&format!("sacctmgr -i modify account where name={name} set fairshare={}\n", a.raw_shares));
    }
}

/// `word` as one shell word: as is when it has only safe characters, else single-quoted.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.+@%:/".contains(&b)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shares::AccountShares;

    fn report() -> ShareReport {
        let share = |account: &str, gratis: f64, lab: f64, communal: f64, raw_shares| AccountShares {
            account: account.into(),
            gratis,
            lab,
            communal,
            total: gratis + lab + communal,
            raw_shares,
        };
        ShareReport {
            accounts: vec![share("astro_lab", 10.5, 57.6, 0.0, 68), share("we'ird lab", 10.5, 0.0, 0.25, 11)],
            public_nodes: 1,
            public_tres: 21.0,
            gratis: 10.5,
            labs: vec![],
            communal: vec![],
        }
    }

    #[test]
    fn table() {
        let mut out = String::new();
        write_table(&mut out, &report());
        assert_eq!(
            out,
            "\
Account          Gratis          Lab     Communal        Total  RawShares
---------- ------------ ------------ ------------ ------------ ----------
astro_lab        10.500       57.600        0.000       68.100         68
we'ird lab       10.500        0.000        0.250       10.750         11
---------- ------------ ------------ ------------ ------------ ----------
(total)          21.000       57.600        0.250       78.850         79
"
        );
    }

    #[test]
    fn sacctmgr_commands_quote_names() {
        let mut out = String::new();
        write_sacctmgr(&mut out, &report());
        assert_eq!(
            out,
            "sacctmgr -i modify account where name=astro_lab set fairshare=68\n\
             sacctmgr -i modify account where name='we'\\''ird lab' set fairshare=11\n"
        );
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a-b.c+d@e%f:g/h_1"), "a-b.c+d@e%f:g/h_1");
    }
}
