//! A [`Scene`] painted into pixels and encoded as PNG.
//!
//! Rectangles are painted with exact area coverage (the charts are mostly axis-aligned
//! rectangles, so this path must be fast and crisp); polylines, polygons and glyph outlines go
//! through a signed-area coverage rasterizer (`ab_glyph_rasterizer`). Colours are blended in sRGB
//! space, as browsers blend SVG, so both outputs look alike. The PNG is 8-bit RGB, each row
//! filtered with the PNG filter that minimises its absolute sum, deflated by `miniz_oxide`.

use ab_glyph_rasterizer::{Rasterizer, point};

use super::font::{self, Segment};
use super::{Anchor, Color, Item, Scene};

/// An RGB canvas of `f32` channels in 0..=255.
pub struct Canvas {
    width: usize,
    height: usize,
    px: Vec<[f32; 3]>,
}

impl Canvas {
    /// A canvas filled with `background`.
    pub fn new(width: u32, height: u32, background: Color) -> Self {
        let (width, height) = (width as usize, height as usize);
        let bg = [f32::from(background.r), f32::from(background.g), f32::from(background.b)];
        Canvas { width, height, px: vec![bg; width * height] }
    }

    /// Blends `color` over pixel `(x, y)` at `coverage` (0..=1).
    fn blend(&mut self, x: usize, y: usize, color: Color, coverage: f32) {
        let a = (color.a * coverage).clamp(0.0, 1.0);
        if a <= 0.0 {
            return;
        }
        let p = &mut self.px[y * self.width + x];
        for (ch, c) in p.iter_mut().zip([color.r, color.g, color.b]) {
            *ch += (f32::from(c) - *ch) * a;
        }
    }

