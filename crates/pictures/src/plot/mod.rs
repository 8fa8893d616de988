//! Pictures of fair-share: an icicle of the association tree ([`icicle`]), the fair-share
//! history of chosen associations over time ([`history`]), a forecast ([`forecast`]) and the
//! entitlement now per top-level account ([`entitlement`]), as SVG or PNG.
//!
//! A chart is laid out once as a [`Scene`] of rectangles, polylines, filled polygons and text in
//! pixel coordinates; [`svg`] writes the scene as SVG text and [`raster`] paints the same scene
//! into pixels and encodes a PNG. Text is measured with the embedded font ([`font`], a Latin subset
//! of DejaVu Sans), which also draws the PNG's glyphs, so labels placed "where they fit" fit in both.

pub mod entitlement;
pub mod font;
pub mod forecast;
pub mod history;
pub mod icicle;
pub mod raster;
pub mod svg;

use std::io::Write;
use std::path::Path;

use fairshare_base::error::{Error, Result};
use fairshare_base::write::atomic::AtomicFile;

/// An sRGB colour with an opacity in 0..=1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Color {
    /// Red.
    pub r: u8,
    /// Green.
    pub g: u8,
    /// Blue.
    pub b: u8,
    /// Opacity (1 is opaque).
    pub a: f32,
}

impl Color {
    /// An opaque colour.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Self {
        Color { r, g, b, a: 1.0 }
    }

    /// An opaque colour from `0xRRGGBB`.
    pub const fn hex(v: u32) -> Self {
        Color::rgb((v >> 16) as u8, (v >> 8) as u8, v as u8)
    }

    /// The same colour with opacity `a`.
    pub const fn alpha(self, a: f32) -> Self {
        Color { a, ..self }
    }

    /// `#rrggbb`.
    pub fn css(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.r, self.g, self.b)
    }

    /// Relative luminance (WCAG), to pick a legible text colour on top.
    pub fn luminance(self) -> f64 {
        let lin = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
        };
        0.2126 * lin(self.r) + 0.7152 * lin(self.g) + 0.0722 * lin(self.b)
    }

    /// Black or white, whichever reads better on `self`.
    pub fn text_on(self) -> Color {
        // The crossover where black and white have equal contrast ratios.
        if self.luminance() > 0.179 { Color::hex(0x111111) } else { Color::hex(0xffffff) }
    }
}

/// Interpolates a colour scale given as evenly spaced stops, at `t` in 0..=1 (clamped).
pub fn scale(stops: &[u32], t: f64) -> Color {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let pos = t * (stops.len() - 1) as f64;
    let i = (pos.floor() as usize).min(stops.len() - 2);
    let f = pos - i as f64;
    let (a, b) = (Color::hex(stops[i]), Color::hex(stops[i + 1]));
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * f).round() as u8;
    Color::rgb(mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b))
}

/// Horizontal placement of a text relative to its anchor point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The text starts at the point.
    Start,
    /// The text is centred on the point.
    Middle,
    /// The text ends at the point.
    End,
}

/// A rectangle, optionally tagged so the SVG carries what it stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct Rect {
    /// Left edge (pixels).
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
    /// Fill.
    pub fill: Color,
    /// SVG `class` (empty for none).
    pub class: &'static str,
    /// Extra SVG attributes (`data-*`), not painted.
    pub data: Vec<(&'static str, String)>,
    /// SVG tooltip (`<title>`), not painted.
    pub title: Option<String>,
}

impl Rect {
    /// A plain filled rectangle.
    pub fn new(x: f64, y: f64, w: f64, h: f64, fill: Color) -> Self {
        Rect { x, y, w, h, fill, class: "", data: Vec::new(), title: None }
    }
}

/// A line of text; `y` is the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Text {
    /// Anchor point.
    pub x: f64,
    /// Baseline.
    pub y: f64,
    /// Font size in pixels (the em).
    pub size: f64,
    /// Placement relative to the anchor.
    pub anchor: Anchor,
    /// Colour.
    pub color: Color,
    /// Turned a quarter anticlockwise (read bottom to top), about the anchor.
    pub vertical: bool,
    /// The text.
    pub text: String,
}

