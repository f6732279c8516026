//! The Loss tab: observed against predicted loss by fragment count, and loss over time.

use super::*;

pub(super) fn draw_loss(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if not_ready(f, ix, area, "Loss charts") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let a = &r.reassembly;
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Percentage(55),
            Constraint::Length(3),
            Constraint::Min(4),
        ])
        .split(area);
    let groups: Vec<BarGroup> = a
        .rows
        .iter()
        .map(|x| {
            BarGroup::default()
                .label(Line::from(x.fragments.to_string()))
                .bars(&[
                    Bar::default()
                        .value((x.observed_loss * 1000.0) as u64)
                        .text_value(pct(x.observed_loss))
                        .style(style(app, Color::Red)),
                    Bar::default()
                        .value((x.predicted_loss * 1000.0) as u64)
                        .text_value(pct(x.predicted_loss))
                        .style(style(app, Color::Blue)),
                ])
        })
        .collect();
    let mut chart = BarChart::default()
        .block(Block::default().borders(Borders::ALL).title(format!(
            " Loss by fragment count: observed ({}) vs predicted 1-(1-p)^n ({}), p = {} ",
            if app.color { "red" } else { "left bar" },
            if app.color { "blue" } else { "right bar" },
            pct(a.fragment_loss)
        )))
        .bar_width(5)
        .group_gap(2);
    for g in groups {
        chart = chart.data(g);
    }
    if a.rows.is_empty() {
        f.render_widget(
            Paragraph::new("no fragmented packets").block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" Loss by fragment count "),
            ),
            split[0],
        );
    } else {
        f.render_widget(chart, split[0]);
    }
    let finding = a.finding.clone().unwrap_or_else(|| {
        format!(
            "single-datagram loss {} · no amplification finding",
            pct(a.single_loss)
        )
    });
    f.render_widget(Paragraph::new(finding).wrap(Wrap { trim: true }), split[1]);
    let lost: Vec<u64> = r.timeline.seconds.iter().map(|s| s.lost).collect();
    let bursts: Vec<String> = {
        let mut v: Vec<(usize, u64)> = r
            .timeline
            .seconds
            .iter()
            .enumerate()
            .filter(|(_, s)| s.lost > 0)
            .map(|(i, s)| (i, s.lost))
            .collect();
        v.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        v.iter()
            .take(5)
            .map(|(i, n)| format!("{n} lost at {i}s"))
            .collect()
    };
    let title = format!(
        " Sequences lost per second ({} s; worst: {}) ",
        lost.len(),
        if bursts.is_empty() {
            "none".into()
        } else {
            bursts.join(", ")
        }
    );
    f.render_widget(
        Sparkline::default()
            .data(&lost)
            .style(style(app, Color::Red))
            .block(Block::default().borders(Borders::ALL).title(title)),
        split[2],
    );
}
