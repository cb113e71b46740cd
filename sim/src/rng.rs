//! Seeded randomness for a run: one ChaCha8 stream per purpose, all derived from the
//! run's seed, so adding a node does not shift another node's draws.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Debug)]
pub struct SeededRng(ChaCha8Rng);

impl SeededRng {
    /// The network's stream.
    pub fn network(seed: u64) -> SeededRng {
        Self::stream(seed, 0)
    }

    /// Node `index`'s stream (the protocol's draws: election timeouts, jitter).
    pub fn node(seed: u64, index: usize) -> SeededRng {
        Self::stream(seed, 1 + index as u64)
    }

    /// Node `index`'s disk: its fsync latencies.
    pub fn disk(seed: u64, index: usize) -> SeededRng {
        Self::stream(seed, (1 << 32) + index as u64)
    }

    /// Node `index`'s processor: its handlers' processing times.
    pub fn cpu(seed: u64, index: usize) -> SeededRng {
        Self::stream(seed, (2 << 32) + index as u64)
    }

    /// Node `index`'s order after a stall: how its overdue items are ordered.
    pub fn order(seed: u64, index: usize) -> SeededRng {
        Self::stream(seed, (3 << 32) + index as u64)
    }

    pub(crate) fn stream(seed: u64, stream: u64) -> SeededRng {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        SeededRng(rng)
    }
}

impl tenure_core::Rng for SeededRng {
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

/// A node's stream that most runs never draw from (its disk, processor and order
/// streams), made on its first draw. A ChaCha8 state is about 330 bytes; kept inline,
/// three of them would spread every node's hot fields over many more cache lines
/// (a 2,001-node run touches every node each heartbeat). The draws are the same as
/// the eager stream's.
#[derive(Clone, Debug)]
pub struct LazyRng {
    seed: u64,
    stream: u64,
    rng: Option<Box<SeededRng>>,
}

impl LazyRng {
    /// Node `index`'s disk stream (see [`SeededRng::disk`]).
    pub fn disk(seed: u64, index: usize) -> LazyRng {
        Self::of(seed, (1 << 32) + index as u64)
    }

    /// Node `index`'s processor stream (see [`SeededRng::cpu`]).
    pub fn cpu(seed: u64, index: usize) -> LazyRng {
        Self::of(seed, (2 << 32) + index as u64)
    }

    /// Node `index`'s order stream (see [`SeededRng::order`]).
    pub fn order(seed: u64, index: usize) -> LazyRng {
        Self::of(seed, (3 << 32) + index as u64)
    }

    fn of(seed: u64, stream: u64) -> LazyRng {
        LazyRng {
            seed,
            stream,
            rng: None,
        }
    }
}

impl tenure_core::Rng for LazyRng {
    fn next_u64(&mut self) -> u64 {
        let (seed, stream) = (self.seed, self.stream);
        self.rng
            .get_or_insert_with(|| Box::new(SeededRng::stream(seed, stream)))
            .next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::Rng;

    #[test]
    fn lazy_streams_draw_as_the_eager_ones() {
        let eager = [
            SeededRng::disk(5, 3),
            SeededRng::cpu(5, 3),
            SeededRng::order(5, 3),
        ];
        let lazy = [
            LazyRng::disk(5, 3),
            LazyRng::cpu(5, 3),
            LazyRng::order(5, 3),
        ];
        for (mut e, mut l) in eager.into_iter().zip(lazy) {
            let a: Vec<u64> = (0..100).map(|_| e.next_u64()).collect();
            let b: Vec<u64> = (0..100).map(|_| l.next_u64()).collect();
            assert_eq!(a, b);
        }
        assert_ne!(
            LazyRng::disk(5, 3).next_u64(),
            LazyRng::cpu(5, 3).next_u64()
        );
    }

    #[test]
    fn streams_are_seeded_and_independent() {
        let a: Vec<u64> = (0..4).map(|_| SeededRng::node(7, 1).next_u64()).collect();
        assert!(
            a.windows(2).all(|w| w[0] == w[1]),
            "same seed, same stream, same draw"
        );
        assert_ne!(
            SeededRng::node(7, 1).next_u64(),
            SeededRng::node(7, 2).next_u64()
        );
        assert_ne!(
            SeededRng::node(7, 1).next_u64(),
            SeededRng::node(8, 1).next_u64()
        );
    }
}