    /// Fills an axis-aligned rectangle, edge pixels by the fraction of them it covers.
    pub fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Color) {
        if w.is_nan() || h.is_nan() || w <= 0.0 || h <= 0.0 {
            return;
        }
        let (x1, y1) = (x + w, y + h);
        let cols = x.floor().max(0.0) as usize..(x1.ceil().max(0.0) as usize).min(self.width);
        let rows = y.floor().max(0.0) as usize..(y1.ceil().max(0.0) as usize).min(self.height);
        let overlap = |p: usize, lo: f64, hi: f64| ((p as f64 + 1.0).min(hi) - (p as f64).max(lo)).max(0.0);
        for py in rows {
            let cy = overlap(py, y, y1);
            for px in cols.clone() {
                self.blend(px, py, color, (cy * overlap(px, x, x1)) as f32);
            }
        }
    }

    /// Fills closed outlines (non-zero winding for same-direction contours; overlaps clamp to
    /// full coverage).
    pub fn fill_path(&mut self, segments: &[Segment], color: Color) {
        let mut lo = (f64::MAX, f64::MAX);
        let mut hi = (f64::MIN, f64::MIN);
        let mut grow = |p: (f64, f64)| {
            lo = (lo.0.min(p.0), lo.1.min(p.1));
            hi = (hi.0.max(p.0), hi.1.max(p.1));
        };
        for s in segments {
            match *s {
                Segment::Line(a, b) => [a, b].into_iter().for_each(&mut grow),
                Segment::Quad(a, b, c) => [a, b, c].into_iter().for_each(&mut grow),
                Segment::Cubic(a, b, c, d) => [a, b, c, d].into_iter().for_each(&mut grow),
            }
        }
        if segments.is_empty() || !lo.0.is_finite() || !hi.0.is_finite() || !lo.1.is_finite() || !hi.1.is_finite() {
            return;
        }
        // The rasterizer's accumulation wraps from one row into the next, so the whole outline
        // must lie inside its box: size the box to the outline, and clip when copying out.
        let (ox, oy) = (lo.0.floor(), lo.1.floor());
        let (bw, bh) = ((hi.0.ceil() - ox) as usize + 1, (hi.1.ceil() - oy) as usize + 1);
        if bw > 4 * self.width + 64 || bh > 4 * self.height + 64 {
            return; // far outside the canvas: nothing of it would show
        }
        let mut r = Rasterizer::new(bw, bh);
        let p = |q: (f64, f64)| point((q.0 - ox) as f32, (q.1 - oy) as f32);
        for s in segments {
            match *s {
                Segment::Line(a, b) => r.draw_line(p(a), p(b)),
                Segment::Quad(a, b, c) => r.draw_quad(p(a), p(b), p(c)),
                Segment::Cubic(a, b, c, d) => r.draw_cubic(p(a), p(b), p(c), p(d)),
            }
        }
        let (w, h) = (self.width as i64, self.height as i64);
        r.for_each_pixel_2d(|x, y, cov| {
            let (cx, cy) = (ox as i64 + i64::from(x), oy as i64 + i64::from(y));
            if cov > 0.0 && (0..w).contains(&cx) && (0..h).contains(&cy) {
                self.blend(cx as usize, cy as usize, color, cov.min(1.0));
            }
        });
    }

    /// Strokes a polyline `width` wide with round joins: one quadrilateral per segment and a
    /// disc at each inner vertex, all wound the same way so their overlaps do not cancel.
    pub fn stroke(&mut self, points: &[(f64, f64)], width: f64, color: Color) {
        let h = width / 2.0;
        let mut segs = Vec::new();
        for w in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            let len = ((x1 - x0).powi(2) + (y1 - y0).powi(2)).sqrt();
            if len == 0.0 {
                continue;
            }
            let (nx, ny) = (-(y1 - y0) / len * h, (x1 - x0) / len * h);
            polygon(&mut segs, &[(x0 + nx, y0 + ny), (x1 + nx, y1 + ny), (x1 - nx, y1 - ny), (x0 - nx, y0 - ny)]);
        }
        if points.len() > 2 {
            for &(cx, cy) in &points[1..points.len() - 1] {
                let disc: Vec<(f64, f64)> = (0..16)
                    .map(|k| {
                        let t = f64::from(k) * std::f64::consts::TAU / 16.0;
                        (cx + h * t.cos(), cy + h * t.sin())
                    })
                    .collect();
                polygon(&mut segs, &disc);
            }
        }
        self.fill_path(&segs, color);
    }

    /// Strokes a polyline; an axis-aligned segment is a rectangle, crisp and cheap.
    fn line(&mut self, points: &[(f64, f64)], width: f64, color: Color) {
        match points[..] {
            [(x0, y0), (x1, y1)] if x0 == x1 => {
                self.fill_rect(x0 - width / 2.0, y0.min(y1), width, (y1 - y0).abs(), color);
            }
            [(x0, y0), (x1, y1)] if y0 == y1 => {
                self.fill_rect(x0.min(x1), y0 - width / 2.0, (x1 - x0).abs(), width, color);
            }
            _ => self.stroke(points, width, color),
        }
    }

    /// Draws a text item's glyphs.
    pub fn text(&mut self, t: &super::Text) {
        let shift = match t.anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => font::text_width(&t.text, t.size) / 2.0,
            Anchor::End => font::text_width(&t.text, t.size),
        };
        let (x, y) = if t.vertical { (t.x, t.y + shift) } else { (t.x - shift, t.y) };
        self.fill_path(&font::outline(&t.text, t.size, x, y, t.vertical), t.color);
    }

    /// The pixels as 8-bit RGB rows.
    pub fn rgb(&self) -> Vec<u8> {
        self.px.iter().flat_map(|p| p.map(|c| c.round().clamp(0.0, 255.0) as u8)).collect()
    }
}

/// Appends a closed polygon, wound clockwise on screen whatever order its points come in.
fn polygon(out: &mut Vec<Segment>, pts: &[(f64, f64)]) {
    let area: f64 = pts.iter().zip(pts.iter().cycle().skip(1)).map(|(a, b)| a.0 * b.1 - b.0 * a.1).sum();
    let mut pts = pts.to_vec();
    if area < 0.0 {
        pts.reverse();
    }
    for i in 0..pts.len() {
        out.push(Segment::Line(pts[i], pts[(i + 1) % pts.len()]));
    }
}