impl Text {
    /// Horizontal text.
    pub fn new(x: f64, y: f64, size: f64, anchor: Anchor, color: Color, text: impl Into<String>) -> Self {
        Text { x, y, size, anchor, color, vertical: false, text: text.into() }
    }
}

/// A stroked open polyline (round joins, butt ends).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Vertices.
    pub points: Vec<(f64, f64)>,
    /// Colour.
    pub color: Color,
    /// Stroke width.
    pub width: f64,
    /// Dash pattern: dash, gap, dash, gap, ... lengths from the start (empty for a solid line).
    pub dash: &'static [f64],
    /// SVG `class` (empty for none).
    pub class: &'static str,
    /// Extra SVG attributes (`data-*`), not painted.
    pub data: Vec<(&'static str, String)>,
}

impl Line {
    /// A plain solid line.
    pub fn new(points: Vec<(f64, f64)>, color: Color, width: f64) -> Self {
        Line { points, color, width, dash: &[], class: "", data: Vec::new() }
    }
}

/// One thing drawn, in painting order.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A filled rectangle.
    Rect(Rect),
    /// A stroked polyline.
    Line(Line),
    /// A filled polygon (closed implicitly).
    Polygon {
        /// Vertices.
        points: Vec<(f64, f64)>,
        /// Fill.
        fill: Color,
        /// SVG `class` (empty for none).
        class: &'static str,
    },
    /// Text.
    Text(Text),
}

/// A picture: a white (or given) canvas and what is drawn on it, in pixel coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Canvas colour.
    pub background: Color,
    /// SVG attributes of the root element (`data-*`), e.g. where the plot area is.
    pub data: Vec<(&'static str, String)>,
    /// Items, painted in order.
    pub items: Vec<Item>,
}

impl Scene {
    /// An empty white canvas.
    pub fn new(width: u32, height: u32) -> Self {
        Scene { width, height, background: Color::rgb(255, 255, 255), data: Vec::new(), items: Vec::new() }
    }

    /// Adds a rectangle.
    pub fn rect(&mut self, r: Rect) {
        self.items.push(Item::Rect(r));
    }

    /// Adds a text.
    pub fn text(&mut self, t: Text) {
        self.items.push(Item::Text(t));
    }

    /// Adds a straight line segment.
    pub fn segment(&mut self, from: (f64, f64), to: (f64, f64), color: Color, width: f64) {
        self.items.push(Item::Line(Line::new(vec![from, to], color, width)));
    }

    /// Adds `t`'s text wrapped to `width` (see [`font::wrap`]), the first baseline at `t.y` and
    /// the next ones `leading` apart; returns the last baseline.
    pub fn paragraph(&mut self, t: Text, width: f64, leading: f64) -> f64 {
        let mut y = t.y;
        for (k, line) in font::wrap(&t.text, t.size, width).into_iter().enumerate() {
            y = t.y + k as f64 * leading;
            self.text(Text { y, text: line, ..t.clone() });
        }
        y
    }

    /// `below` drawn under this scene, on one canvas as wide as the wider of the two (the lower
    /// scene's root attributes are dropped: an SVG root has each attribute once).
    pub fn stack(mut self, below: Scene) -> Scene {
        let dy = f64::from(self.height);
        let shift = |points: &mut Vec<(f64, f64)>| points.iter_mut().for_each(|p| p.1 += dy);
        for mut item in below.items {
            match &mut item {
                Item::Rect(r) => r.y += dy,
                Item::Line(Line { points, .. }) | Item::Polygon { points, .. } => shift(points),
                Item::Text(t) => t.y += dy,
            }
            self.items.push(item);
        }
        self.width = self.width.max(below.width);
        self.height += below.height;
        self
    }
}

