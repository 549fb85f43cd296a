//! PNG plots of throughput and latency against connections. The bitmap
//! backend draws text with a font compiled in from the `dejavu` crate, so no
//! fontconfig or freetype is needed.

use std::path::Path;

use anyhow::anyhow;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use super::measurement::Measurement;
use super::report::Results;

const FONT: &str = "sans-serif";
const SIZE: (u32, u32) = (960, 600);

fn ensure_font() -> anyhow::Result<()> {
    register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| anyhow!("the embedded DejaVu font did not load"))
}

/// One line per scenario and baseline: `value` at each connection count.
fn series(
    results: &Results,
    value: &dyn Fn(&Measurement) -> f64,
) -> Vec<(&'static str, Vec<(f64, f64)>)> {
    let mut names: Vec<&'static str> = Vec::new();
    for m in &results.measurements {
        if !names.contains(&m.name) {
            names.push(m.name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let points = results
                .measurements
                .iter()
                .filter(|m| m.name == name)
                .map(|m| (m.connections as f64, value(m)))
                .filter(|(_, v)| v.is_finite() && *v > 0.0)
                .collect();
            (name, points)
        })
        .collect()
}

/// Requests (or pgbench transactions) per second against connections.
pub fn throughput(results: &Results, path: &Path) -> anyhow::Result<()> {
    let lines = series(results, &Measurement::throughput);
    draw(
        path,
        "Throughput against connections",
        "requests (transactions) per second",
        &lines,
        false,
    )
}

/// p99 latency against connections, on a log scale.
pub fn latency(results: &Results, path: &Path) -> anyhow::Result<()> {
    let lines = series(results, &|m| m.latency.p99.as_secs_f64() * 1000.0);
    draw(
        path,
        "p99 latency against connections",
        "p99 latency, ms (log scale)",
        &lines,
        true,
    )
}

fn draw(
    path: &Path,
    title: &str,
    y_label: &str,
    lines: &[(&'static str, Vec<(f64, f64)>)],
    log_y: bool,
) -> anyhow::Result<()> {
    ensure_font()?;
    let max_x = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
        .fold(1.0, f64::max);
    let max_y = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
        .fold(1.0, f64::max)
        * 1.15;
    let min_y = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
        .fold(max_y, f64::min)
        * 0.8;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, (FONT, 26))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80);
    let x_range = (1.0..max_x * 1.1).log_scale();
    let orange = RGBColor(230, 120, 0);
    let brown = RGBColor(140, 80, 30);
    let grey = RGBColor(128, 128, 128);
    let palette = [
        &BLUE, &RED, &GREEN, &MAGENTA, &BLACK, &CYAN, &orange, &brown, &grey,
    ];
    macro_rules! plot_on {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc("connections (log scale)")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_desc(y_label)
                .label_style((FONT, 16))
                .axis_desc_style((FONT, 18))
                .draw()
                .map_err(plot_error)?;
            for (index, (name, points)) in lines.iter().enumerate() {
                let color = palette[index % palette.len()];
                chart
                    .draw_series(LineSeries::new(
                        points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(plot_error)?
                    .label(*name)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled())))
                    .map_err(plot_error)?;
            }
            chart
                .configure_series_labels()
                .label_font((FONT, 16))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(plot_error)?;
        }};
    }
    if log_y {
        plot_on!(builder
            .build_cartesian_2d(x_range, (min_y.max(0.01)..max_y).log_scale())
            .map_err(plot_error)?);
    } else {
        plot_on!(builder
            .build_cartesian_2d(x_range, 0.0..max_y)
            .map_err(plot_error)?);
    }
    root.present().map_err(plot_error)?;
    Ok(())
}

fn plot_error(err: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("plotting failed: {err}")
}
