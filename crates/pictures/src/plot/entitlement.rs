//! Entitlement now, per top-level account: for one TRES, three bars side by side, what the
//! account's jobs ask for (demand: running + pending), what it deserves by its shares, and what
//! its running jobs hold (allocated). An account holding more than it deserves has its allocated
//! bar in the "over" colour.

use super::font::text_width;
use super::{Anchor, Color, Rect, Scene, Text, nice_ticks};
use fairshare_analyses::chart::short_number;
use fairshare_analyses::entitlement::Entitlement;
use fairshare_engine::config::Tres;
use fairshare_engine::tree::AssocTree;

const INK: Color = Color::rgb(0x22, 0x22, 0x22);
const MUTED: Color = Color::rgb(0x66, 0x66, 0x66);
const GRID: Color = Color::rgb(0xe6, 0xe6, 0xe6);
const DEMAND: Color = Color::hex(0xbbbbbb);
const DESERVED: Color = Color::hex(0x0072b2);
const ALLOCATED: Color = Color::hex(0x009e73);
const OVER: Color = Color::hex(0xd55e00);

/// The bar chart of TRES `k` of `e` for the root's children, `width` pixels wide; `source` names
/// the site in the subtitle. Memory is drawn in GB.
pub fn chart(tree: &AssocTree, e: &Entitlement, k: usize, width: u32, source: &str) -> Scene {
    let tres = &e.tres[k];
    let scale = if *tres == Tres::MEM { 1.0 / 1024.0 } else { 1.0 };
    let unit = if *tres == Tres::MEM { "mem (GB)".to_string() } else { tres.to_string() };
    let rows: Vec<usize> = tree.children(0).collect();
    let name = |r: usize| match tree.user_name(r) {
        Some(u) => format!("{u}@{}", tree.account(r)),
        None => tree.account(r).to_string(),
    };
    let labels: Vec<String> = rows.iter().map(|&r| name(r)).collect();
    let values: Vec<[f64; 3]> = rows
        .iter()
        .map(|&r| [e.demand(k, r) as f64 * scale, e.deserved[k][r] * scale, e.running[k][r] as f64 * scale])
        .collect();
    let top = values.iter().flatten().copied().fold(0.0, f64::max).max(1.0);
    let ticks = nice_ticks(0.0, top, 5);
    let y_max = ticks.last().copied().filter(|&t| t >= top).unwrap_or(top);

    let label_size = 12.0;
    let longest = labels.iter().map(|l| text_width(l, label_size)).fold(0.0, f64::max);
    let (left, right) = (64.0, 16.0);
    let text_w = f64::from(width) - left - right;
    let bottom = longest + 40.0;
    let mut scene = Scene::new(width, 0);
    scene.text(Text::new(left, 22.0, 16.0, Anchor::Start, INK, format!("Entitlement now: {unit}")));
    let capacity = e.capacity[k] as f64 * scale;
    let subtitle = format!(
        "capacity {} · demand {} · deserved {} · allocated {} · {source}",
        short_number(capacity),
        short_number(e.demand(k, 0) as f64 * scale),
        short_number(e.deserved[k][0] * scale),
        short_number(e.running[k][0] as f64 * scale),
    );
    let last = scene.paragraph(Text::new(left, 40.0, 11.0, Anchor::Start, MUTED, subtitle), text_w, 14.0);
    // The legend, on as many lines as the width needs.
    let (mut x, mut y) = (left, last + 10.0);
    for (color, what) in
        [(DEMAND, "demand"), (DESERVED, "deserved"), (ALLOCATED, "allocated"), (OVER, "allocated > deserved")]
    {
        let w = 16.0 + text_width(what, 11.0);
        if x > left && x + w > left + text_w {
            (x, y) = (left, y + 18.0);
        }
        scene.rect(Rect::new(x, y, 12.0, 12.0, color));
        scene.text(Text::new(x + 16.0, y + 10.0, 11.0, Anchor::Start, INK, what));
        x += w + 18.0;
    }
    let top_margin = y + 28.0;
    let height = (top_margin + 250.0 + bottom).round();
    scene.height = height as u32;
    let plot_w = text_w;
    let plot_h = height - top_margin - bottom;
    let y_of = |v: f64| top_margin + plot_h * (1.0 - v / y_max);
    for &t in &ticks {
        let y = y_of(t);
        scene.segment((left, y), (left + plot_w, y), GRID, 1.0);
        scene.text(Text::new(left - 6.0, y + 4.0, 11.0, Anchor::End, MUTED, short_number(t)));
    }
    let slot = plot_w / rows.len().max(1) as f64;
    let bar = (slot * 0.8 / 3.0).min(28.0);
    for (i, (label, v)) in labels.iter().zip(&values).enumerate() {
        let x0 = left + slot * i as f64 + (slot - 3.0 * bar) / 2.0;
        let over = v[2] > v[1] + 1e-9;
        for (j, (&value, color)) in v.iter().zip([DEMAND, DESERVED, if over { OVER } else { ALLOCATED }]).enumerate() {
            let y = y_of(value);
            let mut r = Rect::new(x0 + bar * j as f64, y, bar, top_margin + plot_h - y, color);
            r.class = ["demand", "deserved", "allocated"][j];
            r.title = Some(format!("{label}: {} {}", ["demand", "deserved", "allocated"][j], short_number(value)));
            scene.rect(r);
        }
        let cx = left + slot * (i as f64 + 0.5);
        let mut t = Text::new(cx + 4.0, top_margin + plot_h + 8.0, label_size, Anchor::End, INK, label.clone());
        t.vertical = true;
        scene.text(t);
    }
    scene.segment((left, top_margin + plot_h), (left + plot_w, top_margin + plot_h), INK, 1.0);
    scene
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::Item;
    use fairshare_analyses::entitlement::JobCounts;

    /// The default tree with made-up values: row `r` asks `3r`, deserves `2r` and holds `r` CPUs,
    /// except the last top-level account, which holds more than it deserves.
    fn example() -> (AssocTree, Entitlement) {
        let tree = fairshare_engine::io::default_tree().unwrap();
        let n = tree.len();
        let last = tree.children(0).last().unwrap();
        let running: Vec<u64> = (0..n).map(|r| if r == last { 5 * r as u64 } else { r as u64 }).collect();
        let e = Entitlement {
            tres: vec![Tres::CPU],
            capacity: vec![1000],
            running: vec![running],
            pending: vec![(0..n).map(|r| 2 * r as u64).collect()],
            deserved: vec![(0..n).map(|r| 2.0 * r as f64).collect()],
            now: 0,
            counts: JobCounts::default(),
        };
        (tree, e)
    }

    #[test]
    fn every_top_level_account_has_its_three_bars_inside_the_canvas() {
        let (tree, e) = example();
        for width in [400, 900, 2000] {
            let scene = chart(&tree, &e, 0, width, "test");
            assert_eq!(crate::plot::outside(&scene), Vec::<String>::new(), "width {width}");
            let bars: Vec<&Rect> = (scene.items.iter())
                .filter_map(|i| match i {
                    Item::Rect(r) if !r.class.is_empty() => Some(r),
                    _ => None,
                })
                .collect();
            assert_eq!(bars.len(), 3 * tree.children(0).len());
            // Bars stand on one baseline and are as tall as their values, on one scale.
            let unit = bars[1].h / e.deserved[0][tree.children(0).start];
            for (b, r) in bars.chunks(3).zip(tree.children(0)) {
                assert!((b[0].h - unit * e.demand(0, r) as f64).abs() < 1e-6);
                assert!((b[2].h - unit * e.running[0][r] as f64).abs() < 1e-6);
                assert!((b[0].y + b[0].h - (b[1].y + b[1].h)).abs() < 1e-9);
                let over = e.running[0][r] as f64 > e.deserved[0][r];
                assert_eq!(b[2].fill, if over { OVER } else { ALLOCATED }, "row {r}");
            }
        }
    }
}
