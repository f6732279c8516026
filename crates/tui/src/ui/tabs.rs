//! The tab bar, and the indexing gauge beside it.

use super::*;

/// The tab bar's width: each title padded by a space either side, and the dividers.
pub(super) const WIDTH: u16 = 62;

/// The space either side of a title: none on a screen narrower than the bar.
pub fn pad(width: u16) -> &'static str {
    if width < WIDTH { "" } else { " " }
}

pub(super) fn draw_tabs(f: &mut Frame, app: &App, ix: &Index, area: Rect) {
    let titles: Vec<Line> = Tab::ALL
        .iter()
        .enumerate()
        .map(|(i, t)| Line::from(format!("{} {}", i + 1, t.title())))
        .collect();
    let sel = Tab::ALL.iter().position(|t| *t == app.tab).unwrap_or(0);
    let split = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(WIDTH), Constraint::Min(0)])
        .split(area);
    f.render_widget(
        // Narrower than the bar: the titles without their padding, all still shown.
        Tabs::new(titles)
            .padding(pad(area.width), pad(area.width))
            .select(sel)
            .highlight_style(selected_style(app))
            .divider("│"),
        split[0],
    );
    if ix.done {
        let name = ix.name.rsplit('/').next().unwrap_or("");
        let text = title(name, ix.frames(), split[1].width as usize);
        f.render_widget(Paragraph::new(text).right_aligned(), split[1]);
    } else {
        let ratio = if ix.total_bytes > 0 {
            (ix.bytes_read as f64 / ix.total_bytes as f64).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let label = if app.live {
            format!("live · {}", gpcap::present::count(ix.frames(), "frame"))
        } else {
            format!(
                "indexing {:.0}% · {}",
                ratio * 100.0,
                gpcap::present::count(ix.frames(), "frame")
            )
        };
        f.render_widget(
            Gauge::default()
                .ratio(if app.live { 1.0 } else { ratio })
                .label(label)
                .gauge_style(style(app, Color::Blue)),
            split[1],
        );
    }
}

/// The capture's name and its frame count in `width`: the name gives way first (cut at
/// its start, `…`), then the word "frames"; the count is never cut.
pub(super) fn title(name: &str, frames: u64, width: usize) -> String {
    let count = gpcap::present::count(frames, "frame");
    let full = format!("{name} · {count}");
    if full.chars().count() <= width {
        return full;
    }
    let room = width.saturating_sub(count.chars().count() + 3);
    if room >= 6 {
        let tail: Vec<char> = name.chars().collect();
        let cut: String = tail[tail.len() + 1 - room.min(tail.len())..].iter().collect();
        return format!("…{cut} · {count}");
    }
    if count.chars().count() <= width {
        count
    } else {
        frames.to_string()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_count_is_never_cut() {
        let t = |w| super::title("lossy-bursts.pcap", 2185, w);
        assert_eq!(t(40), "lossy-bursts.pcap · 2185 frames");
        assert_eq!(t(23), "…sts.pcap · 2185 frames");
        assert_eq!(t(14), "2185 frames");
        assert_eq!(t(5), "2185");
    }
}