/// The dashes of a polyline under `pattern` (dash, gap, dash, gap, ... lengths, restarted from
/// the line's start, as SVG's `stroke-dasharray` reads an even list), each a polyline of its own.
fn dashes(points: &[(f64, f64)], pattern: &[f64]) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let Some(&first) = points.first() else { return out };
    // Where in the pattern the pen is: entry `k` (even: a dash), with `left` of it to go.
    let (mut k, mut left) = (0, pattern[0]);
    let mut dash = vec![first];
    for w in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let len = ((x1 - x0).powi(2) + (y1 - y0).powi(2)).sqrt();
        let mut done = 0.0;
        while len - done >= left {
            done += left;
            let p = (x0 + (x1 - x0) * done / len, y0 + (y1 - y0) * done / len);
            if k % 2 == 0 {
                dash.push(p);
                out.push(std::mem::take(&mut dash));
            } else {
                dash = vec![p];
            }
            k = (k + 1) % pattern.len();
            left = pattern[k];
        }
        left -= len - done;
        if k % 2 == 0 {
            dash.push((x1, y1));
        }
    }
    if k % 2 == 0 && dash.len() > 1 {
        out.push(dash);
    }
    out
}

/// Paints the scene.
pub fn paint(scene: &Scene) -> Canvas {
    let mut c = Canvas::new(scene.width, scene.height, scene.background);
    for item in &scene.items {
        match item {
            Item::Rect(r) => c.fill_rect(r.x, r.y, r.w, r.h, r.fill),
            Item::Line(l) if l.dash.is_empty() => c.line(&l.points, l.width, l.color),
            Item::Line(l) => {
                for dash in dashes(&l.points, l.dash) {
                    c.line(&dash, l.width, l.color);
                }
            }
            Item::Polygon { points, fill, .. } => {
                let mut segs = Vec::new();
                polygon(&mut segs, points);
                c.fill_path(&segs, *fill);
            }
            Item::Text(t) => c.text(t),
        }
    }
    c
}

/// The scene as a PNG file.
pub fn to_png(scene: &Scene) -> Vec<u8> {
    encode_png(scene.width, scene.height, &paint(scene).rgb())
}

/// CRC-32 (ISO 3309, as PNG chunks use it) of `parts` one after the other.
fn crc32(parts: &[&[u8]]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    parts.iter().for_each(|p| hasher.update(p));
    hasher.finalize()
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(&[kind, data]).to_be_bytes());
}

/// The prediction of PNG filter `kind` (0 none, 1 sub, 2 up, 3 average, 4 Paeth) from the bytes to
/// the left (`a`), above (`b`) and above-left (`c`).
fn predict(kind: u8, a: u8, b: u8, c: u8) -> u8 {
    match kind {
        0 => 0,
        1 => a,
        2 => b,
        3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
        _ => paeth(a, b, c),
    }
}

