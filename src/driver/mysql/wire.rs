//! Packet framing: the non-blocking socket, packets read from one reusable buffer and
//! written in one write, the cursor over a payload.

use std::io::{self, Read, Write};

use crate::driver::socket::Stream;

pub(super) const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// Size of a LOAD DATA data packet: well below any max_allowed_packet, and
/// never the 16 MiB maximum, which would make the server join the empty
/// packet that ends the data to it.
const INFILE_PACKET: usize = 16 * 1024;

/// Packet framing over a stream with one reusable read buffer.
pub(super) struct Wire {
    stream: Stream,
    rbuf: Vec<u8>,
    rpos: usize,
    rlen: usize,
    /// Payload of a packet split over several frames (>= 16 MiB).
    big: Vec<u8>,
    pub(super) wbuf: Vec<u8>,
    seq: u8,
    /// A command was sent and nothing of its reply read yet.
    awaiting_reply: bool,
    /// How often, lately, a reply was already there at the first read
    /// (0..=REPLY_SCORE_MAX). When the client has the CPU to itself the
    /// server needs some microseconds, so a first `recv` would fail with
    /// EAGAIN: waiting for readiness first saves that call. When clients
    /// and server share few CPUs (or the script does much work per
    /// statement) the reply is usually there by the time the client reads,
    /// and the `poll` is the wasted call. The score picks the cheaper order
    /// per connection; in poll-first mode every REPLY_PROBE-th reply is read
    /// first anyway, to keep learning.
    reply_score: u8,
    replies: u32,
}

/// The read buffer's first size: a point select's reply is ~150 bytes,
/// and at thousands of connections 16 KiB each (zeroed, so resident) was
/// 5% of the client's memory. A read that fills the buffer grows it once
/// to [`READ_BUF_FULL`], so result sets are read in as few calls as before.
const READ_BUF_START: usize = 4 * 1024;
const READ_BUF_FULL: usize = 16 * 1024;

const REPLY_SCORE_MAX: u8 = 16;
const REPLY_PROBE: u32 = 8;

impl Wire {
    pub(super) fn new(stream: Stream) -> Wire {
        Wire {
            stream,
            rbuf: vec![0; READ_BUF_START],
            rpos: 0,
            rlen: 0,
            big: Vec::new(),
            wbuf: Vec::with_capacity(4096),
            seq: 0,
            awaiting_reply: false,
            reply_score: 0,
            replies: 0,
        }
    }

    /// Ensures `need` unread bytes are buffered.
    #[inline]
    fn fill(&mut self, need: usize) -> io::Result<()> {
        if self.rlen - self.rpos >= need {
            return Ok(());
        }
        self.fill_more(need)
    }

