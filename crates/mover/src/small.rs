//! Buffers each copy thread keeps for verified copies of small files: a small file's bytes are
//! read into one, written, read back into the other and compared ([`crate::copy`]). On small
//! files the hashing of both sides, and a fresh zeroed buffer for each, were most of the
//! user-space time verification added (a profile of 40,000 files of 0.5–8.5 KiB on a tmpfs);
//! comparing the bytes is cheaper than hashing them and checks exactly, not by a 128-bit digest.

use std::cell::RefCell;

/// Largest range copied this way; bigger files are hashed in chunks (their buffers are not
/// kept, so a thread holds at most two of these).
const SMALL_MAX: u64 = 256 << 10;

thread_local! {
    /// What was read from the source, and what was read back from the target.
    static BUFFERS: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The one range a verified copy can take this way: hashing is on and the file's data is a
/// single range (no holes inside it) no bigger than [`SMALL_MAX`].
pub fn one_checked_range(hash: bool, segments: &[(u64, u64)]) -> Option<(u64, usize)> {
    match segments {
        [(off, len)] if hash && *len <= SMALL_MAX => Some((*off, usize::try_from(*len).ok()?)),
        _ => None,
    }
}

/// Runs `with` on two buffers of `len` bytes: this thread's kept pair (grown when short), or a
/// fresh pair if that one is in use (never today: the copy does not nest).
pub fn with_buffers<T>(len: usize, with: impl FnOnce(&mut [u8], &mut [u8]) -> T) -> T {
    BUFFERS.with(|buffers| match buffers.try_borrow_mut() {
        Ok(mut held) => {
            let (read, landed) = &mut *held;
            with(grown(read, len), grown(landed, len))
        }
        Err(_) => with(&mut vec![0; len], &mut vec![0; len]),
    })
}

/// The first `len` bytes of `buffer`, growing it (zeroed once) when it is shorter.
fn grown(buffer: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if buffer.len() < len {
        buffer.resize(len, 0);
    }
    &mut buffer[..len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_single_small_range_of_a_hashed_copy_qualifies() {
        assert_eq!(one_checked_range(true, &[(0, 4096)]), Some((0, 4096)));
        assert_eq!(
            one_checked_range(true, &[(8192, SMALL_MAX)]),
            Some((8192, SMALL_MAX as usize))
        );
        assert_eq!(one_checked_range(false, &[(0, 4096)]), None);
        assert_eq!(one_checked_range(true, &[(0, SMALL_MAX + 1)]), None);
        assert_eq!(one_checked_range(true, &[(0, 10), (4096, 10)]), None);
        assert_eq!(one_checked_range(true, &[]), None);
    }

    #[test]
    fn kept_buffers_are_reused_and_a_nested_call_gets_its_own() {
        with_buffers(16, |read, landed| {
            read.fill(1);
            landed.fill(2);
            with_buffers(8, |inner_read, inner_landed| {
                assert_eq!((inner_read.len(), inner_landed.len()), (8, 8));
                assert!(inner_read.iter().chain(inner_landed.iter()).all(|b| *b == 0));
            });
        });
        with_buffers(4, |read, landed| {
            assert_eq!((&read[..], &landed[..]), (&[1u8; 4][..], &[2u8; 4][..]))
        });
    }
}
