//! A count over capture time drawn across the whole width it is given, with a time
//! axis: the series' steps summed to fit (braille: two bars a cell).

use super::*;
use crate::series::{Series, duration_text};

/// Draws `s` in `area` under `title`; `unit` names what is counted (`datagrams`), and a
/// bin's value is a sum (or the largest with `max`). The title says the bin's width.
pub(super) fn draw_time_chart(
    f: &mut Frame,
    app: &App,
    area: Rect,
    title: &str,
    s: &Series,
    color: Color,
    max: bool,
) {
    // Room for the y labels (up to 6 characters) and the border.
    let cols = area.width.saturating_sub(2 + 7).max(1) as usize;
    let (values, step) = s.binned(cols * 2, max);
    let points: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| ((i as f64 + 0.5) * step as f64 / 1e9, v as f64))
        .collect();
    let end = values.len() as f64 * step as f64 / 1e9;
    let ymax = values.iter().copied().max().unwrap_or(0).max(1) as f64;
    // `/24 ms`: what one bar stands for (the largest of the steps in it with `max`).
    let per = if max && step > s.step_ns {
        format!("max /{}", duration_text(step))
    } else {
        format!("/{}", duration_text(step))
    };
    let x_labels = vec![
        Line::from("0 s"),
        Line::from(duration_text((end * 0.5e9) as i64)),
        Line::from(duration_text((end * 1e9) as i64)),
    ];
    let chart = Chart::new(vec![
        Dataset::default()
            .marker(ratatui::symbols::Marker::Braille)
            .graph_type(GraphType::Bar)
            .style(style(app, color))
            .data(&points),
    ])
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(format!(" {title} {per} ")),
    )
    .x_axis(Axis::default().bounds([0.0, end.max(1e-9)]).labels(x_labels))
    .y_axis(
        Axis::default()
            .bounds([0.0, ymax])
            .labels(vec![Line::from("0"), Line::from(format!("{ymax:.0}"))]),
    );
    f.render_widget(chart, area);
}