    /// [`Wire::fill`] when bytes must be read.
    #[inline(never)]
    fn fill_more(&mut self, need: usize) -> io::Result<()> {
        if self.rpos == self.rlen {
            // Drained: rewind, so the connection keeps using the same pages.
            self.rpos = 0;
            self.rlen = 0;
        }
        while self.rlen - self.rpos < need {
            if self.rpos + need > self.rbuf.len() {
                self.rbuf.copy_within(self.rpos..self.rlen, 0);
                self.rlen -= self.rpos;
                self.rpos = 0;
                if need > self.rbuf.len() {
                    self.rbuf.resize(need.next_power_of_two(), 0);
                }
            }
            let n =
                if self.awaiting_reply { self.first_read()? } else { self.stream.read(&mut self.rbuf[self.rlen..])? };
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
            }
            self.rlen += n;
            if self.rlen == self.rbuf.len() && self.rbuf.len() < READ_BUF_FULL {
                self.rbuf.resize(READ_BUF_FULL, 0);
            }
        }
        Ok(())
    }

    /// The first read of a reply, in the order `reply_score` favours.
    fn first_read(&mut self) -> io::Result<usize> {
        self.awaiting_reply = false;
        self.replies = self.replies.wrapping_add(1);
        let read_first = self.reply_score >= REPLY_SCORE_MAX / 2 || self.replies.is_multiple_of(REPLY_PROBE);
        if read_first {
            match self.stream.read_now(&mut self.rbuf[self.rlen..]) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.reply_score = self.reply_score.saturating_sub(1)
                }
                r => {
                    self.reply_score = (self.reply_score + 1).min(REPLY_SCORE_MAX);
                    return r;
                }
            }
        }
        self.stream.wait(libc::POLLIN)?;
        self.stream.read(&mut self.rbuf[self.rlen..])
    }

    fn header(&mut self) -> io::Result<usize> {
        self.fill(4)?;
        let h = &self.rbuf[self.rpos..self.rpos + 4];
        let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
        self.seq = h[3].wrapping_add(1);
        self.rpos += 4;
        Ok(len)
    }

    /// The next packet's payload (valid until the next read).
    #[inline]
    pub(super) fn read(&mut self) -> io::Result<&[u8]> {
        // The usual case: one recv brought the whole reply, so the packet
        // is already buffered and needs neither `fill` nor a copy.
        let buffered = &self.rbuf[self.rpos..self.rlen];
        if let [l0, l1, l2, seq, ..] = *buffered {
            let len = l0 as usize | (l1 as usize) << 8 | (l2 as usize) << 16;
            if len < MAX_PAYLOAD && buffered.len() >= 4 + len {
                self.seq = seq.wrapping_add(1);
                let start = self.rpos + 4;
                self.rpos = start + len;
                return Ok(&self.rbuf[start..start + len]);
            }
        }
        self.read_more()
    }

    /// [`Wire::read`] when the packet is not all buffered yet (or is one of
    /// a payload of 16 MiB or more, which comes in several).
    #[inline(never)]
    fn read_more(&mut self) -> io::Result<&[u8]> {
        let mut len = self.header()?;
        if len < MAX_PAYLOAD {
            self.fill(len)?;
            let start = self.rpos;
            self.rpos += len;
            return Ok(&self.rbuf[start..start + len]);
        }
        self.big.clear();
        loop {
            self.fill(len)?;
            self.big.extend_from_slice(&self.rbuf[self.rpos..self.rpos + len]);
            self.rpos += len;
            if len < MAX_PAYLOAD {
                return Ok(&self.big);
            }
            len = self.header()?;
        }
    }

    /// Starts a packet in `wbuf` (a command when `reset_seq`).
    pub(super) fn begin(&mut self, reset_seq: bool) {
        if reset_seq {
            self.seq = 0;
        }
        self.wbuf.clear();
        self.wbuf.extend_from_slice(&[0, 0, 0, 0]);
    }

    /// Frames and sends `wbuf` in one write.
    pub(super) fn send(&mut self) -> io::Result<()> {
        let payload = self.wbuf.len() - 4;
        if payload < MAX_PAYLOAD {
            self.wbuf[..3].copy_from_slice(&(payload as u32).to_le_bytes()[..3]);
            self.wbuf[3] = self.seq;
            self.seq = self.seq.wrapping_add(1);
            self.awaiting_reply = true;
            return self.stream.write_all(&self.wbuf);
        }
        // Rare (statements >= 16 MiB): split into frames.
        let body = self.wbuf.split_off(4);
        let mut out = Vec::with_capacity(body.len() + 4 * (body.len() / MAX_PAYLOAD + 1));
        let mut chunks = body.chunks(MAX_PAYLOAD).peekable();
        while let Some(c) = chunks.next() {
            out.extend_from_slice(&(c.len() as u32).to_le_bytes()[..3]);
            out.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            out.extend_from_slice(c);
            if chunks.peek().is_none() && c.len() == MAX_PAYLOAD {
                out.extend_from_slice(&[0, 0, 0, self.seq]);
                self.seq = self.seq.wrapping_add(1);
            }
        }
        self.awaiting_reply = true;
        self.stream.write_all(&out)
    }

    /// Sends `data` as LOAD DATA LOCAL packets (continuing the sequence) in one write.
    pub(super) fn send_infile_data(&mut self, data: &[u8]) -> io::Result<()> {
        self.wbuf.clear();
        for piece in data.chunks(INFILE_PACKET) {
            self.wbuf.extend_from_slice(&(piece.len() as u32).to_le_bytes()[..3]);
            self.wbuf.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.wbuf.extend_from_slice(piece);
        }
        self.stream.write_all(&self.wbuf)
    }
}

/// A cursor over a packet payload.
pub(super) struct Buf<'a>(pub(super) &'a [u8]);

