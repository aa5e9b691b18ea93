//! `--plot FILE.svg`: the latency distribution of each run (a CDF) and the throughput
//! across the sweep, drawn with `plotters`' SVG backend.

use std::path::Path;

use plotters::prelude::*;

use super::BenchError;

/// One sweep cell to draw: its label, its calls' latencies (µs, sorted), its calls/s.
pub struct Series {
    pub label: String,
    pub latencies_us: Vec<f64>,
    pub calls_per_s: f64,
}

/// At most this many points per latency line.
const MAX_POINTS: usize = 2000;

pub fn draw(path: &Path, series: &[Series]) -> Result<(), BenchError> {
    draw_inner(path, series).map_err(|e| BenchError::Plot(e.to_string()))
}

fn draw_inner(path: &Path, series: &[Series]) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1280, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(640);

    let max_latency = series
        .iter()
        .filter_map(|s| s.latencies_us.last().copied())
        .fold(1.0f64, f64::max);
    let mut cdf = ChartBuilder::on(&left)
        .caption("Call latency (cumulative)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..max_latency * 1.02, 0f64..1.0f64)?;
    cdf.configure_mesh()
        .x_desc("latency of a call (µs)")
        .y_desc("fraction of calls")
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
            .map(|(j, &l)| (l, (j + 1) as f64 / n as f64))
            .collect();
        let color = Palette99::pick(i).to_rgba();
        cdf.draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
    }
    cdf.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;

    let max_rate = series.iter().map(|s| s.calls_per_s).fold(1.0f64, f64::max);
    let cells = series.len().max(1) as u32;
    let labels: Vec<String> = series.iter().map(|s| s.label.clone()).collect();
    let mut rate = ChartBuilder::on(&right)
        .caption("Throughput across the sweep", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(60)
        .build_cartesian_2d(0u32..cells, 0f64..max_rate * 1.1)?;
    rate.configure_mesh()
        .x_labels(series.len().max(1))
        .x_label_formatter(&|i| labels.get(*i as usize).cloned().unwrap_or_default())
        .x_desc("run")
        .y_desc("calls per second")
        .draw()?;
    let points: Vec<(u32, f64)> = series
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u32, s.calls_per_s))
        .collect();
    rate.draw_series(LineSeries::new(points.clone(), BLUE.stroke_width(2)))?;
    rate.draw_series(points.into_iter().map(|p| Circle::new(p, 4, BLUE.filled())))?;
    root.present()?;
    Ok(())
}
