//! The embedded font: a Latin subset of DejaVu Sans (Bitstream Vera license, see
//! `src/plot/LICENSE-DejaVu.txt`), 25 KB, so a PNG renders the same on a machine without fonts.
//!
//! Text is laid out by advance widths alone (no kerning or shaping): enough for labels, and the
//! same measure decides in both SVG and PNG whether a label fits. Characters outside the subset
//! are measured and drawn as `?`.

use std::sync::OnceLock;

use ttf_parser::{Face, GlyphId, OutlineBuilder};

const DATA: &[u8] = include_bytes!("DejaVuSans-subset.ttf");

/// The family an SVG asks for: the embedded font's, then look-alikes of similar width.
pub const SVG_FAMILY: &str = "DejaVu Sans, Verdana, Bitstream Vera Sans, sans-serif";

fn face() -> &'static Face<'static> {
    static FACE: OnceLock<Face<'static>> = OnceLock::new();
    FACE.get_or_init(|| Face::parse(DATA, 0).expect("the embedded font parses"))
}

fn glyph(c: char) -> GlyphId {
    let f = face();
    f.glyph_index(c).or_else(|| f.glyph_index('?')).unwrap_or(GlyphId(0))
}

fn units_per_em() -> f64 {
    f64::from(face().units_per_em())
}

/// Width of `text` at `size` pixels per em.
pub fn text_width(text: &str, size: f64) -> f64 {
    let f = face();
    let units: u32 = text.chars().map(|c| u32::from(f.glyph_hor_advance(glyph(c)).unwrap_or(0))).sum();
    f64::from(units) * size / units_per_em()
}

/// Height of capitals above the baseline at `size`, to centre a line vertically.
pub fn cap_height(size: f64) -> f64 {
    // DejaVu Sans: capitals are 1493 units of 2048.
    size * 0.729
}

/// `text`, or a cut of it with `…` that fits in `width` at `size` and still tells it apart
/// from each of `others` (the names it is shown among). A cut `head…tail` stands for every name
/// that starts with `head` and ends with `tail`, so a prefix several names share (`chem_…` for
/// `chem_jacobsen` and `chem_aspuru`) is not used. The longest prefix only `text` has comes
/// first (with no `others`, simply the longest prefix that fits), then the longest head-and-tail
/// cut only it has (`ch…red`); `None` when no cut of two or more characters fits and stays
/// distinct (the caller then shows no label).
pub fn fit_among(text: &str, others: &[&str], size: f64, width: f64) -> Option<String> {
    if text_width(text, size) <= width {
        return Some(text.to_string());
    }
    let chars: Vec<char> = text.chars().collect();
    let widths: Vec<f64> = chars.iter().map(|c| text_width(c.encode_utf8(&mut [0; 4]), size)).collect();
    // Widths of the first (last) k characters, k = 0..=len.
    let running = |ws: &mut dyn Iterator<Item = &f64>| {
        let mut sum = 0.0;
        std::iter::once(0.0)
            .chain(ws.map(|w| {
                sum += w;
                sum
            }))
            .collect::<Vec<f64>>()
    };
    let (head_w, tail_w) = (running(&mut widths.iter()), running(&mut widths.iter().rev()));
    let room = width - text_width("…", size);
    // Each other name as (characters it shares with `text` from the start, from the end, its
    // length); one sharing no first character can never read like a cut of `text`.
    let rivals: Vec<(usize, usize, usize)> = others
        .iter()
        .filter(|o| **o != text)
        .map(|o| {
            let lead = o.chars().zip(&chars).take_while(|(a, b)| a == *b).count();
            let trail = o.chars().rev().zip(chars.iter().rev()).take_while(|(a, b)| a == *b).count();
            (lead, trail, o.chars().count())
        })
        .filter(|r| r.0 > 0)
        .collect();
    let distinct =
        |h: usize, t: usize| !rivals.iter().any(|&(lead, trail, len)| lead >= h && trail >= t && len >= h + t);
    let cut = |h: usize, t: usize| {
        (head_w[h] + tail_w[t] <= room && distinct(h, t)).then(|| {
            let mut s: String = chars[..h].iter().collect();
            s.push('…');
            s.extend(&chars[chars.len() - t..]);
            s
        })
    };
    // Something must be left out, and at least two characters shown.
    let most = chars.len() - 1;
    if let Some(s) = (2..=most).rev().find_map(|n| cut(n, 0)) {
        return Some(s);
    }
    // A head about as long as the tail reads best; a shorter head keeps more of the tail.
    (2..=most).rev().find_map(|n| (1..=n / 2).rev().chain(n / 2 + 1..n).find_map(|h| cut(h, n - h)))
}