impl<'a> Buf<'a> {
    pub(super) fn bad() -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, "malformed packet from the server")
    }
    #[inline]
    pub(super) fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(Self::bad());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    #[inline]
    pub(super) fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }
    #[inline]
    pub(super) fn u16(&mut self) -> io::Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    #[inline]
    pub(super) fn u32(&mut self) -> io::Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    #[inline]
    pub(super) fn u64(&mut self) -> io::Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| Self::bad())?))
    }
    #[inline]
    pub(super) fn lenenc(&mut self) -> io::Result<u64> {
        Ok(match self.u8()? {
            0xfc => self.u16()? as u64,
            0xfd => {
                let b = self.take(3)?;
                b[0] as u64 | (b[1] as u64) << 8 | (b[2] as u64) << 16
            }
            0xfe => self.u64()?,
            x => x as u64,
        })
    }
    pub(super) fn lenenc_str(&mut self) -> io::Result<&'a [u8]> {
        let n = self.lenenc()? as usize;
        self.take(n)
    }
    pub(super) fn nul_str(&mut self) -> &'a [u8] {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len());
        let s = &self.0[..end];
        self.0 = &self.0[(end + 1).min(self.0.len())..];
        s
    }
}

pub(super) fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    /// A wire over one end of a socket pair; the other end plays the server.
    fn pair() -> (Wire, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        (Wire::new(Stream::Unix(a)), b)
    }

    /// One packet with sequence 1 and a 1-byte payload.
    const PACKET: [u8; 5] = [1, 0, 0, 1, 0x00];

    #[test]
    fn replies_that_are_already_there_switch_to_reading_first() {
        let (mut w, mut server) = pair();
        // Poll-first at the start; every REPLY_PROBE-th reply is read first.
        for _ in 0..REPLY_PROBE * u32::from(REPLY_SCORE_MAX) {
            server.write_all(&PACKET).unwrap();
            w.awaiting_reply = true;
            assert_eq!(w.read().unwrap(), &[0x00]);
        }
        assert!(w.reply_score >= REPLY_SCORE_MAX / 2, "score {}", w.reply_score);
    }

    #[test]
    fn late_replies_keep_waiting_first_and_are_read_whole() {
        let (mut w, server) = pair();
        w.reply_score = REPLY_SCORE_MAX;
        // The "server" answers each command only when asked, 5 ms later:
        // a first read finds nothing.
        let (ask, asked) = std::sync::mpsc::channel::<()>();
        let writer = std::thread::spawn(move || {
            let mut server = server;
            while asked.recv().is_ok() {
                std::thread::sleep(Duration::from_millis(5));
                server.write_all(&PACKET).unwrap();
            }
        });
        for _ in 0..40 {
            w.awaiting_reply = true;
            ask.send(()).unwrap();
            assert_eq!(w.read().unwrap(), &[0x00]);
        }
        drop(ask);
        writer.join().unwrap();
        assert!(w.reply_score < REPLY_SCORE_MAX / 2, "score {}", w.reply_score);
    }

    #[test]
    fn the_read_buffer_starts_small_and_grows_once_a_reply_fills_it() {
        let (mut w, mut server) = pair();
        assert_eq!(w.rbuf.len(), READ_BUF_START);
        // Small replies keep the small buffer.
        for _ in 0..3 {
            server.write_all(&PACKET).unwrap();
            w.awaiting_reply = true;
            assert_eq!(w.read().unwrap(), &[0x00]);
        }
        assert_eq!(w.rbuf.len(), READ_BUF_START);
        // A reply of many packets, more bytes than the buffer holds (a
        // result set): every packet read whole and in order, and the
        // buffer grown to its full size, not beyond.
        let mut reply = Vec::new();
        for i in 0..100u8 {
            reply.extend_from_slice(&[100, 0, 0, i]);
            reply.extend(std::iter::repeat_n(i, 100));
        }
        server.write_all(&reply).unwrap();
        w.awaiting_reply = true;
        for i in 0..100u8 {
            let p = w.read().unwrap();
            assert_eq!(p.len(), 100);
            assert!(p.iter().all(|b| *b == i), "packet {i}");
        }
        assert_eq!(w.rbuf.len(), READ_BUF_FULL);
    }
}
