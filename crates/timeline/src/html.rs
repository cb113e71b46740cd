//! Writes the [`Model`] as one self-contained HTML page: inline CSS, an SVG laid out for
//! the whole run (readable without JavaScript), and a small script that re-lays it out
//! on zoom and scroll and draws the messages (arrows, or counts where they are dense).

use super::model::{BarKind, Fate, Model};
use std::fmt::Write;
use tenure_core::{Cluster, NodeId, SimTime};
use tenure_sim::net::DropReason;
use tenure_sim::play::Report;

/// Width of the label column and the initial width of the plot, in px.
pub const LABEL_W: f64 = 210.0;
pub const PLOT_W: f64 = 1180.0;
const AXIS_H: f64 = 40.0;
const NET_H: f64 = 24.0;
const ROW_H: f64 = 15.0;
/// At most this many messages are embedded; the rest are counted only.
pub const MAX_MESSAGES: usize = 60_000;

const CSS: &str = include_str!("timeline.css");
const JS: &str = include_str!("timeline.js");

/// Escapes text for HTML content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON that is safe inside a `<script>` element (no `<`, `>` or `&` at all).
fn script_json(value: &serde_json::Value) -> String {
    serde_json::to_string(value)
        .expect("json")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The lanes' vertical layout.
struct Layout {
    net_h: f64,
    lane_h: f64,
    /// How many rows are used (at least one).
    used: f64,
    /// Whether the role row (0) and the lock row (1) are used at all.
    rows: [bool; 2],
    end: SimTime,
}

impl Layout {
    fn lane_top(&self, node: NodeId) -> f64 {
        AXIS_H + self.net_h + node.0 as f64 * self.lane_h
    }
    /// Where message arrows start and end: the middle of the lane's first row.
    fn center(&self, node: NodeId) -> f64 {
        self.row_y(node, 0) + 5.5
    }
    fn row_y(&self, node: NodeId, row: u8) -> f64 {
        let r = if row == 1 && self.rows[0] { 1.0 } else { 0.0 };
        self.lane_top(node) + (self.lane_h - self.used * ROW_H) / 2.0 + 2.0 + r * ROW_H
    }
    fn x(&self, t: SimTime) -> f64 {
        let end = self.end.as_nanos().max(1) as f64;
        LABEL_W + t.as_nanos() as f64 / end * PLOT_W
    }
}

fn secs(t: SimTime) -> String {
    t.to_string()
}

/// A time attribute pair for an interval.
fn span_attrs(start: SimTime, end: SimTime) -> String {
    format!(
        "data-start-ns=\"{}\" data-end-ns=\"{}\"",
        start.as_nanos(),
        end.as_nanos()
    )
}

pub fn page(scenario_name: &str, cluster: &Cluster, report: &Report, model: &Model) -> String {
    let n = cluster.size();
    let rows = [
        model.bars.iter().any(|b| b.kind.row() == 0),
        model.bars.iter().any(|b| b.kind.row() == 1),
    ];
    let used = rows.iter().filter(|r| **r).count().max(1) as f64;
    let l = Layout {
        net_h: if model.net.is_empty() && !model.marks.iter().any(|m| m.node.is_none()) {
            0.0
        } else {
            NET_H
        },
        lane_h: (22.0 + used * ROW_H).max(40.0),
        used,
        rows,
        end: model.end,
    };
    let height = AXIS_H + l.net_h + n as f64 * l.lane_h + 8.0;
    let width = LABEL_W + PLOT_W + 10.0;
    let involved: Vec<usize> = report
        .violations
        .iter()
        .flat_map(|v| v.records.iter().copied())
        .collect();

    let mut h = String::with_capacity(64 * 1024);
    let title = format!("{scenario_name}: seed {}", report.seed);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{} — tenure timeline</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        esc(&title)
    );
    header(&mut h, scenario_name, cluster, report, model);
    let _ = writeln!(
        h,
        "<div class=\"controls\">\
         <button type=\"button\" data-act=\"in\" title=\"zoom in (wheel up)\">+ zoom in</button>\
         <button type=\"button\" data-act=\"out\" title=\"zoom out (wheel down)\">− zoom out</button>\
         <button type=\"button\" data-act=\"fit\">whole run</button>\
         <button type=\"button\" data-act=\"left\" title=\"scroll left (shift+wheel)\">◀</button>\
         <button type=\"button\" data-act=\"right\" title=\"scroll right (shift+wheel)\">▶</button>{}\
         <input type=\"range\" id=\"pan\" min=\"0\" max=\"1000\" value=\"0\" title=\"scroll\">\
         <span id=\"view\">0s – {}</span></div>",
        if report.violations.is_empty() {
            String::new()
        } else {
            "<button type=\"button\" data-act=\"viol\">go to violation</button>".to_string()
        },
        esc(&secs(model.end))
    );
    let _ = writeln!(
        h,
        "<div id=\"chart\"><svg id=\"tl\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" \
         height=\"{height:.0}\" data-label-w=\"{LABEL_W}\" data-end-ns=\"{}\" \
         data-view-start-ns=\"{}\" data-view-end-ns=\"{}\">",
        model.end.as_nanos(),
        model.view.0.as_nanos(),
        model.view.1.as_nanos()
    );
    h.push_str(DEFS);
    let _ = writeln!(
        h,
        "<clipPath id=\"plotclip\"><rect id=\"cliprect\" x=\"{LABEL_W}\" y=\"0\" width=\"{PLOT_W}\" height=\"{height:.0}\"/></clipPath>"
    );

    // Lane backgrounds and labels (not zoomed).
    h.push_str("<g id=\"lanes\">\n");
    if l.net_h > 0.0 {
        let _ = writeln!(
            h,
            "<rect class=\"lane net\" x=\"0\" y=\"{AXIS_H}\" width=\"100%\" height=\"{}\"/>",
            l.net_h
        );
    }
    for node in cluster.nodes() {
        let top = l.lane_top(node);
        let _ = writeln!(
            h,
            "<rect class=\"lane {}\" x=\"0\" y=\"{top:.1}\" width=\"100%\" height=\"{:.1}\"/>",
            if node.0 % 2 == 0 { "even" } else { "odd" },
            l.lane_h
        );
    }
    h.push_str("</g>\n");

    // Everything positioned in time lives in the clipped plot.
    h.push_str("<g id=\"plot\" clip-path=\"url(#plotclip)\">\n<g id=\"bands\">\n");
    for b in model.bars.iter().filter(|b| b.kind.row() == 2) {
        let (x0, x1) = (l.x(b.start), l.x(b.end));
        let top = l.lane_top(b.node);
        let title = format!(
            "{} {} from {} to {}{}",
            b.node,
            if b.kind == BarKind::Pause {
                "paused"
            } else {
                "down"
            },
            secs(b.start),
            secs(b.end),
            if b.open { " (end of run)" } else { "" }
        );
        let _ = writeln!(
            h,
            "<rect class=\"ts band {k}\" data-kind=\"{k}\" data-node=\"{}\" {} x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{}</title></rect>\
             <text class=\"tl bandlabel\" {} x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            b.node.0,
            span_attrs(b.start, b.end),
            top + 1.0,
            (x1 - x0).max(1.0),
            l.lane_h - 2.0,
            esc(&title),
            span_attrs(b.start, b.end),
            x0 + 4.0,
            top + l.lane_h - 4.0,
            if b.kind == BarKind::Pause {
                format!("paused {}", short_duration(b.end.saturating_sub(b.start)))
            } else {
                "down".to_string()
            },
            k = b.kind.name(),
        );
    }
    for s in &model.net {
        let (x0, x1) = (l.x(s.start), l.x(s.end));
        let _ = writeln!(
            h,
            "<rect class=\"ts netseg\" data-kind=\"partition\" {} x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{} from {} to {}</title></rect>\
             <text class=\"tl netlabel\" {} x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            span_attrs(s.start, s.end),
            AXIS_H + 3.0,
            (x1 - x0).max(1.0),
            l.net_h - 6.0,
            esc(&s.label),
            secs(s.start),
            secs(s.end),
            span_attrs(s.start, s.end),
            x0 + 4.0,
            AXIS_H + 16.0,
            esc(&s.label)
        );
    }
    h.push_str("</g>\n<g id=\"msgs\"></g>\n<g id=\"bars\">\n");
    for b in model.bars.iter().filter(|b| b.kind.row() < 2) {
        let (x0, x1) = (l.x(b.start), l.x(b.end));
        let y = l.row_y(b.node, b.kind.row());
        let (y, bh) = if b.kind == BarKind::Waiting {
            (y + 4.0, 3.0)
        } else {
            (y, 11.0)
        };
        let inv = b.record.is_some_and(|r| involved.contains(&r));
        let title = format!(
            "{}: {} from {} to {}{}",
            b.node,
            b.label,
            secs(b.start),
            secs(b.end),
            if b.open { " (end of run)" } else { "" }
        );
        let _ = write!(
            h,
            "<rect class=\"ts bar {k}{}\" data-kind=\"{k}\" data-node=\"{}\" {}{} x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{bh}\"><title>{}</title></rect>",
            if inv { " involved" } else { "" },
            b.node.0,
            span_attrs(b.start, b.end),
            b.record
                .map_or(String::new(), |r| format!(" data-record=\"{r}\"")),
            (x1 - x0).max(1.0),
            esc(&title),
            k = b.kind.name(),
        );
        if b.kind != BarKind::Waiting {
            let _ = write!(
                h,
                "<text class=\"tl barlabel\" {} x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                span_attrs(b.start, b.end),
                x0 + 3.0,
                y + 9.0,
                esc(&b.label)
            );
        }
        h.push('\n');
    }
    h.push_str("</g>\n<g id=\"marks\">\n");
    for m in &model.marks {
        let x = l.x(m.time);
        let (y, shape) = match m.node {
            Some(node) => {
                let c = l.center(node);
                match m.kind.as_str() {
                    // A filled ▼ (the node goes down): not the red × of a dropped message.
                    "crash" => (c, "<path class=\"crash\" d=\"M-6,-5L6,-5L0,6Z\"/>"),
                    "restart" => (c, "<path class=\"restart\" d=\"M-1,-7L9,0L-1,7Z\"/>"),
                    "write" => (
                        l.row_y(node, 1) + 5.5,
                        "<path class=\"write\" d=\"M0,-6L5,0L0,6L-5,0Z\"/>",
                    ),
                    "write-rejected" => (
                        l.row_y(node, 1) + 5.5,
                        "<path class=\"write rejected\" d=\"M0,-6L5,0L0,6L-5,0Z\"/>",
                    ),
                    "clock-jump" | "clock-drift" => (
                        l.lane_top(node) + 2.0,
                        "<path class=\"clockmark\" d=\"M0,0L0,12M-4,8L0,12L4,8\"/>",
                    ),
                    _ => (
                        l.lane_top(node) + l.lane_h - 5.0,
                        "<circle class=\"obs\" r=\"2.5\"/>",
                    ),
                }
            }
            None => (
                AXIS_H + l.net_h / 2.0,
                "<path class=\"netmark\" d=\"M0,-8L0,8\"/>",
            ),
        };
        let node_attr = m
            .node
            .map_or(String::new(), |n| format!(" data-node=\"{}\"", n.0));
        let rec_attr = m
            .record
            .map_or(String::new(), |r| format!(" data-record=\"{r}\""));
        let who = m.node.map_or("network".to_string(), |n| n.to_string());
        let _ = writeln!(
            h,
            "<g class=\"tp mark\" data-kind=\"{}\"{node_attr}{rec_attr} data-t-ns=\"{}\" data-y=\"{y:.1}\" transform=\"translate({x:.1},{y:.1})\"><title>{} {}: {}</title>{shape}</g>",
            esc(&m.kind),
            m.time.as_nanos(),
            secs(m.time),
            esc(&who),
            esc(&m.label)
        );
    }
    // Involved records, ringed.
    for &i in &involved {
        let Some(r) = report.history.records.get(i) else {
            continue;
        };
        let y = l.center(r.node);
        let _ = writeln!(
            h,
            "<g class=\"tp involved\" data-kind=\"involved\" data-record=\"{i}\" data-node=\"{}\" data-t-ns=\"{}\" data-y=\"{y:.1}\" transform=\"translate({:.1},{y:.1})\"><title>involved: {} {} {}</title><circle r=\"9\"/></g>",
            r.node.0,
            r.time.as_nanos(),
            l.x(r.time),
            secs(r.time),
            r.node,
            esc(&super::model::describe(&r.obs))
        );
    }
    h.push_str("</g>\n<g id=\"vlines\">\n");
    for (k, v) in report.violations.iter().enumerate() {
        let x = l.x(v.time);
        let _ = writeln!(
            h,
            "<g class=\"tp violation\" data-kind=\"violation\" data-checker=\"{}\" data-t-ns=\"{}\" data-y=\"0\" transform=\"translate({x:.1},0)\"><title>{} violated at {}: {}</title>\
             <line x1=\"0\" x2=\"0\" y1=\"{:.1}\" y2=\"{:.1}\"/><text x=\"4\" y=\"{:.1}\">✖ {}</text></g>",
            esc(v.checker),
            v.time.as_nanos(),
            esc(v.checker),
            secs(v.time),
            esc(&v.message),
            14.0,
            height - 4.0,
            12.0 + 12.0 * (k as f64),
            esc(v.checker)
        );
    }
    h.push_str("</g>\n</g>\n");

    // The axis (redrawn by the script) and the label column on top.
    h.push_str("<g id=\"axis\">\n");
    for (t, text) in ticks(SimTime::ZERO, model.end, PLOT_W) {
        let x = l.x(t);
        let _ = writeln!(
            h,
            "<line class=\"tick\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{height:.0}\"/><text class=\"ticklabel\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{}\">{text}</text>",
            AXIS_H - 6.0,
            AXIS_H - 9.0,
            if x < LABEL_W + 14.0 { "start" } else { "middle" }
        );
    }
    h.push_str("</g>\n<g id=\"labels\">\n");
    let _ = writeln!(
        h,
        "<rect class=\"labelbg\" x=\"0\" y=\"0\" width=\"{LABEL_W}\" height=\"{height:.0}\"/>\
         <text class=\"axislabel\" x=\"6\" y=\"{:.1}\">true time →</text>",
        AXIS_H - 9.0
    );
    if l.net_h > 0.0 {
        let _ = writeln!(
            h,
            "<text class=\"lanelabel\" x=\"8\" y=\"{:.1}\">network</text>",
            AXIS_H + 16.0
        );
    }
    for node in cluster.nodes() {
        let top = l.lane_top(node);
        let _ = writeln!(
            h,
            "<text class=\"lanelabel\" x=\"8\" y=\"{:.1}\">{} <tspan class=\"role\">{}</tspan></text>",
            top + 15.0,
            node,
            esc(cluster.role_of(node))
        );
        clock_label(&mut h, &model.clocks[node.index()], model.end, top);
    }
    h.push_str("</g>\n</svg></div>\n");
    super::charts::render(&mut h, report);

    violations_panel(&mut h, report);
    let data = data_json(&l, cluster, report, model);
    let _ = write!(
        h,
        "<script type=\"application/json\" id=\"tl-data\">{}</script>\n<script>\n{JS}</script>\n</body>\n</html>\n",
        script_json(&data)
    );
    h
}