/// The Paeth predictor of the PNG specification.
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = ((p - i16::from(a)).abs(), (p - i16::from(b)).abs(), (p - i16::from(c)).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// An 8-bit RGB image (`rgb` is `width * height * 3` bytes, rows top down) as a PNG file.
pub fn encode_png(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    const BPP: usize = 3;
    let stride = width as usize * BPP;
    assert_eq!(rgb.len(), stride * height as usize, "one RGB triple per pixel");
    let mut raw = Vec::with_capacity((stride + 1) * height as usize);
    let zero = vec![0u8; stride];
    let mut candidate = vec![0u8; stride];
    let mut best = vec![0u8; stride];
    for y in 0..height as usize {
        let row = &rgb[y * stride..(y + 1) * stride];
        let up = if y == 0 { &zero[..] } else { &rgb[(y - 1) * stride..y * stride] };
        let mut best_kind = 0u8;
        let mut best_cost = u64::MAX;
        for kind in 0..5u8 {
            for i in 0..stride {
                let a = if i >= BPP { row[i - BPP] } else { 0 };
                let c = if i >= BPP { up[i - BPP] } else { 0 };
                candidate[i] = row[i].wrapping_sub(predict(kind, a, up[i], c));
            }
            // The usual heuristic: the smallest sum of the bytes read as signed.
            let cost: u64 = candidate.iter().map(|&v| u64::from((v as i8).unsigned_abs())).sum();
            if cost < best_cost {
                best_cost = cost;
                best_kind = kind;
                std::mem::swap(&mut best, &mut candidate);
            }
        }
        raw.push(best_kind);
        raw.extend_from_slice(&best);
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8 bits, RGB, deflate, adaptive filters, no interlace
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &miniz_oxide::deflate::compress_to_vec_zlib(&raw, 9));
    chunk(&mut out, b"IEND", &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_png_specification() {
        // The CRC of an IEND chunk is fixed.
        assert_eq!(crc32(&[b"IEND"]), 0xae42_6082);
        assert_eq!(crc32(&[b"123456789"]), 0xcbf4_3926);
    }

    #[test]
    fn png_round_trips_through_inflate() {
        let (w, h) = (7u32, 5u32);
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 251) as u8).collect();
        let png = encode_png(w, h, &rgb);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), w);
        // Undo the filters and compare.
        let len = u32::from_be_bytes(png[33..37].try_into().unwrap()) as usize;
        assert_eq!(&png[37..41], b"IDAT");
        let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&png[41..41 + len]).unwrap();
        let stride = (w * 3) as usize;
        let mut img = vec![0u8; stride * h as usize];
        for y in 0..h as usize {
            let kind = raw[y * (stride + 1)];
            for i in 0..stride {
                let v = raw[y * (stride + 1) + 1 + i];
                let a = if i >= 3 { img[y * stride + i - 3] } else { 0 };
                let b = if y > 0 { img[(y - 1) * stride + i] } else { 0 };
                let c = if i >= 3 && y > 0 { img[(y - 1) * stride + i - 3] } else { 0 };
                img[y * stride + i] = v.wrapping_add(predict(kind, a, b, c));
            }
        }
        assert_eq!(img, rgb);
    }

    #[test]
    fn rects_cover_by_area_and_strokes_do_not_cancel() {
        let mut c = Canvas::new(4, 2, Color::rgb(255, 255, 255));
        c.fill_rect(0.5, 0.0, 2.0, 1.0, Color::rgb(0, 0, 0));
        let px = c.rgb();
        assert_eq!(&px[..12], &[128, 128, 128, 0, 0, 0, 128, 128, 128, 255, 255, 255]);
        // A polyline folding back on itself stays fully painted where it overlaps.
        let mut c = Canvas::new(20, 20, Color::rgb(255, 255, 255));
        c.stroke(&[(2.0, 10.0), (18.0, 10.0), (2.0, 10.5)], 4.0, Color::rgb(0, 0, 0));
        assert_eq!(c.rgb()[(10 * 20 + 10) * 3], 0);
    }

    #[test]
    fn dashes_follow_the_pattern_around_corners() {
        let d = dashes(&[(0.0, 0.0), (10.0, 0.0), (10.0, 10.0)], &[4.0, 2.0]);
        let want: Vec<Vec<(f64, f64)>> = vec![
            vec![(0.0, 0.0), (4.0, 0.0)],
            vec![(6.0, 0.0), (10.0, 0.0)],
            vec![(10.0, 2.0), (10.0, 6.0)],
            vec![(10.0, 8.0), (10.0, 10.0)],
        ];
        assert_eq!(d, want);
        // A dash running through a vertex keeps the vertex.
        assert_eq!(
            dashes(&[(0.0, 0.0), (3.0, 0.0), (3.0, 3.0)], &[5.0, 1.0])[0],
            vec![(0.0, 0.0), (3.0, 0.0), (3.0, 2.0)]
        );
    }
}
