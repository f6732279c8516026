//! A build without the `crypto` feature decrypts nothing: `Decryptor` and `Opener`
//! have no values here, so every path that would open a sealed packet is never taken,
//! and a definition's encrypted bodies are read as when no key is given.

use super::ahead::Opened;
use super::keys::Secrets;
use super::{FlowId, Outcome, Report, TakenProtocolId};
use std::net::SocketAddr;
use std::sync::Arc;

/// No decryption in this build (see the module).
#[derive(Clone)]
pub enum Decryptor {}

impl Decryptor {
    pub fn protocol_id_from_requests(&mut self, _taken: Option<TakenProtocolId>) {
        match *self {}
    }

    pub fn read_plaintext(&mut self, _read: bool) {
        match *self {}
    }

    #[allow(clippy::too_many_arguments)]
    pub fn datagram(
        &mut self,
        _flow: FlowId,
        _index: Option<u32>,
        _sequence: u64,
        _ptype: u32,
        _payload: &[u8],
        _out: &mut Vec<u8>,
        _ahead: Option<(&Opened, &[u8])>,
    ) -> Outcome {
        match *self {}
    }

    pub fn finish(&self) -> Report {
        match *self {}
    }
}

/// No opening ahead in this build (see the module).
#[derive(Clone)]
pub enum Opener {}

impl Opener {
    /// Never made: keys cannot be used without the `crypto` feature.
    pub fn new(_secrets: &Arc<Secrets>, _protocol_id: u64, _read: bool) -> Option<Self> {
        None
    }

    pub fn open(
        &self,
        _flow: (SocketAddr, SocketAddr),
        _sequence: u64,
        _ptype: u32,
        _payload: &[u8],
        _buffer: &mut Vec<u8>,
    ) -> Option<Opened> {
        match *self {}
    }
}