const DEFS: &str = "<defs>\
<pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
<rect width=\"6\" height=\"6\" fill=\"#fff4d6\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#e0a800\" stroke-width=\"2.5\"/></pattern>\
<marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\">\
<path d=\"M0,0L8,4L0,8Z\" fill=\"#6b7a90\"/></marker>\
</defs>\n";

fn header(h: &mut String, name: &str, cluster: &Cluster, report: &Report, model: &Model) {
    let dropped = model
        .messages
        .iter()
        .filter(|m| matches!(m.fate, Fate::Dropped(_) | Fate::LostDown))
        .count();
    let outcome = if report.violations.is_empty() {
        "<span class=\"pass\">PASS</span>: every check passed".to_string()
    } else {
        let v: Vec<String> = report
            .violations
            .iter()
            .map(|v| format!("{} at {}", esc(v.checker), secs(v.time)))
            .collect();
        format!("<span class=\"fail\">FAIL</span>: {}", v.join(", "))
    };
    let _ = writeln!(
        h,
        "<header><h1>{}</h1><p class=\"meta\">seed {} · {} simulated{} · {} nodes · {} messages ({} dropped or lost) · {}</p>",
        esc(name),
        report.seed,
        tenure_core::format_duration(model.end.as_duration()),
        if report.stopped_early {
            " (stopped at the first violation)"
        } else {
            ""
        },
        cluster.size(),
        // One definition of "messages" everywhere (the CLI's too): sends, each once.
        report.stats.messages_sent,
        dropped,
        outcome
    );
    if !model.has_trace {
        h.push_str(
            "<p class=\"meta\">No trace was kept for this run: messages and faults are not shown.</p>",
        );
    }
    if model.messages.len() > MAX_MESSAGES {
        let _ = write!(
            h,
            "<p class=\"meta\">Showing the {MAX_MESSAGES} messages nearest the violation (or the start) of {}.</p>",
            model.messages.len()
        );
    }
    h.push_str(LEGEND);
    h.push_str("</header>\n");
}

