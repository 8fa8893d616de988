//! The association tree as an icicle: one row per depth, each association a rectangle whose
//! horizontal extent is the block of fair-share ranks its users hold.
//!
//! The N users are put in slots 1..=N, best last: by rank (Fair Tree, flux), ties side by side
//! in tree order, so a user whose rank is shared with nobody sits in slot = rank and its slab
//! `[(rank-1)/N, rank/N]` ends exactly at its factor `rank/N`. An account covers the slabs of the
//! users below it. Fair Tree ranks the users below a sibling it placed higher all above those
//! of a sibling placed lower, so a subtree's slabs are one contiguous block and the picture is a
//! true partition, except where an account has `FairShare=parent`: Fair Tree lifts its children
//! to compete with its siblings, and its users' slabs may then be split by a sibling's block; the
//! account is then drawn as one rectangle per contiguous run of its slabs. Classic has no ranks:
//! users are ordered by factor, and accounts break into runs wherever their users interleave with
//! others'. Accounts without users below them hold no rank and are not drawn.

use std::fmt::Write;

use super::font::{self, cap_height, fit_among};
use super::{Anchor, Color, Rect, Scene, Text, nice_ticks, scale};
use fairshare_analyses::explain::{assoc_name, num};
use fairshare_base::named::{Choice, Named};
use fairshare_engine::pass::{Algorithm, FairShare};
use fairshare_engine::tree::AssocTree;

/// What the rectangles' colour shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorBy {
    /// Level FS (Fair Tree: S/U among siblings; flux: the sibling weight), on a log scale.
    LevelFs,
    /// The fair-share factor (accounts: the mean over their users).
    Factor,
}

/// The colourings' names, as `--color` spells them.
impl Named for ColorBy {
    const CHOICES: &'static [Choice<Self>] = &[
        Choice::new(ColorBy::LevelFs, "level-fs", "Level FS (S/U) on a log scale (default for Fair Tree and flux)"),
        Choice::new(
            ColorBy::Factor,
            "factor",
            "The fair-share factor; accounts take the mean of their users' (default for classic)",
        ),
    ];
}

/// Layout options.
#[derive(Clone, Debug)]
pub struct IcicleOptions {
    /// Picture width in pixels.
    pub width: u32,
    /// Deepest depth drawn (the root is 0); `None` for all.
    pub depth: Option<usize>,
    /// Colouring; `None` for Level FS under Fair Tree and the factor otherwise.
    pub color: Option<ColorBy>,
    /// First line of the title (e.g. the tree's file name).
    pub title: String,
}

impl Default for IcicleOptions {
    fn default() -> Self {
        IcicleOptions { width: 1200, depth: None, color: None, title: String::new() }
    }
}

/// Diverging scale for Level FS, over-used (red) to under-used (blue), pale at 1 (RdYlBu).
const LEVEL_FS_STOPS: &[u32] = &[0xd73027, 0xfc8d59, 0xfee090, 0xffffbf, 0xe0f3f8, 0x91bfdb, 0x4575b4];
/// Sequential scale for factors, 0 to 1 (viridis).
const FACTOR_STOPS: &[u32] = &[0x440154, 0x414487, 0x2a788e, 0x22a884, 0x7ad151, 0xfde725];
/// Level FS beyond 2^±3 takes the end colours.
const LOG2_SPAN: f64 = 3.0;
/// Associations without a value to colour by (the root, `parent` shares).
const NO_VALUE: Color = Color::rgb(0xd4, 0xd4, 0xd4);
const INK: Color = Color::rgb(0x22, 0x22, 0x22);
const MUTED: Color = Color::rgb(0x66, 0x66, 0x66);

