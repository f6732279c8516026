//! The MTU tab: payload sizes per flow against the budget and the link MTU.

use super::*;

pub(super) fn draw_mtu(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    if not_ready(f, ix, area, "MTU findings") {
        return;
    }
    let Some(r) = &ix.report else { return };
    let m = &r.mtu;
    let split = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(55), Constraint::Min(4)])
        .split(area);
    let game: Vec<&gpcap::sinks::analysis::FlowStats> = r.flows.iter().filter(|f| f.is_game()).collect();
    if let Some(fl) = game.get(app.mtu_flow.min(game.len().saturating_sub(1))) {
        draw_size_chart(f, app, m, fl, game.len(), split[0]);
    } else {
        f.render_widget(
            Paragraph::new("no game flows").block(Block::default().borders(Borders::ALL)),
            split[0],
        );
    }
    f.render_widget(
        Paragraph::new(violations(app, m))
            .wrap(Wrap { trim: true })
            .block(Block::default().borders(Borders::ALL).title(" Violations ")),
        split[1],
    );
}

/// The payload sizes of one game flow (one of `flows`), in 64-byte bars, against the
/// budget and the link MTU.
fn draw_size_chart(
    f: &mut Frame,
    app: &App,
    m: &gpcap::sinks::analysis::MtuReport,
    fl: &gpcap::sinks::analysis::FlowStats,
    flows: usize,
    area: Rect,
) {
    let step = 64u32;
    let top = fl.size_hist.max.max(m.link_mtu).max(m.budget) + step;
    let points: Vec<(f64, f64)> = (0..top / step)
        .map(|b| {
            let lo = b * step;
            let n: u64 = (lo..lo + step)
                .step_by(16)
                .map(|s| fl.size_hist.bucket(s) as u64)
                .sum();
            (lo as f64, n as f64)
        })
        .collect();
    let ymax = points.iter().map(|p| p.1).fold(1.0, f64::max);
    let budget = [(m.budget as f64, 0.0), (m.budget as f64, ymax)];
    let mtu = [
        (m.link_mtu.saturating_sub(28) as f64, 0.0),
        (m.link_mtu.saturating_sub(28) as f64, ymax),
    ];
    let datasets = vec![
        Dataset::default()
            .name("payload sizes")
            .marker(ratatui::symbols::Marker::Braille)
            .graph_type(GraphType::Bar)
            .style(style(app, Color::Cyan))
            .data(&points),
        // The limits drawn with markers of their own, so that they read without
        // colour: dots for the budget, the data's bars, a heavier dot for the MTU.
        Dataset::default()
            .name(format!("budget {}", m.budget))
            .marker(ratatui::symbols::Marker::Dot)
            .graph_type(GraphType::Line)
            .style(style(app, Color::Yellow))
            .data(&budget),
        Dataset::default()
            .name(format!(
                "link MTU {} (payload {})",
                m.link_mtu,
                m.link_mtu.saturating_sub(28)
            ))
            .marker(ratatui::symbols::Marker::Block)
            .graph_type(GraphType::Line)
            .style(style(app, Color::Red))
            .data(&mtu),
    ];
    // The legend under the chart, where it always fits (the chart's own legend gives
    // way on a small screen and leaves the markers unexplained).
    let legend = format!(
        " ⣿ payload sizes · • budget {} · █ link MTU {} (payload {}) ",
        m.budget,
        m.link_mtu,
        m.link_mtu.saturating_sub(28)
    );
    let chart = Chart::new(datasets)
        .legend_position(None)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(
                    " Payload sizes of {} → {} (←/→ flow {}/{}) ",
                    fl.src,
                    fl.dst,
                    app.mtu_flow.min(flows - 1) + 1,
                    flows
                ))
                .title_bottom(legend),
        )
        .x_axis(Axis::default().bounds([0.0, top as f64]).labels(vec![
            Line::from("0"),
            Line::from(format!("{}", top / 2)),
            Line::from(format!("{top}")),
        ]))
        .y_axis(
            Axis::default()
                .bounds([0.0, ymax])
                .labels(vec![Line::from("0"), Line::from(format!("{ymax:.0}"))]),
        );
    f.render_widget(chart, area);
}

/// The violations under the chart: the counts, then the first ICMP messages and
/// IP-fragmented datagrams.
fn violations(app: &App, m: &gpcap::sinks::analysis::MtuReport) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(format!(
        "over_budget {} · over link MTU {} ({} don't-fragment) · ip_fragmented {} ({} never reassembled) · DF over path MTU {} · ICMP {}",
        m.over_budget,
        m.over_link_mtu,
        m.df_over_link_mtu,
        m.ip_fragmented,
        m.ip_never_reassembled,
        m.df_over_path_mtu,
        m.icmp_total
    ))];
    for i in m.icmp.iter().take(6) {
        lines.push(Line::from(Span::styled(
            format!(
                "frame {}: {} says MTU {} for {} (datagram of {} bytes)",
                i.frame,
                i.from,
                i.mtu,
                i.flow.map(|f| f.to_string()).unwrap_or_else(|| "?".into()),
                i.quoted_ip_len
                    .map(|x| x.to_string())
                    .unwrap_or_else(|| "?".into())
            ),
            style(app, Color::Yellow),
        )));
    }
    for v in m.ip_fragmented_list.iter().take(6) {
        lines.push(Line::from(format!(
            "frame {}: {} sent {} bytes in {} IP fragments",
            v.frame, v.flow, v.ip_len, v.fragments
        )));
    }
    lines
}