const LEGEND: &str = "<div class=\"legend\">\
<span><i class=\"sw leader\"></i>leader</span>\
<span><i class=\"sw candidate\"></i>candidate</span>\
<span><i class=\"sw follower\"></i>follower</span>\
<span><i class=\"sw holds\"></i>holds lock</span>\
<span><i class=\"sw lease\"></i>lease</span>\
<span><i class=\"sw waiting\"></i>waiting</span>\
<span><i class=\"sw op\"></i>client operation (red outline: the one that cannot be linearized)</span>\
<span><i class=\"sw pause\"></i>paused</span>\
<span><i class=\"sw down\"></i>down (crashed)</span>\
<span><i class=\"sw netseg\"></i>partition</span>\
<span><b class=\"g msg\">→</b>message</span>\
<span><b class=\"g drop\">×</b>dropped / lost</span>\
<span><b class=\"g dens\">▮</b>message count (dense)</span>\
<span><b class=\"g crash\">▼</b>crash</span>\
<span><b class=\"g restart\">▶</b>restart</span>\
<span><b class=\"g write\">◆</b>write (red: rejected)</span>\
<span><b class=\"g clockmark\">↓</b>clock jump or drift change</span>\
<span><i class=\"sw spark\"></i>clock minus true time, next to a node (wall: solid, monotonic: dotted)</span>\
<span><b class=\"g viol\">│</b>violation</span>\
<span><b class=\"g inv\">◯</b>record involved</span>\
</div>";