/// `text` broken into lines no wider than `width` at `size`: at spaces, and inside a word only
/// where the word alone is wider than a line.
pub fn wrap(text: &str, size: f64, width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let joined = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if text_width(&joined, size) <= width {
            line = joined;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        for c in word.chars() {
            if !line.is_empty() && text_width(&line, size) + text_width(c.encode_utf8(&mut [0; 4]), size) > width {
                lines.push(std::mem::take(&mut line));
            }
            line.push(c);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// One piece of a glyph outline in pixel coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Segment {
    /// A straight edge.
    Line((f64, f64), (f64, f64)),
    /// A quadratic Bézier (start, control, end).
    Quad((f64, f64), (f64, f64), (f64, f64)),
    /// A cubic Bézier (start, two controls, end).
    Cubic((f64, f64), (f64, f64), (f64, f64), (f64, f64)),
}

/// Collects an outline, mapping font units (y up) to pixels through `map`.
struct Collect<'a, F: Fn(f64, f64) -> (f64, f64)> {
    map: F,
    start: (f64, f64),
    at: (f64, f64),
    out: &'a mut Vec<Segment>,
}

impl<F: Fn(f64, f64) -> (f64, f64)> OutlineBuilder for Collect<'_, F> {
    fn move_to(&mut self, x: f32, y: f32) {
        self.start = (self.map)(f64::from(x), f64::from(y));
        self.at = self.start;
    }
    fn line_to(&mut self, x: f32, y: f32) {
        let p = (self.map)(f64::from(x), f64::from(y));
        self.out.push(Segment::Line(self.at, p));
        self.at = p;
    }
    fn quad_to(&mut self, x1: f32, y1: f32, x: f32, y: f32) {
        let c = (self.map)(f64::from(x1), f64::from(y1));
        let p = (self.map)(f64::from(x), f64::from(y));
        self.out.push(Segment::Quad(self.at, c, p));
        self.at = p;
    }
    fn curve_to(&mut self, x1: f32, y1: f32, x2: f32, y2: f32, x: f32, y: f32) {
        let c1 = (self.map)(f64::from(x1), f64::from(y1));
        let c2 = (self.map)(f64::from(x2), f64::from(y2));
        let p = (self.map)(f64::from(x), f64::from(y));
        self.out.push(Segment::Cubic(self.at, c1, c2, p));
        self.at = p;
    }
    fn close(&mut self) {
        // The rasterizer needs closed contours: an open end would leak coverage along the row.
        if self.at != self.start {
            self.out.push(Segment::Line(self.at, self.start));
        }
        self.at = self.start;
    }
}

