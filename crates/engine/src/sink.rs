//! The engine's one extension point: a `Sink` takes every event, says what it `Needs`
//! of the engine (as a Wireshark tap declares its fields) and whether the run goes on
//! (`Flow`), or why it cannot (`SinkError`, as ripgrep's `Sink` returns `Result`). Two
//! sinks side by side are a pair; an absent one is `None`.

use super::layers;
use super::{FileEnd, FlowEnd, PacketEvent, Summary};

/// What a sink says after each packet: go on, or stop the run (a closed output, a
/// selection complete). Not `#[must_use]`: the engine's inner stages hand packets on
/// without looking, and the run reads the answer once per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Flow {
    #[default]
    Continue,
    Stop,
}

impl Flow {
    /// `Stop` when either says so.
    #[inline(always)]
    pub fn and(self, other: Flow) -> Flow {
        if self == Flow::Stop { Flow::Stop } else { other }
    }

    /// `Stop` when `stop`.
    #[inline(always)]
    pub fn stop_if(stop: bool) -> Flow {
        if stop { Flow::Stop } else { Flow::Continue }
    }
}

/// Why a sink cannot go on (a write failed, a worker died): handed through the engine to
/// the run, which ends with it as its error, so that no caller has to ask the sink
/// afterwards whether it failed. The sink's own error is inside ([`SinkError::downcast`]).
#[derive(Debug)]
pub struct SinkError(Box<dyn std::error::Error + Send + Sync>);

impl SinkError {
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> SinkError {
        SinkError(Box::new(e))
    }

    /// The sink's own error, when it is an `E`.
    pub fn downcast<E: std::error::Error + 'static>(self) -> Result<E, SinkError> {
        self.0.downcast::<E>().map(|e| *e).map_err(SinkError)
    }
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SinkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// What a sink needs of the engine, declared by the sink (as a Wireshark tap declares
/// the fields it reads): the engine does no more than its sinks need.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    /// The field tree of every game packet (`PacketEvent::dissection`). Recording is
    /// slower: bodies are otherwise only validated.
    pub fields: bool,
    /// What counts an inner layer's packets (a stack of definitions): the sink that
    /// reports on inner layers makes it; without one they are read but not counted.
    pub layers: Option<layers::MakeLayerSink>,
}

impl Needs {
    /// What two sinks fed the same events need.
    pub fn and(self, other: Needs) -> Needs {
        Needs {
            fields: self.fields || other.fields,
            layers: self.layers.or(other.layers),
        }
    }
}

/// A consumer of the engine's events (`gpcap::Sink`'s documentation shows one driven
/// over a capture by `gpcap::run`).
pub trait Sink {
    /// What the engine must do for this sink (nothing beyond validation by default).
    fn needs(&self) -> Needs {
        Needs::default()
    }
    /// Input file `file` (0-based) begins.
    fn begin_file(&mut self, _file: u32, _name: &str) {}
    /// Every frame, and every reassembled packet right after the frame that completed it.
    /// [`Flow::Stop`] ends the run after this frame; an error ends it with that error.
    fn packet(&mut self, event: &PacketEvent<'_>) -> Result<Flow, SinkError>;
    /// Input file `file` ended: how reading it stopped.
    fn end_file(&mut self, _file: u32, _end: &FileEnd) {}
    /// A tracked flow's final sequence and reassembly state (at the end, in flow order).
    fn flow_end(&mut self, _end: &FlowEnd) {}
    /// The engine is done.
    fn finish(&mut self, _summary: &Summary) {}
}

macro_rules! forward_sink {
    ($($t:tt)*) => {
        impl<S: Sink + ?Sized> Sink for $($t)* {
            fn needs(&self) -> Needs {
                (**self).needs()
            }
            fn begin_file(&mut self, file: u32, name: &str) {
                (**self).begin_file(file, name)
            }
            fn packet(&mut self, event: &PacketEvent<'_>) -> Result<Flow, SinkError> {
                (**self).packet(event)
            }
            fn end_file(&mut self, file: u32, end: &FileEnd) {
                (**self).end_file(file, end)
            }
            fn flow_end(&mut self, end: &FlowEnd) {
                (**self).flow_end(end)
            }
            fn finish(&mut self, summary: &Summary) {
                (**self).finish(summary)
            }
        }
    };
}

forward_sink!(&mut S);
forward_sink!(Box<S>);

/// Two sinks fed the same events, in order (the second not, once the first failed).
impl<A: Sink, B: Sink> Sink for (A, B) {
    fn needs(&self) -> Needs {
        self.0.needs().and(self.1.needs())
    }
    fn begin_file(&mut self, file: u32, name: &str) {
        self.0.begin_file(file, name);
        self.1.begin_file(file, name);
    }
    fn packet(&mut self, event: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        let a = self.0.packet(event)?;
        Ok(a.and(self.1.packet(event)?))
    }
    fn end_file(&mut self, file: u32, end: &FileEnd) {
        self.0.end_file(file, end);
        self.1.end_file(file, end);
    }
    fn flow_end(&mut self, end: &FlowEnd) {
        self.0.flow_end(end);
        self.1.flow_end(end);
    }
    fn finish(&mut self, summary: &Summary) {
        self.0.finish(summary);
        self.1.finish(summary);
    }
}

/// A sink that may be absent.
impl<S: Sink> Sink for Option<S> {
    fn needs(&self) -> Needs {
        self.as_ref().map(Sink::needs).unwrap_or_default()
    }
    fn begin_file(&mut self, file: u32, name: &str) {
        if let Some(s) = self {
            s.begin_file(file, name)
        }
    }
    fn packet(&mut self, event: &PacketEvent<'_>) -> Result<Flow, SinkError> {
        match self {
            Some(s) => s.packet(event),
            None => Ok(Flow::Continue),
        }
    }
    fn end_file(&mut self, file: u32, end: &FileEnd) {
        if let Some(s) = self {
            s.end_file(file, end)
        }
    }
    fn flow_end(&mut self, end: &FlowEnd) {
        if let Some(s) = self {
            s.flow_end(end)
        }
    }
    fn finish(&mut self, summary: &Summary) {
        if let Some(s) = self {
            s.finish(summary)
        }
    }
}