/// The clock offset of a node next to its label: a text summary and a sparkline of
/// wall (solid) and monotonic (dotted) minus true time over the whole run.
fn clock_label(h: &mut String, track: &super::model::ClockTrack, end: SimTime, top: f64) {
    let y = top + 29.0;
    if track.points.is_empty() || track.is_exact() {
        let _ = writeln!(
            h,
            "<text class=\"clock exact\" x=\"8\" y=\"{y:.1}\">clock exact</text>"
        );
        return;
    }
    let (wlo, whi) = track.wall_range();
    let (mlo, mhi) = track.mono_range();
    let show = |lo: i64, hi: i64| {
        let f = |v: i64| tenure_core::SignedDuration(round_ns(v)).to_string();
        if lo == hi {
            f(lo)
        } else {
            format!("{}…{}", f(lo), f(hi))
        }
    };
    let text = if (wlo, whi) == (mlo, mhi) {
        format!("clock {}", show(wlo, whi))
    } else {
        format!("wall {} mono {}", show(wlo, whi), show(mlo, mhi))
    };
    // The label column ends where the sparkline starts: a long label (a 5-node fuzz
    // run's "wall ...…... mono ...…...") is squeezed to fit rather than run under it.
    const LABEL_TEXT_W: f64 = LABEL_W - 58.0 - 8.0 - 4.0;
    let fit = if text.chars().count() as f64 * 5.8 > LABEL_TEXT_W {
        format!(" textLength=\"{LABEL_TEXT_W:.0}\" lengthAdjust=\"spacingAndGlyphs\"")
    } else {
        String::new()
    };
    let _ = writeln!(
        h,
        "<text class=\"clock\" x=\"8\" y=\"{y:.1}\"{fit}><title>{}: clock reading minus true time (wall: solid, monotonic: dotted)</title>{}</text>",
        esc(&text),
        esc(&text)
    );
    // Sparkline, right of the label column.
    let (lo, hi) = (wlo.min(mlo), whi.max(mhi));
    let (sx, sw, sy, sh) = (LABEL_W - 58.0, 50.0, top + 6.0, 14.0);
    let span = (hi - lo).max(1) as f64;
    let endf = end.as_nanos().max(1) as f64;
    let line = |f: &dyn Fn(&(SimTime, i64, i64)) -> i64| {
        let mut pts = String::new();
        let mut last_y = None;
        for p in &track.points {
            let x = sx + p.0.as_nanos() as f64 / endf * sw;
            let y = sy + sh - (f(p) - lo) as f64 / span * sh;
            if let Some(ly) = last_y {
                let _ = write!(pts, "{x:.1},{ly:.1} ");
            }
            let _ = write!(pts, "{x:.1},{y:.1} ");
            last_y = Some(y);
        }
        if let Some(ly) = last_y {
            let _ = write!(pts, "{:.1},{ly:.1}", sx + sw);
        }
        pts
    };
    let _ = writeln!(
        h,
        "<g class=\"spark\"><rect x=\"{sx:.1}\" y=\"{sy:.1}\" width=\"{sw}\" height=\"{sh}\"/>\
         <polyline class=\"wall\" points=\"{}\"/><polyline class=\"mono\" points=\"{}\"/></g>",
        line(&|p| p.2),
        line(&|p| p.1)
    );
}

