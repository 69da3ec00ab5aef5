#pragma once
// When an SFTP upload goes in two halves, sans-IO (tests/unit/ssh/upload_split_test.cpp). sshd's
// session window (2 MiB) holds each channel to about that much per round trip, so a large file
// goes faster over two SFTP sessions: the near half on the session the write was asked of, the
// far half on the connection's upload lane (Connection::upload_lane), when it has one.

#include <cstddef>
#include <optional>

namespace exedev::ssh {

/// What one SFTP write call queues at most; libssh2 copies it into packets all in flight. Not
/// more than sshd's own session window (2 MiB): what a client keeps in flight beyond what the
/// server's sftp-server drains piles up in sshd's channel buffer, whose first growth on a
/// connection costs sshd a fresh mmap per step (docs/performance.md, B9: a connection's first
/// 8 MiB up took 1.17 s with 4 MiB in flight, 0.48 s with 2 MiB; later ones 0.15 s with either).
inline constexpr std::size_t sftp_write_window = 2 * 1024 * 1024;

/// An upload in two halves: bytes [0, near_size) on the session asked, the rest on the lane.
struct UploadSplit {
  std::size_t near_size = 0;
};

/// The split of an upload of `size` bytes, or none when it goes whole on one session: only an
/// upload larger than two windows is split, each half then taking half the round trips.
[[nodiscard]] std::optional<UploadSplit> upload_split(std::size_t size) noexcept;

}  // namespace exedev::ssh
