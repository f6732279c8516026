//! What drawing a frame learned of the screen, kept by the app after the frame: where
//! the clickable regions fell, how many rows the packet list shows, and the scroll
//! positions that keep each selection in view at this size. Drawing reads the app and
//! changes nothing; it hands this back, and [`App::settle`] takes it.

use super::{App, Areas, TableState};

#[derive(Debug, Clone, Default)]
pub struct Drawn {
    pub areas: Areas,
    pub list_height: Option<usize>,
    pub scroll: Option<usize>,
    pub tree_scroll: Option<usize>,
    pub loss_scroll: Option<usize>,
    pub flows: Option<TableState>,
    pub streams: Option<TableState>,
    pub frags: Option<TableState>,
    pub messages: Option<TableState>,
    pub bits: Option<TableState>,
}

impl Drawn {
    /// Nothing learned yet: the regions as the last frame left them.
    pub fn from(app: &App) -> Drawn {
        Drawn {
            areas: app.areas,
            ..Drawn::default()
        }
    }
}

impl App {
    /// Keeps what the frame just drawn found out (see [`Drawn`]).
    pub fn settle(&mut self, d: Drawn) {
        self.areas = d.areas;
        let put = |to: &mut usize, v: Option<usize>| {
            if let Some(v) = v {
                *to = v;
            }
        };
        put(&mut self.list_height, d.list_height);
        put(&mut self.scroll, d.scroll);
        put(&mut self.tree_scroll, d.tree_scroll);
        put(&mut self.loss_scroll, d.loss_scroll);
        let keep = |to: &mut TableState, v: Option<TableState>| {
            if let Some(v) = v {
                *to = v;
            }
        };
        keep(&mut self.flows, d.flows);
        keep(&mut self.streams, d.streams);
        keep(&mut self.frags, d.frags);
        keep(&mut self.bits.table, d.bits);
        if let (Some(m), Some(t)) = (self.messages.as_mut(), d.messages) {
            m.table = t;
        }
    }
}