/// A duration rounded for a label: to the millisecond from 10ms up, else the microsecond.
fn short_duration(d: std::time::Duration) -> String {
    let ns = d.as_nanos() as i64;
    let r = round_ns(ns).max(0) as u64;
    tenure_core::format_duration(std::time::Duration::from_nanos(r))
}

/// Rounds an offset for display: to the microsecond, or the millisecond above 10ms.
fn round_ns(v: i64) -> i64 {
    let unit = if v.abs() >= 10_000_000 {
        1_000_000
    } else {
        1_000
    };
    (v as f64 / unit as f64).round() as i64 * unit
}

fn violations_panel(h: &mut String, report: &Report) {
    if report.violations.is_empty() {
        return;
    }
    h.push_str("<section class=\"violations\">\n");
    for v in &report.violations {
        let _ = writeln!(
            h,
            "<div class=\"violation\" data-checker=\"{}\" data-t-ns=\"{}\"><h2>✖ {} violated at {}</h2><p>{}</p><ul>",
            esc(v.checker),
            v.time.as_nanos(),
            esc(v.checker),
            secs(v.time),
            esc(&v.message)
        );
        for &i in &v.records {
            if let Some(r) = report.history.records.get(i) {
                let _ = writeln!(
                    h,
                    "<li>{} {} {}</li>",
                    secs(r.time),
                    r.node,
                    esc(&super::model::describe(&r.obs))
                );
            }
        }
        h.push_str("</ul></div>\n");
    }
    h.push_str("</section>\n");
}

