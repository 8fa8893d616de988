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

/// `text`, or its longest prefix followed by `…`, that fits in `width` at `size`; `None` when
/// not even two characters and the ellipsis fit.
pub fn fit(text: &str, size: f64, width: f64) -> Option<String> {
    if text_width(text, size) <= width {
        return Some(text.to_string());
    }
    let ellipsis = text_width("…", size);
    let mut used = 0.0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        let w = text_width(c.encode_utf8(&mut [0; 4]), size);
        if used + w + ellipsis > width {
            break;
        }
        used += w;
        end = i + c.len_utf8();
    }
    (text[..end].chars().count() >= 2).then(|| format!("{}…", &text[..end]))
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
        assert_eq!(fit("chemistry", 12.0, 100.0).as_deref(), Some("chemistry"));
        let cut = fit("chemistry", 12.0, 30.0).unwrap();
        assert!(cut.ends_with('…') && text_width(&cut, 12.0) <= 30.0, "{cut}");
        assert_eq!(fit("chemistry", 12.0, 5.0), None);
        // Outside the subset: measured as `?`.
        assert_eq!(text_width("ж", 12.0), text_width("?", 12.0));
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
