//! The shared bit reader and writer, and the serialize primitives built on them.

pub(crate) mod error;
pub mod msb;
pub mod reader;
pub(crate) mod serialize;
pub(crate) mod stream;
mod width;
pub(crate) mod writer;

pub use error::{BitError, BitResult, ErrorKind};
pub use reader::BitReader;
pub use serialize::*;
pub use stream::{MeasureStream, Prim, ReadStream, Stream, Tracer, WriteStream};
pub use width::{bits_required, int_width};
pub use writer::BitWriter;
