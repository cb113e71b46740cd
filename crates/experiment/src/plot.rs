//! Cumulative distribution plots as self-contained SVG (no scripts, no external
//! fonts or styles), in the form of the Raft paper's Figure 16: x is a time in
//! milliseconds, y the cumulative percent of trials finished by then.

use std::fmt::Write;

/// The first line of every plot written here; a file that starts with it was written
/// by tenure and may be replaced by a newer run.
pub const MARKER: &str = "<!-- written by tenure experiment: safe to overwrite -->";

/// The x axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Axis {
    Linear {
        max: f64,
    },
    /// Logarithmic from `min` to `max` (both above zero).
    Log {
        min: f64,
        max: f64,
    },
}

/// One line of a plot: its label and its trials in ms (`None`: never finished).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 210.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 8] = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
];

/// A CDF plot of `series` on `axis`.
pub fn cdf_svg(title: &str, x_label: &str, axis: Axis, series: &[Series]) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x_of = |ms: f64| -> f64 {
        let f = match axis {
            Axis::Linear { max } => ms / max,
            Axis::Log { min, max } => (ms.max(min).ln() - min.ln()) / (max.ln() - min.ln()),
        };
        LEFT + f.clamp(0.0, 1.0) * plot_w
    };
    let y_of = |percent: f64| TOP + plot_h * (1.0 - percent / 100.0);
    let mut s = String::new();
    let _ = writeln!(s, "{MARKER}");
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        LEFT + plot_w / 2.0,
        escape(title)
    );
    // Grid and ticks.
    for p in [0.0, 20.0, 40.0, 60.0, 80.0, 100.0] {
        let y = y_of(p);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{p}%</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0
        );
    }
    for (ms, label) in x_ticks(axis) {
        let x = x_of(ms);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 16.0
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 10.0,
        escape(x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="14" y="{:.1}" text-anchor="middle" transform="rotate(-90 14 {:.1})">cumulative percent</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    // The lines.
    for (k, line) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let mut finished: Vec<f64> = line.values.iter().flatten().copied().collect();
        finished.sort_by(f64::total_cmp);
        let n = line.values.len().max(1) as f64;
        let mut d = String::new();
        let start = finished.first().map_or(LEFT, |v| x_of(*v));
        let _ = write!(d, "M{start:.1},{:.1}", y_of(0.0));
        for (i, v) in finished.iter().enumerate() {
            let x = x_of(*v);
            let _ = write!(
                d,
                " L{x:.1},{:.1} L{x:.1},{:.1}",
                y_of(i as f64 / n * 100.0),
                y_of((i + 1) as f64 / n * 100.0)
            );
        }
        if finished.len() < line.values.len() {
            // Some never finished: the line runs on to the right edge below 100%.
            let level = finished.len() as f64 / n * 100.0;
            let _ = write!(d, " L{:.1},{:.1}", LEFT + plot_w, y_of(level));
        }
        let _ = writeln!(
            s,
            r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.6"/>"#
        );
        let ly = TOP + 10.0 + 18.0 * k as f64;
        let lx = LEFT + plot_w + 12.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            escape(&line.label)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Tick positions and labels: decades (and 2x, 5x) on a log axis, about six round
/// steps on a linear one.
fn x_ticks(axis: Axis) -> Vec<(f64, String)> {
    match axis {
        Axis::Log { min, max } => {
            let mut ticks = Vec::new();
            let mut decade = 10f64.powf(min.log10().floor());
            while decade <= max {
                for m in [1.0, 2.0, 5.0] {
                    let v = decade * m;
                    if v >= min * 0.999 && v <= max * 1.001 {
                        ticks.push((v, format!("{v}")));
                    }
                }
                decade *= 10.0;
            }
            ticks
        }
        Axis::Linear { max } => {
            let step = nice_step(max / 6.0);
            let mut ticks = Vec::new();
            let mut v = 0.0;
            while v <= max * 1.001 {
                ticks.push((v, format!("{v}")));
                v += step;
            }
            ticks
        }
    }
}

/// The smallest 1, 2 or 5 times a power of ten that is at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(1e-9);
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|v| *v >= raw * 0.999)
        .unwrap_or(10.0 * power)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(label: &str, values: &[Option<f64>]) -> Series {
        Series {
            label: label.to_string(),
            values: values.to_vec(),
        }
    }

    #[test]
    fn a_plot_is_marked_self_contained_svg_with_one_path_per_series() {
        let svg = cdf_svg(
            "t",
            "ms",
            Axis::Linear { max: 100.0 },
            &[
                series("a", &[Some(10.0), Some(20.0)]),
                series("b<c", &[Some(50.0), None]),
            ],
        );
        assert!(svg.starts_with(MARKER));
        assert!(svg.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<path ").count(), 2);
        assert!(svg.contains("b&lt;c"), "labels are escaped");
        assert!(!svg.contains("<script") && !svg.contains("href"));
    }

    #[test]
    fn steps_climb_to_100_percent_or_run_on_below_it() {
        let svg = cdf_svg(
            "t",
            "ms",
            Axis::Linear { max: 100.0 },
            &[series("a", &[Some(50.0), None])],
        );
        // Plot area: x from 60 to 550, y from 40 (100%) to 350 (0%).
        let path = svg.lines().find(|l| l.starts_with("<path")).unwrap();
        assert!(
            path.contains("M305.0,350.0 L305.0,350.0 L305.0,195.0 L550.0,195.0"),
            "{path}"
        );
    }

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(nice_step(90.0), 100.0);
        assert_eq!(nice_step(33.0), 50.0);
        assert_eq!(nice_step(0.15), 0.2);
        let log: Vec<String> = x_ticks(Axis::Log {
            min: 100.0,
            max: 1000.0,
        })
        .into_iter()
        .map(|(_, l)| l)
        .collect();
        assert_eq!(log, ["100", "200", "500", "1000"]);
        let lin: Vec<f64> = x_ticks(Axis::Linear { max: 600.0 })
            .into_iter()
            .map(|(v, _)| v)
            .collect();
        assert_eq!(lin, [0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0]);
    }
}
