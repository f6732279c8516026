//! The Loss tab: observed against predicted loss by fragment count, one line a count
//! (labels never collide; ↑↓ scroll when there are more than fit, and the title says
//! which are shown), and sequences lost over the capture.

use super::*;

pub(super) fn draw_loss(f: &mut Frame, app: &App, ix: &Index, area: Rect, d: &mut Drawn) {
    if not_ready(f, ix, area, "Loss charts") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let a = &r.reassembly;
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Percentage(50),
            // The finding with its counts and interval: three lines at 80 columns.
            Constraint::Length(3),
            Constraint::Min(5),
        ])
        .split(area);
    draw_counts(f, app, a, split[0], d);
    let finding = a.finding.as_ref().map(|f| f.to_string()).unwrap_or_else(|| {
        format!(
            "single-datagram loss {} · no amplification finding",
            pct(a.single_loss)
        )
    });
    f.render_widget(Paragraph::new(finding).wrap(Wrap { trim: true }), split[1]);
    let worst: Vec<String> = {
        let mut v: Vec<(usize, u64)> = r
            .timeline
            .seconds
            .iter()
            .enumerate()
            .filter(|(_, s)| s.lost > 0)
            .map(|(i, s)| (i, s.lost))
            .collect();
        v.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        v.iter().take(3).map(|(i, n)| format!("{n} at {i} s")).collect()
    };
    let title = format!(
        "Sequences lost (worst seconds: {})",
        if worst.is_empty() {
            "none".into()
        } else {
            worst.join(", ")
        }
    );
    match app.loss_series.as_ref() {
        Some((_, s)) => draw_time_chart(f, app, split[2], &title, s, Color::Red, false),
        None => f.render_widget(Block::default().borders(Borders::ALL), split[2]),
    }
}

/// One line per fragment count: observed and predicted loss as bars side by side, each
/// with its percentage after it.
fn draw_counts(
    f: &mut Frame,
    app: &App,
    a: &gpcap::sinks::analysis::ReassemblyReport,
    area: Rect,
    d: &mut Drawn,
) {
    let block = |title: String| Block::default().borders(Borders::ALL).title(title);
    if a.rows.is_empty() {
        f.render_widget(
            Paragraph::new("no fragmented packets").block(block(" Loss by fragment count ".into())),
            area,
        );
        return;
    }
    let height = area.height.saturating_sub(3).max(1) as usize;
    let scroll = app.loss_scroll.min(a.rows.len().saturating_sub(height));
    d.loss_scroll = Some(scroll);
    let rows = &a.rows[scroll..(scroll + height).min(a.rows.len())];
    let top = a
        .rows
        .iter()
        .map(|x| x.observed_loss.max(x.predicted_loss))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    // "  n  observed ███ 12.3%  predicted ███ 12.3%": two bars in what is left.
    let inner = area.width.saturating_sub(2) as usize;
    let bar = inner.saturating_sub(5 + 2 * 8 + 2) / 2;
    let bar_of = |x: f64, ch: char| -> String {
        let n = ((x / top) * bar as f64).round() as usize;
        let mut b: String = std::iter::repeat_n(ch, n.min(bar)).collect();
        b.extend(std::iter::repeat_n(' ', bar - n.min(bar)));
        b
    };
    let mut lines = vec![Line::from(Span::styled(
        format!(
            "{:>4} {:<w$} {:<w$}",
            "n",
            "observed",
            "predicted 1-(1-p)^n",
            w = bar + 8
        ),
        Style::default().add_modifier(Modifier::BOLD),
    ))];
    for x in rows {
        lines.push(Line::from(vec![
            Span::raw(format!("{:>4} ", x.fragments)),
            Span::styled(bar_of(x.observed_loss, '█'), style(app, Color::Red)),
            Span::raw(format!(" {:>6} ", pct(x.observed_loss))),
            Span::styled(bar_of(x.predicted_loss, '▒'), style(app, Color::Blue)),
            Span::raw(format!(" {:>6}", pct(x.predicted_loss))),
        ]));
    }
    let (lo, hi) = (rows[0].fragments, rows[rows.len() - 1].fragments);
    let all = (a.rows[0].fragments, a.rows[a.rows.len() - 1].fragments);
    let shown = if rows.len() < a.rows.len() {
        format!(" · {lo}–{hi} of {}–{} ↑↓", all.0, all.1)
    } else {
        String::new()
    };
    let title = format!(
        " Loss by fragment count (p {}): █ observed ▒ predicted{shown} ",
        pct(a.fragment_loss)
    );
    f.render_widget(Paragraph::new(lines).block(block(title)), area);
}