/// The outlines of a laid-out text in pixel coordinates: baseline start at `(x, y)`, turned a
/// quarter anticlockwise about that point when `vertical`.
pub fn outline(text: &str, size: f64, x: f64, y: f64, vertical: bool) -> Vec<Segment> {
    let f = face();
    let scale = size / units_per_em();
    let mut out = Vec::new();
    let mut pen = 0.0;
    for c in text.chars() {
        let g = glyph(c);
        let origin = pen;
        // Text space: u along the baseline, v up; the screen's y grows downwards.
        let map = move |u: f64, v: f64| {
            let (u, v) = ((origin + u) * scale, v * scale);
            if vertical { (x - v, y - u) } else { (x + u, y - v) }
        };
        let mut collect = Collect { map, start: (0.0, 0.0), at: (0.0, 0.0), out: &mut out };
        f.outline_glyph(g, &mut collect);
        pen += f64::from(f.glyph_hor_advance(g).unwrap_or(0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_and_fits() {
        let w = text_width("chemistry", 12.0);
        assert!(w > 50.0 && w < 70.0, "{w}");
        assert_eq!(text_width("", 12.0), 0.0);
        assert_eq!(fit_among("chemistry", &[], 12.0, 100.0).as_deref(), Some("chemistry"));
        let cut = fit_among("chemistry", &[], 12.0, 30.0).unwrap();
        assert!(cut.ends_with('…') && text_width(&cut, 12.0) <= 30.0, "{cut}");
        assert!("chemistry".starts_with(cut.trim_end_matches('…')), "{cut}");
        assert_eq!(fit_among("chemistry", &[], 12.0, 5.0), None);
        // Outside the subset: measured as `?`.
        assert_eq!(text_width("ж", 12.0), text_width("?", 12.0));
    }

    #[test]
    fn shortened_names_stay_distinct_among_their_neighbours() {
        let row = ["chem_jacobsen", "chem_aspuru", "chem_shared", "mo"];
        // Where a plain cut reads `chem_…` for all three.
        let room = text_width("chem_…", 12.0);
        assert_eq!(fit_among("chem_shared", &[], 12.0, room).as_deref(), Some("chem_…"));
        let shown: Vec<String> = row[..3].iter().map(|n| fit_among(n, &row, 12.0, room).unwrap()).collect();
        for (name, label) in row.iter().zip(&shown) {
            assert!(text_width(label, 12.0) <= room, "{label}");
            let (head, tail) = label.split_once('…').unwrap();
            let readers: Vec<&&str> = row
                .iter()
                .filter(|o| o.starts_with(head) && o.ends_with(tail) && o.len() >= head.len() + tail.len())
                .collect();
            assert_eq!(readers, vec![name], "{label} reads as {readers:?}");
        }
        // A prefix only one name has is kept as a plain cut.
        let wide = text_width("chem_jaco…", 12.0);
        assert_eq!(fit_among("chem_jacobsen", &row, 12.0, wide).as_deref(), Some("chem_jaco…"));
        // No cut that fits tells `ab1x` from both `ab2x` and `ac1x`: no label.
        let tight = ["ab1x", "ab2x", "ac1x"];
        assert_eq!(fit_among("ab1x", &tight, 12.0, text_width("ab…", 12.0)), None);
        // The same name twice (one association drawn in two pieces) is no rival.
        assert_eq!(fit_among("chem_shared", &["chem_shared"], 12.0, room).as_deref(), Some("chem_…"));
    }

    #[test]
    fn wraps_at_spaces_and_breaks_only_overlong_words() {
        let text = "Width: each subtree's block of ranks, so of factors";
        let lines = wrap(text, 12.0, 120.0);
        assert!(lines.len() > 1 && lines.iter().all(|l| text_width(l, 12.0) <= 120.0), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        let long = wrap("abcdefghijklmnopqrstuvwxyz", 12.0, 50.0);
        assert!(long.len() > 1 && long.iter().all(|l| text_width(l, 12.0) <= 50.0), "{long:?}");
        assert_eq!(long.concat(), "abcdefghijklmnopqrstuvwxyz");
        assert!(wrap("", 12.0, 50.0).is_empty());
    }

    #[test]
    fn outlines_sit_on_the_baseline() {
        let segs = outline("H", 20.0, 10.0, 50.0, false);
        let ys = segs.iter().flat_map(|s| match *s {
            Segment::Line(a, b) => vec![a.1, b.1],
            Segment::Quad(a, _, b) | Segment::Cubic(a, _, _, b) => vec![a.1, b.1],
        });
        let (top, bottom) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
        assert!((bottom - 50.0).abs() < 0.01, "{bottom}");
        assert!((50.0 - top - cap_height(20.0)).abs() < 0.1, "{top}");
    }
}
