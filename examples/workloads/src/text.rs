//! Real text for the character models: the GNU GPL v3 licence text (shipped in data/, as
//! Debian ships it in /usr/share/common-licenses/GPL-3), read as bytes masked to 7 bits.
use burn::tensor::{Device, Int, Tensor, TensorData};

/// The corpus, embedded so the binary carries it to machines without the file.
pub static CORPUS: &[u8] = include_bytes!("../data/GPL-3.txt");

/// Vocabulary: the 128 ASCII codes.
pub const VOCAB: usize = 128;

/// Deterministic batches of (input, next-character target) windows.
pub struct CharBatcher {
    batch: usize,
    seq: usize,
    state: u64,
}

impl CharBatcher {
    pub fn new(batch: usize, seq: usize, seed: u64) -> Self {
        assert!(seq + 1 < CORPUS.len(), "sequence longer than the corpus");
        Self { batch, seq, state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1 }
    }

    fn next_offset(&mut self) -> usize {
        // xorshift64*: small, seeded, identical on every machine.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (r % (CORPUS.len() - self.seq - 1) as u64) as usize
    }

    /// Next batch as ([batch, seq] inputs, [batch * seq] targets).
    pub fn next(&mut self, device: &Device) -> (Tensor<2, Int>, Tensor<1, Int>) {
        let (mut xs, mut ys) = (Vec::with_capacity(self.batch * self.seq), Vec::with_capacity(self.batch * self.seq));
        for _ in 0..self.batch {
            let at = self.next_offset();
            for i in 0..self.seq {
                xs.push((CORPUS[at + i] & 0x7f) as i64);
                ys.push((CORPUS[at + i + 1] & 0x7f) as i64);
            }
        }
        let x = Tensor::<2, Int>::from_data(TensorData::new(xs, [self.batch, self.seq]), device);
        let y = Tensor::<1, Int>::from_data(TensorData::new(ys, [self.batch * self.seq]), device);
        (x, y)
    }
}
