//! The list's keys as data: each binding is the keys it takes, where it applies and what
//! it does; the first binding that takes a key where the app is wins. To add a key, add
//! a line here (before any broader binding of the same key) and its help line in
//! `crates/tui/src/keys.rs`.

use super::*;

/// One key binding: the keys, the condition (the app and the key pressed), the action.
pub(super) struct Binding {
    pub keys: &'static [KeyCode],
    pub when: fn(&App, &KeyEvent) -> bool,
    pub act: fn(&mut App, &KeyEvent),
}

const fn bind(
    keys: &'static [KeyCode],
    when: fn(&App, &KeyEvent) -> bool,
    act: fn(&mut App, &KeyEvent),
) -> Binding {
    Binding { keys, when, act }
}

use KeyCode::{BackTab, Char, Down, End, Enter, Esc, Home, Left, PageDown, PageUp, Right, Tab as TabKey, Up};

fn always(_: &App, _: &KeyEvent) -> bool {
    true
}

fn ctrl(_: &App, k: &KeyEvent) -> bool {
    k.modifiers.contains(KeyModifiers::CONTROL)
}

fn in_tree(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Packets && a.focus == Focus::Tree
}

fn on_bandwidth(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Bandwidth
}

fn on_tables(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Reassembly || a.tab == Tab::Flows && !a.streams_view
}

fn on_flows(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Flows && !a.streams_view
}

fn on_streams(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Flows && a.streams_view
}

fn in_messages(a: &App, k: &KeyEvent) -> bool {
    on_streams(a, k) && a.messages.is_some()
}

fn on_loss(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Loss
}

fn on_mtu(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Mtu
}

fn on_packets(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Packets
}

/// The list has a packet with a field tree to go into.
fn tree_ahead(a: &App, _: &KeyEvent) -> bool {
    a.tab == Tab::Packets
        && a.focus == Focus::List
        && a.detail.as_ref().is_some_and(|d| d.dissection.is_some())
}

