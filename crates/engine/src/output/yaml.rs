//! A JSON value as block YAML, for `sshare --yaml` (Slurm's data_parser prints the same response
//! as JSON or YAML).
//!
//! Hand-written because the one response we print needs no more than this: mappings and
//! sequences in block style, scalars as JSON spells them. A JSON string is a valid YAML
//! double-quoted scalar, so strings are written JSON-quoted (names from a flux database may hold
//! anything, and quoting all of them leaves no case for a YAML reader to read as a number or a
//! boolean); numbers, booleans and null are the same words in both.

use std::io::{self, Write};

use serde_json::Value;

/// Writes `value` as the entries of a block mapping or sequence at `indent` spaces (a scalar on
/// its own line); `value` is a mapping's value or a sequence's item whose key or dash the caller
/// wrote.
///
/// # Errors
/// I/O errors from `out`.
///
/// # Example
/// ```
/// let v = serde_json::json!({"shares": [{"id": 1, "name": "root"}], "errors": []});
/// let mut out = Vec::new();
/// fairshare_engine::output::yaml::write_block(&mut out, &v, 0).unwrap();
/// assert_eq!(String::from_utf8(out).unwrap(), "errors: []\nshares:\n- id: 1\n  name: \"root\"\n");
/// ```
pub fn write_block(out: &mut dyn Write, value: &Value, indent: usize) -> io::Result<()> {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, v) in map {
                write!(out, "{pad}{}:", key_text(key))?;
                entry(out, v, indent, true)?;
            }
            Ok(())
        }
        Value::Array(items) if !items.is_empty() => {
            for v in items {
                write!(out, "{pad}-")?;
                entry(out, v, indent, false)?;
            }
            Ok(())
        }
        _ => writeln!(out, "{pad}{}", scalar(value)),
    }
}

/// What follows a key (`in_map`) or a dash: a scalar on the same line, a nested mapping or a
/// sequence below it. A sequence in a mapping sits at the key's indent (YAML's indentless
/// sequence, as libyaml writes it); a mapping in a sequence starts on the dash's line.
fn entry(out: &mut dyn Write, v: &Value, indent: usize, in_map: bool) -> io::Result<()> {
    match v {
        Value::Object(map) if !map.is_empty() => {
            if in_map {
                out.write_all(b"\n")?;
                write_block(out, v, indent + 2)
            } else {
                // The first entry on the dash's line, the rest under it.
                let mut first = true;
                for (key, inner) in map {
                    if first {
                        write!(out, " {}:", key_text(key))?;
                        first = false;
                    } else {
                        write!(out, "{}{}:", " ".repeat(indent + 2), key_text(key))?;
                    }
                    entry(out, inner, indent + 2, true)?;
                }
                Ok(())
            }
        }
        Value::Array(items) if !items.is_empty() => {
            out.write_all(b"\n")?;
            write_block(out, v, if in_map { indent } else { indent + 2 })
        }
        _ => writeln!(out, " {}", scalar(v)),
    }
}

/// A scalar (or an empty collection) as JSON spells it, which YAML reads the same.
fn scalar(v: &Value) -> String {
    v.to_string()
}

/// A mapping key: plain when it is a simple word, else JSON-quoted.
fn key_text(key: &str) -> String {
    let plain = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if plain { key.to_string() } else { Value::String(key.to_string()).to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(v: &Value) -> String {
        let mut out = Vec::new();
        write_block(&mut out, v, 0).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn nested_mappings_and_sequences_indent_as_block_yaml() {
        let v = json!({
            "a": {"b": 1, "c": [1, 2], "d": {}},
            "list": [{"x": true, "y": {"z": null}}, [3, 4], "s"],
            "odd key": "has \"quotes\"\nand a line",
        });
        assert_eq!(
            yaml(&v),
            "a:\n  b: 1\n  c:\n  - 1\n  - 2\n  d: {}\nlist:\n- x: true\n  y:\n    z: null\n-\n  - 3\n  - 4\n- \"s\"\n\
             \"odd key\": \"has \\\"quotes\\\"\\nand a line\"\n"
        );
    }

    #[test]
    fn names_that_look_like_other_scalars_stay_strings() {
        assert_eq!(yaml(&json!({"name": "true"})), "name: \"true\"\n");
        assert_eq!(yaml(&json!({"name": "007"})), "name: \"007\"\n");
        assert_eq!(yaml(&json!({"name": "- x: y"})), "name: \"- x: y\"\n");
    }
}
