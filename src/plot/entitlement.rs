//! Entitlement now, per top-level account: for one TRES, three bars side by side, what the
//! account's jobs ask for (demand: running + pending), what it deserves by its shares, and what
//! its running jobs hold (allocated). An account holding more than it deserves has its allocated
//! bar in the "over" colour.

use super::font::text_width;
use super::{Anchor, Color, Rect, Scene, Text, nice_ticks, short_number};
use crate::config::Tres;
use crate::entitlement::Entitlement;
use crate::tree::AssocTree;

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
    let (left, right, top_margin) = (64.0, 16.0, 78.0);
    let bottom = longest + 40.0;
    let height = (320.0 + bottom).round();
    let mut scene = Scene::new(width, height as u32);
    let plot_w = f64::from(width) - left - right;
    let plot_h = height - top_margin - bottom;
    let y_of = |v: f64| top_margin + plot_h * (1.0 - v / y_max);
    scene.text(Text::new(left, 22.0, 16.0, Anchor::Start, INK, format!("Entitlement now: {unit}")));
    let capacity = e.capacity[k] as f64 * scale;
    let subtitle = format!(
        "capacity {} · demand {} · deserved {} · allocated {} · {source}",
        short_number(capacity),
        short_number(e.demand(k, 0) as f64 * scale),
        short_number(e.deserved[k][0] * scale),
        short_number(e.running[k][0] as f64 * scale),
    );
    scene.text(Text::new(left, 40.0, 11.0, Anchor::Start, MUTED, subtitle));
    // Legend.
    let mut x = left;
    for (color, what) in [(DEMAND, "demand"), (DESERVED, "deserved"), (ALLOCATED, "allocated"), (OVER, "allocated > deserved")] {
        scene.rect(Rect::new(x, 52.0, 12.0, 12.0, color));
        scene.text(Text::new(x + 16.0, 62.0, 11.0, Anchor::Start, INK, what));
        x += 16.0 + text_width(what, 11.0) + 18.0;
    }
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