/// Every key of the list and the tabs, in the order they are tried.
pub(super) const BINDINGS: &[Binding] = &[
    bind(&[Char('q')], always, |a, _| a.quit = true),
    bind(&[Esc], on_bandwidth, |a, _| a.bits.back()),
    bind(&[Esc, Left], in_messages, |a, _| a.messages = None),
    bind(&[Esc], always, |a, _| a.focus = Focus::List),
    bind(&[Char('?')], always, |a, _| {
        a.help = true;
        a.help_scroll = 0;
    }),
    bind(&[Char('/')], always, |a, _| {
        a.offer(Ask::Filter, &a.filter.text.clone())
    }),
    bind(&[Char('f')], ctrl, |a, _| a.open(Ask::Find, "")),
    bind(&[Char('F')], always, |a, _| a.open(Ask::Find, "")),
    bind(&[Char('g')], always, |a, _| a.open(Ask::Goto, "")),
    bind(&[Char('n')], always, |a, _| a.find_next(1)),
    bind(&[Char('N')], always, |a, _| a.find_next(-1)),
    bind(&[Char(']')], always, |a, _| a.jump(1, Jump::Malformed)),
    bind(&[Char('[')], always, |a, _| a.jump(-1, Jump::Malformed)),
    bind(&[Char('}')], always, |a, _| a.jump(1, Jump::Gap)),
    bind(&[Char('{')], always, |a, _| a.jump(-1, Jump::Gap)),
    bind(&[Char('w')], always, |a, _| a.ask_file()),
    bind(&[Char('m')], always, |a, _| a.toggle_mark()),
    bind(&[Char('M')], always, |a, _| {
        a.marks.clear();
        a.message = Some(("marks cleared".into(), false));
    }),
    bind(&[Char('T')], always, |a, _| a.toggle_time_ref()),
    bind(&[Char('d')], always, |a, _| {
        a.time_format = a.time_format.next();
        a.message = Some((format!("time: {}", a.time_format.label()), false));
    }),
    bind(&[Char('c')], on_packets, |a, _| {
        a.mode = Mode::Columns;
        a.column_cursor = 0;
    }),
    bind(&[Char('+'), Char('=')], on_packets, |a, _| {
        a.resize_list(LIST_STEP as i16)
    }),
    bind(&[Char('-')], on_packets, |a, _| {
        a.resize_list(-(LIST_STEP as i16))
    }),
    bind(&[Char('<')], on_packets, |a, _| {
        a.resize_tree(-(LIST_STEP as i16))
    }),
    bind(&[Char('>')], on_packets, |a, _| a.resize_tree(LIST_STEP as i16)),
    bind(&[Char('y')], always, |a, _| a.copy(false)),
    bind(&[Char('Y')], always, |a, _| a.copy(true)),
    bind(&[Char('a')], in_tree, |a, _| a.apply_field(false)),
    bind(&[Char('A')], in_tree, |a, _| a.apply_field(true)),
    bind(&[Char('r')], always, |a, _| a.reload()),
    bind(&[Char('s')], on_tables, |a, _| a.sort(false)),
    bind(&[Char('S')], on_tables, |a, _| a.sort(true)),
    bind(&[Char('s')], on_bandwidth, |a, _| a.bits.sort(false)),
    bind(&[Char('S')], on_bandwidth, |a, _| a.bits.sort(true)),
    bind(&[Enter], on_bandwidth, |a, _| a.enter_bits()),
    bind(&[Left], on_bandwidth, |a, _| a.bits.back()),
    bind(&[TabKey], always, |a, _| {
        a.tab = Tab::ALL[(a.tab_index() + 1) % Tab::ALL.len()]
    }),
    bind(&[BackTab], always, |a, _| {
        a.tab = Tab::ALL[(a.tab_index() + Tab::ALL.len() - 1) % Tab::ALL.len()]
    }),
    bind(
        &[Char('1'), Char('2'), Char('3'), Char('4'), Char('5'), Char('6')],
        always,
        |a, k| {
            if let Char(c) = k.code {
                a.tab = Tab::ALL[c as usize - '1' as usize];
            }
        },
    ),
    bind(&[Char('f')], always, |a, _| a.follow()),
    bind(&[Enter], on_flows, |a, k| {
        a.open_flow(k.modifiers.contains(KeyModifiers::SHIFT))
    }),
    bind(&[Char('b')], on_flows, |a, _| a.open_flow(true)),
    bind(&[Enter], in_messages, |a, _| a.open_message()),
    bind(&[Enter], on_streams, |a, _| a.open_messages()),
    bind(&[Char('p')], on_streams, |a, _| a.open_stream()),
    bind(
        &[Char('v')],
        |a, _| a.tab == Tab::Flows,
        |a, _| a.streams_view = !a.streams_view,
    ),
    bind(&[Up, Char('k')], on_loss, |a, _| {
        a.loss_scroll = a.loss_scroll.saturating_sub(1)
    }),
    bind(&[Down, Char('j')], on_loss, |a, _| a.loss_scroll += 1),
    bind(
        &[Enter],
        |a, _| a.tab == Tab::Reassembly,
        |a, _| a.open_fragmented(),
    ),
    bind(&[Char('t'), Enter], tree_ahead, |a, _| a.focus = Focus::Tree),
    bind(&[Char('t')], always, |a, _| a.focus = Focus::List),
    bind(&[Enter, Char(' ')], in_tree, |a, _| a.fold()),
    bind(&[Left], on_mtu, |a, _| a.mtu_flow = a.mtu_flow.saturating_sub(1)),
    bind(&[Right], on_mtu, |a, _| a.mtu_flow += 1),
    bind(&[Left], always, |a, _| a.focus = Focus::List),
    bind(&[Right], on_packets, |a, _| a.focus = Focus::Tree),
    bind(&[Up, Char('k')], always, |a, _| a.move_selection(-1)),
    bind(&[Down, Char('j')], always, |a, _| a.move_selection(1)),
    bind(&[PageUp], always, |a, _| a.move_selection(-a.page())),
    bind(&[PageDown], always, |a, _| a.move_selection(a.page())),
    bind(&[Home], always, |a, _| a.move_selection(isize::MIN / 2)),
    bind(&[End], always, |a, _| a.move_selection(isize::MAX / 2)),
];

/// The binding that takes `k` where the app is, if any.
pub(super) fn binding(a: &App, k: &KeyEvent) -> Option<&'static Binding> {
    BINDINGS
        .iter()
        .find(|b| b.keys.contains(&k.code) && (b.when)(a, k))
}
