//! A [`Scene`] as SVG text: one element per item, coordinates rounded to 0.01 px.

use std::fmt::Write;

use super::{Anchor, Color, Item, Scene, font};

/// Escapes text for XML and HTML content and quoted attribute values (SVG is inlined in the web
/// report's pages): `& < > " '` as entities, controls but tab and newlines as U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // C0 controls are not allowed in XML 1.0 at all, DEL and C1 are discouraged in XML
            // and errors in HTML (where the SVG may be inlined).
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate without float noise: at most two decimals, no trailing zeros.
fn n(v: f64) -> String {
    let s = format!("{:.2}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".to_string() } else { s.to_string() }
}

fn fill(out: &mut String, attr: &str, c: Color) {
    let _ = write!(out, r#" {attr}="{}""#, c.css());
    if c.a < 1.0 {
        let _ = write!(out, r#" {attr}-opacity="{}""#, n(f64::from(c.a)));
    }
}

fn class(out: &mut String, class: &str) {
    if !class.is_empty() {
        let _ = write!(out, r#" class="{class}""#);
    }
}

fn data(out: &mut String, data: &[(&'static str, String)]) {
    for (k, v) in data {
        let _ = write!(out, r#" {k}="{}""#, escape(v));
    }
}

fn points(p: &[(f64, f64)]) -> String {
    p.iter().map(|&(x, y)| format!("{},{}", n(x), n(y))).collect::<Vec<_>>().join(" ")
}

/// The scene as a standalone SVG document.
pub fn to_svg(scene: &Scene) -> String {
    let mut out = String::new();
    let (w, h) = (scene.width, scene.height);
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{}""#,
        font::SVG_FAMILY
    );
    data(&mut out, &scene.data);
    out.push_str(">\n");
    let _ = write!(out, r#"<rect width="{w}" height="{h}""#);
    fill(&mut out, "fill", scene.background);
    out.push_str("/>\n");
    for item in &scene.items {
        match item {
            Item::Rect(r) => {
                let _ = write!(out, r#"<rect x="{}" y="{}" width="{}" height="{}""#, n(r.x), n(r.y), n(r.w), n(r.h));
                class(&mut out, r.class);
                fill(&mut out, "fill", r.fill);
                data(&mut out, &r.data);
                match &r.title {
                    Some(t) => {
                        let _ = writeln!(out, "><title>{}</title></rect>", escape(t));
                    }
                    None => out.push_str("/>\n"),
                }
            }
            Item::Line(l) => {
                let _ = write!(out, r#"<polyline points="{}" fill="none""#, points(&l.points));
                class(&mut out, l.class);
                fill(&mut out, "stroke", l.color);
                let _ = write!(out, r#" stroke-width="{}" stroke-linejoin="round" stroke-linecap="butt""#, n(l.width));
                if !l.dash.is_empty() {
                    let dash: Vec<String> = l.dash.iter().map(|&d| n(d)).collect();
                    let _ = write!(out, r#" stroke-dasharray="{}""#, dash.join(" "));
                }
                data(&mut out, &l.data);
                out.push_str("/>\n");
            }
            Item::Polygon { points: p, fill: c, class: k } => {
                let _ = write!(out, r#"<polygon points="{}""#, points(p));
                class(&mut out, k);
                fill(&mut out, "fill", *c);
                out.push_str("/>\n");
            }
            Item::Text(t) => {
                let anchor = match t.anchor {
                    Anchor::Start => "start",
                    Anchor::Middle => "middle",
                    Anchor::End => "end",
                };
                let _ = write!(
                    out,
                    r#"<text x="{}" y="{}" font-size="{}" text-anchor="{anchor}""#,
                    n(t.x),
                    n(t.y),
                    n(t.size)
                );
                fill(&mut out, "fill", t.color);
                if t.vertical {
                    let _ = write!(out, r#" transform="rotate(-90 {} {})""#, n(t.x), n(t.y));
                }
                let _ = writeln!(out, ">{}</text>", escape(&t.text));
            }
        }
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Rect, Text};
    use super::*;

    #[test]
    fn writes_elements_with_escaped_text() {
        let mut s = Scene::new(100, 50);
        let mut r = Rect::new(1.0, 2.5, 10.0, 4.0, Color::hex(0x336699).alpha(0.5));
        r.class = "assoc";
        r.data.push(("data-name", "a<b".into()));
        r.title = Some("x & y".into());
        s.rect(r);
        s.text(Text::new(5.0, 6.0, 12.0, Anchor::Middle, Color::hex(0), "p&q"));
        let svg = to_svg(&s);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"50\""), "{svg}");
        assert!(svg.contains(r##"<rect x="1" y="2.5" width="10" height="4" class="assoc" fill="#336699" fill-opacity="0.5" data-name="a&lt;b"><title>x &amp; y</title></rect>"##), "{svg}");
        assert!(svg.contains(">p&amp;q</text>"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
