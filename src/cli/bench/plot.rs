//! `--plot FILE.svg`: the latency distribution of each run (a CDF, on a log latency
//! axis) and the throughput across the sweep, drawn with `plotters`' SVG backend.
//! Every tick label is a whole number; the lines use the Okabe–Ito palette, which
//! readers with any common colour-vision deficiency can tell apart.

use std::path::Path;

use plotters::prelude::*;

use super::BenchError;

/// One sweep cell to draw: its label, its calls' latencies (µs, sorted), its calls/s.
/// A sweep over one parameter labels its cells `name=value` (`calls=100`): the
/// throughput is then drawn against that value.
pub struct Series {
    pub label: String,
    pub latencies_us: Vec<f64>,
    pub calls_per_s: f64,
}

/// At most this many points per latency line.
const MAX_POINTS: usize = 2000;

/// Okabe & Ito's colour-blind-safe palette, most legible on white first (their
/// yellow last).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Draws the two charts into `path`.
pub fn draw(path: &Path, series: &[Series]) -> Result<(), BenchError> {
    draw_inner(path, series).map_err(|e| BenchError::Plot(e.to_string()))
}

/// A tick label: the value as a whole number (every axis is drawn with whole-number
/// ticks only).
fn whole(v: &f64) -> String {
    format!("{:.0}", v.round())
}

/// Ticks for a log axis over `lo..hi` (both ≥ 1): 1, 2 and 5 times the powers of ten
/// in range, or every whole multiple of them when that gives fewer than three.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let ticks = |multiples: &[f64]| {
        let mut out = Vec::new();
        let mut decade = 10f64.powf(lo.max(1.0).log10().floor());
        while decade <= hi {
            for m in multiples {
                let t = decade * m;
                if t >= lo && t <= hi {
                    out.push(t);
                }
            }
            decade *= 10.0;
        }
        out
    };
    let coarse = ticks(&[1.0, 2.0, 5.0]);
    if coarse.len() >= 3 {
        coarse
    } else {
        ticks(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    }
}

/// The swept parameter and each cell's value, when every label is `name=value` with
/// the same name and a whole-number value.
fn swept_values(series: &[Series]) -> Option<(String, Vec<f64>)> {
    let mut name: Option<&str> = None;
    let mut values = Vec::new();
    for s in series {
        let (n, v) = s.label.split_once('=')?;
        if n.contains(' ') || v.contains(' ') || name.is_some_and(|known| known != n) {
            return None;
        }
        name = Some(n);
        values.push(v.parse::<u64>().ok().filter(|v| *v > 0)? as f64);
    }
    Some((name?.to_string(), values))
}

fn draw_inner(path: &Path, series: &[Series]) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1280, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(640);
    draw_latencies(&left, series)?;
    match swept_values(series) {
        Some((name, values)) => draw_rate_against(&right, series, &name, &values)?,
        None => draw_rate_by_run(&right, series)?,
    }
    root.present()?;
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The CDF of each run's latencies, on a log latency axis (a sweep's runs differ by
/// orders of magnitude).
fn draw_latencies(area: &Area, series: &[Series]) -> Result<(), Box<dyn std::error::Error>> {
    let all = || series.iter().flat_map(|s| s.latencies_us.iter().copied());
    let lo = all().filter(|l| *l > 0.0).fold(f64::INFINITY, f64::min);
    let hi = all().fold(0f64, f64::max);
    let lo = if lo.is_finite() {
        (lo / 1.2).max(1.0)
    } else {
        1.0
    };
    let hi = (hi * 1.2).max(lo * 10.0);
    let mut cdf = ChartBuilder::on(area)
        .caption("Call latency (cumulative)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(
            (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
            0f64..100f64,
        )?;
    cdf.configure_mesh()
        .x_desc("latency of a call (µs, log scale)")
        .y_desc("% of calls")
        .y_labels(11)
        .x_label_formatter(&whole)
        .y_label_formatter(&whole)
        .draw()?;
    for (i, s) in series.iter().enumerate() {
        let n = s.latencies_us.len();
        if n == 0 {
            continue;
        }
        let step = n.div_ceil(MAX_POINTS).max(1);
        let points: Vec<(f64, f64)> = s
            .latencies_us
            .iter()
            .enumerate()
            .filter(|(j, _)| j % step == 0 || *j == n - 1)
            .map(|(j, &l)| (l.max(lo), (j + 1) as f64 * 100.0 / n as f64))
            .collect();
        let c = colour(i);
        cdf.draw_series(LineSeries::new(points, c.stroke_width(2)))?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    cdf.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// The most calls per second of any run, with headroom, at least 10 (so the ticks are
/// whole numbers).
fn rate_top(series: &[Series]) -> f64 {
    (series.iter().map(|s| s.calls_per_s).fold(0f64, f64::max) * 1.1).max(10.0)
}

/// Throughput against the swept value, on a log axis ticked at the swept values.
fn draw_rate_against(
    area: &Area,
    series: &[Series],
    name: &str,
    values: &[f64],
) -> Result<(), Box<dyn std::error::Error>> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0f64, f64::max);
    let mut ticks = values.to_vec();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    let mut rate = ChartBuilder::on(area)
        .caption("Throughput across the sweep", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (lo / 1.5..hi * 1.5).log_scale().with_key_points(ticks),
            0f64..rate_top(series),
        )?;
    rate.configure_mesh()
        .x_desc(format!("{name} (log scale)"))
        .y_desc("calls per second")
        .x_label_formatter(&whole)
        .y_label_formatter(&whole)
        .draw()?;
    let points: Vec<(f64, f64)> = values
        .iter()
        .zip(series)
        .map(|(v, s)| (*v, s.calls_per_s))
        .collect();
    let c = colour(0);
    rate.draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?;
    rate.draw_series(points.into_iter().map(|p| Circle::new(p, 4, c.filled())))?;
    Ok(())
}

/// Throughput run by run, each labelled (a sweep over several parameters).
fn draw_rate_by_run(area: &Area, series: &[Series]) -> Result<(), Box<dyn std::error::Error>> {
    let cells = series.len().max(1) as u32;
    let labels: Vec<String> = series.iter().map(|s| s.label.clone()).collect();
    let mut rate = ChartBuilder::on(area)
        .caption("Throughput across the sweep", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(60)
        .build_cartesian_2d(0u32..cells, 0f64..rate_top(series))?;
    rate.configure_mesh()
        .x_labels(series.len().max(1))
        .x_label_formatter(&|i| labels.get(*i as usize).cloned().unwrap_or_default())
        .y_label_formatter(&whole)
        .x_desc("run")
        .y_desc("calls per second")
        .draw()?;
    let points: Vec<(u32, f64)> = series
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u32, s.calls_per_s))
        .collect();
    let c = colour(0);
    rate.draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))?;
    rate.draw_series(points.into_iter().map(|p| Circle::new(p, 4, c.filled())))?;
    Ok(())
}