/// Nice tick positions over `[from, to]` for a plot `width` px wide, about one per 110px.
pub fn ticks(from: SimTime, to: SimTime, width: f64) -> Vec<(SimTime, String)> {
    let span = to.as_nanos().saturating_sub(from.as_nanos()).max(1);
    let want = (width / 110.0).max(2.0);
    let raw = span as f64 / want;
    let mut step: u64 = 1;
    'outer: for exp in 0..19 {
        let base = 10u64.pow(exp);
        for m in [1, 2, 5] {
            if (base * m) as f64 >= raw {
                step = base * m;
                break 'outer;
            }
        }
    }
    let first = from.as_nanos().div_ceil(step) * step;
    let mut out = Vec::new();
    let mut t = first;
    while t <= to.as_nanos() {
        out.push((SimTime(t), tick_label(t, step)));
        t += step;
    }
    out
}

fn tick_label(t: u64, step: u64) -> String {
    let secs = t as f64 / 1e9;
    let decimals = match step {
        s if s >= 1_000_000_000 => 0,
        s if s >= 100_000_000 => 1,
        s if s >= 10_000_000 => 2,
        s if s >= 1_000_000 => 3,
        s if s >= 100_000 => 4,
        s if s >= 10_000 => 5,
        _ => 6,
    };
    format!("{secs:.decimals$}s")
}