/// Slot (1..=N, N best) of every user row; 0 for accounts.
pub fn user_slots(tree: &AssocTree, fs: &FairShare) -> Vec<u32> {
    let order = tree.preorder();
    let mut pre = vec![0u32; tree.len()];
    for (i, &r) in order.iter().enumerate() {
        pre[r as usize] = i as u32;
    }
    let mut users: Vec<usize> = (0..tree.len()).filter(|&r| tree.is_user(r)).collect();
    let ranked = users.iter().any(|&u| fs.rank[u] > 0);
    // Best first: higher rank (or factor, for classic; NaN last), then tree order.
    let key = |u: usize| if ranked { f64::from(fs.rank[u]) } else { fs.fs_factor[u] };
    users.sort_by(|&a, &b| {
        let (ka, kb) = (key(a), key(b));
        let ka = if ka.is_nan() { f64::NEG_INFINITY } else { ka };
        let kb = if kb.is_nan() { f64::NEG_INFINITY } else { kb };
        kb.total_cmp(&ka).then(pre[a].cmp(&pre[b]))
    });
    let n = users.len() as u32;
    let mut slot = vec![0u32; tree.len()];
    for (i, &u) in users.iter().enumerate() {
        slot[u] = n - i as u32;
    }
    slot
}

/// The maximal runs `(first, last)` of consecutive slots held by the users of `row`'s subtree,
/// lowest first.
pub fn runs(tree: &AssocTree, slots: &[u32], row: usize) -> Vec<(u32, u32)> {
    let mut held = Vec::new();
    let mut stack = vec![row];
    while let Some(r) = stack.pop() {
        if tree.is_user(r) {
            held.push(slots[r]);
        }
        stack.extend(tree.children(r));
    }
    held.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for s in held {
        match out.last_mut() {
            Some(last) if last.1 + 1 == s => last.1 = s,
            _ => out.push((s, s)),
        }
    }
    out
}

/// Min, max and mean factor of the users below `row`.
fn factor_stats(tree: &AssocTree, fs: &FairShare, row: usize) -> Option<(f64, f64, f64)> {
    let mut stack = vec![row];
    let (mut lo, mut hi, mut sum, mut n) = (f64::MAX, f64::MIN, 0.0, 0usize);
    while let Some(r) = stack.pop() {
        let f = fs.fs_factor[r];
        if tree.is_user(r) && !f.is_nan() {
            (lo, hi, sum, n) = (lo.min(f), hi.max(f), sum + f, n + 1);
        }
        stack.extend(tree.children(r));
    }
    (n > 0).then(|| (lo, hi, sum / n as f64))
}

fn level_fs_color(v: f64) -> Color {
    if v.is_nan() {
        return NO_VALUE;
    }
    let l = if v == f64::INFINITY { LOG2_SPAN } else { v.max(f64::MIN_POSITIVE).log2() };
    scale(LEVEL_FS_STOPS, (l.clamp(-LOG2_SPAN, LOG2_SPAN) + LOG2_SPAN) / (2.0 * LOG2_SPAN))
}

fn factor_color(v: f64) -> Color {
    if v.is_nan() { NO_VALUE } else { scale(FACTOR_STOPS, v) }
}

