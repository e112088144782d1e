//! Capture files (pcap and pcapng, via `pcap-file`) to timestamped TCP segments (via
//! `etherparse`).

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::DataLink;

use crate::error::CaptureError;

/// A TCP segment from the capture.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Capture time since the Unix epoch.
    pub time: Duration,
    /// Sender.
    pub src: SocketAddr,
    /// Receiver.
    pub dst: SocketAddr,
    /// Sequence number.
    pub seq: u32,
    /// SYN flag (the first data byte is at `seq + 1`).
    pub syn: bool,
    /// The TCP payload.
    pub payload: Vec<u8>,
}

/// A captured packet: time, link type, bytes.
pub type Packet = (Duration, DataLink, Vec<u8>);

/// A pcap or pcapng file being read.
pub enum Capture {
    /// Classic pcap: one link type for the file.
    Pcap(PcapReader<BufReader<File>>, DataLink),
    /// pcapng: one link type per interface.
    PcapNg(PcapNgReader<BufReader<File>>),
}

const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

impl Capture {
    /// Opens a capture, telling the format from its first bytes.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let mut file = File::open(path).map_err(CaptureError::Open)?;
        let mut magic = [0u8; 4];
        file.read_exact(&mut magic).map_err(|_| CaptureError::TooShort)?;
        file.rewind().map_err(CaptureError::Rewind)?;
        let reader = BufReader::new(file);
        if magic == PCAPNG_MAGIC {
            let r = PcapNgReader::new(reader).map_err(CaptureError::PcapNgHeader)?;
            Ok(Capture::PcapNg(r))
        } else {
            let r = PcapReader::new(reader).map_err(CaptureError::PcapHeader)?;
            let link = r.header().datalink;
            Ok(Capture::Pcap(r, link))
        }
    }

    /// The next packet: time, link type and bytes. `None` at the end; an error for a corrupt file.
    pub fn next_packet(&mut self) -> Option<Result<Packet, CaptureError>> {
        match self {
            Capture::Pcap(r, link) => {
                let link = *link;
                r.next_packet().map(|p| p.map(|p| (p.timestamp, link, p.data.into_owned())).map_err(CaptureError::Corrupt))
            }
            Capture::PcapNg(r) => loop {
                // Copy the packet out first: the block borrows the reader.
                let (iface, time, data) = match r.next_block()? {
                    Ok(Block::EnhancedPacket(p)) => (Some(p.interface_id), p.timestamp, p.data.into_owned()),
                    Ok(Block::SimplePacket(p)) => (None, Duration::ZERO, p.data.into_owned()),
                    Ok(_) => continue,
                    Err(e) => return Some(Err(CaptureError::Corrupt(e))),
                };
                let index = iface.unwrap_or(0);
                let Some(link) = usize::try_from(index).ok().and_then(|i| r.interfaces().get(i)).map(|i| i.linktype) else {
                    return Some(Err(CaptureError::UndeclaredInterface(index)));
                };
                return Some(Ok((time, link, data)));
            },
        }
    }
}

/// The TCP segment in a packet, if it is one this tool understands (IPv4/IPv6 over Ethernet,
/// Linux cooked capture v1/v2, BSD loopback or raw IP; unfragmented).
pub fn tcp_segment(time: Duration, link: DataLink, data: &[u8]) -> Option<Segment> {
    let sliced = match link {
        DataLink::ETHERNET => SlicedPacket::from_ethernet(data).ok()?,
        DataLink::LINUX_SLL => SlicedPacket::from_linux_sll(data).ok()?,
        // SLL2: a 20-byte header whose first two bytes are the protocol type.
        DataLink::LINUX_SLL2 => SlicedPacket::from_ip(data.get(20..)?).ok()?,
        // BSD loopback: a 4-byte address family in host order, then IP.
        DataLink::NULL | DataLink::LOOP => SlicedPacket::from_ip(data.get(4..)?).ok()?,
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => SlicedPacket::from_ip(data).ok()?,
        _ => return None,
    };
    let (src_ip, dst_ip, fragmented): (IpAddr, IpAddr, bool) = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => (ip.header().source_addr().into(), ip.header().destination_addr().into(), ip.is_payload_fragmented()),
        Some(NetSlice::Ipv6(ip)) => (ip.header().source_addr().into(), ip.header().destination_addr().into(), ip.is_payload_fragmented()),
        _ => return None,
    };
    if fragmented {
        return None;
    }
    let Some(TransportSlice::Tcp(tcp)) = &sliced.transport else { return None };
    Some(Segment {
        time,
        src: SocketAddr::new(src_ip, tcp.source_port()),
        dst: SocketAddr::new(dst_ip, tcp.destination_port()),
        seq: tcp.sequence_number(),
        syn: tcp.syn(),
        payload: tcp.payload().to_vec(),
    })
}
