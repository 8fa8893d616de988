//! An association tree as `assoc-csv`, the format [`crate::io::assoc_csv`] reads: what `fairshare
//! shares --format tree-csv` writes, a site's tree with the computed RawShares.

use crate::tree::{Shares, TreeInput};

/// Writes the tree as `assoc-csv`, rows in input order. `partition` and `priority` columns are
/// added when some row has one, so nothing the tree holds is dropped; account usage is written as
/// read (assoc-csv readers sum account usage from the users).
pub fn write_tree(out: &mut String, tree: &TreeInput) {
    let partitions = tree.records.iter().any(|r| r.partition.is_some());
    let priorities = tree.records.iter().any(|r| r.priority.is_some());
    out.push_str("id,parent_id,account,user,shares,usage");
    if partitions {
        out.push_str(",partition");
    }
    if priorities {
        out.push_str(",priority");
    }
    out.push('\n');
    for r in &tree.records {
        let parent = r.parent_id.map_or_else(String::new, |p| p.to_string());
        let shares = match r.shares {
            Shares::Value(n) => n.to_string(),
            Shares::Parent => "parent".to_string(),
        };
        let (account, user) = (csv_field(&r.account), csv_field(r.user.as_deref().unwrap_or("")));
        out.push_str(&format!("{},{parent},{account},{user},{shares},{}", r.id, r.usage));
        if partitions {
            out.push(',');
            out.push_str(&csv_field(r.partition.as_deref().unwrap_or("")));
        }
        if priorities {
            out.push(',');
            out.push_str(&r.priority.map_or_else(String::new, |p| p.to_string()));
        }
        out.push('\n');
    }
}

/// A CSV field, quoted when it holds a comma, a quote, a line break or white space at an end.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.trim() != s {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn written(text: &str) -> String {
        let tree = crate::io::assoc_csv::parse(Path::new("t.csv"), text).unwrap();
        let mut out = String::new();
        write_tree(&mut out, &tree);
        out
    }

    #[test]
    fn writes_rows_in_input_order_with_quoted_names() {
        let text = "id,parent_id,account,user,shares,usage\n1,,root,,1,0\n3,2,\"chem, lab\",\"u\"\"1\",parent,9\n\
                    2,1,\"chem, lab\",,5,0\n";
        assert_eq!(written(text), text);
    }

    #[test]
    fn partition_and_priority_columns_only_when_held() {
        let text = "id,parent_id,account,user,shares,usage,partition,priority\n1,,root,,1,0,,\n\
                    2,1,a,,1,0,,7\n3,2,a,u,1,4,\"gpu,a100\",\n";
        assert_eq!(written(text), text);
        assert_eq!(csv_field(" x"), "\" x\"");
        assert_eq!(csv_field("a\nb"), "\"a\nb\"");
    }
}