/// Three significant digits, for a label inside a rectangle.
fn short(v: f64) -> String {
    if v.is_infinite() {
        "∞".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Lays out the icicle of `tree` under the pass `fs`.
pub fn icicle(tree: &AssocTree, fs: &FairShare, opts: &IcicleOptions) -> Scene {
    let algorithm = fs.params.algorithm;
    let color_by =
        opts.color.unwrap_or(if algorithm == Algorithm::Classic { ColorBy::Factor } else { ColorBy::LevelFs });
    let slots = user_slots(tree, fs);
    let n = tree.user_count().max(1) as u32;
    let max_depth = tree.levels().saturating_sub(1).min(opts.depth.unwrap_or(usize::MAX));

    let width = opts.width.max(320);
    let (left, right) = (16.0, f64::from(width) - 16.0);
    let plot_w = right - left;
    // Row height: roomy for two lines of text, tighter for deep trees.
    let row_h: f64 = if max_depth >= 8 { 30.0 } else { 40.0 };
    // The height follows from what the title, axis label and legend need at this width.
    let mut scene = Scene::new(width, 0);
    // Where fraction 0 and 1 of the axis are, so a reader (or a test) can map x back to ranks.
    scene.data.push(("data-plot-x0", left.to_string()));
    scene.data.push(("data-plot-x1", right.to_string()));
    scene.data.push(("data-users", n.to_string()));
    let x_exact = |slot: u32| left + f64::from(slot) / f64::from(n) * plot_w;
    // Slot boundaries on whole pixels, so nested rows line up exactly.
    let x_at = |slot: u32| x_exact(slot).round();
    // Pieces narrower than a pixel (large trees) are pooled per row and pixel column.
    let mut dense = vec![Dense::new(width as usize); max_depth + 1];
    // Labels are placed once a row's names are all known, so a shortened one stays distinct.
    let mut labels: Vec<Vec<Label>> = vec![Vec::new(); max_depth + 1];

    let what = match algorithm {
        Algorithm::FairTree => "Fair Tree",
        Algorithm::Flux => "Flux weighted-tree",
        Algorithm::Classic => "Classic",
    };
    let title = if opts.title.is_empty() { format!("{what} icicle") } else { format!("{what} icicle: {}", opts.title) };
    let title_y = scene.paragraph(Text::new(left, 26.0, 17.0, Anchor::Start, INK, title), plot_w, 21.0);
    let width_means = if algorithm == Algorithm::Classic {
        "Width: a 1/N slab per user, users ordered by factor (classic has no ranks; accounts split where their users interleave)."
    } else {
        "Width: each subtree's block of ranks, so of factors (a user is a 1/N slab ending at its factor; tied users side by side)."
    };
    let sub = Text::new(left, title_y + 21.0, 12.0, Anchor::Start, MUTED, width_means);
    let top = scene.paragraph(sub, plot_w, 15.0) + 17.0;
    let rows_bottom = top + (max_depth + 1) as f64 * row_h;
    let axis_y = rows_bottom + 6.0;

    let color_of = |row: usize| match color_by {
        // The root holds every user: its colour would say nothing.
        _ if row == 0 => NO_VALUE,
        ColorBy::LevelFs => level_fs_color(fs.level_fs[row]),
        ColorBy::Factor if tree.is_user(row) => factor_color(fs.fs_factor[row]),
        ColorBy::Factor => factor_color(factor_stats(tree, fs, row).map_or(f64::NAN, |s| s.2)),
    };

    for row in 0..tree.len() {
        let depth = tree.depths()[row] as usize;
        if depth > max_depth {
            continue;
        }
        let pieces = runs(tree, &slots, row);
        if pieces.is_empty() {
            continue;
        }
        let fill = color_of(row);
        let name = if row == 0 {
            tree.account(0).to_string()
        } else {
            match (tree.user_name(row), tree.partition(row)) {
                (Some(u), Some(p)) => format!("{u}@{p}"),
                (Some(u), None) => u.to_string(),
                (None, _) => tree.account(row).to_string(),
            }
        };
        let stats = factor_stats(tree, fs, row);
        let lfs = fs.level_fs[row];
        // The second line: what decides the place among siblings, or the user's factor.
        let detail = if row == 0 {
            format!("{n} users")
        } else if tree.is_user(row) {
            let f = fs.fs_factor[row];
            if f.is_nan() { String::new() } else { format!("{f:.3}") }
        } else if row != 0 && !lfs.is_nan() && algorithm != Algorithm::Classic {
            format!("{} {}", if algorithm == Algorithm::Flux { "w" } else { "LFS" }, short(lfs))
        } else if row != 0 && tree.is_parent_shares(row) {
            "parent".to_string()
        } else {
            String::new()
        };
        let mut tip = assoc_name(tree, row);
        let held: u32 = pieces.iter().map(|(a, b)| b - a + 1).sum();
        if tree.is_user(row) {
            let _ = write!(tip, ": factor {}", num(fs.fs_factor[row]));
            if fs.rank[row] > 0 {
                let _ = write!(tip, ", rank {} of {n}", fs.rank[row]);
            }
        } else {
            let _ = write!(tip, ": {held} user(s)");
            if let Some((lo, hi, mean)) = stats {
                let _ = write!(tip, ", factors {} to {} (mean {})", num(lo), num(hi), num(mean));
            }
        }
        if !lfs.is_nan() {
            let _ = write!(tip, ", {} {}", if algorithm == Algorithm::Flux { "weight" } else { "Level FS" }, num(lfs));
        }
        if pieces.len() > 1 {
            let _ = write!(tip, "; {} separate runs of slots", pieces.len());
        }
        let y = top + depth as f64 * row_h;
        for &(first, last) in &pieces {
            if x_exact(last) - x_exact(first - 1) < 1.0 {
                dense[depth].add(x_exact(first - 1), x_exact(last), fill);
                continue;
            }
            let (x0, x1) = (x_at(first - 1), x_at(last));
            // A 1-pixel white seam between neighbours, unless that would eat the rectangle.
            let gap = if x1 - x0 >= 3.0 { 1.0 } else { 0.0 };
            let w = x1 - x0 - gap;
            let mut rect = Rect::new(x0, y, w, row_h - 1.0, fill);
            rect.class = "assoc";
            rect.data.push(("data-name", assoc_name(tree, row)));
            rect.data.push(("data-slots", format!("{first}-{last}")));
            rect.title = Some(tip.clone());
            scene.rect(rect);
            let color = fill.text_on();
            labels[depth].push(Label {
                name: name.clone(),
                detail: detail.clone(),
                cx: x0 + w / 2.0,
                room: w - 6.0,
                color,
            });
        }
    }

    for (depth, d) in dense.iter().enumerate() {
        d.draw(&mut scene, top + depth as f64 * row_h, row_h - 1.0);
    }
    for (depth, row) in labels.iter().enumerate() {
        let mut names: Vec<&str> = row.iter().map(|l| l.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for l in row {
            l.draw(&mut scene, &names, top + depth as f64 * row_h, row_h - 1.0);
        }
    }

    // The axis: the factor of the slab boundaries.
    let ink = Color::rgb(0x44, 0x44, 0x44);
    scene.segment((left, axis_y), (right, axis_y), ink, 1.0);
    let ticks = nice_ticks(0.0, 1.0, if plot_w >= 600.0 { 10 } else { 5 });
    for t in ticks {
        let x = left + (t * plot_w).round();
        scene.segment((x, axis_y), (x, axis_y + 5.0), ink, 1.0);
        scene.text(Text::new(x, axis_y + 18.0, 11.0, Anchor::Middle, ink, fairshare_analyses::chart::short_number(t)));
    }
    let axis_label = if algorithm == Algorithm::Classic {
        format!("position among the {n} users, by fair-share factor")
    } else {
        format!("fair-share factor = rank / {n} users")
    };
    let axis_title = Text::new(left + plot_w / 2.0, axis_y + 36.0, 12.0, Anchor::Middle, INK, axis_label);
    let legend_y = scene.paragraph(axis_title, plot_w, 15.0) + 22.0;
    let bottom = legend(&mut scene, color_by, algorithm, left, legend_y, plot_w);
    scene.height = (bottom + 12.0).ceil() as u32;
    scene
}

/// Pieces narrower than a pixel, pooled per pixel column of one row: each column is drawn once,
/// in the mean colour of what falls in it weighted by width, and as opaque as it is covered (the
/// area-weighted blend a rasterizer would make of the pieces themselves), so a tree of a million
/// users stays a picture of its colours and an SVG of at most a few thousand rectangles.
#[derive(Clone)]
struct Dense {
    /// Per column: width-weighted sums of red, green, blue, and the covered width.
    sums: Vec<[f64; 4]>,
}

impl Dense {
    fn new(width: usize) -> Self {
        Dense { sums: vec![[0.0; 4]; width] }
    }

    fn add(&mut self, x0: f64, x1: f64, c: Color) {
        let first = x0.floor().max(0.0) as usize;
        let last = (x1.ceil().max(0.0) as usize).min(self.sums.len());
        for col in first..last {
            let w = ((col + 1) as f64).min(x1) - (col as f64).max(x0);
            if w > 0.0 {
                let s = &mut self.sums[col];
                s[0] += f64::from(c.r) * w;
                s[1] += f64::from(c.g) * w;
                s[2] += f64::from(c.b) * w;
                s[3] += w;
            }
        }
    }

    fn draw(&self, scene: &mut Scene, y: f64, h: f64) {
        let color = |s: &[f64; 4]| {
            let c = |v: f64| (v / s[3]).round().clamp(0.0, 255.0) as u8;
            Color::rgb(c(s[0]), c(s[1]), c(s[2])).alpha(s[3].min(1.0) as f32)
        };
        let mut col = 0;
        while col < self.sums.len() {
            if self.sums[col][3] <= 0.0 {
                col += 1;
                continue;
            }
            // One rectangle for a stretch of columns of the same colour.
            let c = color(&self.sums[col]);
            let start = col;
            while col < self.sums.len() && self.sums[col][3] > 0.0 && color(&self.sums[col]) == c {
                col += 1;
            }
            let mut r = Rect::new(start as f64, y, (col - start) as f64, h, c);
            r.class = "dense";
            r.title = Some("associations narrower than a pixel, blended".into());
            scene.rect(r);
        }
    }
}

/// An association's label, centred in one of its rectangles: its name, and a detail line when
/// there is room.
#[derive(Clone)]
struct Label {
    name: String,
    detail: String,
    /// The rectangle's centre.
    cx: f64,
    /// The width text may take.
    room: f64,
    color: Color,
}

impl Label {
    /// Draws the label in the row at `y`, `h` high, among the row's `names` (sorted): shortened
    /// with `…` so it still reads as no other of them, or left out (the rectangle's tooltip
    /// names it) when that cannot be done in the room.
    fn draw(&self, scene: &mut Scene, names: &[&str], y: f64, h: f64) {
        let (size, small) = (12.0, 10.5);
        let Some(shown) = fit_among(&self.name, names, size, self.room) else { return };
        let (cx, color) = (self.cx, self.color);
        let two = !self.detail.is_empty() && h >= 34.0 && font::text_width(&self.detail, small) <= self.room;
        if two {
            let block = cap_height(size) + 4.0 + cap_height(small);
            let base = y + (h - block) / 2.0 + cap_height(size);
            scene.text(Text::new(cx, base, size, Anchor::Middle, color, shown));
            let detail = self.detail.clone();
            scene.text(Text::new(cx, base + 4.0 + cap_height(small) + 1.0, small, Anchor::Middle, color, detail));
        } else {
            scene.text(Text::new(cx, y + (h + cap_height(size)) / 2.0, size, Anchor::Middle, color, shown));
        }
    }
}

/// The colour key: a gradient bar with ticks, and a swatch for "no value", laid out in `room`
/// from `(x, y)`: on one line when it fits, else its title, bar and swatch stacked (the bar
/// narrower if need be). Returns the key's bottom.
fn legend(scene: &mut Scene, color_by: ColorBy, algorithm: Algorithm, x: f64, y: f64, room: f64) -> f64 {
    let bar_h = 12.0;
    let steps = 65;
    let (title, ticks): (&str, Vec<(f64, String)>) = match color_by {
        ColorBy::LevelFs => (
            if algorithm == Algorithm::Flux { "weight (log scale)" } else { "Level FS = S/U (log scale)" },
            [(-3, "≤1/8"), (-2, "1/4"), (-1, "1/2"), (0, "1"), (1, "2"), (2, "4"), (3, "≥8")]
                .into_iter()
                .map(|(l, s)| ((f64::from(l) + LOG2_SPAN) / (2.0 * LOG2_SPAN), s.to_string()))
                .collect(),
        ),
        ColorBy::Factor => (
            "fair-share factor (accounts: mean of their users)",
            (0..=4)
                .map(|k| (f64::from(k) / 4.0, fairshare_analyses::chart::short_number(f64::from(k) / 4.0)))
                .collect(),
        ),
    };
    let none = match color_by {
        ColorBy::LevelFs => "none: the root, FairShare=parent",
        ColorBy::Factor => "the root; no factor",
    };
    let ends = (color_by == ColorBy::LevelFs).then_some(("← over-used", "under-used →"));
    // The end tick labels are centred on the bar's ends and stick out by half their width.
    let overhang = |t: Option<&(f64, String)>| t.map_or(0.0, |t| font::text_width(&t.1, 10.5) / 2.0);
    let (out_l, out_r) = (overhang(ticks.first()), overhang(ticks.last()));
    let (title_w, none_w) = (font::text_width(title, 12.0), font::text_width(none, 12.0));
    let one_line = title_w + 12.0 + 260.0 + 28.0 + 24.0 + none_w <= room;
    let title_y = if one_line { y + bar_h - 1.0 } else { y + 11.0 };
    let title_end = scene.paragraph(Text::new(x, title_y, 12.0, Anchor::Start, INK, title), room, 15.0);
    let (bx, by, bar_w) = if one_line {
        (x + title_w + 12.0, y, 260.0)
    } else {
        (x + out_l, title_end + 9.0, (room - out_l - out_r).min(260.0))
    };
    let stops = if color_by == ColorBy::LevelFs { LEVEL_FS_STOPS } else { FACTOR_STOPS };
    for k in 0..steps {
        let t = (f64::from(k) + 0.5) / f64::from(steps);
        let seg = bar_w / f64::from(steps);
        let mut r = Rect::new(bx + f64::from(k) * seg, by, seg + 0.05, bar_h, scale(stops, t));
        r.class = "legend";
        scene.rect(r);
    }
    for (t, s) in ticks {
        let tx = bx + t * bar_w;
        scene.segment((tx, by + bar_h), (tx, by + bar_h + 4.0), INK, 1.0);
        scene.text(Text::new(tx, by + bar_h + 16.0, 10.5, Anchor::Middle, INK, s));
    }
    let mut bottom = by + bar_h + 20.0;
    if let Some((over, under)) = ends {
        scene.text(Text::new(bx - 2.0, by + bar_h + 30.0, 10.5, Anchor::Start, MUTED, over));
        scene.text(Text::new(bx + bar_w + 2.0, by + bar_h + 30.0, 10.5, Anchor::End, MUTED, under));
        bottom = by + bar_h + 34.0;
    }
    let (sx, sy) = if one_line { (bx + bar_w + 28.0, y) } else { (x, bottom + 8.0) };
    let mut swatch = Rect::new(sx, sy, 18.0, bar_h, NO_VALUE);
    swatch.class = "legend";
    scene.rect(swatch);
    let last =
        scene.paragraph(Text::new(sx + 24.0, sy + bar_h - 1.0, 12.0, Anchor::Start, INK, none), room - 24.0, 15.0);
    bottom.max(last + 4.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairshare_engine::pass::{Params, compute};

    #[test]
    fn slots_follow_ranks_and_subtrees_are_blocks() {
        let tree = fairshare_engine::io::default_tree().unwrap();
        let fs = compute(&tree, &Params::new(Algorithm::FairTree)).unwrap();
        let slots = user_slots(&tree, &fs);
        let n = tree.user_count() as u32;
        let mut seen: Vec<u32> = (0..tree.len()).filter(|&r| tree.is_user(r)).map(|r| slots[r]).collect();
        seen.sort_unstable();
        assert_eq!(seen, (1..=n).collect::<Vec<_>>());
        for r in (0..tree.len()).filter(|&r| tree.is_user(r)) {
            // A slot never passes the rank; ties step down from it.
            assert!(slots[r] <= fs.rank[r], "{}", assoc_name(&tree, r));
        }
        assert_eq!(runs(&tree, &slots, 0), vec![(1, n)]);
        for c in tree.children(0) {
            assert!(runs(&tree, &slots, c).len() <= 1, "{}", assoc_name(&tree, c));
        }
    }

    #[test]
    fn draws_one_tagged_rect_per_run() {
        let tree = fairshare_engine::io::default_tree().unwrap();
        let fs = compute(&tree, &Params::new(Algorithm::FairTree)).unwrap();
        let scene = icicle(&tree, &fs, &IcicleOptions::default());
        let slots = user_slots(&tree, &fs);
        let expected: usize = (0..tree.len()).map(|r| runs(&tree, &slots, r).len()).sum();
        let drawn =
            scene.items.iter().filter(|i| matches!(i, super::super::Item::Rect(r) if r.class == "assoc")).count();
        assert_eq!(drawn, expected);
        let shallow = icicle(&tree, &fs, &IcicleOptions { depth: Some(1), ..Default::default() });
        assert!(shallow.height < scene.height || tree.levels() <= 2);
    }

    #[test]
    fn everything_fits_at_the_narrowest_width() {
        let tree = fairshare_engine::io::default_tree().unwrap();
        for algorithm in [Algorithm::FairTree, Algorithm::Classic] {
            let fs = compute(&tree, &Params::new(algorithm)).unwrap();
            for color in [ColorBy::LevelFs, ColorBy::Factor] {
                for width in [320, 500, 1200] {
                    let title = "tree.csv at 2026-01-08T00:00:00".to_string();
                    let opts = IcicleOptions { width, color: Some(color), title, ..Default::default() };
                    let out = super::super::outside(&icicle(&tree, &fs, &opts));
                    assert!(out.is_empty(), "{algorithm:?} {color:?} at {width}: {out:#?}");
                }
            }
        }
    }

    #[test]
    fn shortened_labels_name_one_association_of_their_row() {
        let tree = fairshare_engine::io::default_tree().unwrap();
        let fs = compute(&tree, &Params::new(Algorithm::FairTree)).unwrap();
        for width in (320..=1600).step_by(20) {
            let scene = icicle(&tree, &fs, &IcicleOptions { width, ..Default::default() });
            let rects: Vec<&Rect> = scene
                .items
                .iter()
                .filter_map(|i| match i {
                    super::super::Item::Rect(r) if r.class == "assoc" => Some(r),
                    _ => None,
                })
                .collect();
            let label_of = |r: &Rect| r.data[0].1.rsplit('/').next().unwrap().to_string();
            for t in scene.items.iter().filter_map(|i| match i {
                super::super::Item::Text(t) if t.text.contains('…') => Some(t),
                _ => None,
            }) {
                let own =
                    rects.iter().find(|r| r.y <= t.y && t.y <= r.y + r.h && r.x <= t.x && t.x <= r.x + r.w).unwrap();
                let (head, tail) = t.text.split_once('…').unwrap();
                let mut readers: Vec<String> = rects
                    .iter()
                    .filter(|r| r.y == own.y)
                    .map(|r| label_of(r))
                    .filter(|n| n.starts_with(head) && n.ends_with(tail) && n.len() >= head.len() + tail.len())
                    .collect();
                readers.sort_unstable();
                readers.dedup();
                assert_eq!(readers, vec![label_of(own)], "at {width}: {:?} reads as {readers:?}", t.text);
            }
        }
    }
}