/// An output picture format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// SVG text.
    Svg,
    /// PNG (8-bit RGB).
    Png,
}

impl Format {
    /// The format a file name asks for: `.svg` or `.png` (any case).
    ///
    /// # Errors
    /// Any other extension.
    pub fn of(path: &Path) -> Result<Self> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => Err(Error::Usage(format!("{}: give a .svg or .png file name", path.display()))),
        }
    }
}

/// The scene encoded in `format`.
pub fn encode(scene: &Scene, format: Format) -> Vec<u8> {
    match format {
        Format::Svg => svg::to_svg(scene).into_bytes(),
        Format::Png => raster::to_png(scene),
    }
}

/// Writes the scene atomically to `path`, as SVG or PNG by its extension.
///
/// # Errors
/// An unknown extension, or an I/O error (the target is then untouched).
pub fn save(scene: &Scene, path: &Path) -> Result<()> {
    let bytes = encode(scene, Format::of(path)?);
    let mut file = AtomicFile::create(path)?;
    file.write_all(&bytes).map_err(|e| Error::io(path, e))?;
    file.commit()
}

/// Round numbers for an axis from `lo` to `hi`: about `target` ticks at 1, 2 or 5 times a power
/// of ten.
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if hi <= lo || !lo.is_finite() || !hi.is_finite() {
        return vec![lo];
    }
    let raw = (hi - lo) / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|&s| s >= raw).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// What of `scene` reaches past its canvas, one line each (empty when everything fits): texts by
/// the embedded font's measure, from a little above their capitals to below their descenders.
#[cfg(test)]
pub(crate) fn outside(scene: &Scene) -> Vec<String> {
    let (w, h) = (f64::from(scene.width), f64::from(scene.height));
    let inside = |x0: f64, y0: f64, x1: f64, y1: f64| x0 >= -0.01 && y0 >= -0.01 && x1 <= w + 0.01 && y1 <= h + 0.01;
    let mut out = Vec::new();
    for item in &scene.items {
        let (x0, y0, x1, y1) = match item {
            Item::Rect(r) => (r.x, r.y, r.x + r.w, r.y + r.h),
            Item::Line(Line { points, .. }) | Item::Polygon { points, .. } => {
                points.iter().fold((f64::MAX, f64::MAX, f64::MIN, f64::MIN), |(a, b, c, d), &(x, y)| {
                    (a.min(x), b.min(y), c.max(x), d.max(y))
                })
            }
            Item::Text(t) => {
                let len = font::text_width(&t.text, t.size);
                let start = match t.anchor {
                    Anchor::Start => 0.0,
                    Anchor::Middle => -len / 2.0,
                    Anchor::End => -len,
                };
                let (up, down) = (t.size * 0.8, t.size * 0.25);
                if t.vertical {
                    (t.x - up, t.y - start - len, t.x + down, t.y - start)
                } else {
                    (t.x + start, t.y - up, t.x + start + len, t.y + down)
                }
            }
        };
        if !inside(x0, y0, x1, y1) {
            out.push(format!("{item:?} spans ({x0:.1}, {y0:.1})-({x1:.1}, {y1:.1}) of {w}x{h}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 1.0, 5), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        let t = nice_ticks(0.0, 7.3e6, 5);
        assert_eq!(t.first(), Some(&0.0));
        assert!(t.windows(2).all(|w| (w[1] - w[0] - 2e6).abs() < 1e-3), "{t:?}");
    }

    #[test]
    fn scales_interpolate_between_stops() {
        assert_eq!(scale(&[0x000000, 0xffffff], 0.5), Color::rgb(128, 128, 128));
        assert_eq!(scale(&[0x000000, 0xff0000, 0xffffff], 1.0), Color::rgb(255, 255, 255));
        assert_eq!(Color::hex(0xffffff).text_on(), Color::hex(0x111111));
        assert_eq!(Color::hex(0x000000).text_on(), Color::hex(0xffffff));
    }
}