/// What the script needs: the layout and the messages.
fn data_json(l: &Layout, cluster: &Cluster, report: &Report, model: &Model) -> serde_json::Value {
    let lanes: Vec<serde_json::Value> = cluster
        .nodes()
        .map(|n| serde_json::json!([l.lane_top(n), l.lane_h, l.center(n)]))
        .collect();
    // Which messages to embed: all, or those nearest the first violation.
    let focus = report
        .violations
        .first()
        .map_or(SimTime::ZERO, |v| v.time)
        .as_nanos();
    let mut chosen: Vec<usize> = (0..model.messages.len()).collect();
    if chosen.len() > MAX_MESSAGES {
        chosen.sort_by_key(|&i| (model.messages[i].sent.as_nanos().abs_diff(focus), i));
        chosen.truncate(MAX_MESSAGES);
        chosen.sort();
    }
    let mut texts: Vec<String> = Vec::new();
    let mut text_index: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut msgs = Vec::with_capacity(chosen.len());
    for i in chosen {
        let m = &model.messages[i];
        let text: &str = &m.text;
        let short: String = text.chars().take(160).collect();
        let k = *text_index.entry(text).or_insert_with(|| {
            texts.push(short);
            texts.len() - 1
        });
        let fate = match m.fate {
            Fate::Delivered { .. } => 0,
            Fate::Dropped(DropReason::Partition) => 1,
            Fate::Dropped(DropReason::Loss) => 2,
            Fate::Dropped(DropReason::Down) | Fate::LostDown => 3,
            Fate::InFlight => 4,
            Fate::Dropped(DropReason::Reset) => 5,
        };
        let us = |t: SimTime| (t.as_nanos() / 1_000) as i64;
        msgs.push(serde_json::json!([
            us(m.sent),
            m.arrived.map_or(-1, us),
            us(m.end()),
            m.from.0,
            m.to.0,
            fate,
            k
        ]));
    }
    serde_json::json!({
        "end_ns": model.end.as_nanos(),
        "view": [model.view.0.as_nanos(), model.view.1.as_nanos()],
        "label_w": LABEL_W,
        "axis_h": AXIS_H,
        "lanes": lanes,
        "violations": report.violations.iter().map(|v| {
            let times: Vec<u64> = v.records.iter()
                .filter_map(|&i| report.history.records.get(i))
                .map(|r| r.time.as_nanos())
                .collect();
            serde_json::json!({"t": v.time.as_nanos(), "records": times})
        }).collect::<Vec<_>>(),
        "msgs": msgs,
        "texts": texts,
    })
}
